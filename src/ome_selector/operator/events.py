"""Events recorded beside the status writes, not behind them (SPEC §8).

A status write and its event used to run one after the other in the same worker, so each evaluation paid two
API round trips and the next status write waited for the event. Now a worker hands the event to this pipeline
as soon as its status write succeeded and moves on; the pipeline's own workers create the events.

- At most once: an event enters only after its write succeeded, and is never retried (a retry after a timeout
  could record it twice). The writer's leadership fence is asked again right before the create.
- Bounded: a fixed number of queued events per worker. When a queue is full the event is dropped, counted in
  ``ome_selector_events_dropped_total`` and said once a minute; the condition already carries the same text.
- Per object in order: an InferenceService's events always go to the same worker, so two changes of one
  object are recorded in the order they were written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, NamedTuple

from ome_selector.operator.tasks import cancel_and_wait

__all__ = ["CAPACITY", "WORKERS", "EventPipeline", "PendingEvent", "involved_reference"]

logger = logging.getLogger(__name__)

WORKERS = 4
#: Events waiting in all queues together, at most (a full fan-out of 1,000 InferenceServices fits).
CAPACITY = 4096
#: A drop is said at most this often (the counter has every one).
DROP_LOG_INTERVAL_SECONDS = 60.0


class PendingEvent(NamedTuple):
    involved: Mapping[str, Any]
    type_: str
    reason: str
    message: str


def involved_reference(body: Mapping[str, Any]) -> dict[str, Any]:
    """What an event needs of the object it is about: not the whole body (with its managedFields) while it
    waits in a queue."""
    metadata = body.get("metadata") or {}
    return {
        "metadata": {
            field: metadata[field]
            for field in ("name", "namespace", "uid", "resourceVersion")
            if field in metadata
        }
    }


class EventPipeline:
    def __init__(
        self,
        record: Callable[[PendingEvent], Awaitable[None]],
        *,
        on_drop: Callable[[], None] = lambda: None,
        workers: int = WORKERS,
        capacity: int = CAPACITY,
    ) -> None:
        self._record = record
        self._on_drop = on_drop
        per_worker = max(1, capacity // workers)
        self._queues: list[asyncio.Queue[PendingEvent]] = [
            asyncio.Queue(maxsize=per_worker) for _ in range(workers)
        ]
        self._tasks: list[asyncio.Task[None]] = []
        self._pending = 0  # queued or being recorded
        self._dropped_since_log = 0
        self._last_drop_log: float | None = None

    def submit(self, key: Hashable, event: PendingEvent) -> None:
        """Queue ``event`` (about ``key``) without waiting; drop it when its queue is full."""
        queue = self._queues[hash(key) % len(self._queues)]
        try:
            queue.put_nowait(event)
        except asyncio.QueueFull:
            self._drop(event)
        else:
            self._pending += 1

    @property
    def busy(self) -> bool:
        return self._pending > 0

    async def wait_idle(self) -> None:
        """Until every queued event has been recorded or given up (tests and benchmarks)."""
        for queue in self._queues:
            await queue.join()

    def start(self) -> None:
        for index, queue in enumerate(self._queues):
            self._tasks.append(asyncio.create_task(self._worker(queue), name=f"event-worker-{index}"))

    async def stop(self, drain_timeout: float = 2.0) -> None:
        """Record what is queued for up to ``drain_timeout`` seconds (its writes happened), then stop."""
        if self._tasks:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(drain_timeout):
                    await self.wait_idle()
        await cancel_and_wait(self._tasks)
        self._tasks.clear()

    async def _worker(self, queue: asyncio.Queue[PendingEvent]) -> None:
        while True:
            event = await queue.get()
            try:
                await self._record(event)
            except asyncio.CancelledError:
                raise
            except Exception:  # API errors are reported by the recorder; nothing may stop the worker
                logger.exception("recording event %s failed", event.reason)
            finally:
                self._pending -= 1
                queue.task_done()

    def _drop(self, event: PendingEvent) -> None:
        self._on_drop()
        self._dropped_since_log += 1
        now = time.monotonic()
        if self._last_drop_log is None or now - self._last_drop_log >= DROP_LOG_INTERVAL_SECONDS:
            logger.warning(
                "event queue full: not recording %s (%d dropped since the last such line); "
                "the conditions carry the same text",
                event.reason,
                self._dropped_since_log,
            )
            self._dropped_since_log = 0
            self._last_drop_log = now
