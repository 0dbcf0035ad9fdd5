"""`kubectl ome-selector runtime lint` from files (SPEC §11): table, JSON, exit status, namespaces and bad
input."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from cli_runner import KUBECTL_OME, NO_PYC, REPO_ROOT, Run

CATALOG = """\
apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata: {name: m}
spec:
  modelFormat: {name: safetensors}
  modelParameterSize: 4b
---
apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata: {name: rt}
spec:
  supportedModelFormats:
    - modelFormat: {name: safetensors}
      autoSelect: true
  modelSizeRange: {max: 8b}
"""

SAMPLES_FINDINGS = [
    ("DEAD001", "warning", ["ClusterServingRuntime/vllm-llama-3-3-70b"]),
    ("DEAD001", "warning", ["ClusterServingRuntime/vllm-qwen3-small"]),
    ("INHR002", "error", ["ServingRuntime/team-b/team-vllm-canary"]),
    ("INHR004", "warning", ["ServingRuntime/demo-v13/demo-llama-draft"]),
    (
        "RANK001",
        "warning",
        [
            "ClusterBaseModel/qwen3-4b-demo",
            "ClusterServingRuntime/sglang-qwen3-medium",
            "ClusterServingRuntime/vllm-qwen3-small",
        ],
    ),
    ("SERV001", "warning", ["ClusterBaseModel/llama-3-1-8b-instruct-demo"]),
    ("SERV001", "warning", ["ClusterBaseModel/qwen3-32b-demo"]),
    (
        "SIZE003",
        "warning",
        ["ClusterServingRuntime/sglang-llama-3-2-compact", "ClusterServingRuntime/vllm-llama-3-2"],
    ),
    (
        "SIZE003",
        "warning",
        ["ClusterServingRuntime/sglang-llama-3-2-compact", "ClusterServingRuntime/vllm-llama-3-2-h100"],
    ),
    (
        "SIZE003",
        "warning",
        ["ClusterServingRuntime/sglang-qwen3-medium", "ClusterServingRuntime/vllm-qwen3-small"],
    ),
    (
        "SIZE003",
        "warning",
        ["ClusterServingRuntime/vllm-llama-3-2", "ClusterServingRuntime/vllm-llama-3-2-h100"],
    ),
]


SAMPLES_SUMMARY = (
    "1 error, 10 warnings (namespaces default, demo-v13, ome-demo, team-a, team-b and cluster scope)\n"
)


def summarize(document: str) -> list[tuple[str, str, list[str]]]:
    return [
        (
            f["code"],
            f["severity"],
            [
                f"{o['kind']}/{o['namespace'] + '/' if o['namespace'] else ''}{o['name']}"
                for o in f["objects"]
            ],
        )
        for f in json.loads(document)["findings"]
    ]


def test_errors_table_and_exit_status(kubectl_ome: Run, tmp_path: Path) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text(CATALOG)
    result = kubectl_ome("runtime", "lint", "-f", str(path))
    assert result.code == 1
    # Each finding at the line of the field it is about (SPEC §11).
    assert result.out == (
        f"CODE      SEVERITY   LOCATION{' ' * (len(str(path)) - 5)}   MESSAGE\n"
        f"SIZE001   error      {path}:6    "
        'ClusterBaseModel m: spec.modelParameterSize "4b" is not a parameter count and '
        "reads as 0; write a number with an optional M, B or T suffix, such as 4B\n"
        f"SIZE001   error      {path}:15   "
        'ClusterServingRuntime rt: spec.modelSizeRange.max "8b" is not a parameter '
        "count and reads as 0; write a number with an optional M, B or T suffix, such as 8B\n"
    )
    assert result.err == "2 errors, 0 warnings (namespace default and cluster scope)\n"


def test_samples_findings(kubectl_ome: Run) -> None:
    """One error, on purpose: team-b's runtime inherits from a runtime that does not exist (INHR002)."""
    table = kubectl_ome("runtime", "lint", "-f", "samples/", "--show", "DEAD001")
    assert table.code == 1
    assert table.err == SAMPLES_SUMMARY
    assert [line.split()[:2] for line in table.out.splitlines()] == [["CODE", "SEVERITY"]] + [
        [code, severity] for code, severity, _ in SAMPLES_FINDINGS
    ]
    document = kubectl_ome("runtime", "lint", "-f", "samples/", "-o", "json", "--show", "DEAD001")
    assert (document.code, document.err) == (1, "")
    assert summarize(document.out) == SAMPLES_FINDINGS
    assert list(json.loads(document.out)) == ["findings", "summarised"]
    assert json.loads(document.out)["summarised"] == []
    first = json.loads(document.out)["findings"][0]
    assert list(first) == ["code", "severity", "objects", "message", "location"]
    assert first["location"] == {"file": "samples/21-cluster-serving-runtimes.yaml", "line": 148}
    # The table and the document carry the same locations and messages.
    rows = [
        (f"{f['location']['file']}:{f['location']['line']}", f["message"])
        for f in json.loads(document.out)["findings"]
    ]
    assert [tuple(line.split(maxsplit=3)[2:]) for line in table.out.splitlines()[1:]] == rows


