"""`kubectl-ome_selector runtime explain -f` end to end (SPEC §6): the command in this process, and the
installed entry point, run as a user runs it, for the JSON document, the table, stdin and what only a process
of its own can show (no kubeconfig opened, no client imported, a reader that leaves early).

Every call runs with ``KUBECONFIG`` pointing at garbage and ``HOME`` empty: offline mode must never look at a
kubeconfig. The expected documents and tables are written by hand from the SPEC and the samples' comments
(samples/README.md), not captured from the program.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_runner import NO_PYC

from harness.ome_data import duplicate_warnings
from ome_selector.cli.kubectl_ome import run as kubectl_ome_run

REPO_ROOT = Path(__file__).resolve().parents[3]
KUBECTL_OME = Path(sys.executable).parent / "kubectl-ome_selector"
OME_CATALOG = "tests/data/ome-catalog"
GOLDEN = REPO_ROOT / "tests" / "data" / "cli" / "golden"

LLAMA_LABEL = "mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0"
QWEN_LABEL = "mt:safetensors:1.0.0:Qwen3ForCausalLM:transformers:4.51.0"
LLAMA_VS_QWEN = (
    f"model format '{LLAMA_LABEL}' not in supported formats: architecture mismatch "
    "(model=LlamaForCausalLM, runtime=Qwen3ForCausalLM), "
    "framework version mismatch (model=4.45.0.dev0, runtime=4.51.0)"
)
LLAMA_VS_LLAMA_3_3 = (
    f"model format '{LLAMA_LABEL}' not in supported formats: "
    "framework version mismatch (model=4.45.0.dev0, runtime=4.47.0.dev0)"
)


@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """An environment whose kubeconfig would break anything that read it."""
    root = tmp_path_factory.mktemp("hostile")
    home = root / "home"
    home.mkdir()
    garbage = root / "kubeconfig"
    garbage.write_text("{{{ this is not a kubeconfig\n\x00")
    yield {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "KUBECONFIG": str(garbage),
        "LC_ALL": "C.UTF-8",
        **NO_PYC,
    }
    assert not any(home.iterdir()), "explain wrote into HOME"


def _installed(env: dict[str, str]) -> Any:
    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(KUBECTL_OME), *args],
            cwd=REPO_ROOT,
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    return run


@pytest.fixture
def installed_kubectl_ome(hostile_env: dict[str, str]) -> Any:
    """The installed entry point in a process of its own, as a user runs it."""
    return _installed(hostile_env)


@pytest.fixture
def kubectl_ome(
    hostile_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Any:
    """The same command in this process (what the entry point runs, without a process start each): the
    environment is the hostile one, and the current directory the repository's."""
    for name in ("KUBECONFIG", "HOME", "PATH"):
        monkeypatch.setenv(name, hostile_env[name])
    monkeypatch.chdir(REPO_ROOT)

    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        monkeypatch.setattr("sys.stdin", io.StringIO(input or ""))
        code = kubectl_ome_run(list(args))
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(["kubectl-ome_selector", *args], code, captured.out, captured.err)

    return run


def runtime(
    name: str,
    *,
    supports: bool,
    compatible: bool,
    rank: int | None,
    score: int,
    priority: int | None,
    reason: str = "",
    namespace: str | None = None,
) -> dict[str, Any]:
    """One runtime of the document; every entry of the samples and of OME's catalog has the default weights
    of 1, so its WEIGHT (weights above 0 times the priority, SPEC §6) equals its score when it has a matching
    entry."""
    kind = "ClusterServingRuntime" if namespace is None else "ServingRuntime"
    return {
        "kind": kind,
        "name": name,
        "namespace": namespace,
        "supportsModel": supports,
        "compatible": compatible,
        "rank": rank,
        "score": score,
        "priority": priority,
        "reason": reason,
        "weight": score if priority is not None else None,
        "inheritanceChain": None,
    }


def ranked(name: str, rank: int, score: int, priority: int, namespace: str | None = None) -> dict[str, Any]:
    return runtime(
        name, supports=True, compatible=True, rank=rank, score=score, priority=priority, namespace=namespace
    )


