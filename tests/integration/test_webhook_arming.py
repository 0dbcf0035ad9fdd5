"""The chart's webhook configuration is installed as the operator keeps it — the configured failurePolicies —
without a caBundle, and armed by a replica that serves: it fills the bundle in (SPEC §7, §8). The operator
changes nothing else, so a GitOps tool that owns every other field sees no drift and never fights it.

A static configuration as the chart installs it, but with url clientConfigs, so that the apiserver reaches the
operator running here (the chart's point at its Service).
"""

from __future__ import annotations

import asyncio
from typing import Any

import yaml
from kubernetes import client

from harness import objects
from harness.controlplane import ControlPlane, free_port
from harness.kube import create, eventually
from ome_selector.api.resources import Kind
from ome_selector.cli.check_webhook import check_webhook
from ome_selector.kube.connection import ClusterAccess
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.registration import build_configuration, delete_webhook_name, webhook_name

ISVC = webhook_name(Kind.INFERENCE_SERVICE)


def _chart_configuration(
    api_client: Any, name: str, port: int, namespace: str, config: WebhookConfig
) -> None:
    """The chart's shape: the configured policies, no caBundle (the operator fills it in)."""
    body = build_configuration(name, {"url": f"https://127.0.0.1:{port}"}, config)
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    admission.create_validating_webhook_configuration(body)


def _webhooks(api_client: Any, name: str) -> dict[str, tuple[str, bool]]:
    """Each webhook's failurePolicy and whether it carries a caBundle."""
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    found = admission.read_validating_webhook_configuration(name)
    return {w.name: (w.failure_policy, bool(w.client_config.ca_bundle)) for w in found.webhooks}


def _engine_isvc(name: str, namespace: str) -> dict[str, Any]:
    body = objects.inference_service(name, namespace=namespace, model_name="no-such-model")
    body["spec"]["engine"] = {}
    return body


def _delete(api_client: Any, name: str) -> None:
    client.AdmissionregistrationV1Api(api_client).delete_validating_webhook_configuration(name)


def _only(namespace: str, **kw: Any) -> WebhookConfig:
    return WebhookConfig(namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": namespace}}, **kw)


def test_nothing_serves_an_unarmed_configuration_and_check_webhook_says_so(
    control_plane: ControlPlane, api_client: Any, namespace: str, capsys: Any
) -> None:
    name = f"unarmed-{namespace}"
    _chart_configuration(api_client, name, free_port(), namespace, _only(namespace))  # nothing listens there
    try:
        access = ClusterAccess(control_plane.kubeconfig)
        assert asyncio.run(check_webhook(access, namespace, 2, 0.5, configuration=name)) == 1
        assert capsys.readouterr().err == (
            f"check-webhook: the webhook did not answer within 2 s: {ISVC} of {name} has no caBundle yet: "
            "no replica has armed it (none serves)\n"
        )
        # The catalog's webhooks are Ignore: a model or runtime is written and deleted while nothing serves.
        create(api_client, objects.runtime("written-rt", namespace=namespace))
        custom: Any = client.CustomObjectsApi(api_client)
        custom.delete_namespaced_custom_object(
            "ome.io", "v1beta1", namespace, "servingruntimes", "written-rt"
        )
    finally:
        _delete(api_client, name)


def test_a_serving_replica_arms_the_configuration_with_the_ca_bundle_and_touches_nothing_else(
    control_plane: ControlPlane, api_client: Any, namespace: str, running_operator: Any, capsys: Any
) -> None:
    name, port = f"armed-{namespace}", free_port()
    webhook = WebhookConfig(
        bind_address=("127.0.0.1", port),
        configuration_name=name,
        sizes_failure_policy="Fail",
        file_check_interval=0.5,
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": namespace}},
    )
    _chart_configuration(api_client, name, port, namespace, webhook)
    try:
        installed = _webhooks(api_client, name)
        catalog = [kind for kind in Kind if kind is not Kind.INFERENCE_SERVICE]
        policies = {webhook_name(kind): "Fail" for kind in Kind} | {
            delete_webhook_name(kind): "Ignore" for kind in catalog
        }
        assert installed == {hook: (policy, False) for hook, policy in policies.items()}
        running_operator(webhook=webhook, namespaces=[namespace])
        armed = {hook: (policy, True) for hook, policy in policies.items()}
        eventually(lambda: _webhooks(api_client, name) == armed or None, what="the caBundle filled in")
        access = ClusterAccess(control_plane.kubeconfig)
        assert asyncio.run(check_webhook(access, namespace, 30, configuration=name)) == 0
        assert "the webhook answers through the API server" in capsys.readouterr().out
        # An InferenceService the webhook denies: the apiserver reaches it, trusting the bundle filled in.
        probe = yaml.safe_dump(_engine_isvc("x", namespace))
        result = control_plane.kubectl("create", "--dry-run=server", "-f", "-", input=probe, check=False)
        assert f'admission webhook "{ISVC}" denied the request' in result.stderr, result.stderr

        # Someone else owns the policies (the chart, a GitOps tool): a replica never changes them back, and
        # a caBundle someone emptied is filled in again.
        admission: Any = client.AdmissionregistrationV1Api(api_client)
        found = admission.read_validating_webhook_configuration(name)
        for hook in found.webhooks:
            hook.failure_policy = "Ignore"
            hook.client_config.ca_bundle = None
        admission.replace_validating_webhook_configuration(name, found)
        rearmed = dict.fromkeys(policies, ("Ignore", True))
        eventually(
            lambda: _webhooks(api_client, name) == rearmed or None, what="the caBundle filled in again"
        )
    finally:
        _delete(api_client, name)
