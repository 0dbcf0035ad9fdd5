"""The cluster mirror: the in-memory catalog kept equal to the cluster, and nothing else.

Everything arrives here — Kopf's watch events, the startup listing and the resyncs, the answer of a write or
of the re-read after a conflict — and the rest of the operator hears only what changed, through the callbacks
given at construction: ``on_status`` when an InferenceService's body is read (the writer's memory of its
conditions), ``on_change`` when what the catalog holds for a key changed (or went). This module imports
nothing of the controller or of the Kopf wiring.

The memory only moves forward (SPEC §5 "Level-triggered resync"): per kind, the resourceVersion of the last
full listing is a floor (an event older than it shows a state the listing already superseded), a deletion
leaves a tombstone (a late event must not bring the object back), and the keys the watch changed while a
listing was in flight are touched (the listing must not undo them).

Bounded work per event (SPEC §8): a model or runtime whose ``metadata.generation`` (and uid, and for a
runtime the two annotations it reads, SPEC §5) is the one already read is not parsed again — a label change
or a relist costs a dictionary lookup — and one too large to read
(:func:`~ome_selector.api.bounds.oversized`) is treated as absent. A full listing is reconciled with
:meth:`ClusterMirror.reconcile` a page at a time (only one page of bodies alive), yielding to the event loop
as it goes.

When to list again (:class:`Resyncs`, SPEC §5): periodically, and a moment after Kopf lists a kind again,
which it does after every watch gap (410 Gone): a relist sends no DELETED for what vanished meanwhile, so only
a listing of our own can tell. Kopf's first listing of each kind, just after ours at start, is reconciled too
(something may have vanished between the two) but needs no evaluation of everything: the start evaluated
everything already.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from typing import Any, Protocol

from ome_selector.api.loading import LoadError, key_of, load_stored
from ome_selector.api.resources import (
    API_GROUP_VERSION,
    INHERIT_FROM_ANNOTATION,
    RUNTIME_PROFILE_ANNOTATION,
    InferenceService,
    Kind,
    ObjectKey,
    Resource,
    Runtime,
)
from ome_selector.catalog.catalog import Catalog
from ome_selector.kube.objects import Page
from ome_selector.kube.versions import body_version, version_number

logger = logging.getLogger(__name__)

#: A reconciliation of a full listing gives the event loop a turn at least this often.
YIELD_EVERY_SECONDS = 0.01
#: Deletions remembered by resourceVersion between two full listings (the oldest go first beyond this).
MAX_TOMBSTONES = 100_000

#: After Kopf's listing events stop for this long (or at most after RELIST_MAX_DELAY), resync.
RELIST_QUIET_SECONDS = 0.5
RELIST_MAX_DELAY_SECONDS = 5.0
#: A resync after a listing that fails is tried again after this long, doubling up to the maximum, or as soon
#: as Kopf reads a listing again.
RELIST_RETRY_SECONDS = 1.0
RELIST_RETRY_MAX_SECONDS = 8.0
#: A listing event of a kind this long after the previous one belongs to a new listing (a watch gap): longer
#: than the pause between two pages of one listing.
RELIST_GAP_SECONDS = 2.0

#: An InferenceService's body was read (its status: what a write needs).
OnStatus = Callable[[ObjectKey, Mapping[str, Any]], None]
#: What the catalog holds for a key changed: (key, before, after), None where absent. Called for every
#: removal (also of a key the catalog did not hold), and for an addition or a change only when what a
#: selection reads differs.
OnChange = Callable[[ObjectKey, Resource | None, Resource | None], None]


class ClusterMirror:
    """The catalog as the watch, the listings and the writes' answers show the cluster."""

    def __init__(self, *, on_status: OnStatus, on_change: OnChange) -> None:
        self.catalog = Catalog()
        self._on_status = on_status
        self._on_change = on_change
        self._load_errors: dict[ObjectKey, str] = {}
        # (uid, generation, read annotations) of each model and runtime as read: the same again needs no
        # parsing.
        self._generations: dict[ObjectKey, _Read] = {}
        # Keys the watch changed while a listing was in flight, with the resourceVersion it delivered (None:
        # no listing in flight).
        self._touched: dict[ObjectKey, int | None] | None = None
        # Per kind, the resourceVersion of the last full listing; per key, the resourceVersion at which it
        # was deleted since.
        self._floors: dict[Kind, int] = {}
        self._tombstones: dict[ObjectKey, int] = {}

    # --- intake -------------------------------------------------------------------------------------

    def on_watch_event(self, body: Mapping[str, Any], *, deleted: bool) -> bool:
        """A watch event (Kopf's listing included). Kopf hands each object's events over in order, but not
        the events of two objects: the deletion of a name's old object may come after the creation of its
        new one, and an event that waited in Kopf's queue through a watch gap after the listing that
        followed it. An event older than what the memory holds is dropped; any other is newer than a
        listing still in flight. Returns whether the event was taken (False: it was outdated)."""
        key = key_of(body)
        version = body_version(body)
        if key is not None:
            if self.outdated(key, version):
                return False
            if self._touched is not None:
                self._touched[key] = version
            if deleted and version is not None:
                self._tombstones[key] = version
                if len(self._tombstones) > MAX_TOMBSTONES:
                    del self._tombstones[next(iter(self._tombstones))]
        if deleted:
            self.forget(body)
        else:
            self.observe(body)
        return True

    def outdated(self, key: ObjectKey, version: int | None) -> bool:
        """Whether a state of ``key`` at resourceVersion ``version`` is older than what the memory holds: a
        deletion since, a later state, or — for a key the memory does not hold — a full listing since, which
        did not hold it either (resourceVersions compare only within a kind, and only where the apiserver
        makes them comparable: else nothing is outdated). An object unchanged since a listing keeps the
        version it had, older than the listing's: only its own state in memory can outdate it."""
        if version is None:
            return False
        deleted_at = self._tombstones.get(key)
        if deleted_at is not None and version <= deleted_at:
            return True
        known = self.catalog.get(key)
        if known is not None:
            held = version_number(known.resource_version)
            return held is not None and version < held
        floor = self._floors.get(key.kind)
        return floor is not None and version < floor

    def observe_written(self, body: Mapping[str, Any]) -> None:
        """The object as a write returned it: the watch may have delivered a later state already (the answer
        and the watch come over different connections)."""
        key = key_of(body)
        if key is None or not self.outdated(key, body_version(body)):
            self.observe(body)

    def observe_read(self, key: ObjectKey, body: Mapping[str, Any]) -> None:
        """The object as the re-read after a write conflict returned it. Its status is handed on even where
        the catalog already holds this version (which :meth:`observe` then skips): what was remembered for
        the write is what conflicted."""
        if self.outdated(key, body_version(body)):
            return  # the watch delivered a later state meanwhile, and its status was handed on with it
        self._on_status(key, body)
        self.observe(body)

    def observe(self, body: Mapping[str, Any]) -> None:
        """An object was listed, added or modified: update the catalog and say what changed."""
        key = key_of(body)
        known = self.catalog.get(key) if key is not None else None
        if known is not None and _same_version(known, body):
            # This very version is read already: a resync's listing, or Kopf's own listing of what the startup
            # listing read (a resourceVersion names one state of one object, its status included).
            return
        read = _generation_of(body)
        if read is not None and known is not None and self._generations.get(known.key) == read:
            return  # a model or runtime as already read: its spec is the same
        resource = self._load(body)
        if resource is None:
            return
        key = resource.key
        if read is not None:
            self._generations[key] = read
        previous = self.catalog.get(key)
        if isinstance(resource, InferenceService):
            self._on_status(key, body)
        self.catalog.upsert(resource)  # also when nothing read differs: keeps resourceVersion and uid current
        if previous is None or not _same_inputs(previous, resource):
            self._on_change(key, previous, resource)

    def forget(self, body: Mapping[str, Any]) -> None:
        """An object was deleted."""
        key = key_of(body)
        if key is None:
            return
        previous = self.catalog.remove(key)
        self._load_errors.pop(key, None)
        self._generations.pop(key, None)
        self._on_change(key, previous, None)

    # --- full listings ------------------------------------------------------------------------------

    def begin_listing(self) -> None:
        """A full listing is about to be requested: from now on, remember what the watch changes."""
        self._touched = {}

    async def reconcile(self, pages: AsyncIterable[Page]) -> None:
        """Reconcile the catalog with the full listing requested after :meth:`begin_listing` (startup and
        resyncs), read a page at a time: add and change as the pages come, then remove what none of them held
        — except what the watch changed meanwhile at a resourceVersion later than the listing's (or at any,
        where they do not compare). A listing that fails part way (the exception goes to the caller) removes
        nothing: each object it stored is a state the object had."""
        touched = self._touched if self._touched is not None else {}
        listed: set[ObjectKey] = set()
        held_back: dict[ObjectKey, Mapping[str, Any]] = {}  # listed, but touched: judged at the end
        versions: dict[Kind, int] = {}
        unversioned: set[Kind] = set()
        turn = time.monotonic()
        try:
            async for page in pages:
                version = version_number(page.resource_version)
                if version is not None:
                    versions[page.kind] = min(versions.get(page.kind, version), version)
                elif page.resource_version is not None:
                    unversioned.add(page.kind)
                for body in page.bodies:
                    key = key_of(body)
                    if key is None:
                        continue
                    listed.add(key)
                    if key in touched:
                        held_back[key] = body
                    else:
                        self.observe(body)
                    if time.monotonic() - turn > YIELD_EVERY_SECONDS:
                        await asyncio.sleep(0)
                        turn = time.monotonic()
            for kind in unversioned:
                versions.pop(kind, None)

            def listing_is_newer(key: ObjectKey) -> bool:
                seen, listed_at = touched.get(key), versions.get(key.kind)
                return seen is not None and listed_at is not None and seen < listed_at

            for key, held in held_back.items():
                if listing_is_newer(key):
                    self.observe(held)
            for key in self.catalog.keys(kind=None):
                if key not in listed and (key not in touched or listing_is_newer(key)):
                    self.forget(_body_of(key))
            for kind, version in versions.items():
                self._floors[kind] = max(self._floors.get(kind, version), version)
            self._tombstones = {
                key: deleted_at
                for key, deleted_at in self._tombstones.items()
                if deleted_at >= self._floors.get(key.kind, 0)
            }
        finally:
            self._touched = None

    # --- helpers ------------------------------------------------------------------------------------

    def _load(self, body: Mapping[str, Any]) -> Resource | None:
        try:
            resource = load_stored(body)
        except LoadError as error:
            key = key_of(body)
            # The apiserver validated this object against whatever CRD is installed (possibly OME's own);
            # one that our model rejects, or that is too large to read, is treated as absent, and said once
            # per distinct error.
            if key is not None:
                if self.catalog.get(key) is not None:
                    self.forget(body)  # first: forgetting also forgets the error said about it
                if self._load_errors.get(key) != str(error):
                    logger.warning("ignoring %s: %s", key, error)
                    self._load_errors[key] = str(error)
            return None
        if resource is not None:
            self._load_errors.pop(resource.key, None)
        return resource