def test_strict_fails_on_warnings(kubectl_ome: Run) -> None:
    assert kubectl_ome("runtime", "lint", "-f", "samples/", "--strict", "-o", "json").code == 1


def test_one_namespace(kubectl_ome: Run) -> None:
    """From team-a its own runtime ranks first for every Llama model, and ome-demo's InferenceServices (which
    name the catalog runtimes) are out of scope."""
    result = kubectl_ome(
        "runtime", "lint", "-f", "samples/", "-n", "team-a", "-o", "json", "--show", "DEAD001"
    )
    assert result.code == 0
    dead = [objects for code, _, objects in summarize(result.out) if code == "DEAD001"]
    assert dead == [
        ["ClusterServingRuntime/sglang-llama-3-2-compact"],
        ["ClusterServingRuntime/srt-llama-3-2-1b-instruct-demo"],
        ["ClusterServingRuntime/srt-llama-3-2-3b-instruct-demo"],
        ["ClusterServingRuntime/vllm-llama-3-2"],
        ["ClusterServingRuntime/vllm-llama-3-2-h100"],
        ["ClusterServingRuntime/vllm-llama-3-2-legacy"],
        ["ClusterServingRuntime/vllm-llama-3-3-70b"],
        ["ClusterServingRuntime/vllm-qwen3-small"],
    ]


def test_all_namespaces_with_files_is_every_namespace_they_hold(kubectl_ome: Run) -> None:
    """With -f the files are the scope: -A judges what no flag judges (every namespace the files hold)."""
    everything = kubectl_ome("runtime", "lint", "-f", "samples/", "-A")
    assert everything == kubectl_ome("runtime", "lint", "-f", "samples/")
    assert everything.err == SAMPLES_SUMMARY


def test_no_findings(kubectl_ome: Run) -> None:
    empty = kubectl_ome("runtime", "lint", "-f", "samples/00-namespaces.yaml")
    assert empty == (0, "", "0 errors, 0 warnings (namespace default and cluster scope)\n")
    assert kubectl_ome("runtime", "lint", "-f", "samples/00-namespaces.yaml", "-o", "json") == (
        0,
        '{\n  "findings": [],\n  "summarised": []\n}\n',
        "",
    )


def test_stdin(kubectl_ome: Run) -> None:
    result = kubectl_ome("runtime", "lint", "-f", "-", "-o", "json", stdin=CATALOG)
    assert result.code == 1
    assert [code for code, _, _ in summarize(result.out)] == ["SIZE001", "SIZE001"]


def test_bad_input_is_reported_as_explain_reports_it(kubectl_ome: Run) -> None:
    for path in (
        "tests/data/cli/malformed/priority-zero.yaml",
        "tests/data/cli/malformed/invalid-yaml.yaml",
        "no/such/dir",
    ):
        lint = kubectl_ome("runtime", "lint", "-f", path)
        explain = kubectl_ome("runtime", "explain", "-f", path, "--model", "m")
        assert (lint.code, lint.out) == (1, ""), path
        assert lint.err == explain.err, path
        assert lint.err.startswith("error: "), path


