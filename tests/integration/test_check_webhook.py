"""`ome-selector check-webhook` (the chart's startup-check hook) against the real apiserver."""

from __future__ import annotations

import asyncio
from typing import Any

from harness.controlplane import ControlPlane
from ome_selector.cli.check_webhook import check_webhook
from ome_selector.kube.connection import ClusterAccess
from ome_selector.webhook.config import WebhookConfig


def test_succeeds_once_the_apiserver_reaches_the_webhook(
    control_plane: ControlPlane, namespace: str, running_operator: Any, capsys: Any
) -> None:
    running_operator(webhook=WebhookConfig(bind_address=("127.0.0.1", 0)))
    access = ClusterAccess(control_plane.kubeconfig)
    assert asyncio.run(check_webhook(access, namespace, timeout=30)) == 0
    assert "the webhook answers through the API server" in capsys.readouterr().out


def test_gives_up_when_nothing_judges_within_the_timeout_of_an_unreachable_webhook(
    control_plane: ControlPlane, namespace: str, capsys: Any
) -> None:
    # A registration pointing at a closed port: the apiserver cannot call it, so no denial of ours comes.
    config = f"""
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: check-webhook-{namespace}}}
webhooks:
  - name: inferenceservices.ome-selector.ome.io
    clientConfig: {{url: "https://127.0.0.1:1/validate"}}
    rules:
      - {{apiGroups: [ome.io], apiVersions: [v1beta1], operations: [CREATE], resources: [inferenceservices]}}
    namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {namespace}}}}}
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: [v1]
    timeoutSeconds: 1
"""
    control_plane.kubectl("apply", "-f", "-", input=config)
    try:
        access = ClusterAccess(control_plane.kubeconfig)
        assert asyncio.run(check_webhook(access, namespace, timeout=2, interval=0.5)) == 1
        assert "did not answer within 2 s" in capsys.readouterr().err
    finally:
        control_plane.kubectl("delete", "validatingwebhookconfiguration", f"check-webhook-{namespace}")
