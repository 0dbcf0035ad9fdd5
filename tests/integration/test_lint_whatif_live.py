"""`kubectl ome-selector runtime lint` and `what-if` without files: the same answers from a real API server
holding the samples as from the sample files (SPEC §11)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.controlplane import ControlPlane
from harness.kube import PLURALS
from ome_selector.cli.kubectl_ome import run

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "samples"
CLOSER = str(REPO_ROOT / "tests" / "data" / "whatif" / "sglang-llama-3-2-small.yaml")
KUBECTL_OME = str(Path(sys.executable).parent / "kubectl-ome_selector")
SAMPLE_NAMESPACES = {"ome-demo", "team-a", "team-b", "demo-v13"}

Result = tuple[int, str, str]


@pytest.fixture(scope="module")
def samples_applied(control_plane: ControlPlane) -> Iterator[None]:
    """The samples in the cluster; cluster-scoped ones are removed afterwards (other tests count runtimes)."""
    control_plane.kubectl("apply", "-f", str(SAMPLES / "00-namespaces.yaml"))
    control_plane.kubectl("apply", "-R", "-f", str(SAMPLES))  # samples/ome-v1.3/ too, as -f reads them
    yield
    for path in sorted(SAMPLES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document["kind"].startswith("Cluster"):
                control_plane.kubectl(
                    "delete",
                    f"{PLURALS[document['kind']]}.ome.io",
                    document["metadata"]["name"],
                    "--wait=false",
                )


@pytest.fixture
def both(samples_applied: None, control_plane: ControlPlane, capsys: pytest.CaptureFixture[str]) -> Any:
    """``both("runtime", "lint", ...)``: (live, from the sample files), each (exit status, stdout, stderr)."""

    def invoke(*args: str, files_flag: str) -> tuple[Result, Result]:
        results = []
        for extra in (("--kubeconfig", str(control_plane.kubeconfig)), (files_flag, str(SAMPLES))):
            code = run([*args, *extra])
            captured = capsys.readouterr()
            results.append((code, captured.out, captured.err))
        return results[0], results[1]

    return invoke


def without_locations(result: Result, output: str) -> tuple[Result, list[str]]:
    """``result`` with the findings' locations taken out, and those locations: the one thing a finding on an
    object read from the cluster lacks (SPEC §11: no file)."""
    code, out, err = result
    if output == "json":
        document = json.loads(out)
        locations = [json.dumps(finding.pop("location")) for finding in document["findings"]]
        return (code, json.dumps(document), err), locations
    rows = [line.split(None, 3) for line in out.splitlines()]
    return (code, json.dumps([row[:2] + row[3:] for row in rows]), err), [row[2] for row in rows[1:]]


@pytest.mark.parametrize("output", ["table", "json"])
@pytest.mark.parametrize(
    "namespace", [["-n", "ome-demo"], ["-n", "team-a"], ["-n", "default"], ["-n", "demo-v13"]]
)
def test_lint_live_equals_files(both: Any, namespace: list[str], output: str) -> None:
    live, files = both("runtime", "lint", *namespace, "-o", output, files_flag="-f")
    (live_bare, live_at), (files_bare, files_at) = (
        without_locations(live, output),
        without_locations(files, output),
    )
    assert live_bare == files_bare
    assert live[0] == 0, live[2]
    assert "SIZE003" in live[1]
    # The same findings; live ones say they have no file, those from files name theirs ("-": the DEAD001
    # summary of the table).
    nowhere = "(cluster)" if output == "table" else "null"
    file_prefix = str(SAMPLES) if output == "table" else f'{{"file": "{SAMPLES}/'
    assert live_at
    assert all(at in (nowhere, "-") for at in live_at), live_at
    assert all(at.startswith(file_prefix) or at == "-" for at in files_at), files_at
    assert [at == "-" for at in live_at] == [at == "-" for at in files_at]


def test_lint_sees_inheritance_live_as_from_files(both: Any) -> None:
    live, files = both("runtime", "lint", "-n", "demo-v13", "-o", "json", files_flag="-f")
    assert without_locations(live, "json")[0] == without_locations(files, "json")[0]
    codes = [f["code"] for f in json.loads(live[1])["findings"]]
    assert codes.count("INHR004") == 1


def test_lint_live_takes_the_context_namespace(both: Any) -> None:
    # The test kubeconfig's context names no namespace: "default", as with -n default and the files.
    live, _ = both("runtime", "lint", "-o", "json", files_flag="-f")
    _, files = both("runtime", "lint", "-n", "default", "-o", "json", files_flag="-f")
    assert without_locations(live, "json")[0] == without_locations(files, "json")[0]


LIVE_TYPO = """\
apiVersion: ome.io/v1beta1
kind: ServingRuntime
metadata:
  name: typo
  namespace: lint-typo
  annotations:
    ome-selector.ome.io/lint-disable: DEAD001
spec:
  supportedModelFormat:
    - modelFormat: {name: safetensors}
      autoSelect: true
