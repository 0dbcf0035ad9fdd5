"""The only writes the operator makes: InferenceService `status.conditions` and core/v1 Events.

Status is written with a merge patch of the whole `conditions` list guarded by `metadata.resourceVersion`,
so a concurrent writer's change makes the apiserver answer 409 instead of being overwritten; the caller
re-reads and retries. Events are created once per changing write (Kopf's own event poster has no
de-duplication).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from ome_selector.operator.conditions import now_rfc3339
from ome_selector.operator.metrics import Metrics

GROUP, VERSION, PLURAL = "ome.io", "v1beta1", "inferenceservices"
COMPONENT = "ome-selector"
_MERGE_PATCH = "application/merge-patch+json"

logger = logging.getLogger(__name__)


class ConflictError(Exception):
    """The InferenceService changed since it was read."""


class GoneError(Exception):
    """The InferenceService no longer exists."""


class ApiWriter:
    def __init__(self, api_client: client.ApiClient, metrics: Metrics, *, instance: str) -> None:
        # Typed as Any: the bundled stubs omit `_content_type`, and bodies are plain dicts on purpose.
        self._objects: Any = client.CustomObjectsApi(api_client)
        self._core: Any = client.CoreV1Api(api_client)
        self._metrics = metrics
        self._instance = instance

    async def read_inference_service(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            body: dict[str, Any] = await self._objects.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name
            )
        except ApiException as error:
            if error.status == 404:
                raise GoneError(f"{namespace}/{name}") from error
            self._metrics.api_errors.labels("read").inc()
            raise
        return body

    async def patch_conditions(
        self, namespace: str, name: str, *, resource_version: str, conditions: list[Any]
    ) -> dict[str, Any]:
        patch = {"metadata": {"resourceVersion": resource_version}, "status": {"conditions": conditions}}
        try:
            body: dict[str, Any] = await self._objects.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                patch,
                field_manager=COMPONENT,
                _content_type=_MERGE_PATCH,
            )
        except ApiException as error:
            if error.status == 409:
                raise ConflictError(f"{namespace}/{name}") from error
            if error.status == 404:
                raise GoneError(f"{namespace}/{name}") from error
            self._metrics.api_errors.labels("patch_status").inc()
            raise
        self._metrics.writes.labels("patch_status").inc()
        return body

    async def record_event(
        self, involved: Mapping[str, Any], *, type_: str, reason: str, message: str
    ) -> None:
        metadata = involved.get("metadata", {})
        namespace, name = metadata.get("namespace"), metadata.get("name")
        now = now_rfc3339()
        event = {
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "InferenceService",
                "name": name,
                "namespace": namespace,
                "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self._instance,
        }
        try:
            await self._core.create_namespaced_event(namespace, event, field_manager=COMPONENT)
        except ApiException as error:
            # The condition already carries the same text; a lost event must not fail the evaluation,
            # and retrying it would risk recording it twice.
            self._metrics.api_errors.labels("create_event").inc()
            logger.warning("could not record event %s on %s/%s: %s", reason, namespace, name, error.reason)
            return
        self._metrics.writes.labels("create_event").inc()
