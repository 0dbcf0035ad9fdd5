"""samples/ applies cleanly on a real API server, and explain reads the server's objects as it reads files.

Both CRD profiles run these tests (OME's own CRDs under tests/integration/beside_ome/): samples/ applies on
either; samples/ome-v1.3/ needs fields that OME's CRDs before v1.3 do not have, and is rejected there.

The samples use fixed, partly cluster-wide names, so apart from their two namespaces nothing is persisted: the
rest is applied with ``--dry-run=server`` (full admission, defaulting and strict field validation, no
storage), which keeps this test independent of the others sharing the control plane.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.controlplane import ControlPlane
from harness.ome_data import V13_CRD_PROFILES

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "samples"
V13_SAMPLES = SAMPLES / "ome-v1.3"
KUBECTL_OME = Path(sys.executable).parent / "kubectl-ome_selector"


def _sample_objects() -> list[dict[str, Any]]:
    objects = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        objects += [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    return objects


def _identity(obj: dict[str, Any]) -> tuple[str, str | None, str]:
    metadata = obj["metadata"]
    return obj["kind"], metadata.get("namespace"), metadata["name"]


def _contains(whole: Any, part: Any) -> bool:
    """Whether ``part`` survives in ``whole``: all keys and list items of ``part`` are there, maybe more."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and _contains(whole[k], v) for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(whole) == len(part) and all(map(_contains, whole, part))
    return bool(whole == part)


@pytest.fixture(scope="module")
def applied(control_plane: ControlPlane) -> list[dict[str, Any]]:
    """The samples as the API server returns them after admission and defaulting (dry run)."""
    control_plane.kubectl("apply", "-f", str(SAMPLES / "00-namespaces.yaml"))
    result = control_plane.kubectl(
        "apply", "--dry-run=server", "--validate=strict", "-f", str(SAMPLES), "-o", "json", check=False
    )
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr  # e.g. unknown or duplicate fields
    document = json.loads(result.stdout)
    items: list[dict[str, Any]] = document["items"] if document.get("kind") == "List" else [document]
    return items


def test_every_sample_is_accepted_in_file_order(applied: list[dict[str, Any]]) -> None:
    assert [_identity(obj) for obj in applied] == [_identity(obj) for obj in _sample_objects()]


def test_v13_samples_apply_only_where_the_crds_have_the_fields(
    control_plane: ControlPlane, applied: list[dict[str, Any]], crd_profile: str
) -> None:
    """samples/README.md says which samples need v1.3 fields: those in samples/ome-v1.3/, and only those."""
    result = control_plane.kubectl(
        "apply", "--dry-run=server", "--validate=strict", "-f", str(V13_SAMPLES), check=False
    )
    if crd_profile in V13_CRD_PROFILES:
        assert result.returncode == 0, result.stderr
        assert "Warning" not in result.stderr, result.stderr
        return
    # OME's CRDs at cfa05c69: strict field validation rejects spec.runtime.autoSync.
    assert result.returncode != 0
    assert 'unknown field "spec.runtime.autoSync"' in result.stderr, result.stderr
    (file,) = V13_SAMPLES.glob("*.yaml")
    documents = [doc for doc in yaml.safe_load_all(file.read_text()) if doc]
    assert result.stderr.count(f'error when creating "{file}"') == len(documents), result.stderr


def test_nothing_is_pruned_and_defaults_are_filled_in(applied: list[dict[str, Any]]) -> None:
    returned = {_identity(obj): obj for obj in applied}
    entry = returned["ClusterServingRuntime", None, "vllm-llama-3-2"]["spec"]["supportedModelFormats"][0]
    assert (entry["modelFormat"]["weight"], entry["modelFormat"]["operator"]) == (1, "Equal")
    assert (
        returned["InferenceService", "ome-demo", "llama-3b-auto"]["spec"]["model"]["kind"]
        == "ClusterBaseModel"
    )
    for sample in _sample_objects():
        if sample["kind"] == "Namespace":
            continue
        assert _contains(returned[_identity(sample)]["spec"], sample["spec"]), _identity(sample)


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "llama-3-2-3b-instruct-demo"],
        ["--isvc", "llama-3b-h100", "-n", "ome-demo"],
        ["--isvc", "qwen3-32b-auto", "-n", "ome-demo"],
        ["--isvc", "support-assistant", "-n", "team-a"],
        ["--model", "qwen3-4b-demo", "-n", "team-a"],
    ],
)
def test_explain_reads_the_servers_objects_as_it_reads_the_files(
    applied: list[dict[str, Any]], args: list[str], tmp_path: Path
) -> None:
    """The server's defaults (weight, operator, priority, ...) and the loader's agree: the same document."""
    served = tmp_path / "served.json"
    served.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": applied}))

    def explain(path: Path) -> Any:
        result = subprocess.run(
            [str(KUBECTL_OME), "runtime", "explain", "-f", str(path), "-o", "json", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    assert explain(served) == explain(SAMPLES)
