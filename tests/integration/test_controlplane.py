"""The harness itself: a real, RBAC-enforcing apiserver with our CRDs, and no process left behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from harness.controlplane import ControlPlane, running_control_plane
from harness.crds import crd_documents, wait_served
from harness.etcd_seeds import etcd_seed

OUR_CRDS = {
    "basemodels.ome.io",
    "clusterbasemodels.ome.io",
    "servingruntimes.ome.io",
    "clusterservingruntimes.ome.io",
    "inferenceservices.ome.io",
}


def test_apiserver_reports_the_pinned_version(control_plane: ControlPlane) -> None:
    version = control_plane.kubectl("version", "-o", "json").stdout
    assert '"gitVersion": "v1.36.3"' in version


def test_crds_are_installed_and_established(api_client: Any) -> None:
    extensions: Any = client.ApiextensionsV1Api(api_client)
    crds = extensions.list_custom_resource_definition().items
    established = {
        crd.metadata.name
        for crd in crds
        if any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])
    }
    assert established >= OUR_CRDS


def test_rbac_is_enforced_for_service_accounts(control_plane: ControlPlane, namespace: str) -> None:
    control_plane.kubectl("create", "serviceaccount", "nobody", "-n", namespace)
    answer = control_plane.kubectl(
        "auth",
        "can-i",
        "list",
        "inferenceservices.ome.io",
        "-n",
        namespace,
        f"--as=system:serviceaccount:{namespace}:nobody",
        check=False,
    )
    assert answer.stdout.strip() == "no"
    token = control_plane.kubectl("create", "token", "nobody", "-n", namespace).stdout.strip()
    assert token.count(".") == 2  # TokenRequest works: the service-account signing keys are wired


def test_stopping_leaves_no_process_even_when_the_body_fails() -> None:
    seen: dict[str, Any] = {}

    def fail_inside() -> None:
        with running_control_plane(install_crds=False) as plane:
            seen["pids"] = {p.pid for _, p in plane._processes}
            seen["workdir"] = plane.workdir
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_inside()
    pids, workdir = seen["pids"], seen["workdir"]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not workdir.exists()


def _files(directory: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.rglob("*")
    }


def test_a_seeded_control_plane_serves_the_crds_as_installed() -> None:
    """harness.etcd_seeds: the CRDs installed once through the API (built at the first run, reused after),
    then a control plane starts from a copy of that etcd and serves them, Established and with their schemas
    whole; its writes never reach the seed."""
    documents = crd_documents()
    seed = etcd_seed(documents)
    assert etcd_seed(documents) == seed
    before = _files(seed)
    with running_control_plane(install_crds=False, etcd_seed=seed) as plane:
        wait_served(plane.kubeconfig, documents)
        stored = json.loads(plane.kubectl("get", "crd", "-o", "json").stdout)["items"]
        assert {crd["metadata"]["name"] for crd in stored} == OUR_CRDS
        for crd in stored:
            conditions = crd["status"]["conditions"]
            assert any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
            (document,) = [d for d in documents if d["metadata"]["name"] == crd["metadata"]["name"]]
            assert crd["spec"]["versions"] == document["spec"]["versions"]
        plane.kubectl("create", "namespace", "written-to-the-copy")
    assert _files(seed) == before
