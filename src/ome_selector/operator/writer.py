"""The only writes the operator makes: InferenceService `status.conditions` and core/v1 Events.

Status is written with a merge patch of the whole `conditions` list guarded by `metadata.resourceVersion`,
so a concurrent writer's change makes the apiserver answer 409 instead of being overwritten; the caller
re-reads and retries. Events are created once per changing write (Kopf's own event poster has no
de-duplication). The calls themselves are :class:`~ome_selector.kube.objects.Objects`'; this adds the
operator's metrics and its rule that a lost event never fails an evaluation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ome_selector.api.resources import Kind
from ome_selector.kube.objects import ApiError, GoneError, Objects
from ome_selector.operator.metrics import Metrics

__all__ = ["COMPONENT", "ApiWriter"]

COMPONENT = "ome-selector"

logger = logging.getLogger(__name__)


class ApiWriter:
    def __init__(self, objects: Objects, metrics: Metrics, *, instance: str) -> None:
        self._objects = objects
        self._metrics = metrics
        self._instance = instance

    async def read_inference_service(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            body = await self._objects.get(Kind.INFERENCE_SERVICE, namespace, name)
        except ApiError:
            self._metrics.api_errors.labels("read").inc()
            raise
        if body is None:
            raise GoneError(f"{namespace}/{name}")
        return body

    async def patch_conditions(
        self, namespace: str, name: str, *, resource_version: str, conditions: list[Any]
    ) -> dict[str, Any]:
        patch = {"metadata": {"resourceVersion": resource_version}, "status": {"conditions": conditions}}
        try:
            body = await self._objects.patch_status(
                Kind.INFERENCE_SERVICE, namespace, name, patch, field_manager=COMPONENT
            )
        except ApiError:
            self._metrics.api_errors.labels("patch_status").inc()
            raise
        self._metrics.writes.labels("patch_status").inc()
        return body

    async def record_event(
        self, involved: Mapping[str, Any], *, type_: str, reason: str, message: str
    ) -> None:
        try:
            await self._objects.create_event(
                Kind.INFERENCE_SERVICE,
                involved,
                type_=type_,
                reason=reason,
                message=message,
                component=COMPONENT,
                instance=self._instance,
            )
        except ApiError as error:
            # The condition already carries the same text; a lost event must not fail the evaluation,
            # and retrying it would risk recording it twice.
            self._metrics.api_errors.labels("create_event").inc()
            metadata = involved.get("metadata", {})
            logger.warning(
                "could not record event %s on %s/%s: %s",
                reason,
                metadata.get("namespace"),
                metadata.get("name"),
                error.reason,
            )
            return
        self._metrics.writes.labels("create_event").inc()