class Resync(Protocol):
    """One full listing reconciled into the mirror, then (``evaluate``) every InferenceService evaluated."""

    def __call__(self, *, evaluate: bool) -> Awaitable[None]: ...


class Resyncs:
    """When the mirror is listed again: once for each listing Kopf starts (evaluating everything when it is a
    relist after a watch gap), tried again with a backoff until one succeeds; and periodically.

    ``resync`` does the listing; ``on_failure`` counts one that failed."""

    def __init__(self, resync: Resync, *, on_failure: Callable[[], None]) -> None:
        self._resync = resync
        self._on_failure = on_failure
        #: The resync after a listing, while one is under way (cancelled at a stop).
        self.task: asyncio.Task[None] | None = None
        self._last_listing_event = 0.0
        self._listing_events: dict[str, float] = {}  # kind → when Kopf last listed an object of it
        self._relisted = False  # a kind was listed again since the last resync: a watch gap
        self._resync_wanted = False  # a listing started since the last resync after a listing began

    def listing_seen(self, kind: str) -> None:
        """One resync for each listing Kopf starts, not one per few seconds of it: Kopf hands a listing of
        100,000 objects to its handlers over minutes, and a full resync every RELIST_MAX_DELAY of that made
        the start-up quadratic. The resync lists everything itself, so it need not wait for Kopf's last
        event."""
        now = asyncio.get_running_loop().time()
        last = self._listing_events.get(kind)
        if last is None or now - last > RELIST_GAP_SECONDS:
            self._resync_wanted = True  # this kind's listing starts
            if last is not None:
                self._relisted = True  # a second listing of this kind: the watch had a gap
        self._listing_events[kind] = self._last_listing_event = now
        if self._resync_wanted and (self.task is None or self.task.done()):
            self.task = asyncio.create_task(self._resync_after_listing(), name="resync-after-relist")

    async def _resync_after_listing(self) -> None:
        """Resync once Kopf's listing events have stopped for a moment (within a few seconds at most), again
        for a listing that started while the resync ran, and until one succeeds."""
        loop = asyncio.get_running_loop()
        retry = RELIST_RETRY_SECONDS
        while self._resync_wanted:
            deadline = loop.time() + RELIST_MAX_DELAY_SECONDS
            while (wait := min(self._last_listing_event + RELIST_QUIET_SECONDS, deadline) - loop.time()) > 0:
                await asyncio.sleep(wait)
            self._resync_wanted = False
            relisted, self._relisted = self._relisted, False
            if relisted:
                logger.info("the watch was listed again (a gap in the watch): resyncing")
            try:
                await self._resync(evaluate=relisted)
            except Exception as error:
                # A failed listing removes nothing (ClusterMirror.reconcile), so the catalog may still hold
                # what vanished during the gap: try again soon rather than at the periodic resync (SPEC §5:
                # within seconds). An apiserver that just restarted refuses or drops requests for a while.
                self._on_failure()
                logger.warning("resync after a watch listing failed (again in %.0f s): %s", retry, error)
                self._relisted = self._relisted or relisted
                self._resync_wanted = True
                # A listing Kopf reads meanwhile shows that the apiserver answers again: no need to wait more.
                listed = self._last_listing_event
                waited = loop.time() + retry
                while loop.time() < waited and self._last_listing_event == listed:
                    await asyncio.sleep(min(RELIST_QUIET_SECONDS, waited - loop.time()))
                retry = min(retry * 2, RELIST_RETRY_MAX_SECONDS)
            else:
                retry = RELIST_RETRY_SECONDS

    async def forever(self, period_s: float) -> None:
        """A periodic full listing closes any gap in the watch (a deletion missed around a restart)."""
        while True:
            await asyncio.sleep(period_s)
            try:
                await self._resync(evaluate=True)
            except Exception as error:  # the next resync tries again
                self._on_failure()
                logger.warning("resync listing failed: %s", error)


