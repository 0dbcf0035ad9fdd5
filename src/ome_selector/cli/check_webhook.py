"""`ome-selector check-webhook`: wait until the API server really reaches the InferenceService webhook.

A pod's readiness does not mean the API server can call it yet: the Service's route to a new endpoint is
programmed on every node a moment later. Right after a fresh install there is no older endpoint to fall back
on, so for that moment every InferenceService write fails closed. The chart runs this as a post-install and
post-upgrade hook (as cert-manager's startup API check does), so `helm install --wait` returns only once the
webhook answers through the API server.

The probe is a server-side dry run (nothing is stored) of an InferenceService with ``spec.engine`` naming a
model that does not exist: only a reachable webhook can deny it with our webhook's name in the message.

The chart installs its configuration without a caBundle and a serving replica arms it by filling the bundle
in (SPEC §7: :class:`~ome_selector.webhook.registration.CaBundleRegistration`). With ``--configuration`` the
check first waits until the InferenceService webhook is armed and carries the configured policy, so that an
admitted probe means what it says: under ``Fail`` an unreachable webhook would have failed the request, so
the namespace is not judged.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from ome_selector.api.resources import API_GROUP, API_VERSION, Kind
from ome_selector.kube.clients import (
    AdmissionregistrationV1Api,
    admission_registration_api,
    custom_objects_api,
)
from ome_selector.kube.connection import ClusterAccess
from ome_selector.kube.objects import ApiError
from ome_selector.webhook.registration import webhook_name

PROBE_NAME = "ome-selector-webhook-check"


def _probe(namespace: str) -> dict[str, object]:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": Kind.INFERENCE_SERVICE.value,
        "metadata": {"name": PROBE_NAME, "namespace": namespace},
        "spec": {"model": {"name": PROBE_NAME}, "engine": {}},
    }


async def check_webhook(
    access: ClusterAccess,
    namespace: str,
    timeout: float,
    interval: float = 1.0,
    *,
    configuration: str | None = None,
    failure_policy: str = "Fail",
) -> int:
    """0 once our webhook answered (and ``configuration``'s InferenceService webhook is armed with
    ``failure_policy``); 1 when it never did within ``timeout`` or access is denied."""
    expected = f'admission webhook "{webhook_name(Kind.INFERENCE_SERVICE)}" denied the request'
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    async with await access.api_client() as api_client:
        api = custom_objects_api(api_client)
        registrations = admission_registration_api(api_client)
        while True:
            unarmed: str | None = None
            try:
                if configuration is not None:
                    unarmed = await _unarmed(registrations, configuration, failure_policy)
                if unarmed is None:
                    await api.create_namespaced_custom_object(
                        API_GROUP,
                        API_VERSION,
                        namespace,
                        Kind.INFERENCE_SERVICE.plural,
                        _probe(namespace),
                        dry_run="All",
                    )
            except ApiError as error:
                body = _message(error.body)
                if expected in body:
                    print(f"the webhook answers through the API server (namespace {namespace})")
                    return 0
                if error.status in (401, 403) and "admission webhook" not in body:
                    print(
                        f"check-webhook: not allowed to probe: {error.status} {error.reason}", file=sys.stderr
                    )
                    return 1
                last = f"{error.status} {error.reason}: {body[:300]}"
            except (TimeoutError, OSError) as error:
                last = str(error)
            else:
                if unarmed is None:
                    # Admitted: the webhook does not judge this namespace (its namespaceSelector omits it).
                    print(f"the webhook does not judge namespace {namespace}; nothing to wait for")
                    return 0
                last = unarmed
            if time.monotonic() >= deadline:
                print(
                    f"check-webhook: the webhook did not answer within {timeout:.0f} s: {last}",
                    file=sys.stderr,
                )
                return 1
            await asyncio.sleep(interval)


async def _unarmed(api: AdmissionregistrationV1Api, name: str, policy: str) -> str | None:
    """Why ``name``'s InferenceService webhook is not armed (a caBundle) with ``policy`` yet, or None when it
    is."""
    try:
        configuration = await api.read_validating_webhook_configuration(name)
    except ApiError as error:
        if error.status in (401, 403):
            raise
        return f"ValidatingWebhookConfiguration {name}: {error.status} {error.reason}"
    for webhook in configuration.webhooks or []:
        if webhook.name == webhook_name(Kind.INFERENCE_SERVICE):
            if not (webhook.client_config and webhook.client_config.ca_bundle):
                return f"{webhook.name} of {name} has no caBundle yet: no replica has armed it (none serves)"
            if webhook.failure_policy == policy:
                return None
            return f"{webhook.name} of {name} has failurePolicy {webhook.failure_policy}, not {policy}"
    return f"ValidatingWebhookConfiguration {name} has no webhook {webhook_name(Kind.INFERENCE_SERVICE)}"


def _message(body: object) -> str:
    """The Status message of an error body (JSON, as bytes or text), else the body as text."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    try:
        status = json.loads(text)
    except ValueError:
        return text
    return str(status.get("message", text)) if isinstance(status, dict) else text
