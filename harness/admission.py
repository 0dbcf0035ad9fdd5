"""Waiting until an in-process operator's admission webhook is really called by the apiserver.

Creating the ValidatingWebhookConfiguration is not enough: the apiserver picks it up through an informer, a
moment later. :func:`wait_until_serving` therefore sends server-side dry-run probes until the operator has
answered one (seen in its admission latency metric), which works for every webhook configuration, no-op
included.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from kubernetes import client

from harness.operator_thread import OperatorThread
from ome_selector.api.resources import API_GROUP_VERSION, Kind
from ome_selector.kube.scope import custom_object_call

PROBE_KIND = "ClusterBaseModel"
ADMISSION_METRIC = "ome_selector_admission_duration_seconds_count"


def admission_count(runner: OperatorThread, kind: str | None = None) -> float:
    """How many admission reviews the operator answered (of ``kind``, if given), errors included."""
    total = 0.0
    for family in runner.operator.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == ADMISSION_METRIC and (kind is None or sample.labels.get("kind") == kind):
                total += sample.value
    return total


def wait_until_serving(runner: OperatorThread, api_client: Any, timeout: float = 30.0) -> None:
    """Until the webhook is registered and the apiserver has sent it a request (dry-run probes)."""
    webhook = runner.operator.webhook
    if webhook is None:
        raise ValueError("the operator runs without a webhook")
    deadline = time.monotonic() + timeout
    while not webhook.registered.is_set():
        if time.monotonic() > deadline:
            raise TimeoutError(f"webhook not registered after {timeout:.0f}s")
        time.sleep(0.02)
    wait_until_called(lambda: admission_count(runner, PROBE_KIND), api_client, deadline - time.monotonic())


def wait_until_called(answered: Callable[[], float], api_client: Any, timeout: float = 30.0) -> None:
    """Send dry-run probes until `answered()` (the operator's count of probe reviews) goes up."""
    deadline = time.monotonic() + timeout
    create = custom_object_call(client.CustomObjectsApi(api_client), "create", Kind.CLUSTER_BASE_MODEL, None)
    before = answered()
    probe = {
        "apiVersion": API_GROUP_VERSION,
        "kind": PROBE_KIND,
        "metadata": {"name": f"ome-selector-webhook-probe-{uuid.uuid4().hex[:8]}"},
        "spec": {
            "modelFormat": {"name": "probe"},
            "storage": {"storageUri": "hf://probe/probe"},
        },  # OME: required
    }
    while answered() <= before:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the apiserver did not call the webhook within {timeout:.0f}s")
        create(probe, dry_run="All")
        time.sleep(0.05)