def _same_inputs(previous: Resource, current: Resource) -> bool:
    if isinstance(previous, InferenceService) and isinstance(current, InferenceService):
        return previous.matcher_inputs == current.matcher_inputs
    if isinstance(previous, Runtime) and isinstance(current, Runtime):
        return previous.read_inputs == current.read_inputs  # the annotations count too (SPEC §5)
    return type(previous) is type(current) and previous.spec == current.spec


def _same_version(known: Resource, body: Mapping[str, Any]) -> bool:
    metadata, version = body.get("metadata"), known.resource_version
    return (
        version is not None and isinstance(metadata, Mapping) and metadata.get("resourceVersion") == version
    )


#: (uid, generation, ome.io/inherit-from, ome.io/runtime-profile) of a model or runtime as read.
_Read = tuple[str, int, Any, Any]


def _generation_of(body: Mapping[str, Any]) -> _Read | None:
    """(uid, generation, and the two annotations a runtime reads) of a model or runtime: the apiserver moves
    the generation with every change of the spec, not with one of the annotations, which SPEC §5 counts too
    (a model's annotations are not read, but taking them costs nothing); None for InferenceServices (they are
    read from metadata and their parse is small) and for bodies without uid and generation."""
    if body.get("kind") in (Kind.INFERENCE_SERVICE.value, None):
        return None
    metadata = body.get("metadata") or {}
    uid, generation = metadata.get("uid"), metadata.get("generation")
    if not isinstance(uid, str) or not isinstance(generation, int):
        return None
    annotations = metadata.get("annotations")
    if not isinstance(annotations, Mapping):
        return uid, generation, None, None
    return (
        uid,
        generation,
        annotations.get(INHERIT_FROM_ANNOTATION),
        annotations.get(RUNTIME_PROFILE_ANNOTATION),
    )


def _body_of(key: ObjectKey) -> dict[str, Any]:
    metadata = {"name": key.name} | ({"namespace": key.namespace} if key.namespace else {})
    return {"apiVersion": API_GROUP_VERSION, "kind": key.kind.value, "metadata": metadata}
