"""The second CRD profile: OME's own CRDs (tests/data/ome-crds, OME commit cfa05c69), not ours (SPEC §0).

`control_plane` and `api_client` are overridden for the tests of this directory, so every fixture built on
them (`namespace`, `running_operator`, `cluster_objects`, ...) runs against a control plane that has OME's
CRDs; the tests are a representative subset of the main suite's, imported into test_beside_ome.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.controlplane import ControlPlane, running_control_plane
from harness.crds import install_crds, ome_crd_documents


@pytest.fixture(scope="session")
def crd_profile() -> str:
    return "ome"


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    with running_control_plane(install_crds=False) as plane:
        install_crds(plane.kubeconfig, ome_crd_documents())
        yield plane


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> Iterator[Any]:
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(control_plane.kubeconfig))  # type: ignore[no-untyped-call]
    with client:
        yield client
