"""The confirming read (SPEC §7): before the webhook denies on the strength of something absent from the live
catalog, it reads what is stored now.

- :class:`DirectReader` reads what a :class:`~.decisions.Lookup` names straight from the API and answers the
  live catalog amended with whatever differs from what is stored now (:class:`_Amended`).
- :class:`ConfirmationLimiter` lets at most :attr:`~.config.WebhookConfig.confirmations_per_second` of them
  start (a token bucket): whoever can reach the port must not turn requests into unthrottled API reads under
  the operator's identity; past it a request waits up to :data:`CONFIRMATION_WAIT` and then gets an HTTP
  error (429, the failurePolicy decides).

The handlers that ask for it are :mod:`.admission`'s; the API client is the server's, lent to the reader
while it serves (:meth:`DirectReader.reading_through`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ome_selector.api.loading import key_of, stored_or_absent
from ome_selector.api.resources import (
    INHERIT_FROM_ANNOTATION,
    RUNTIME_PROFILE_ANNOTATION,
    Kind,
    Model,
    ObjectKey,
    Resource,
    Runtime,
)
from ome_selector.catalog.catalog import Catalog
from ome_selector.catalog.overlay import RuntimeOverlay
from ome_selector.kube.objects import Listing, Objects
from ome_selector.selection.inheritance import (
    MAX_CHAIN_DEPTH,
    ChainError,
    find_named_runtime,
    resolve_chain,
)
from ome_selector.selection.memo import AutoSelectionMemo
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile
from ome_selector.selection.view import CatalogView
from ome_selector.webhook.decisions import Lookup

__all__ = [
    "CONFIRMATION_WAIT",
    "MAX_RUNTIME_FETCHES",
    "ConfirmationLimiter",
    "ConfirmationsExhaustedError",
    "DirectReader",
]

#: Longest a request waits for its turn to confirm (a burst of denials is smoothed, a flood refused).
CONFIRMATION_WAIT = 1.0


class ConfirmationsExhaustedError(RuntimeError):
    """A confirming read would have to wait longer than :data:`CONFIRMATION_WAIT` for its turn."""

    def __init__(self, rate: float) -> None:
        super().__init__(
            f"ome-selector is confirming more than {rate:g} denials per second; the request was not checked"
        )


class ConfirmationLimiter:
    """A token bucket of ``burst`` confirmations refilled at ``rate`` per second: :meth:`acquire` takes one,
    waiting for it when the bucket is empty but refusing (:class:`ConfirmationsExhaustedError`) when the
    wait would exceed ``max_wait``. Waits are reserved in order, so concurrent callers are served FIFO and
    the API sees at most ``burst + rate × t`` confirmations in any ``t`` seconds."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        max_wait: float = CONFIRMATION_WAIT,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.max_wait = max_wait
        self._clock = clock or time.monotonic
        self._tokens = float(burst)
        self._stamp = self._clock()
        #: Confirmations refused so far (tests and logs).
        self.refused = 0

    def reserve(self) -> float:
        """Take a token now or in the future: the seconds to wait before using it."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        wait = 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.rate
        if wait > self.max_wait:
            self.refused += 1
            raise ConfirmationsExhaustedError(self.rate)
        self._tokens -= 1  # may go negative: the later callers' waits grow with the reserved tokens
        return wait

    async def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await asyncio.sleep(wait)


#: Most runtimes a confirming read fetches one by one (those new or changed since the watch delivered them);
#: when more differ, one listing of the full objects replaces the fetches.
MAX_RUNTIME_FETCHES = 16
#: Runtimes remembered as unreadable (by resourceVersion), so that confirmations do not fetch them again.
MAX_UNREADABLE = 1024
#: Namespaces whose listings are remembered as found held (see :class:`DirectReader`).
MAX_HELD_NAMESPACES = 256
#: A full listing hands the event loop back after this many objects read (SPEC §8: no handler holds it long).
_YIELD_EVERY = 64
_RUNTIME_KINDS = (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME)


class DirectReader:
    """Reads what a :class:`~.decisions.Lookup` names straight from the API: the live catalog amended with
    whatever differs from what is stored now.

    The model and a named runtime are read with GETs. For auto-selection, every runtime visible from the
    namespace matters, so a metadata-only listing (names and versions, read now) says which runtimes the live
    catalog holds as stored (:func:`_held_as_listed`), which it lacks or holds in an older version (those are
    fetched: at most :data:`MAX_RUNTIME_FETCHES`, else one full listing) and which are gone. The runtimes the
    live catalog holds as stored are not read again: a denial costs one listing of metadata, not reading every
    runtime.

    When a listing shows the live catalog holding every runtime as stored, its digests are kept for the
    namespace with the live catalog's runtimes stamp; a later listing with the same digests, the live
    runtimes unchanged since, is the same comparison with the same answer, and is not decoded again (a
    denial repeated against an unchanged catalog costs the listing and its digest).
    """

    def __init__(self) -> None:
        self._lent: Objects | None = None
        self._unreadable: dict[ObjectKey, str | None] = {}
        #: Namespace → (the digests of its listings, the live catalog's runtimes stamp) when they were found
        #: held as stored.
        self._held: dict[str, tuple[tuple[bytes, ...], int]] = {}
        #: Confirmations whose runtimes were read by a full listing (tests and logs).
        self.full_listings = 0
        #: Confirmations whose listings were found held as before, without decoding them (tests and logs).
        self.listings_held_as_before = 0
        #: Runtimes read one by one because the live catalog lacked them or held another version (tests).
        self.runtimes_fetched = 0

    @contextlib.contextmanager
    def reading_through(self, objects: Objects) -> Iterator[None]:
        """Read through ``objects`` inside (the server's API client, which it owns and closes)."""
        self._lent = objects
        try:
            yield
        finally:
            self._lent = None

    @property
    def _objects(self) -> Objects:
        if self._lent is None:
            raise RuntimeError("no API client for the confirming read")
        return self._lent

    async def catalog_for(self, lookup: Lookup, known: Catalog | None = None) -> CatalogView:
        """The model, then the named runtime or every runtime visible from the namespace, as stored now;
        ``known`` is the live catalog (nothing known when None)."""
        live = known if known is not None else Catalog()
        namespace, model_name = lookup.namespace, lookup.model_name
        if lookup.runtime_name is not None:
            return await self._named(lookup, lookup.runtime_name)
        if model_name is None:
            return Catalog()  # neither a model nor a named runtime: nothing is decided from what is read
        namespaces = [namespace] if _could_be_a_name(namespace, 63) else []
        resolving = self._resolve(Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL, namespace, model_name)
        if live.resolve_model(namespace, model_name) is None:
            # Most likely still missing: list the runtimes only once the model is found.
            model = await resolving
            if model is None:
                return Catalog()
            listings = await self._list_runtime_versions(namespaces)
        else:
            model, listings = await asyncio.gather(resolving, self._list_runtime_versions(namespaces))
            if model is None:
                return Catalog()
        changes = self._compare(live, namespace, listings)
        if len(changes.stale) > MAX_RUNTIME_FETCHES:
            self.full_listings += 1
            comparison = _Comparison(live, namespace, self._unreadable)
            snapshot = await self._objects.list_objects_where(
                comparison.differs, namespaces=namespaces, kinds=_RUNTIME_KINDS
            )
            amended = await self._read_all(comparison.gone(), snapshot.bodies)
        else:
            amended = await self._fetch(changes)
        # No await from here on: the live catalog is read as it is now.
        stored = live.resolve_model(namespace, model_name)
        if (
            stored is not None
            and stored.key == model.key
            and stored.resource_version == model.resource_version
        ):
            if not amended:
                return live  # the live catalog is what is stored now: its memo answers
            model = stored
        return _Amended(live, model, amended)

    async def _named(self, lookup: Lookup, name: str) -> Catalog:
        """The model (when the InferenceService has one) and the runtimes of the name, as stored now, with the
        parents of the chain of the one SPEC §1's lookup picks, read one level at a time while a parent is
        missing (SPEC §7: a chain broken by a missing parent is confirmed too). Without the model: empty."""
        namespace = lookup.namespace
        reading = self._resolve(Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL, namespace, lookup.model_name)
        model, runtimes = await asyncio.gather(
            reading if lookup.model_name is not None else _nothing(), self._runtimes_named(namespace, name)
        )
        if lookup.model_name is not None and model is None:
            return Catalog()
        read = Catalog.from_resources([*([model] if model is not None else []), *runtimes])
        for _ in range(MAX_CHAIN_DEPTH):
            named = find_named_runtime(read, namespace, name, lookup.runtime_kind, lookup.runtime_lookup)
            chain = resolve_chain(read, named) if named is not None else None
            missing = chain.missing_parent if isinstance(chain, ChainError) else None
            if missing is None:
                break
            parents = await self._runtimes_named(namespace, missing)
            if not parents:
                break  # missing indeed
            for parent in parents:
                read.upsert(parent)
        return read

    async def _runtimes_named(self, namespace: str, name: str) -> list[Resource]:
        """The readable ServingRuntime ``namespace``/``name`` and ClusterServingRuntime ``name``, read at
        once."""
        if not _could_be_a_name(name, 253):
            return []
        scopes: list[tuple[Kind, str | None]] = (
            [(Kind.SERVING_RUNTIME, namespace)] if _could_be_a_name(namespace, 63) else []
        )
        scopes.append((Kind.CLUSTER_SERVING_RUNTIME, None))
        bodies = await asyncio.gather(*(self._objects.get(kind, scope, name) for kind, scope in scopes))
        return [resource for body in bodies if (resource := stored_or_absent(body)) is not None]

    async def _list_runtime_versions(self, namespaces: list[str]) -> list[Listing]:
        """The names and versions of the runtimes visible from ``namespaces``, read now: each kind
        by its own consistent listing (each at least as new as the request)."""
        return await asyncio.gather(
            *(self._objects.list_versions(Kind.SERVING_RUNTIME, namespace) for namespace in namespaces),
            self._objects.list_versions(Kind.CLUSTER_SERVING_RUNTIME),
        )

    def _compare(self, live: Catalog, namespace: str, listings: list[Listing]) -> _Differences:
        """How the listed runtimes differ from the live catalog's (taken without an await in between)."""
        digests = tuple(listing.digest for listing in listings)
        held = (digests, live.runtimes_stamp)
        if self._held.get(namespace) == held:
            self.listings_held_as_before += 1
            return _Differences([], [])
        listed = [body for listing in listings for body in listing.bodies()]
        changes = _differences(live, namespace, listed, self._unreadable)
        if not changes.stale and not changes.gone:
            if len(self._held) >= MAX_HELD_NAMESPACES:
                self._held.clear()
            self._held[namespace] = held
        return changes

    async def _fetch(self, changes: _Differences) -> dict[ObjectKey, RuntimeProfile | None]:
        """The stale runtimes read one by one (None: gone or unreadable), and the gone ones."""
        self.runtimes_fetched += len(changes.stale)
        bodies = await asyncio.gather(
            *(self._objects.get(key.kind, key.namespace, key.name) for key in changes.stale)
        )
        amended: dict[ObjectKey, RuntimeProfile | None] = dict.fromkeys(changes.gone)
        for key, body in zip(changes.stale, bodies, strict=True):
            amended[key] = self._profile(key, body) if body is not None else None
        return amended

    async def _read_all(
        self, gone: list[ObjectKey], bodies: list[dict[str, Any]]
    ) -> dict[ObjectKey, RuntimeProfile | None]:
        """As :meth:`_fetch`, from the bodies of a full listing that differ from the live catalog."""
        amended: dict[ObjectKey, RuntimeProfile | None] = dict.fromkeys(gone)
        for read, body in enumerate(bodies, 1):
            key = key_of(body)
            if key is not None:
                amended[key] = self._profile(key, body)
            if read % _YIELD_EVERY == 0:
                await asyncio.sleep(0)
        return amended

    def _profile(self, key: ObjectKey, body: Mapping[str, Any]) -> RuntimeProfile | None:
        """The compiled runtime of ``body``; None (and remembered) when it cannot be read."""
        runtime = stored_or_absent(body)
        if isinstance(runtime, Runtime):
            self._unreadable.pop(key, None)
            return RuntimeProfile.of(runtime)
        if len(self._unreadable) >= MAX_UNREADABLE:
            self._unreadable.clear()
            self._held.clear()  # what was held counted on runtimes known unreadable
        self._unreadable[key] = (body.get("metadata") or {}).get("resourceVersion")
        return None

    async def _resolve(
        self, namespaced: Kind, cluster: Kind, namespace: str, name: str | None
    ) -> Resource | None:
        """SPEC §1 lookup: the namespaced object if there is a readable one, else the cluster-scoped one
        (both read at once)."""
        if name is None or not _could_be_a_name(name, 253):
            return None  # no object can have it (the API server would answer an error, not "not found")
        scopes: list[tuple[Kind, str | None]] = (
            [(namespaced, namespace)] if _could_be_a_name(namespace, 63) else []
        )
        scopes.append((cluster, None))
        bodies = await asyncio.gather(*(self._objects.get(kind, scope, name) for kind, scope in scopes))
        for body in bodies:
            resource = stored_or_absent(body)
            if resource is not None:
                return resource
        return None


@dataclass(frozen=True, slots=True)
class _Differences:
    """Runtimes to read again (listed, not held as listed) and runtimes gone (held, not listed)."""

    stale: list[ObjectKey]
    gone: list[ObjectKey]


def _differences(
    live: Catalog, namespace: str, listed: list[dict[str, Any]], unreadable: Mapping[ObjectKey, str | None]
) -> _Differences:
    """Which listed runtimes (bodies or metadata-only ones) differ from the live catalog, which are gone."""
    comparison = _Comparison(live, namespace, unreadable)
    stale = [key for body in listed if comparison.differs(body) and (key := key_of(body)) is not None]
    # Compared all at once, so the live catalog has not changed since: when every live runtime was listed
    # as held, none is gone, and the scan is skipped.
    held_all = comparison.held == sum(live.runtime_counts(namespace))
    return _Differences(stale, [] if held_all else comparison.gone())


class _Comparison:
    """Listed runtimes compared one by one with the live runtimes visible from ``namespace``.

    A listed runtime differs when the live catalog lacks it or holds another version of it (see
    :func:`_held_as_listed`) — unless it is absent from the live catalog and was found ``unreadable`` at the
    listed version before (absent still).
    """

    def __init__(self, live: Catalog, namespace: str, unreadable: Mapping[ObjectKey, str | None]) -> None:
        self._live = live
        self._namespace = namespace
        self._unreadable = unreadable
        self._listed: set[ObjectKey] = set()
        #: Listed runtimes the live catalog held at the listed version when compared.
        self.held = 0

    def differs(self, body: Mapping[str, Any]) -> bool:
        key = key_of(body)
        if key is None:
            return False
        self._listed.add(key)
        stored = self._live.get(key)
        metadata = body.get("metadata") or {}
        if stored is not None and _held_as_listed(stored, metadata):
            self.held += 1
            return False
        version = metadata.get("resourceVersion")
        return stored is not None or key not in self._unreadable or self._unreadable[key] != version

    def gone(self) -> list[ObjectKey]:
        """The runtimes the live catalog holds now, visible from the namespace, that were not listed."""
        listed = self._listed
        visible = self._live.runtime_profiles_visible_from(self._namespace)
        return [profile.runtime.key for profile in visible if profile.runtime.key not in listed]


def _held_as_listed(stored: Resource, listed: Mapping[str, Any]) -> bool:
    """Whether the live catalog holds the listed runtime (``listed``: its metadata) as it is stored: at the
    same resourceVersion, or with the same uid, generation and read annotations. The apiserver moves a custom
    resource's generation with every change but those of its metadata (and status); of the metadata the
    product reads the two runtime annotations (SPEC §5 v4), which the metadata-only listing carries: a
    runtime whose labels or other annotations changed is still held, one whose ``ome.io/inherit-from``
    changed is not."""
    if stored.resource_version is not None and stored.resource_version == listed.get("resourceVersion"):
        return True
    if not (
        isinstance(stored, Runtime)
        and stored.generation is not None
        and stored.uid is not None
        and stored.uid == listed.get("uid")
        and stored.generation == listed.get("generation")
    ):
        return False
    annotations = listed.get("annotations")
    if not isinstance(annotations, Mapping):
        annotations = {}
    return (stored.inherit_from, stored.runtime_profile) == (
        annotations.get(INHERIT_FROM_ANNOTATION),
        annotations.get(RUNTIME_PROFILE_ANNOTATION),
    )


async def _nothing() -> None:
    return None


class _Amended(RuntimeOverlay):
    """The live catalog with the model read and the runtimes that differ (``amended``: key → the runtime as
    read, None when it is absent), for one decision taken right away (a :class:`CatalogView`)."""

    def __init__(
        self, live: Catalog, model: Resource, amended: Mapping[ObjectKey, RuntimeProfile | None]
    ) -> None:
        super().__init__(live, amended)
        self._model = model if isinstance(model, Model) else None
        self._memo = AutoSelectionMemo()  # the live memo holds results for the live runtimes

    def resolve_model(self, namespace: str, name: str) -> Model | None:
        model = self._model
        if model is not None and model.name == name and model.namespace in (namespace, None):
            return model
        return self._live.resolve_model(namespace, name)

    def model_profile(self, model: Model) -> ModelProfile:
        return self._live.model_profile(model)

    @property
    def auto_selections(self) -> AutoSelectionMemo:
        return self._memo


_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def _could_be_a_name(text: str, longest: int) -> bool:
    """Whether an object (a DNS subdomain, as the API server checks custom resource names) or a namespace
    (a DNS label, ``longest`` 63) can be named ``text``."""
    return len(text) <= longest and _NAME.fullmatch(text) is not None and (longest > 63 or "." not in text)
