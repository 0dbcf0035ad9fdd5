"""`kubectl ome-selector runtime explain` without -f: the same answers from the cluster as from the files."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.controlplane import ControlPlane
from harness.kube import PLURALS
from harness.ome_data import V13_CRD_PROFILES
from ome_selector.cli.kubectl_ome import run

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "samples"
KUBECTL_OME = str(Path(__import__("sys").executable).parent / "kubectl-ome_selector")


def kubectl_ome(*args: str, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL_OME, *args, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def offline(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL_OME, *args, "-f", str(SAMPLES)], capture_output=True, text=True, check=False, timeout=60
    )


@pytest.fixture(scope="module")
def samples_applied(control_plane: ControlPlane, crd_profile: str) -> Iterator[None]:
    """The samples in the cluster; cluster-scoped ones are removed afterwards (other tests count runtimes).
    samples/ome-v1.3/ (spec.runtime.autoSync) only on CRDs that hold it; no case here depends on it."""
    control_plane.kubectl("apply", "-f", str(SAMPLES / "00-namespaces.yaml"))
    control_plane.kubectl("apply", *(["-R"] if crd_profile in V13_CRD_PROFILES else []), "-f", str(SAMPLES))
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


CASES = [
    ("--model", "llama-3-2-3b-instruct-demo", "ome-demo"),
    ("--model", "qwen3-32b-demo", "ome-demo"),
    ("--isvc", "llama-3b-h100", "ome-demo"),
    ("--isvc", "llama-3b-on-1b-runtime", "ome-demo"),
    ("--model", "support-assistant-3b", "team-a"),
    ("--model", "llama-3-3-70b-instruct-demo", "ome-demo"),
    # OME v1.3 (SPEC §6 v4): chains resolved from the server's objects as from the files.
    ("--isvc", "demo-inherited", "demo-v13"),
    ("--isvc", "demo-mode-mismatch", "demo-v13"),
    ("--isvc", "demo-disabled-by-profile", "demo-v13"),
    ("--isvc", "llama-3b-canary-runtime", "team-b"),  # a broken chain
]


def _in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("flag", "name", "namespace"), CASES, ids=[f"{c[0][2:]}-{c[1]}" for c in CASES])
def test_live_equals_offline(
    samples_applied: None,
    control_plane: ControlPlane,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    name: str,
    namespace: str,
) -> None:
    effective = [(), ("--with-effective",)] if flag == "--isvc" else [()]
    for output in ("json", "yaml", "table", "wide"):
        for extra in effective:
            args = ("runtime", "explain", flag, name, "-n", namespace, "-o", output, *extra)
            live = _in_process(capsys, *args, "--kubeconfig", str(control_plane.kubeconfig))
            files = _in_process(capsys, *args, "-f", str(SAMPLES))
            assert live == files, (output, extra)
            assert live[0] == 0, live[2]
    # The installed entry point answers the same.
    entry = kubectl_ome(
        "runtime", "explain", flag, name, "-n", namespace, kubeconfig=control_plane.kubeconfig
    )
    table = _in_process(capsys, "runtime", "explain", flag, name, "-n", namespace, "-f", str(SAMPLES))
    assert (entry.returncode, entry.stdout, entry.stderr) == table


def test_namespace_comes_from_the_context(
    samples_applied: None, control_plane: ControlPlane, tmp_path: Path
) -> None:
    config: dict[str, Any] = yaml.safe_load(control_plane.kubeconfig.read_text())
    config["contexts"][0]["context"]["namespace"] = "team-a"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    live = kubectl_ome(
        "runtime", "explain", "--model", "support-assistant-3b", "-o", "json", kubeconfig=kubeconfig
    )
    files = offline("runtime", "explain", "--model", "support-assistant-3b", "-n", "team-a", "-o", "json")
    assert live.returncode == 0, live.stderr
    assert live.stdout == files.stdout
    # Without the context's namespace, "default" holds no BaseModel of that name.
    default = kubectl_ome(
        "runtime", "explain", "--model", "support-assistant-3b", kubeconfig=control_plane.kubeconfig
    )
    assert default.returncode == 1
    assert "support-assistant-3b not found" in default.stderr


def test_lookup_errors_and_unreachable_clusters_fail_cleanly(
    samples_applied: None, control_plane: ControlPlane, tmp_path: Path
) -> None:
    missing = kubectl_ome(
        "runtime", "explain", "--isvc", "nope", "-n", "ome-demo", kubeconfig=control_plane.kubeconfig
    )
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == "error: InferenceService nope not found in namespace ome-demo\n"

    config: dict[str, Any] = yaml.safe_load(control_plane.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    unreachable = tmp_path / "unreachable"
    unreachable.write_text(yaml.safe_dump(config))
    down = kubectl_ome("runtime", "explain", "--model", "qwen3-8b-demo", kubeconfig=unreachable)
    assert (down.returncode, down.stdout) == (1, "")
    assert down.stderr.startswith("error: cannot reach the cluster")


def test_a_user_without_read_access_gets_an_error_not_a_partial_table(
    samples_applied: None, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    control_plane.kubectl("create", "serviceaccount", "reader", "-n", namespace)
    # Allowed to list ClusterServingRuntimes only: the listing stops at the first forbidden kind.
    control_plane.kubectl(
        "create",
        "clusterrole",
        f"{namespace}-partial",
        "--verb=list",
        "--resource=clusterservingruntimes.ome.io",
    )
    control_plane.kubectl(
        "create",
        "clusterrolebinding",
        f"{namespace}-partial",
        f"--clusterrole={namespace}-partial",
        f"--serviceaccount={namespace}:reader",
    )
    token = control_plane.kubectl("create", "token", "reader", "-n", namespace).stdout.strip()
    config: dict[str, Any] = yaml.safe_load(control_plane.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    kubeconfig = tmp_path / "reader"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = kubectl_ome(
        "runtime", "explain", "--model", "qwen3-8b-demo", "-n", "ome-demo", kubeconfig=kubeconfig
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("error: cannot list ome.io objects: 403 Forbidden")
    assert "servingruntimes" in result.stderr
