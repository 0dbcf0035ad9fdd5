"""Deletions during a watch gap (SPEC §5 v3 "Level-triggered resync"): a relist reconciles like a resync.

A real gap: the apiserver is killed (every watch drops at once), a ClusterBaseModel and an
InferenceService are deleted in etcd behind its back, etcd is compacted, and the apiserver starts again — its
watch cache begins afresh, so the operator's watches resuming from before get 410 Gone and Kopf lists again.
A relist sends no DELETED for what vanished; only the operator's own listing can tell, within seconds, not at
the periodic resync (set to an hour here).

This module has a control plane of its own: restarting the session's would disturb every other test.
"""

from __future__ import annotations

from typing import Any

import yaml
from kubernetes import client

from harness import objects
from harness.admission import wait_until_serving
from harness.controlplane import ControlPlane
from harness.kube import create, eventually, runtime_ready
from harness.operator_thread import OperatorThread
from ome_selector.operator.app import OperatorConfig
from ome_selector.webhook.config import WebhookConfig

NAMESPACE = "gap"
ENGINE = {"minReplicas": 1}


def _gauge(runner: OperatorThread) -> float:
    total = 0.0
    for family in runner.operator.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "ome_selector_inferenceservices":
                total += sample.value
    return total


def test_a_deletion_during_a_watch_gap_with_compaction_is_reconciled_within_seconds(
    plane: ControlPlane, admin: Any
) -> None:
    core: Any = client.CoreV1Api(admin)  # dict bodies: the typed models would only re-encode them
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    create(admin, objects.model("gone"))
    create(admin, objects.runtime("rt"))
    for name in ("stays", "deleted"):
        create(admin, objects.inference_service(name, namespace=NAMESPACE, model_name="gone"))
    config_ = OperatorConfig(
        kubeconfig=plane.kubeconfig,
        health_address=None,
        resync_seconds=3600.0,
        webhook=WebhookConfig(bind_address=("127.0.0.1", 0), instance="gap"),
    )
    runner = OperatorThread(config_).start()
    try:
        wait_until_serving(runner, admin)
        eventually(
            lambda: all(
                (runtime_ready(admin, name, NAMESPACE) or {}).get("reason") == "RuntimeSelected"
                for name in ("stays", "deleted")
            ),
            what="both InferenceServices RuntimeSelected",
        )
        assert _gauge(runner) == 2
        resyncs = runner.operator.resyncs

        def behind_its_back() -> None:
            assert plane.etcd_delete("/registry/ome.io/clusterbasemodels/gone") == 1
            assert plane.etcd_delete(f"/registry/ome.io/inferenceservices/{NAMESPACE}/deleted") == 1
            plane.etcd_compact()

        plane.restart_apiserver(while_down=behind_its_back, crash=True)

        condition = eventually(
            lambda: (c := runtime_ready(admin, "stays", NAMESPACE)) and c["reason"] == "ModelNotFound" and c,
            timeout=30,
            what="the InferenceService of the vanished model ModelNotFound",
        )
        assert condition["message"] == (
            f"model gone not found: no BaseModel in namespace {NAMESPACE} and no ClusterBaseModel"
        )
        assert runner.operator.resyncs > resyncs  # by a relist, not the hourly resync
        # The verdict gauge forgets the InferenceService that vanished.
        eventually(lambda: _gauge(runner) == 1, what="the gauge counting one InferenceService")
        # The webhook denies a new InferenceService of the vanished model.
        probe = objects.inference_service("new", namespace=NAMESPACE, model_name="gone", engine=ENGINE)
        denied = plane.kubectl(
            "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(probe), check=False
        )
        assert denied.returncode == 1
        assert "denied the request: model gone not found" in denied.stderr
    finally:
        runner.stop()
