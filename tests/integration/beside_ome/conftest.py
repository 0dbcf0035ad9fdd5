"""The other CRD profiles: OME's own CRDs, not ours (SPEC §0), once per vendored snapshot (harness.ome_data:
tests/data/ome-crds at OME cfa05c69, profile "ome"; tests/data/ome-2026-08-21/crds at OME 5e4857e, profile
"ome-5e4857e").

`control_plane` and `api_client` are overridden for the tests of this directory, so every fixture built on
them (`namespace`, `running_operator`, `cluster_objects`, ...) runs against a control plane that has OME's
CRDs; `ome_snapshot` is parametrized, so every test here runs on each snapshot's CRDs (pytest groups the tests
by snapshot: one control plane at a time). The tests are a representative subset of the main suite's,
imported into test_beside_ome.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.controlplane import ControlPlane, running_control_plane
from harness.crds import ome_crd_documents, wait_served
from harness.etcd_seeds import etcd_seed
from harness.kube import api_client_for
from harness.ome_data import SNAPSHOTS, OmeSnapshot

HERE = Path(__file__).resolve().parent
#: explain's cases run here too: an InferenceService with an accelerator class, a model no runtime serves.
EXPLAIN_CASES = {"isvc-llama-3b-h100", "model-qwen3-32b-demo"}


def _case(name: str) -> str:
    """explain's case in a test's name, without the snapshot's id pytest joins to it."""
    case = name.split("[", 1)[-1].rstrip("]")
    for snapshot in SNAPSHOTS:
        case = case.removeprefix(f"{snapshot.id}-").removesuffix(f"-{snapshot.id}")
    return case


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep two of explain's parametrized cases in this profile (they read nothing the CRDs change)."""
    dropped = [
        item
        for item in items
        if HERE in Path(str(item.fspath)).parents
        and getattr(item, "originalname", "") == "test_live_equals_offline"
        and _case(item.name) not in EXPLAIN_CASES
    ]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


@pytest.fixture(scope="session", params=SNAPSHOTS, ids=[snapshot.id for snapshot in SNAPSHOTS])
def ome_snapshot(request: pytest.FixtureRequest) -> OmeSnapshot:
    chosen: OmeSnapshot = request.param
    return chosen


@pytest.fixture(scope="session")
def crd_profile(ome_snapshot: OmeSnapshot) -> str:
    return ome_snapshot.profile


@pytest.fixture(scope="session")
def control_plane(ome_snapshot: OmeSnapshot) -> Iterator[ControlPlane]:
    """A control plane whose etcd starts with OME's CRDs stored (installed once through the API, then seeded:
    harness.etcd_seeds)."""
    documents = ome_crd_documents(ome_snapshot.crds)
    with running_control_plane(install_crds=False, etcd_seed=etcd_seed(documents)) as plane:
        wait_served(plane.kubeconfig, documents)
        yield plane


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> Iterator[Any]:
    with api_client_for(control_plane.kubeconfig) as client:
        yield client