def rejected(
    name: str, reason: str, score: int = 0, priority: int | None = None, supports: bool = False
) -> dict[str, Any]:
    return runtime(
        name, supports=supports, compatible=False, rank=None, score=score, priority=priority, reason=reason
    )


def cluster_ref(kind: str, name: str) -> dict[str, Any]:
    return {"kind": kind, "name": name, "namespace": None}


# The cluster runtimes of samples/ judged for llama-3-2-3b-instruct-demo (3.21B), in table order: ranked first
# (score, then closeness of range: [2B, 4B] is 2B away, [1B, 8B] 7B), then the rest by name.
LLAMA_3B_RUNTIMES = [
    ranked("sglang-llama-3-2-compact", 1, score=4, priority=2),
    ranked("vllm-llama-3-2", 2, score=4, priority=2),
    ranked("vllm-llama-3-2-h100", 3, score=2, priority=1),
    rejected("sglang-qwen3-medium", LLAMA_VS_QWEN),
    rejected(
        "srt-llama-3-2-1b-instruct-demo", "model size 3.21B is outside supported range [500M, 2B]", 2, 1
    ),
    rejected(
        "srt-llama-3-2-3b-instruct-demo",
        "autoSelect is not enabled for the matching format safetensors",
        2,
        1,
        supports=True,
    ),
    rejected("vllm-llama-3-2-legacy", "runtime is disabled", 6, 3),
    rejected("vllm-llama-3-3-70b", LLAMA_VS_LLAMA_3_3),
    rejected("vllm-qwen3-small", LLAMA_VS_QWEN),
]


def test_done_when_the_3b_model_from_samples_as_json(installed_kubectl_ome: Any) -> None:
    """SPEC §6's shape from the installed entry point, the 1B runtime rejected for the size."""
    result = installed_kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--model", "llama-3-2-3b-instruct-demo", "-o", "json"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert json.loads(result.stdout) == {
        "model": {
            "kind": "ClusterBaseModel",
            "name": "llama-3-2-3b-instruct-demo",
            "namespace": None,
            "modelParameterSize": "3.21B",
        },
        "selected": cluster_ref("ClusterServingRuntime", "sglang-llama-3-2-compact")
        | {
            "decidedBy": "sizeRange",
            "message": "selected ClusterServingRuntime sglang-llama-3-2-compact (score 4; closer size range "
            "than vllm-llama-3-2 at score 4: [2B, 4B] vs [1B, 8B])",
        },
        "runtimes": LLAMA_3B_RUNTIMES,
    }


def test_json_keys_are_in_the_spec_order(kubectl_ome: Any) -> None:
    result = kubectl_ome(
        "runtime", "explain", "-f", "samples", "--model", "llama-3-2-3b-instruct-demo", "-o", "json"
    )
    document = json.loads(result.stdout)
    assert list(document) == ["model", "selected", "runtimes"]
    assert list(document["model"]) == ["kind", "name", "namespace", "modelParameterSize"]
    assert list(document["runtimes"][0]) == [
        "kind",
        "name",
        "namespace",
        "supportsModel",
        "compatible",
        "rank",
        "score",
        "priority",
        "reason",
        "weight",
        "inheritanceChain",
    ]


def test_yaml_is_the_same_document(kubectl_ome: Any) -> None:
    as_json = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--model", "llama-3-2-3b-instruct-demo", "-o", "json"
    )
    as_yaml = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--model", "llama-3-2-3b-instruct-demo", "-o", "yaml"
    )
    assert as_yaml.returncode == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
    assert as_yaml.stdout.startswith("model:\n  kind: ClusterBaseModel\n")


def golden(name: str) -> str:
    """A hand-written expected output from tests/data/cli/golden/."""
    return (GOLDEN / name).read_text()


def test_table(installed_kubectl_ome: Any) -> None:
    result = installed_kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--model", "llama-3-2-3b-instruct-demo"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == golden("samples-llama-3-2-3b-instruct.table.txt")


