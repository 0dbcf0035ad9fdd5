"""A CRD deleted and recreated under a running operator, as an upgrade may do (SPEC §5 "Watch streams that
end").

Deleting a CRD deletes its objects and stops serving the kind: Kopf's watch of it then meets 404 Not Found,
which it does not recover from (Kopf 1.45.2 gives the stream up, and with it its whole operator). The product
lists the kind again on its own: once the CRD is back, the memory equals the cluster within seconds. While it
cannot (the CRD stays away), the replica turns not ready after a few seconds, and ready again once the kind is
listed.

This module has a control plane of its own: deleting a CRD of the session's would disturb every other test.
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from harness import objects
from harness.controlplane import ControlPlane
from harness.crds import crd_documents, install_crds
from harness.kube import create, eventually, list_objects, runtime_ready
from harness.operator_thread import OperatorThread
from ome_selector.api.resources import Kind
from ome_selector.operator.app import WATCH_RESTART_SECONDS, OperatorConfig

NAMESPACE = "recreate"
CRD = "clusterbasemodels.ome.io"
#: The memory equals the cluster within this long of the CRD's return (the SPEC: within seconds).
CONVERGE_SECONDS = 10.0


def _cluster(admin: Any) -> dict[tuple[str, str | None, str], str]:
    """(kind, namespace, name) → uid of every object of the five kinds, as the apiserver lists them."""
    found = {}
    for kind in Kind:
        for body in list_objects(admin, kind.value):
            metadata = body["metadata"]
            found[(kind.value, metadata.get("namespace"), metadata["name"])] = metadata["uid"]
    return found


def _memory(runner: OperatorThread) -> dict[tuple[str, str | None, str], str | None] | None:
    """The same, of the operator's catalog (None while it is being changed under the read)."""
    controller = runner.operator.controller
    if controller is None:
        return None
    catalog = controller.catalog
    try:
        held = [(key, catalog.get(key)) for key in catalog.keys(kind=None)]
    except RuntimeError:  # changed during the read (the operator's loop runs in another thread)
        return None
    return {(key.kind.value, key.namespace, key.name): getattr(o, "uid", None) for key, o in held if o}


def _restarts(runner: OperatorThread, kind: str) -> float:
    total = 0.0
    for family in runner.operator.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "ome_selector_watch_restarts_total" and sample.labels["kind"] == kind:
                total += sample.value
    return total


def _delete_crd(plane: ControlPlane) -> None:
    plane.kubectl("delete", "crd", CRD, "--wait=true", "--timeout=60s")
    eventually(lambda: plane.kubectl("get", "crd", CRD, check=False).returncode != 0, what=f"{CRD} gone")


def _recreate_crd(plane: ControlPlane) -> None:
    install_crds(plane.kubeconfig, [doc for doc in crd_documents() if doc["metadata"]["name"] == CRD])


def _equal(admin: Any, runner: OperatorThread) -> bool:
    return _memory(runner) == _cluster(admin)


def test_a_recreated_crd_is_watched_again_and_the_memory_equals_the_cluster(
    plane: ControlPlane, admin: Any
) -> None:
    core: Any = client.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    create(admin, objects.model("m"))  # a ClusterBaseModel
    create(admin, objects.runtime("rt"))
    create(admin, objects.inference_service("svc", namespace=NAMESPACE, model_name="m"))
    config_ = OperatorConfig(kubeconfig=plane.kubeconfig, health_address=None, resync_seconds=3600.0)
    runner = OperatorThread(config_).start()
    try:
        selected = "selected ClusterServingRuntime rt (score 2)"
        eventually(
            lambda: (runtime_ready(admin, "svc", NAMESPACE) or {}).get("message") == selected,
            what="RuntimeSelected",
        )
        assert _restarts(runner, "ClusterBaseModel") == 0
        resyncs = runner.operator.resyncs

        # An upgrade deletes the CRD (and with it every ClusterBaseModel) and creates it again, with objects.
        _delete_crd(plane)
        eventually(lambda: _restarts(runner, "ClusterBaseModel") >= 1, what="the ended watch noticed")
        _recreate_crd(plane)
        established = time.monotonic()
        create(admin, objects.model("m"))  # the same name, a new object
        create(admin, objects.model("another"))
        created = time.monotonic()
        # Waited on as a condition with a bound (SPEC §5: within seconds), the hourly resync far away.
        eventually(
            lambda: _equal(admin, runner), timeout=CONVERGE_SECONDS, what="the memory to equal the cluster"
        )
        print(f"the memory equalled the cluster {time.monotonic() - created:.1f} s after the objects' return")
        eventually(lambda: not runner.operator.ended_streams, timeout=CONVERGE_SECONDS, what="listed again")
        print(f"listed again at most {time.monotonic() - established:.1f} s after the CRD was Established")
        assert runner.operator.resyncs > resyncs  # the relist reconciled it, not the hourly resync
        assert runner.operator.ended_streams == {}
        assert runner.operator.waiting_for() is None
        eventually(
            lambda: (runtime_ready(admin, "svc", NAMESPACE) or {}).get("message") == selected,
            what="RuntimeSelected on the recreated model",
        )

        # A CRD that stays away: the watch cannot be started again, and the replica says so.
        _delete_crd(plane)
        waiting = eventually(
            runner.operator.waiting_for,
            timeout=WATCH_RESTART_SECONDS + CONVERGE_SECONDS,
            what="readiness to turn false",
        )
        assert waiting == "the watch of clusterbasemodels ended (not_found) and could not be started again"
        gauge = runner.operator.metrics.registry.get_sample_value(
            "ome_selector_watch_ended", {"kind": "ClusterBaseModel"}
        )
        assert gauge == 1.0
        _recreate_crd(plane)
        eventually(
            lambda: runner.operator.waiting_for() is None, timeout=CONVERGE_SECONDS, what="ready again"
        )
        eventually(lambda: _equal(admin, runner), timeout=CONVERGE_SECONDS, what="the memory, again")
    finally:
        runner.stop()