"""


def test_lint_live_reports_a_field_the_crd_keeps_but_declares_not(
    control_plane: ControlPlane, capsys: pytest.CaptureFixture[str]
) -> None:
    """Our CRD keeps what it does not type (x-kubernetes-preserve-unknown-fields): a typo stays in the
    cluster, and lint reports it from there, without a file; the object's annotation switches DEAD001 off."""
    control_plane.kubectl("create", "namespace", "lint-typo")
    control_plane.kubectl("apply", "-f", "-", input=LIVE_TYPO)
    try:
        code = run(["runtime", "lint", "-n", "lint-typo", "--kubeconfig", str(control_plane.kubeconfig)])
        captured = capsys.readouterr()
        assert code == 1
        # Cluster-scoped objects of other tests on this control plane are linted too: only the typo is ours.
        assert [line for line in captured.out.splitlines() if line.startswith("SCHM001")] == [
            "SCHM001   error      (cluster)   ServingRuntime lint-typo/typo: unknown field "
            "spec.supportedModelFormat: no CRD declares it, so it is dropped or rejected and never read; "
            "did you mean supportedModelFormats?"
        ]
        github = run(
            [
                "runtime",
                "lint",
                "-n",
                "lint-typo",
                "-o",
                "github",
                "--kubeconfig",
                str(control_plane.kubeconfig),
            ]
        )
        assert github == 1
        annotations = capsys.readouterr().out.splitlines()
        ours = "::error title=SCHM001::ServingRuntime lint-typo/typo: "
        errors = [line for line in annotations if line.startswith("::error ")]
        assert errors != []
        assert all(line.startswith(ours) for line in errors)
    finally:
        control_plane.kubectl("delete", "namespace", "lint-typo", "--wait=false")


WHAT_IF_CASES = {
    "closer-range": ["-f", CLOSER],
    "delete-the-qwen3-runtimes": [
        "--delete",
        "clusterservingruntime/sglang-qwen3-medium",
        "--delete",
        "clusterservingruntime/vllm-qwen3-small",
    ],
    "delete-a-named-runtime": ["--delete", "clusterservingruntime/srt-llama-3-2-1b-instruct-demo"],
    "delete-team-a-runtime": ["--delete", "servingruntime/team-vllm-llama-3-2", "-n", "team-a"],
    # SPEC §11 v4: deleting a parent breaks its children's chains.
    "delete-the-profile": ["--delete", "servingruntime/demo-llama-profile", "-n", "demo-v13"],
    "legacy-lookup": [
        "--delete", "servingruntime/demo-llama-profile", "-n", "demo-v13", "--runtime-lookup", "legacy",
    ],
}  # fmt: skip


@pytest.mark.parametrize("output", ["table", "json"])
@pytest.mark.parametrize("case", list(WHAT_IF_CASES))
def test_what_if_live_equals_files(both: Any, case: str, output: str) -> None:
    args = WHAT_IF_CASES[case]
    namespace = [] if "-n" in args else ["-n", "ome-demo"]
    live, files = both("runtime", "what-if", *args, *namespace, "-o", output, files_flag="--against")
    assert live == files
    assert live[0] == 0, live[2]
    if output == "json":
        changes = json.loads(live[1])["changes"]
        assert changes, "every case changes some InferenceService"
        assert all(
            c["after"]["reason"] in ("RuntimeSelected", "RuntimeNotFound", "RuntimeInheritanceError")
            for c in changes
        )


def test_what_if_all_namespaces(both: Any) -> None:
    """-A lists every namespace; other tests' namespaces may hold InferenceServices too, so compare the
    samples' own."""
    live, files = both(
        "runtime",
        "what-if",
        *WHAT_IF_CASES["delete-the-qwen3-runtimes"],
        "-A",
        "-o",
        "json",
        files_flag="--against",
    )
    assert (live[0], live[2]) == (files[0], files[2]) == (0, "")
    live_doc, files_doc = json.loads(live[1]), json.loads(files[1])
    ours = [c for c in live_doc["changes"] if c["namespace"] in SAMPLE_NAMESPACES]
    assert ours == files_doc["changes"]
    assert [c["name"] for c in ours] == ["qwen3-4b-auto", "qwen3-8b-auto"]
    assert live_doc["unchanged"] >= files_doc["unchanged"] == 18


def test_what_if_live_errors_and_the_ci_gate(samples_applied: None, control_plane: ControlPlane) -> None:
    def kubectl_ome(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL_OME, "runtime", "what-if", *args, "--kubeconfig", str(control_plane.kubeconfig)],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    gate = kubectl_ome("-f", CLOSER, "-n", "ome-demo", "--fail-on-change")
    assert gate.returncode == 3, gate.stderr
    assert gate.stdout.splitlines()[1].split()[:2] == ["ome-demo", "llama-1b-auto"]
    missing = kubectl_ome("--delete", "clusterservingruntime/nope", "-n", "ome-demo")
    assert (missing.returncode, missing.stdout, missing.stderr) == (
        1,
        "",
        "error: cannot delete ClusterServingRuntime nope: it does not exist\n",
    )
