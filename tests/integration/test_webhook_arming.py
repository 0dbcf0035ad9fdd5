"""The chart's webhook configuration is installed unarmed (failurePolicy Ignore) and armed by a replica that
serves (SPEC §7, §8): a failed or interrupted install leaves no fail-closed webhook that nothing answers.

A static configuration as the chart installs it, but with url clientConfigs, so that the apiserver reaches the
operator running here (the chart's point at its Service).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from kubernetes import client

from harness import objects
from harness.controlplane import ControlPlane, free_port
from harness.kube import create, eventually
from ome_selector.api.resources import Kind
from ome_selector.cli.check_webhook import check_webhook
from ome_selector.kube.connection import ClusterAccess
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.registration import build_configuration, webhook_name

ISVC = webhook_name(Kind.INFERENCE_SERVICE)


def _unarmed_configuration(api_client: Any, name: str, port: int, namespace: str) -> None:
    """The chart's shape: every webhook failurePolicy Ignore, no caBundle (the operator sets both)."""
    config = WebhookConfig(namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": namespace}})
    body = build_configuration(name, {"url": f"https://127.0.0.1:{port}"}, config)
    for webhook in body["webhooks"]:
        webhook["failurePolicy"] = "Ignore"
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    admission.create_validating_webhook_configuration(body)


def _policies(api_client: Any, name: str) -> dict[str, str]:
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    found = admission.read_validating_webhook_configuration(name)
    return {webhook.name: webhook.failure_policy for webhook in found.webhooks}


def _engine_isvc(name: str, namespace: str) -> dict[str, Any]:
    body = objects.inference_service(name, namespace=namespace, model_name="no-such-model")
    body["spec"]["engine"] = {}
    return body


def _delete(api_client: Any, name: str) -> None:
    client.AdmissionregistrationV1Api(api_client).delete_validating_webhook_configuration(name)


def test_nothing_serves_an_unarmed_configuration_and_writes_pass(
    control_plane: ControlPlane, api_client: Any, namespace: str, capsys: Any
) -> None:
    name = f"unarmed-{namespace}"
    _unarmed_configuration(api_client, name, free_port(), namespace)  # nothing listens there
    try:
        # What a failed install leaves: InferenceService writes, OME's controller's included, still pass.
        create(api_client, _engine_isvc("written", namespace))
        access = ClusterAccess(control_plane.kubeconfig)
        assert asyncio.run(check_webhook(access, namespace, 2, 0.5, configuration=name)) == 1
        assert capsys.readouterr().err == (
            f"check-webhook: the webhook did not answer within 2 s: {ISVC} of {name} has failurePolicy "
            "Ignore, not Fail yet: no replica has armed it (none serves)\n"
        )
    finally:
        _delete(api_client, name)


def test_a_serving_replica_arms_the_configuration_and_re_arms_it_after_an_upgrade(
    control_plane: ControlPlane, api_client: Any, namespace: str, running_operator: Any, capsys: Any
) -> None:
    name, port = f"armed-{namespace}", free_port()
    _unarmed_configuration(api_client, name, port, namespace)
    try:
        webhook = WebhookConfig(
            bind_address=("127.0.0.1", port),
            configuration_name=name,
            sizes_failure_policy="Fail",
            file_check_interval=0.5,
        )
        running_operator(webhook=webhook, namespaces=[namespace])
        armed = {webhook_name(kind): "Fail" for kind in Kind}
        eventually(lambda: _policies(api_client, name) == armed or None, what="the armed failurePolicies")
        access = ClusterAccess(control_plane.kubeconfig)
        assert asyncio.run(check_webhook(access, namespace, 30, configuration=name)) == 0
        assert "the webhook answers through the API server" in capsys.readouterr().out

        # `helm upgrade` writes the chart's Ignore again; the serving replica arms it once more.
        admission: Any = client.AdmissionregistrationV1Api(api_client)
        found = admission.read_validating_webhook_configuration(name)
        for hook in found.webhooks:
            hook.failure_policy = "Ignore"
        admission.replace_validating_webhook_configuration(name, found)
        eventually(lambda: _policies(api_client, name) == armed or None, what="re-armed after an upgrade")
    finally:
        _delete(api_client, name)


def test_the_policies_are_the_configured_ones() -> None:
    from ome_selector.webhook.registration import static_policies

    config = dataclasses.replace(WebhookConfig(), failure_policy="Ignore", sizes_failure_policy="Fail")
    assert static_policies(config) == {
        webhook_name(kind): "Ignore" if kind is Kind.INFERENCE_SERVICE else "Fail" for kind in Kind
    }
    assert static_policies(WebhookConfig()) == {
        webhook_name(kind): "Fail" if kind is Kind.INFERENCE_SERVICE else "Ignore" for kind in Kind
    }
