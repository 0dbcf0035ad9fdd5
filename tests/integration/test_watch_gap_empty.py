"""A watch gap that leaves every kind empty (SPEC §5 "Level-triggered resync").

The only model and the only runtime are deleted in etcd behind the apiserver's back, etcd is compacted, and
the apiserver starts again: the operator's watches get 410 Gone and Kopf lists every kind again — and finds
nothing, so no event reaches any handler. The operator must still see the relist, resync and forget both
within seconds, or its webhook goes on admitting InferenceServices of a model that no longer exists. (Found by
the fault injection check, ``make chaos SEED=8``: the only runtime deleted while the leader was paused.)

This module has a control plane of its own: restarting the session's would disturb every other test.
"""

from __future__ import annotations

from typing import Any

import yaml
from kubernetes import client, config

from harness import objects
from harness.admission import wait_until_serving
from harness.controlplane import ControlPlane
from harness.kube import create, eventually
from harness.operator_thread import OperatorThread
from ome_selector.operator.app import OperatorConfig
from ome_selector.webhook.config import WebhookConfig

NAMESPACE = "empty-gap"


def test_a_gap_after_which_every_kind_lists_empty_is_reconciled_within_seconds(plane: ControlPlane) -> None:
    new_client: Any = config.new_client_from_config  # the official client is untyped
    with new_client(config_file=str(plane.kubeconfig)) as admin:
        core: Any = client.CoreV1Api(admin)
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        create(admin, objects.model("lonely", size="1B"))
        create(admin, objects.runtime("only", size_range=(None, "2B")))
        config_ = OperatorConfig(
            kubeconfig=plane.kubeconfig,
            health_address=None,
            resync_seconds=3600.0,
            webhook=WebhookConfig(bind_address=("127.0.0.1", 0), instance="empty-gap"),
        )
        runner = OperatorThread(config_).start()
        try:
            wait_until_serving(runner, admin)
            probe = objects.inference_service(
                "probe", namespace=NAMESPACE, model_name="lonely", engine={"minReplicas": 1}
            )

            def dry_run() -> Any:
                return plane.kubectl(
                    "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(probe), check=False
                )

            assert dry_run().returncode == 0  # the runtime serves the model

            def behind_its_back() -> None:
                assert plane.etcd_delete("/registry/ome.io/clusterbasemodels/lonely") == 1
                assert plane.etcd_delete("/registry/ome.io/clusterservingruntimes/only") == 1
                plane.etcd_compact()

            assert runner.operator.controller is not None
            resyncs = runner.operator.resyncs
            plane.restart_apiserver(while_down=behind_its_back, crash=True)
            denied = eventually(
                lambda: (answer := dry_run()).returncode == 1 and answer,
                timeout=30,
                what="the webhook denying an InferenceService of the vanished model",
            )
            assert "denied the request: model lonely not found" in denied.stderr
            assert runner.operator.resyncs > resyncs  # by a relist, not the hourly resync
            assert len(runner.operator.controller.catalog) == 0  # both forgotten by the listing
        finally:
            runner.stop()