def test_wide_table_in_a_namespace_with_its_own_runtime(kubectl_ome: Any) -> None:
    """team-a's ServingRuntime ranks first despite its lower score; RANGE shows open bounds as §3 has it."""
    result = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--isvc", "support-assistant", "-n", "team-a", "-o", "wide"
    )
    assert result.returncode == 0, result.stderr
    # The scope decided (SPEC §4 step 1), not the score: explain says so, as the condition does (SPEC §5).
    assert result.stderr == (
        "Note: selected ServingRuntime team-vllm-llama-3-2 (score 2; namespace-scoped before "
        "ClusterServingRuntime sglang-llama-3-2-compact at score 4)\n"
    )
    assert result.stdout == golden("samples-isvc-support-assistant-team-a.wide.txt")


def _document(kubectl_ome: Any, *args: str) -> dict[str, Any]:
    result = kubectl_ome("runtime", "explain", "-f", "samples/", "-o", "json", *args)
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _summary(document: dict[str, Any]) -> list[tuple[str, int | None, str]]:
    return [(r["name"], r["rank"], r["reason"]) for r in document["runtimes"]]


def test_isvc_accelerator_class_takes_part(kubectl_ome: Any) -> None:
    document = _document(kubectl_ome, "--isvc", "llama-3b-h100", "-n", "ome-demo")
    assert document["selected"] == cluster_ref("ClusterServingRuntime", "vllm-llama-3-2-h100") | {
        "decidedBy": "only",
        "message": "selected ClusterServingRuntime vllm-llama-3-2-h100 (score 2)",
    }
    accelerator = "runtime does not support the required accelerator class"
    summary = _summary(document)
    assert summary[0] == ("vllm-llama-3-2-h100", 1, "")
    assert {reason for _, _, reason in summary[1:]} == {accelerator, "runtime is disabled"}
    assert ("vllm-llama-3-2-legacy", None, "runtime is disabled") in summary  # disabled is checked first


def test_size_just_above_an_upper_bound(kubectl_ome: Any) -> None:
    document = _document(kubectl_ome, "--isvc", "qwen3-8b-auto", "-n", "ome-demo")
    assert document["model"]["modelParameterSize"] == "8.19B"
    assert document["selected"] == cluster_ref("ClusterServingRuntime", "sglang-qwen3-medium") | {
        "decidedBy": "only",
        "message": "selected ClusterServingRuntime sglang-qwen3-medium (score 2)",
    }
    rows = {r["name"]: r for r in document["runtimes"]}
    assert rows["vllm-qwen3-small"] == rejected(
        "vllm-qwen3-small", "model size 8.19B is outside supported range (-inf, 8B]", 2, 1
    )


def test_model_without_a_size_passes_every_range_and_ties_break_by_name(kubectl_ome: Any) -> None:
    document = _document(kubectl_ome, "--model", "qwen3-4b-demo")
    assert document["model"]["modelParameterSize"] is None
    assert document["runtimes"][:2] == [
        ranked("sglang-qwen3-medium", 1, score=2, priority=1),
        ranked("vllm-qwen3-small", 2, score=2, priority=1),
    ]


def test_nothing_auto_selectable(kubectl_ome: Any) -> None:
    document = _document(kubectl_ome, "--isvc", "qwen3-32b-auto", "-n", "ome-demo")
    assert document["selected"] is None
    assert all(r["rank"] is None and r["compatible"] is False for r in document["runtimes"])
    rows = {r["name"]: r["reason"] for r in document["runtimes"]}
    assert rows["sglang-qwen3-medium"] == "model size 32.76B is outside supported range [8B, 16B]"
    assert rows["vllm-qwen3-small"] == "model size 32.76B is outside supported range (-inf, 8B]"


