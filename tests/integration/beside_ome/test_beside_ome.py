"""Beside OME (SPEC §0): a representative subset of the suite, run on OME's own CRDs (see conftest.py)."""

from __future__ import annotations

from harness.controlplane import ControlPlane
from harness.crds import CRD_NAMES


def test_the_control_plane_has_omes_crds(control_plane: ControlPlane) -> None:
    for name in CRD_NAMES:
        result = control_plane.kubectl("get", "crd", name, "-o", "jsonpath={.metadata.annotations}")
        assert "controller-gen.kubebuilder.io/version" in result.stdout, name
