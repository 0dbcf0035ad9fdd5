"""The only writes the operator makes: InferenceService `status.conditions` and core/v1 Events.

Status is written with a merge patch of the whole `conditions` list guarded by `metadata.resourceVersion`,
so a concurrent writer's change makes the apiserver answer 409 instead of being overwritten; the caller
re-reads and retries. Events are created once per changing write (Kopf's own event poster has no
de-duplication). The calls themselves are :class:`~ome_selector.kube.objects.Objects`'; this adds the
operator's metrics and its rule that a lost event never fails an evaluation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from ome_selector.api.logfields import log_fields
from ome_selector.api.resources import Kind
from ome_selector.kube.objects import ApiError, GoneError, Objects
from ome_selector.operator.metrics import Metrics

__all__ = ["COMPONENT", "ApiWriter", "NotLeaderError"]

COMPONENT = "ome-selector"

logger = logging.getLogger(__name__)


class NotLeaderError(Exception):
    """This replica may not write now: another holds the Lease, or it could not renew its own in time."""


def _always() -> bool:
    return True


class ApiWriter:
    """``may_write`` is the leader election's fence (SPEC §8), asked right before every write: a replica that
    lost the Lease, or could not renew it in time, writes nothing from that moment on."""

    def __init__(
        self,
        objects: Objects,
        metrics: Metrics,
        *,
        instance: str,
        may_write: Callable[[], bool] = _always,
    ) -> None:
        self._objects = objects
        self._metrics = metrics
        self._instance = instance
        self.may_write = may_write

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
        if not self.may_write():
            raise NotLeaderError(f"{namespace}/{name}")
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
        self,
        involved: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        message: str,
        kind: Kind = Kind.INFERENCE_SERVICE,
    ) -> None:
        """An event on ``involved`` (a body of ``kind``), at most once: never retried, and a failure only
        counted and logged (the change it reports is already stored)."""
        if not self.may_write():
            # The condition was written while this replica led; the event is not recorded after losing the
            # Lease (at most once: the new leader sees the stored condition and records nothing either).
            logger.info("not recording event %s: this replica no longer leads", reason)
            return
        try:
            await self._objects.create_event(
                kind,
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
                extra=log_fields(
                    kind=kind, namespace=metadata.get("namespace"), name=metadata.get("name"), reason=reason
                ),
            )
            return
        self._metrics.writes.labels("create_event").inc()