def test_a_namespaced_base_model_resolves_first(kubectl_ome: Any) -> None:
    document = _document(kubectl_ome, "--model", "support-assistant-3b", "-n", "team-a")
    assert document["model"] == {
        "kind": "BaseModel",
        "name": "support-assistant-3b",
        "namespace": "team-a",
        "modelParameterSize": "3.21B",
    }
    assert document["selected"] == {
        "kind": "ServingRuntime",
        "name": "team-vllm-llama-3-2",
        "namespace": "team-a",
        "decidedBy": "scope",
        "message": "selected ServingRuntime team-vllm-llama-3-2 (score 2; namespace-scoped before "
        "ClusterServingRuntime sglang-llama-3-2-compact at score 4)",
    }


def test_isvc_naming_a_runtime_says_so_on_stderr(kubectl_ome: Any) -> None:
    result = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--isvc", "llama-3b-on-1b-runtime", "-n", "ome-demo"
    )
    assert result.returncode == 0
    assert result.stderr == (
        "Note: spec.runtime is explicit; automatic selection below is hypothetical.\n"
        "Note: InferenceService ome-demo/llama-3b-on-1b-runtime names runtime "
        "srt-llama-3-2-1b-instruct-demo: "
        "RuntimeSpecified: using specified ClusterServingRuntime "
        "srt-llama-3-2-1b-instruct-demo; it does not declare support for model llama-3-2-3b-instruct-demo: "
        "model size 3.21B "
        "is outside supported range [500M, 2B]\n"
    )
    assert result.stdout.splitlines()[1].startswith("sglang-llama-3-2-compact ")  # auto-selection still shown


def test_isvc_naming_a_missing_runtime(kubectl_ome: Any) -> None:
    result = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--isvc", "llama-3b-missing-runtime", "-n", "ome-demo"
    )
    assert result.returncode == 0
    assert "names runtime vllm-llama-3-2-turbo" in result.stderr
    assert result.stderr.rstrip().endswith(
        "RuntimeNotFound: runtime vllm-llama-3-2-turbo not found in namespace ome-demo or at cluster scope"
    )


def test_disabled_model_is_shown(kubectl_ome: Any) -> None:
    result = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--isvc", "llama-8b-retired", "-n", "ome-demo"
    )
    assert result.returncode == 0
    assert result.stderr == (
        "Warning: model llama-3-1-8b-instruct-demo is disabled; its InferenceServices report ModelDisabled\n"
    )
    assert result.stdout.startswith("RUNTIME ")


def test_pending_model_is_shown(kubectl_ome: Any) -> None:
    result = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--model", "llama-3-3-70b-instruct-demo", "-o", "json"
    )
    assert result.returncode == 0
    assert (
        "model llama-3-3-70b-instruct-demo has no modelFormat yet; runtime selection waits for it"
        in result.stderr
    )
    document = json.loads(result.stdout)
    assert document["selected"] is None
    assert {r["reason"] for r in document["runtimes"]} == {
        "model llama-3-3-70b-instruct-demo has no modelFormat yet"
    }


@pytest.mark.parametrize("output", ["table", "wide", "json", "yaml"])
def test_no_runtimes_at_all(kubectl_ome: Any, output: str) -> None:
    result = kubectl_ome(
        "runtime",
        "explain",
        "-f",
        "samples/10-cluster-base-models.yaml",
        "--model",
        "qwen3-8b-demo",
        "-n",
        "x",
        "-o",
        output,
    )
    assert result.returncode == 0
    assert result.stderr == "No serving runtimes found in namespace x or at cluster scope.\n"
    if output in ("table", "wide"):
        assert result.stdout == ""
        return
    document = json.loads(result.stdout) if output == "json" else yaml.safe_load(result.stdout)
    assert document == {
        "model": {
            "kind": "ClusterBaseModel",
            "name": "qwen3-8b-demo",
            "namespace": None,
            "modelParameterSize": "8.19B",
        },
        "selected": None,
        "runtimes": [],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--model", "mistral-7b-instruct-v0-3"],
            "error: model mistral-7b-instruct-v0-3 not found: "
            "no BaseModel in namespace default and no ClusterBaseModel\n",
        ),
        (
            ["--isvc", "mistral-7b", "-n", "ome-demo"],
            "error: model mistral-7b-instruct-v0-3 not found: "
            "no BaseModel in namespace ome-demo and no ClusterBaseModel\n",
        ),
        (
            ["--isvc", "llama-3b-auto"],
            "error: InferenceService llama-3b-auto not found in namespace default\n",
        ),
        (
            ["--model", "support-assistant-3b"],
            "error: model support-assistant-3b not found: "
            "no BaseModel in namespace default and no ClusterBaseModel\n",
        ),
    ],
)
def test_lookup_errors_exit_1(kubectl_ome: Any, args: list[str], message: str) -> None:
    result = kubectl_ome("runtime", "explain", "-f", "samples/", *args)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message)


