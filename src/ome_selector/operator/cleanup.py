"""`ome-selector cleanup`: remove what the product leaves in a cluster.

- the local ValidatingWebhookConfigurations (SPEC §8, label ``ome-selector.ome.io/local=true``) of one
  instance — this host's and kubeconfig context's by default, the one a ``kill -9`` of ``ome-selector run``
  left behind — or of every instance; the chart's static configuration is never touched;
- unless ``--webhook-only``, the RuntimeReady condition of every InferenceService that this product wrote
  (uninstalling, SPEC §8): its field manager ``ome-selector`` owns ``status.conditions`` in the object's
  managedFields. A condition another writer owns (OME v1.3's controller writes its own RuntimeReady) is kept
  and reported as skipped, unless ``--any-writer``. Every other condition and status field stays; each write
  is guarded by resourceVersion and retried on conflict (ownership checked again on the fresh object).

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
from ome_selector.operator.conditions import condition_writers, current_condition, without_condition
from ome_selector.operator.writer import COMPONENT
from ome_selector.webhook.registration import remove_local_registrations

MAX_ATTEMPTS = 5
SKIPPED_TAIL = "whose RuntimeReady another writer owns (--any-writer removes it too)"


async def run_cleanup(
    *,
    kubeconfig: Path | None,
    context: str | None,
    dry_run: bool,
    instance: str | None,
    webhook_only: bool = False,
    any_writer: bool = False,
) -> int:
    """``instance``: whose local registrations to remove (None: every instance's); ``any_writer``: remove the
    condition whoever wrote it."""
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
        changed = skipped = failed = 0
        for body in snapshot.bodies:
            if current_condition(body.get("status")) is None:
                continue
            namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
            others = _other_writers(body, any_writer)
            if others is not None:
                print(f"skipped inferenceservice {namespace}/{name}: {_not_ours(others)}")
                skipped += 1
                continue
            if dry_run:
                print(f"would remove RuntimeReady from inferenceservice {namespace}/{name}")
                changed += 1
                continue
            try:
                outcome = await _remove(objects, body, any_writer)
            except (ApiError, ConflictError) as error:
                print(f"ome-selector cleanup: {namespace}/{name}: {error}", file=sys.stderr)
                failed += 1
                continue
            if isinstance(outcome, tuple):
                print(f"skipped inferenceservice {namespace}/{name}: {_not_ours(outcome)}")
                skipped += 1
            elif outcome:
                print(f"removed RuntimeReady from inferenceservice {namespace}/{name}")
                changed += 1
        verb = "would change" if dry_run else "changed"
        summary = f"{verb} {changed} InferenceService(s)"
        if skipped:
            summary += f", skipped {skipped} {SKIPPED_TAIL}"
        print(summary + (f", {failed} failed" if failed else ""))
        return 1 if failed else 0


def _other_writers(body: dict[str, Any], any_writer: bool) -> tuple[str, ...] | None:
    """None when the condition is this product's to remove (or ``any_writer``), else the managers that own
    it (possibly none: then nobody's managedFields claim it)."""
    if any_writer:
        return None
    writers = condition_writers(body.get("metadata"))
    return None if COMPONENT in writers else writers


def _not_ours(writers: tuple[str, ...]) -> str:
    owner = "no field manager owns it"
    if writers:
        owner = f"status.conditions last written by {', '.join(writers)}"
    return f"its RuntimeReady was not written by {COMPONENT} ({owner}); kept"


async def _remove(objects: Objects, body: dict[str, Any], any_writer: bool) -> bool | tuple[str, ...]:
    """Remove the condition from one InferenceService; False when there is nothing (left) to remove, the
    other writers when someone else took the condition over meanwhile."""
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    current: dict[str, Any] | None = body
    for _ in range(MAX_ATTEMPTS):
        if current is None:
            return False  # deleted meanwhile
        status = current.get("status")
        status = status if isinstance(status, dict) else None
        if current_condition(status) is None:
            return False
        others = _other_writers(current, any_writer)
        if others is not None:
            return others
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