def test_usage_errors(kubectl_ome: Run) -> None:
    both = kubectl_ome("runtime", "lint", "-f", "samples/", "-n", "a", "-A")
    assert (both.code, both.out) == (1, "")
    assert "error: argument -A/--all-namespaces: not allowed with argument -n/--namespace" in both.err
    wide = kubectl_ome("runtime", "lint", "-f", "samples/", "-o", "wide")
    assert wide.code == 1
    assert "argument -o/--output: invalid choice: 'wide'" in wide.err


def test_live_without_a_readable_kubeconfig_is_an_error(kubectl_ome: Run) -> None:
    result = kubectl_ome("runtime", "lint")
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith("error: cannot read the kubeconfig: ")


def test_installed_entry_point_and_help() -> None:
    result = subprocess.run(
        [str(KUBECTL_OME), "runtime", "lint", "-f", "samples/", "--strict"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout.startswith("CODE      SEVERITY   LOCATION ")
    assert "\nDEAD001   warning    -  " in result.stdout
    usage = subprocess.run(
        [str(KUBECTL_OME), "runtime", "lint", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert usage.stdout.startswith(
        "usage: kubectl ome-selector runtime lint [-f PATH]... [-k DIR]... [-n NAMESPACE | -A] "
        "[-o table|json|sarif|github] [--strict]\n"
    )
    assert "RANK002  warning" in usage.stdout


def test_offline_lint_and_what_if_load_no_client(tmp_path: Path) -> None:
    probe = textwrap.dedent("""
        import sys
        from ome_selector.cli.kubectl_ome import run
        CLIENTS = ("kubernetes", "kubernetes_asyncio", "kopf", "aiohttp")
        lint = run(["runtime", "lint", "-f", "samples/", "-o", "json"])
        gone = "clusterservingruntime/vllm-llama-3-2"
        what_if = run(["runtime", "what-if", "--delete", gone, "--against", "samples/"])
        clients = [m for m in sys.modules if m.split(".")[0] in CLIENTS]
        assert (lint, what_if) == (1, 0), (lint, what_if)  # the samples' one error: a broken chain
        assert not clients, clients
        print("PROBE-OK", file=sys.stderr)
    """)
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "KUBECONFIG": str(tmp_path / "missing"),
            **NO_PYC,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().endswith("PROBE-OK")


def test_the_usage_guide_shows_what_lint_prints_on_the_samples(kubectl_ome: Run) -> None:
    """docs/usage.md "Check a catalog change in CI": the console block is the real output, with an inheritance
    finding."""
    readme = (REPO_ROOT / "docs" / "usage.md").read_text()
    shown = readme.split("$ kubectl ome-selector runtime lint -f samples/\n", 1)[1].split("```", 1)[0]
    result = kubectl_ome("runtime", "lint", "-f", "samples/")
    assert result.out + result.err + f"$ echo $?\n{result.code}\n" == shown
    assert "\nINHR002   error      samples/22-serving-runtimes.yaml:47 " in shown
    assert "\nINHR004   warning    samples/40-demo-v13.yaml:60 " in shown


def test_the_readme_shows_what_explain_prints_on_the_samples(kubectl_ome: Run) -> None:
    """The README's first explain is the real output: the tie's note on stderr, then the table."""
    readme = (REPO_ROOT / "README.md").read_text()
    command = "$ kubectl ome-selector runtime explain -f samples/ --model llama-3-2-3b-instruct-demo\n"
    shown = readme.split(command, 1)[1].split("```", 1)[0]
    result = kubectl_ome("runtime", "explain", "-f", "samples/", "--model", "llama-3-2-3b-instruct-demo")
    assert result.code == 0
    assert result.err + result.out == shown
    assert shown.startswith("Note: selected ClusterServingRuntime sglang-llama-3-2-compact (score 4; closer")
