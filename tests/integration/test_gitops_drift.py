"""GitOps without drift (SPEC §7): the chart renders the webhook configuration as the operator keeps it, so
once the operator has started (and armed it) the only field of the live object that the rendered one lacks
is each webhook's caBundle, the one field the operator manages (field manager `ome-selector`); a server-side
diff of the rendered chart finds nothing to change, and syncing the chart again leaves the webhook armed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml
from kubernetes import client

from harness import chart
from harness.controlplane import ControlPlane
from harness.kube import eventually
from harness.operator_thread import OperatorThread
from ome_selector.operator.app import OperatorConfig
from ome_selector.webhook.config import WebhookConfig

#: What the apiserver itself adds to a stored object, and what it defaults in each webhook.
_SERVER_METADATA = {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"}
_SERVER_DEFAULTS = {"objectSelector"}


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _live(api_client: Any, name: str) -> dict[str, Any]:
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    body: dict[str, Any] = api_client.sanitize_for_serialization(
        admission.read_validating_webhook_configuration(name)
    )
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in _SERVER_METADATA}
    for webhook in body["webhooks"]:
        for key in _SERVER_DEFAULTS:
            webhook.pop(key, None)
    return body


def _managers_of_ca_bundle(control_plane: ControlPlane, name: str) -> set[str]:
    shown = control_plane.kubectl(
        "get", "validatingwebhookconfiguration", name, "-o", "json", "--show-managed-fields"
    )
    entries = json.loads(shown.stdout)["metadata"]["managedFields"]
    return {entry["manager"] for entry in entries if "caBundle" in json.dumps(entry.get("fieldsV1", {}))}


def test_after_the_operator_started_only_the_ca_bundle_differs_from_the_rendered_chart(
    control_plane: ControlPlane, api_client: Any, namespace: str
) -> None:
    release = f"g{namespace[-6:]}"
    values = {
        # Only this test's namespace: other tests' objects never reach these webhooks.
        "webhook": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
    }
    docs = chart.render(values, release=release, namespace=namespace)
    rendered = next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")
    name = rendered["metadata"]["name"]
    manifest = yaml.safe_dump(rendered)
    # Synced as Argo CD (server-side apply) or Flux does it.
    synced = control_plane.kubectl(
        "apply", "--server-side", "--field-manager=gitops", "-f", "-", input=manifest, check=False
    )
    assert synced.returncode == 0, synced.stderr
    runner = OperatorThread(
        OperatorConfig(
            kubeconfig=control_plane.kubeconfig,
            health_address=None,
            resync_seconds=3600.0,
            namespaces=[namespace],
            webhook=WebhookConfig(
                bind_address=("127.0.0.1", 0), configuration_name=name, file_check_interval=0.5
            ),
        )
    )
    runner.start()
    try:

        def armed() -> bool:
            return all(w["clientConfig"].get("caBundle") for w in _live(api_client, name)["webhooks"])

        eventually(armed, what="the operator filling the caBundle in")
        live = dict(_leaves(_live(api_client, name)))
        wanted = dict(_leaves(rendered))
        # Every rendered field is live as rendered: the operator changed none (no failurePolicy).
        assert {path: live.get(path) for path in wanted} == wanted
        # And what the live object has beyond the chart is the caBundle of each webhook, nothing else.
        extra = set(live) - set(wanted)
        assert extra == {f"webhooks[{i}].clientConfig.caBundle" for i in range(len(rendered["webhooks"]))}

        # A server-side diff of the rendered chart (the cached kubectl) finds nothing to change...
        diff = control_plane.kubectl(
            "diff", "--server-side", "--force-conflicts", "--field-manager=gitops", "-f", "-",
            input=manifest, check=False,
        )  # fmt: skip
        assert (diff.returncode, diff.stdout) == (0, ""), diff.stdout + diff.stderr
        # ...and syncing it again (self-heal) leaves the webhook armed.
        again = control_plane.kubectl(
            "apply", "--server-side", "--force-conflicts", "--field-manager=gitops", "-f", "-",
            input=manifest, check=False,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert armed()
        # The caBundle stays the operator's: the GitOps tool's field manager never took it over.
        assert _managers_of_ca_bundle(control_plane, name) == {"ome-selector"}
    finally:
        runner.stop()
        client.AdmissionregistrationV1Api(api_client).delete_validating_webhook_configuration(name)