def test_isvc_without_spec_model(kubectl_ome: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "isvc.yaml"
    manifest.write_text(
        "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: bare}\nspec: {}\n"
    )
    result = kubectl_ome("runtime", "explain", "-f", str(manifest), "--isvc", "bare")
    assert (result.returncode, result.stdout) == (1, "")
    assert (
        result.stderr
        == "error: InferenceService default/bare has no spec.model; runtime selection ignores it\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["runtime", "explain", "-f", "samples/"], "one of the arguments --model --isvc is required"),
        (
            ["runtime", "explain", "-f", "samples/", "--model", "a", "--isvc", "b"],
            "argument --isvc: not allowed with argument --model",
        ),
        (
            ["runtime", "explain", "-f", "samples/", "--model", "a", "-o", "names"],
            "argument -o/--output: invalid choice",
        ),
        (["runtime", "explain", "--model", "a", "--bogus"], "unrecognized arguments: --bogus"),
        (["runtime", "explain", "-f", "samples/", "--model", ""], "argument --model: must not be empty"),
        (["runtime"], "the following arguments are required: COMMAND"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_usage_errors_exit_1(kubectl_ome: Any, args: list[str], message: str) -> None:
    result = kubectl_ome(*args)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("usage: kubectl ome-selector")
    assert f"error: {message}" in result.stderr


def test_file_errors_exit_1(kubectl_ome: Any) -> None:
    result = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "-f", "no/such/dir", "--model", "qwen3-8b-demo"
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        'error: the path "no/such/dir" does not exist\n',
    )
    bad = "tests/data/cli/malformed/priority-zero.yaml"
    result = kubectl_ome("runtime", "explain", "-f", "samples/", "-f", bad, "--model", "qwen3-8b-demo")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"error: {bad}: ClusterServingRuntime bad-priority: spec.supportedModelFormats[0].priority: "
        "must be greater than or equal to 1, not 0 (int)\n"
    )


def test_samples_named_twice_in_different_ways_are_read_once(kubectl_ome: Any) -> None:
    once = kubectl_ome("runtime", "explain", "-f", "samples/", "--model", "qwen3-8b-demo", "-o", "json")
    again = kubectl_ome(
        "runtime",
        "explain",
        "-f",
        "samples",
        "-f",
        "./samples/",
        "-f",
        "samples/21-cluster-serving-runtimes.yaml",
        "--model",
        "qwen3-8b-demo",
        "-o",
        "json",
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == once.stdout


def test_duplicate_across_files_names_both(kubectl_ome: Any, tmp_path: Path) -> None:
    """An object defined twice is read as kubectl apply leaves it, the later one, with a warning that names
    both files (SPEC §6); the copy of samples/11-base-models.yaml repeats its one BaseModel."""
    copy = tmp_path / "copy.yaml"
    copy.write_text((REPO_ROOT / "samples" / "11-base-models.yaml").read_text())
    alone = kubectl_ome("runtime", "explain", "-f", "samples/", "--model", "qwen3-8b-demo")
    result = kubectl_ome("runtime", "explain", "-f", "samples/", "-f", str(copy), "--model", "qwen3-8b-demo")
    assert (result.returncode, result.stdout) == (0, alone.stdout)
    assert result.stderr == (
        "Warning: BaseModel team-a/support-assistant-3b is defined twice: "
        f"in samples/11-base-models.yaml and in {copy}; the last one is used, as kubectl apply leaves it\n"
    )


def test_stdin(installed_kubectl_ome: Any) -> None:
    manifests = "\n---\n".join(
        (REPO_ROOT / "samples" / name).read_text()
        for name in ("10-cluster-base-models.yaml", "21-cluster-serving-runtimes.yaml")
    )
    result = installed_kubectl_ome(
        "runtime", "explain", "-f", "-", "--model", "qwen3-8b-demo", "-o", "json", input=manifests
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["selected"]["name"] == "sglang-qwen3-medium"


def test_without_f_an_unreadable_kubeconfig_is_an_error_not_a_table(kubectl_ome: Any) -> None:
    result = kubectl_ome("runtime", "explain", "--model", "qwen3-8b-demo")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("error: cannot read the kubeconfig: ")


def test_help_is_prefixed_kubectl_ome(kubectl_ome: Any) -> None:
    top = kubectl_ome("--help")
    assert (top.returncode, top.stderr) == (0, "")
    assert top.stdout.startswith("usage: kubectl ome-selector ")
    explain = kubectl_ome("runtime", "explain", "--help")
    assert explain.returncode == 0
    assert explain.stdout.startswith(
        "usage: kubectl ome-selector runtime explain (--model NAME | --isvc NAME) [-n NAMESPACE] "
        "[-f PATH]... [-k DIR]...\n"
        "       [-o table|wide|json|yaml] [--with-effective] [--runtime-lookup v1.3|legacy] "
        "[--kubeconfig PATH]\n"
        "       [--context NAME] [-h]"
    )
    assert (
        "kubectl ome-selector runtime explain -f samples/ --model llama-3-2-3b-instruct-demo"
        in explain.stdout
    )


def test_offline_mode_opens_no_kubeconfig_and_imports_no_client(hostile_env: dict[str, str]) -> None:
    """Stronger than surviving a garbage kubeconfig: record every file the process opens."""
    probe = textwrap.dedent("""
        import os, sys
        opened = []
        sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
        from ome_selector.cli.kubectl_ome import run
        model = "llama-3-2-3b-instruct-demo"
        status = run(["runtime", "explain", "-f", "samples/", "--model", model, "-o=json"])
        # Inheritance chains too are resolved from the files alone (SPEC §6 v4).
        args = ["--isvc", "demo-inherited", "-n", "demo-v13", "--with-effective"]
        status += run(["runtime", "explain", "-f", "samples/", *args, "-o=json"])
        home, kubeconfig = os.environ["HOME"], os.environ["KUBECONFIG"]
        touched = [p for p in opened if p == kubeconfig or p.startswith(home) or ".kube" in p]
        clients = [m for m in sys.modules if m.split(".")[0] in ("kubernetes", "kubernetes_asyncio", "kopf")]
        assert status == 0, status
        assert not touched, touched
        assert not clients, clients
        print("PROBE-OK", file=sys.stderr)
    """)
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        env=hostile_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == "PROBE-OK"  # after the notes for the named runtime


# --- OME's published catalog (vendored under tests/data/ome-catalog) ---------------------------------------

QWEN3_RUNTIME_FILES = [
    f"{OME_CATALOG}/runtimes/srt/Qwen/{name}"
    for name in (
        "Qwen3-32B-rt.yaml",
        "qwen3-0-6b-rt.yaml",
        "qwen3-4b-rt.yaml",
        "qwen3-8b-rt.yaml",
        "qwen3-embedding-4b-rt.yaml",
    )
]


def _with_files(files: list[str]) -> list[str]:
    return [arg for path in files for arg in ("-f", path)]


def test_ome_catalog_qwen3_32b(kubectl_ome: Any) -> None:
    """OME's qwen3-32b (32B) against its Qwen3 runtimes: only srt-qwen3-32b ([30B, 34B], autoSelect) passes;
    the others' ranges reject it before their autoSelect: false matters; the embedding runtime wants
    transformers 4.51.2."""
    args = _with_files([*QWEN3_RUNTIME_FILES, f"{OME_CATALOG}/models"])
    result = kubectl_ome("runtime", "explain", *args, "--model", "qwen3-32b", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "model": {
            "kind": "ClusterBaseModel",
            "name": "qwen3-32b",
            "namespace": None,
            "modelParameterSize": "32B",
        },
        "selected": cluster_ref("ClusterServingRuntime", "srt-qwen3-32b")
        | {"decidedBy": "only", "message": "selected ClusterServingRuntime srt-qwen3-32b (score 2)"},
        "runtimes": [
            ranked("srt-qwen3-32b", 1, score=2, priority=1),
            rejected("srt-qwen3-0-6b", "model size 32B is outside supported range [0.5B, 1B]", 2, 1),
            rejected("srt-qwen3-4b", "model size 32B is outside supported range [3B, 5B]", 2, 1),
            rejected("srt-qwen3-8b", "model size 32B is outside supported range [7B, 9B]", 2, 1),
            rejected(
                "srt-qwen3-embedding-4b",
                f"model format '{QWEN_LABEL}' not in supported formats: "
                "framework version mismatch (model=4.51.0, runtime=4.51.2)",
            ),
        ],
    }
    table = kubectl_ome("runtime", "explain", *args, "--model", "qwen3-32b", "-o", "wide")
    assert table.stdout == golden("ome-catalog-qwen3-32b.wide.txt")


def test_ome_catalog_as_published_reads_duplicate_runtime_names_as_kubectl_apply(kubectl_ome: Any) -> None:
    """The whole catalog directory (kustomization.yaml files skipped) holds four runtime names twice; explain
    keeps the later file of each in kubectl's order and says so once per name, after its own notes."""
    result = kubectl_ome("runtime", "explain", "-f", OME_CATALOG, "--model", "qwen3-32b", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["runtimes"]) == 201
    assert result.stderr.splitlines() == duplicate_warnings(OME_CATALOG)


def test_ome_catalog_models_without_metadata(kubectl_ome: Any) -> None:
    """OME's llama-3-2-3b-instruct has no modelFormat until the agent reads it: all vLLM runtimes say so."""
    args = _with_files([f"{OME_CATALOG}/runtimes/vllm", f"{OME_CATALOG}/models/meta"])
    result = kubectl_ome("runtime", "explain", *args, "--model", "llama-3-2-3b-instruct", "-o", "json")
    assert result.returncode == 0
    assert "has no modelFormat yet" in result.stderr
    document = json.loads(result.stdout)
    runtime_files = list((REPO_ROOT / OME_CATALOG / "runtimes" / "vllm").glob("*.yaml"))
    assert len(document["runtimes"]) == len(runtime_files) == 17
    names = [r["name"] for r in document["runtimes"]]
    assert names == sorted(names)
    assert {r["reason"] for r in document["runtimes"]} == {
        "model llama-3-2-3b-instruct has no modelFormat yet"
    }


def test_a_reader_that_leaves_early_gets_no_traceback(hostile_env: dict[str, str], tmp_path: Path) -> None:
    """`kubectl ome-selector runtime explain ... | head -1`: no BrokenPipeError noise on stderr."""
    entry = {"modelFormat": {"name": "safetensors"}, "autoSelect": True}
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "ClusterServingRuntime",
            "metadata": {"name": f"rt-{i:05d}"},
            "spec": {"supportedModelFormats": [entry]},
        }
        for i in range(4000)
    ]
    model = {"modelFormat": {"name": "safetensors"}}
    items.append(
        {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": "m"}, "spec": model}
    )
    manifest = tmp_path / "many.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    with subprocess.Popen(
        [str(KUBECTL_OME), "runtime", "explain", "-f", str(manifest), "--model", "m", "-o", "wide"],
        env=hostile_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        assert process.stdout.readline().startswith("RUNTIME ")
        process.stdout.close()
        stderr = process.stderr.read()
        assert process.wait(timeout=60) == 0
    # The 4,000 runtimes tie on score: the name decided (SPEC §6), and nothing else is said.
    assert stderr == (
        "Note: selected ClusterServingRuntime rt-00000 (score 1; tied with rt-00001 on score, "
        "first by name)\n"
    )
