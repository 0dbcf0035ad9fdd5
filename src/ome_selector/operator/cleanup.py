"""`ome-selector cleanup`: remove what the product leaves in a cluster.

- the local ValidatingWebhookConfigurations (SPEC §8, label ``ome-selector.ome.io/local=true``) of one
  instance — this host's and kubeconfig context's by default, the one a ``kill -9`` of ``ome-selector run``
  left behind — or of every instance; the chart's static configuration is never touched;
- unless ``--webhook-only``, the RuntimeReady condition of every InferenceService (uninstalling). Every other
  condition and status field stays; each write is guarded by resourceVersion and retried on conflict.

Run it after stopping the operator: a running one keeps its registration only until it stops (it would not
register again), and writes the condition back.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from ome_selector.api.resources import Kind
from ome_selector.kube.connection import ClusterAccess
from ome_selector.kube.objects import ApiError, ConflictError, GoneError, Objects
from ome_selector.operator.conditions import current_condition, without_condition
from ome_selector.operator.writer import COMPONENT
from ome_selector.webhook.registration import remove_local_registrations

MAX_ATTEMPTS = 5


async def run_cleanup(
    *,
    kubeconfig: Path | None,
    context: str | None,
    dry_run: bool,
    instance: str | None,
    webhook_only: bool = False,
) -> int:
    """``instance``: whose local registrations to remove (None: every instance's)."""
    api_client = await ClusterAccess(kubeconfig, context).api_client()
    async with api_client:
        try:
            removed = await remove_local_registrations(api_client, instance=instance, dry_run=dry_run)
        except ApiException as error:
            print(
                f"ome-selector cleanup: cannot remove local webhook registrations: {error.reason}",
                file=sys.stderr,
            )
            return 1
        for name in removed:
            verb = "would remove" if dry_run else "removed"
            print(f"{verb} validatingwebhookconfiguration {name}")
        if webhook_only:
            return 0
        objects = Objects(api_client)
        try:
            snapshot = await objects.list_objects(kinds=[Kind.INFERENCE_SERVICE])
        except ApiError as error:
            print(f"ome-selector cleanup: cannot list InferenceServices: {error.reason}", file=sys.stderr)
            return 1
        changed = failed = 0
        for body in snapshot.bodies:
            if current_condition(body.get("status")) is None:
                continue
            namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
            if dry_run:
                print(f"would remove RuntimeReady from inferenceservice {namespace}/{name}")
                changed += 1
                continue
            try:
                if await _remove(objects, body):
                    print(f"removed RuntimeReady from inferenceservice {namespace}/{name}")
                    changed += 1
            except (ApiError, ConflictError) as error:
                print(f"ome-selector cleanup: {namespace}/{name}: {error}", file=sys.stderr)
                failed += 1
        verb = "would change" if dry_run else "changed"
        print(f"{verb} {changed} InferenceService(s)" + (f", {failed} failed" if failed else ""))
        return 1 if failed else 0


async def _remove(objects: Objects, body: dict[str, Any]) -> bool:
    """Remove the condition from one InferenceService; False when there is nothing (left) to remove."""
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    current: dict[str, Any] | None = body
    for _ in range(MAX_ATTEMPTS):
        if current is None:
            return False  # deleted meanwhile
        status = current.get("status")
        status = status if isinstance(status, dict) else None
        if current_condition(status) is None:
            return False
        patch = {
            "metadata": {"resourceVersion": str(current["metadata"]["resourceVersion"])},
            "status": {"conditions": without_condition((status or {}).get("conditions"))},
        }
        try:
            await objects.patch_status(
                Kind.INFERENCE_SERVICE, namespace, name, patch, field_manager=COMPONENT
            )
            return True
        except GoneError:
            return False
        except ConflictError:
            current = await objects.get(Kind.INFERENCE_SERVICE, namespace, name)
    raise ConflictError(f"{namespace}/{name}: still conflicting after {MAX_ATTEMPTS} attempts")
