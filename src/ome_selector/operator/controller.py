"""The controller, in controller-runtime's shape: work queue → evaluate → write.

Nothing here lists, watches or reads the API to make a decision: the cluster mirror
(:class:`~ome_selector.operator.mirror.ClusterMirror`) keeps the catalog equal to the cluster and says what
changed; the controller queues what a change affects, evaluates each key against the catalog as it is then,
and writes the RuntimeReady condition and its events. The only read is the re-read after a write conflict,
handed to the mirror like the write's answer.

Another writer (SPEC §5): the controller remembers, per InferenceService (uid) and while it leads, the
condition it last wrote or found equal to its verdict (:attr:`_Stored.ours`: a reference to the stored entry,
carried from body to body, so the memory costs no copy). A stored condition that differs from that and from
the verdict was written by someone else — and so is one, when nothing is remembered (after a restart or a
change of leader), whose conditions the managed fields give to another field manager and not to the product.
From that finding on the controller yields (:attr:`_Stored.yielding`): it counts the finding once, reports it
once per InferenceService and writer with a Warning ``RuntimeReadyConflict`` event, and writes nothing to that
condition until it is gone (then restored as usual) or equals the verdict (then it is the product's again).

Scheduling re-evaluations (SPEC §5 "Re-evaluation", "Bursts"): a change of an InferenceService or of its model
is queued at once; a runtime's change is remembered and its InferenceServices are queued once the catalog has
been quiet for :data:`CATALOG_QUIET_SECONDS` (and at most :data:`CATALOG_MAX_WAIT_SECONDS` after the first
change), so that a burst — a `kubectl apply` of a whole catalog — costs one pass, not one per runtime. Every
evaluation reads the catalog as it is then, so waiting changes no final state. Large sets of keys are handed
to the work queue a chunk per turn of the event loop and grouped by what their auto-selection reads, so the
catalog's memo ranks each model once per pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ome_selector.api.logfields import log_fields
from ome_selector.api.resources import InferenceService, Kind, ObjectKey, Resource
from ome_selector.kube.objects import ConflictError, GoneError
from ome_selector.operator.conditions import (
    CONFLICT_EVENT_REASON,
    build_condition,
    condition_writers,
    current_condition,
    differs,
    only_counts_differ,
    with_condition,
)
from ome_selector.operator.events import EventPipeline, PendingEvent, involved_reference
from ome_selector.operator.metrics import Metrics
from ome_selector.operator.mirror import ClusterMirror
from ome_selector.operator.tasks import cancel_and_wait
from ome_selector.operator.workqueue import WorkQueue
from ome_selector.operator.writer import COMPONENT, ApiWriter, NotLeaderError
from ome_selector.selection import messages
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import CONDITION_TYPE, Outcome, evaluate, selection_change

logger = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 5
#: Runtime-caused re-evaluations wait until no runtime changed for this long (SPEC §5: 2 s at most) ...
CATALOG_QUIET_SECONDS = 1.0
#: ... and no longer than this after the first change of the burst (SPEC §5: 30 s at most).
CATALOG_MAX_WAIT_SECONDS = 20.0
#: Keys handed to the work queue, or grouped, per turn of the event loop.
FEED_CHUNK = 1000
#: Other writers reported per InferenceService, at most (their names come from the objects).
MAX_REPORTED_WRITERS = 4


class _Packed(tuple[Any, ...]):
    """A condition whose keys and values are all strings, numbers, booleans or null, as one flat tuple
    ``(key, value, key, value, ...)`` with its strings interned."""

    __slots__ = ()


def _pack(condition: Any) -> Any:
    if not isinstance(condition, Mapping):
        return condition  # malformed: kept as it is, a write sends it back unchanged
    flat: list[Any] = []
    for key, value in condition.items():
        if not isinstance(key, str) or not (value is None or isinstance(value, str | int | float)):
            return condition  # a nested value (no condition of the Kubernetes convention has one)
        flat += (sys.intern(key), sys.intern(value) if isinstance(value, str) else value)
    return _Packed(flat)


def _unpack(condition: Any) -> Any:
    if isinstance(condition, _Packed):
        return dict(zip(condition[::2], condition[1::2], strict=True))
    return condition


#: The conditions' field managers when the product alone wrote them last: one tuple shared by all.
_OURS = (COMPONENT,)
#: Other tuples of field managers, shared while there are few (a cluster has a handful of writers).
_WRITER_SETS: dict[tuple[str, ...], tuple[str, ...]] = {_OURS: _OURS, (): ()}
_WRITER_SETS_HELD = 64


def _shared_writers(writers: tuple[str, ...]) -> tuple[str, ...]:
    shared = _WRITER_SETS.get(writers)
    if shared is not None:
        return shared
    if len(_WRITER_SETS) < _WRITER_SETS_HELD:
        writers = tuple(sys.intern(writer) for writer in writers)
        _WRITER_SETS[writers] = writers
    return writers


class _Stored:
    """What a write needs from the last seen body of an InferenceService: its version, its conditions and the
    field managers that own them (whole bodies would keep every object's managedFields in memory).

    One is kept per InferenceService, so compactly: the conditions as flat tuples of interned strings (the
    keys are the same everywhere; type, status, reason and often message and time are shared by many
    InferenceServices), not the body's dictionaries. :attr:`conditions` gives the list as it was read.
    """

    __slots__ = ("_conditions", "ours", "reported", "resource_version", "uid", "writers", "yielding")

    def __init__(
        self,
        resource_version: str,
        conditions: Sequence[Any] | None,
        writers: tuple[str, ...] = (),
        *,
        uid: str | None = None,
        previous: _Stored | None = None,
    ) -> None:
        self.resource_version = resource_version
        #: The field managers that own RuntimeReady (SPEC §5 "Another writer" names one of them).
        self.writers = _shared_writers(writers)
        self.uid = uid
        self._conditions: Sequence[Any] | None = (
            conditions if conditions is None or isinstance(conditions, str) else tuple(map(_pack, conditions))
        )
        # SPEC §5 "Another writer", carried over from the previous body of the same object (uid): the
        # RuntimeReady entry this process last wrote (None: none while it leads), and the other writers
        # already reported.
        same = previous is not None and previous.uid == uid
        self.ours: Any = previous.ours if same and previous is not None else None
        self.reported: tuple[str, ...] = previous.reported if same and previous is not None else ()
        #: Another writer's condition is left alone (SPEC §5 "Another writer": from the finding on).
        self.yielding: bool = previous.yielding if same and previous is not None else False

    def runtime_ready(self) -> Any:
        """The stored RuntimeReady entry as held (packed), None when there is none."""
        for condition in self._conditions if isinstance(self._conditions, tuple) else ():
            fields = _unpack(condition)
            if isinstance(fields, Mapping) and fields.get("type") == CONDITION_TYPE:
                return condition
        return None

    @property
    def conditions(self) -> Sequence[Any] | None:
        """The conditions as read (a list of new dictionaries on every call), None when there were none."""
        packed = self._conditions
        return packed if packed is None or isinstance(packed, str) else [_unpack(c) for c in packed]


class Controller:
    def __init__(
        self,
        writer: ApiWriter | None,
        metrics: Metrics,
        *,
        report_only: bool = False,
        workers: int = 4,
        runtime_lookup: RuntimeLookup = RuntimeLookup.V1_3,
        catalog_quiet_s: float = CATALOG_QUIET_SECONDS,
        catalog_max_wait_s: float = CATALOG_MAX_WAIT_SECONDS,
    ) -> None:
        self.mirror = ClusterMirror(on_status=self._remember_status, on_change=self._on_change)
        self.catalog = self.mirror.catalog
        self.metrics = metrics
        self.report_only = report_only
        #: SPEC §1's named-runtime lookup (``--runtime-lookup``).
        self.runtime_lookup = runtime_lookup
        self._writer = writer
        self._stored: dict[ObjectKey, _Stored] = {}
        self.queue: WorkQueue[ObjectKey] = WorkQueue(
            self._evaluate_key,
            workers=workers,
            on_depth=metrics.queue_depth.set,
            on_retry=lambda _key, _error: metrics.retries.inc(),
            on_wait=metrics.queue_seconds.observe,
        )
        # Events are created beside the status writes, not behind them (at most once, bounded).
        self.events = EventPipeline(self._record_event, on_drop=metrics.events_dropped.inc, workers=workers)
        self.ready = asyncio.Event()
        self._quiet_s, self._max_wait_s = catalog_quiet_s, catalog_max_wait_s
        # Runtimes changed since the last pass (SPEC §5 "Bursts"); when the first and the last one changed.
        self._changed_runtimes: dict[ObjectKey, None] = {}
        self._burst_started = self._burst_last = 0.0
        self._burst: asyncio.Task[None] | None = None
        # Keys waiting to be handed to the work queue a chunk at a time.
        self._incoming: dict[ObjectKey, None] = {}
        self._feeder: asyncio.Task[None] | None = None

    # --- what the mirror says ----------------------------------------------------------------------

    def _on_change(self, key: ObjectKey, previous: Resource | None, current: Resource | None) -> None:
        """The mirror's catalog changed for ``key``: a gone InferenceService takes its memory of writes and
        its metric row with it; any other change is scheduled once the first listing is in."""
        if current is None and key.kind is Kind.INFERENCE_SERVICE:
            self._stored.pop(key, None)
            self.metrics.forget(key)
            return
        if self.ready.is_set():
            self._changed(previous, current)

    def mark_ready(self) -> None:
        """The first full listing is in the catalog: evaluate every InferenceService once."""
        if self.ready.is_set():
            return
        self.ready.set()
        self.evaluate_all()

    def forget_writes(self) -> None:
        """This replica stopped leading: what it wrote may be overwritten by the next leader, which is no
        other writer (SPEC §5, §8)."""
        for stored in self._stored.values():
            stored.ours, stored.yielding = None, False  # the next leader finds other writers anew

    def evaluate_all(self) -> None:
        """Queue every InferenceService once, e.g. on becoming the leader: the stored conditions are the
        memory, so only what differs is written."""
        if self.ready.is_set():
            self._enqueue(self.catalog.keys(Kind.INFERENCE_SERVICE))

    # --- scheduling -----------------------------------------------------------------------------------

    def _changed(self, previous: Resource | None, current: Resource | None) -> None:
        """An object changed: queue what it affects, at once or, for a runtime, after the burst (SPEC §5)."""
        resource = current if current is not None else previous
        if resource is None:
            return
        if resource.kind.is_runtime:
            self._runtime_changed(resource.key)
        else:
            self._enqueue(self._affected(previous, current))

    def _affected(self, previous: Resource | None, current: Resource | None) -> set[ObjectKey]:
        """The InferenceServices a change from ``previous`` to ``current`` (None: absent) can affect."""
        keys: set[ObjectKey] = set()
        for resource in (previous, current):
            if resource is None:
                continue
            if resource.kind is Kind.INFERENCE_SERVICE:
                keys.add(resource.key)
            elif resource.kind.is_model:
                keys.update(self.catalog.inference_services_referencing_model(resource.key))
            else:
                keys.update(self._affected_by_runtime(resource.key))
        return keys

    def _affected_by_runtime(self, runtime: ObjectKey) -> Sequence[ObjectKey]:
        """The one place that says which InferenceServices a change of ``runtime`` affects, read from the
        catalog as it is when the burst's pass starts."""
        return self.catalog.inference_services_affected_by_runtime(runtime)

    def _runtime_changed(self, runtime: ObjectKey) -> None:
        now = time.monotonic()
        if not self._changed_runtimes:
            self._burst_started = now
        self._changed_runtimes[runtime] = None
        self._burst_last = now
        if self._burst is None or self._burst.done():
            self._burst = asyncio.get_running_loop().create_task(self._after_burst(), name="catalog-burst")

    async def _after_burst(self) -> None:
        """Once the runtimes have been quiet (or the burst has lasted long enough), queue every
        InferenceService the changed runtimes affect, once."""
        while self._changed_runtimes:
            while (
                wait := min(self._burst_last + self._quiet_s, self._burst_started + self._max_wait_s)
                - time.monotonic()
            ) > 0:
                await asyncio.sleep(wait)
            runtimes, self._changed_runtimes = self._changed_runtimes, {}
            keys: dict[ObjectKey, None] = {}
            everyone = self.catalog.counts()[Kind.INFERENCE_SERVICE]
            for runtime in runtimes:
                affected = self._affected_by_runtime(runtime)
                for start in range(0, len(affected), FEED_CHUNK):
                    keys.update(dict.fromkeys(affected[start : start + FEED_CHUNK]))
                    await asyncio.sleep(0)  # 100,000 keys are gathered over many turns of the loop
                if len(keys) >= everyone:
                    break  # the rest can add nobody
            self._enqueue(keys)

    def _enqueue(self, keys: Iterable[ObjectKey]) -> None:
        """Hand ``keys`` to the work queue: a few at once, many a chunk per turn of the event loop."""
        incoming = self._incoming
        incoming.update(keys if isinstance(keys, dict) else dict.fromkeys(keys))
        if len(incoming) <= FEED_CHUNK and (self._feeder is None or self._feeder.done()):
            for key in incoming:
                self.queue.add(key)
            incoming.clear()
        elif self._feeder is None or self._feeder.done():
            self._feeder = asyncio.get_running_loop().create_task(self._feed(), name="feed-workqueue")

    async def _feed(self) -> None:
        while self._incoming:
            batch, self._incoming = self._incoming, {}
            ordered = await self._in_memo_order(batch)
            for start in range(0, len(ordered), FEED_CHUNK):
                for key in ordered[start : start + FEED_CHUNK]:
                    self.queue.add(key)
                await asyncio.sleep(0)

    async def _in_memo_order(self, keys: Iterable[ObjectKey]) -> list[ObjectKey]:
        """``keys`` grouped by what their auto-selection reads (scope, model, accelerator classes), so each
        group's ranking is computed once and read by the rest of the group while the memo still holds it."""
        groups: dict[tuple[Any, ...], list[ObjectKey]] = {}
        catalog = self.catalog
        for count, key in enumerate(keys, 1):
            isvc = catalog.get(key)
            group: tuple[Any, ...] = ()  # gone meanwhile: its evaluation finds nothing
            if isinstance(isvc, InferenceService):
                namespace = isvc.namespace
                scope = namespace if catalog.runtime_counts(namespace)[0] else None
                group = (scope, isvc.model_name, isvc.accelerator_classes)
            members = groups.get(group)
            if members is None:
                groups[group] = [key]
            else:
                members.append(key)
            if count % FEED_CHUNK == 0:
                await asyncio.sleep(0)
        return [key for members in groups.values() for key in members]

    # --- evaluating -----------------------------------------------------------------------------------

    async def _evaluate_key(self, key: ObjectKey) -> None:
        started = time.perf_counter()
        try:
            for _ in range(MAX_CONFLICT_RETRIES):
                isvc = self.catalog.get(key)
                if not isinstance(isvc, InferenceService):
                    return
                outcome = evaluate(self.catalog, isvc, self.runtime_lookup)
                if outcome is None:
                    # Left alone (SPEC §5): no metric row, also when it had one before.
                    self.metrics.forget(key)
                    return
                self.metrics.evaluations.labels(outcome.status, outcome.reason).inc()
                self.metrics.record_verdict(key, outcome.status, outcome.reason)
                if self.report_only or self._writer is None or not self._writer.may_write():
                    # Report-only, or a follower (SPEC §8): the verdict feeds the metrics; the leader writes.
                    logger.debug("verdict for %s, not written: %s %s", key, outcome.reason, outcome.message)
                    return
                try:
                    await self._write(key, outcome, isvc.uid, started=started)
                    return
                except NotLeaderError:
                    return  # the Lease was lost between the decision and the write
                except ConflictError:
                    # Someone else changed the object: read it as the watch would, and decide again.
                    await self._refresh(key)
            raise RuntimeError(f"{key}: gave up after {MAX_CONFLICT_RETRIES} write conflicts")
        except GoneError:
            return
        finally:
            self.metrics.evaluation_seconds.observe(time.perf_counter() - started)

    async def _write(self, key: ObjectKey, outcome: Outcome, uid: str | None, *, started: float) -> None:
        assert self._writer is not None
        assert key.namespace is not None
        stored = self._stored.get(key)
        if stored is None:
            return
        condition_now = current_condition({"conditions": stored.conditions})
        same_object = stored.uid == uid  # else an earlier object of the same name
        if not differs(condition_now, outcome.status, outcome.reason, outcome.message):
            if same_object and condition_now is not None:
                # The verdict is stored: the condition is the product's (again), whoever wrote it (SPEC §5).
                if stored.yielding:
                    logger.info(
                        "%s: RuntimeReady equals the verdict again: written as usual from now on", key
                    )
                stored.ours, stored.yielding = stored.runtime_ready(), False
            return
        other = _other_writer(condition_now, stored.ours if same_object else None, stored.writers)
        if other is not None:
            self._yield_to(key, stored, other)
            return
        stored.yielding = False  # gone: restored as usual
        switched = selection_change(condition_now, outcome)
        condition = build_condition(condition_now, outcome.status, outcome.reason, outcome.message)
        conditions = with_condition(stored.conditions, condition)
        # A message that changed only in its runtime counts is written without an event (SPEC §5).
        counts_only = only_counts_differ(condition_now, outcome.status, outcome.reason, outcome.message)
        body = await self._writer.patch_conditions(
            key.namespace, key.name, resource_version=stored.resource_version, conditions=conditions
        )
        self.mirror.observe_written(body)
        involved = involved_reference(body)
        after = self._stored.get(key)
        written_version = str((body.get("metadata") or {}).get("resourceVersion", ""))
        if after is not None and after.uid == uid and after.resource_version == written_version:
            after.ours = after.runtime_ready()  # what this write stored: the memory
        logger.info(
            "%s: RuntimeReady=%s %s: %s",
            key,
            outcome.status,
            outcome.reason,
            outcome.message,
            extra=log_fields(
                key, reason=outcome.reason, status=outcome.status, duration=time.perf_counter() - started
            ),
        )
        if outcome.event is not None and not counts_only:
            event = outcome.event
            self.events.submit(key, PendingEvent(involved, event.type, event.reason, event.message))
        if switched is not None:
            # With the write that changed the runtime, at most once (SPEC §12 "Switch events").
            self.events.submit(key, PendingEvent(involved, switched.type, switched.reason, switched.message))

    def _yield_to(self, key: ObjectKey, stored: _Stored, other: str) -> None:
        """Another writer's RuntimeReady is stored (SPEC §5 "Another writer"): leave it alone. The finding is
        counted and logged once, when the yielding starts, and reported with an event once per writer."""
        if stored.yielding:
            logger.debug("%s: RuntimeReady is left to %s", key, other)
            return
        stored.yielding = True
        self.metrics.condition_conflicts.inc()
        conflict = messages.condition_conflict(other)  # the name shown escaped, also in the log
        logger.warning(
            "%s: %s; RuntimeReady is not written until that condition is gone or equals the verdict",
            key,
            conflict,
            extra=log_fields(key, reason=CONFLICT_EVENT_REASON),
        )
        if other not in stored.reported and len(stored.reported) < MAX_REPORTED_WRITERS:
            stored.reported = (*stored.reported, other)
            metadata = {"name": key.name, "namespace": key.namespace, "uid": stored.uid}
            involved = {"metadata": metadata | {"resourceVersion": stored.resource_version}}
            self.events.submit(key, PendingEvent(involved, "Warning", CONFLICT_EVENT_REASON, conflict))

    async def _record_event(self, event: PendingEvent) -> None:
        assert self._writer is not None
        await self._writer.record_event(
            event.involved, type_=event.type_, reason=event.reason, message=event.message
        )

    async def _refresh(self, key: ObjectKey) -> None:
        assert self._writer is not None
        assert key.namespace is not None
        self.mirror.observe_read(key, await self._writer.read_inference_service(key.namespace, key.name))

    # --- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> None:
        self.queue.start()
        self.events.start()

    async def finish_writes(self, drain_timeout: float = 2.0) -> None:
        """Stop deciding: the evaluations under way finish, and the events of the conditions written are
        recorded, each for up to ``drain_timeout`` seconds. A leader that is stopping does this while it still
        holds the Lease, so that a rolling restart drops none of them (SPEC §5, §8); the next leader evaluates
        everything."""
        await cancel_and_wait([task for task in (self._burst, self._feeder) if task is not None])
        await self.queue.stop(finish_s=drain_timeout)  # a write under way completes and hands its event over
        await self.events.stop(drain_timeout)

    async def stop(self) -> None:
        await self.finish_writes()

    @property
    def busy(self) -> bool:
        """Whether an evaluation or an event is still waiting (a burst's included) or running."""
        return bool(
            self._changed_runtimes
            or self._incoming
            or any(task is not None and not task.done() for task in (self._burst, self._feeder))
            or self.queue.busy
            or self.events.busy
        )

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Until a burst's wait is over and the work queue and the event queues are idle, or ``timeout``
        seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while True:
                    for task in (self._burst, self._feeder):
                        if task is not None and not task.done():
                            await asyncio.wait([task])
                    await self.queue.wait_idle()
                    await self.events.wait_idle()
                    if not self.busy:
                        return

    # --- helpers ----------------------------------------------------------------------------------------

    def _remember_status(self, key: ObjectKey, body: Mapping[str, Any]) -> None:
        metadata = body.get("metadata") or {}
        status = body.get("status")
        conditions = status.get("conditions") if isinstance(status, Mapping) else None
        uid = metadata.get("uid")
        self._stored[key] = _Stored(
            resource_version=str(metadata.get("resourceVersion", "")),
            conditions=conditions if isinstance(conditions, Sequence) else None,
            # Only a writer reads them (SPEC §5 "Another writer").
            writers=condition_writers(metadata) if conditions and not self.report_only else (),
            uid=uid if isinstance(uid, str) else None,
            previous=self._stored.get(key),
        )


def _fields(condition: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return condition.get("status"), condition.get("reason"), condition.get("message")


def _other_writer(stored: Mapping[str, Any] | None, ours: Any, writers: Sequence[str]) -> str | None:
    """Who else wrote the stored RuntimeReady, which differs from the verdict (SPEC §5 "Another writer"):
    None when nothing is stored (a removal is restored as before), when it is what this process last wrote or
    found equal to its verdict (``ours``, as held), or when the managed fields say the product itself last
    wrote the conditions (a write whose answer was lost); else the first other field manager that owns the
    conditions — or, when this process remembers a condition of its own there, ``another writer`` when none
    does. With nothing remembered (a restart, a new leader) only the managed fields can tell."""
    if stored is None:
        return None
    written = _unpack(ours)
    if isinstance(written, Mapping) and _fields(stored) == _fields(written):
        return None
    if COMPONENT in writers:
        return None
    others = [writer for writer in writers if writer != COMPONENT]
    if others:
        return others[0]
    return messages.ANOTHER_WRITER if isinstance(written, Mapping) else None
