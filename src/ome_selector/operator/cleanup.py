"""`ome-selector cleanup`: remove the product's RuntimeReady condition from every InferenceService.

Used when uninstalling.

Every other condition and status field stays; each write is guarded by resourceVersion and retried on
conflict.
Run it after stopping the operator, or the operator writes the condition back.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kubernetes_asyncio.client.exceptions import ApiException

from ome_selector.api.resources import Kind
from ome_selector.operator.conditions import current_condition, without_condition
from ome_selector.operator.connection import ClusterAccess
from ome_selector.operator.listing import list_objects
from ome_selector.operator.metrics import Metrics
from ome_selector.operator.writer import ApiWriter, ConflictError, GoneError

MAX_ATTEMPTS = 5


async def run_cleanup(*, kubeconfig: Path | None, context: str | None, dry_run: bool) -> int:
    api_client = await ClusterAccess(kubeconfig, context).api_client()
    async with api_client:
        writer = ApiWriter(api_client, Metrics(), instance="cleanup")
        try:
            snapshot = await list_objects(api_client, kinds=[Kind.INFERENCE_SERVICE])
        except ApiException as error:
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
                if await _remove(writer, body):
                    print(f"removed RuntimeReady from inferenceservice {namespace}/{name}")
                    changed += 1
            except (ApiException, ConflictError) as error:
                print(f"ome-selector cleanup: {namespace}/{name}: {error}", file=sys.stderr)
                failed += 1
        verb = "would change" if dry_run else "changed"
        print(f"{verb} {changed} InferenceService(s)" + (f", {failed} failed" if failed else ""))
        return 1 if failed else 0


async def _remove(writer: ApiWriter, body: dict[str, object]) -> bool:
    metadata = body["metadata"]
    assert isinstance(metadata, dict)
    namespace, name = metadata["namespace"], metadata["name"]
    for _ in range(MAX_ATTEMPTS):
        status = body.get("status")
        status = status if isinstance(status, dict) else None
        if current_condition(status) is None:
            return False
        try:
            await writer.patch_conditions(
                namespace,
                name,
                resource_version=str(metadata["resourceVersion"]),
                conditions=without_condition((status or {}).get("conditions")),
            )
            return True
        except GoneError:
            return False
        except ConflictError:
            body = await writer.read_inference_service(namespace, name)
            metadata = body["metadata"]
            assert isinstance(metadata, dict)
    raise ConflictError(f"{namespace}/{name}: still conflicting after {MAX_ATTEMPTS} attempts")
