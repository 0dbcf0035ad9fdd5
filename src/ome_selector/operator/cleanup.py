"""`ome-selector cleanup`: remove the product's RuntimeReady condition from every InferenceService.

Used when uninstalling.

Every other condition and status field stays; each write is guarded by resourceVersion and retried on
conflict.
Run it after stopping the operator, or the operator writes the condition back.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ome_selector.api.resources import Kind
from ome_selector.kube.connection import ClusterAccess
from ome_selector.kube.objects import ApiError, ConflictError, GoneError, Objects
from ome_selector.operator.conditions import current_condition, without_condition
from ome_selector.operator.writer import COMPONENT

MAX_ATTEMPTS = 5


async def run_cleanup(*, kubeconfig: Path | None, context: str | None, dry_run: bool) -> int:
    api_client = await ClusterAccess(kubeconfig, context).api_client()
    async with api_client:
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
