"""The rendered chart against the real apiserver: server-side dry-run, and the CRD guard's `lookup`.

cert-manager's CRDs are not installed here, so its Certificate and Issuer are only checked statically
(tests/unit/test_chart.py); the rest of that mode's render is dry-run like the others.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from harness import chart
from harness.controlplane import ControlPlane

CERT_MANAGER_KINDS = {"Certificate", "Issuer"}


def _dry_run(control_plane: ControlPlane, docs: list[dict[str, Any]]) -> str:
    result = control_plane.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(docs), check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"webhook": {"certManager": {"enabled": True}}, "crds": {"install": False}},
        {"reportOnly": True, "crds": {"install": False}, "watchNamespaces": ["@ns"]},
        {
            "webhook": {"enabled": False, "strictSizes": True},
            "rbac": {"pluginReader": {"aggregateToView": True}},
        },
    ],
    ids=["default", "cert-manager", "namespaced-report-only", "no-webhook"],
)
def test_server_side_dry_run_accepts_the_rendered_chart(
    control_plane: ControlPlane, namespace: str, values: dict[str, Any]
) -> None:
    if values.get("watchNamespaces"):
        values = {**values, "watchNamespaces": [namespace]}
    docs = chart.render(values, release="dry", namespace=namespace)
    applied = [doc for doc in docs if doc["kind"] not in CERT_MANAGER_KINDS]
    out = _dry_run(control_plane, applied)
    assert out.count("(server dry run)") == len(applied), out
    for doc in applied:
        assert f"{doc['metadata']['name']}" in out


def test_install_manifest_passes_server_side_dry_run(control_plane: ControlPlane) -> None:
    docs = [doc for doc in yaml.safe_load_all(chart.INSTALL_MANIFEST.read_text()) if doc]
    # The Namespace first, for real: a dry-run namespace does not exist for the objects in it.
    namespace, rest = docs[0], docs[1:]
    assert namespace["kind"] == "Namespace"
    control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(namespace))
    out = _dry_run(control_plane, rest)
    assert out.count("(server dry run)") == len(rest)


def _template_against_cluster(control_plane: ControlPlane, *sets: str) -> subprocess.CompletedProcess[str]:
    """`helm template --dry-run=server`: `lookup` reads the live cluster (plain templates see nothing)."""
    return subprocess.run(
        [
            str(chart.find_helm()),
            "template",
            "guard",
            str(chart.CHART_DIR),
            "--namespace",
            "default",
            "--dry-run=server",
            f"--kubeconfig={control_plane.kubeconfig}",
            f"--kube-version={chart.KUBE_VERSION}",
            *(f"--set={s}" for s in sets),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_crds_of_someone_else_are_never_replaced_or_adopted(control_plane: ControlPlane) -> None:
    # The session's CRDs are ours (labelled): the chart renders them.
    ours = _template_against_cluster(control_plane)
    assert ours.returncode == 0, ours.stderr
    assert "name: basemodels.ome.io" in ours.stdout
    # Without our label (as OME installs them), installing fails and says what to do.
    crd = "servingruntimes.ome.io"
    control_plane.kubectl("label", "crd", crd, "app.kubernetes.io/part-of-")
    try:
        theirs = _template_against_cluster(control_plane)
        assert theirs.returncode != 0
        assert f"CustomResourceDefinition {crd} already exists and was not installed by ome-selector" in (
            theirs.stderr
        )
        assert "--set crds.install=false" in theirs.stderr
        beside = _template_against_cluster(control_plane, "crds.install=false")
        assert beside.returncode == 0, beside.stderr
        assert "CustomResourceDefinition" not in beside.stdout
    finally:
        control_plane.kubectl("label", "crd", crd, "app.kubernetes.io/part-of=ome-selector", "--overwrite")


@pytest.mark.parametrize(
    "values", [{}, {"webhook": {"certManager": {"enabled": True}}}], ids=["default", "cert-manager"]
)
def test_the_pod_passes_the_restricted_pod_security_standard(
    control_plane: ControlPlane, namespace: str, values: dict[str, Any]
) -> None:
    control_plane.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
    deployment = next(d for d in chart.render(values, namespace=namespace) if d["kind"] == "Deployment")
    template = deployment["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pss-probe", "namespace": namespace, "labels": template["metadata"]["labels"]},
        "spec": template["spec"],
    }
    result = control_plane.kubectl(
        "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(pod), check=False
    )
    assert result.returncode == 0, result.stderr
    assert "violate" not in result.stderr, result.stderr
