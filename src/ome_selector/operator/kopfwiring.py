"""Kopf behind one fence: everything that configures or adapts Kopf, and every reliance on its internals.

Kopf stays the product's watcher (its ``@kopf.on.event`` handlers watch the five kinds). This module is the
only one of the product that imports Kopf's private modules (``kopf._cogs``, ``kopf._core``, ``kopf._kits``;
an import-linter contract in pyproject.toml keeps it so), and the one that names Kopf's internal loggers,
tasks and log lines (the webhook server's filter of Kopf's per-request webhook lines aside). Each private
reliance below carries a ``Kopf private:`` comment saying why it is needed, and a canary in
tests/unit/operator/test_kopfwiring_canaries.py that fails with a clear message when Kopf changes it;
pyproject.toml pins Kopf's minor version while any is used.

- **Settings** (:func:`configure_settings`): no event posting, no scanning, watch and request timeouts, Kopf's
  own listing in pages, idle object workers let go at once, no diff base (:class:`NoDiffBase`), and request
  retries that never give up (:class:`ApiRetries`) with their per-attempt lines thinned
  (:class:`FewerRetryLines`).
- **Memories** (:class:`ForgetfulMemories`): no per-object record kept between events.
- **Pause waiters** (:func:`cancel_orphaned_pause_waiters`): the ones Kopf leaves behind at a stop.
- **Listings** (:func:`resume_expired_listings`, :func:`observe_listings`): a page whose continue token
  expired is asked for again, and every listing Kopf starts is told, also when it is empty.
- **Watch streams** (:func:`restart_ended_streams`, :func:`observe_ended_streams`): a stream Kopf would give
  up ends in 410 Gone instead, and a failed listing is started again (SPEC §5 "Watch streams that end").
- **Logging** (:func:`configure_logging`): Kopf's log format, and its per-object lines kept to warnings.

Listings. Kopf lists each kind in pages (``settings.watching.chunk_size``) and asks for the next page only
once it has handled every event of the last one. The apiserver keeps a listing's snapshot for about 5 minutes
(its etcd compaction interval); a listing that takes longer — 10,000 InferenceServices on a busy 2-core node
while the first conditions are written — gets ``410 Expired`` for its next page, which Kopf does not catch:
the operator stopped. Here such a page is asked for again with the token the apiserver offers in that answer
(the rest of the list at the current resourceVersion, possibly inconsistent with the pages before). That is
enough: Kopf's listing only feeds watch events, and the listing of our own that follows it
(``Operator.resync`` after Kopf's listing events) reconciles the catalog with one consistent listing. Kopf
lists a kind again after every watch gap (410 Gone); the operator must resync then (SPEC §5), but a listing of
a kind that has become empty hands no event to any handler, so only the listing itself can say that it
happened.

Watch streams. Kopf restarts a watch stream with a full listing only after ``410 Gone``. Anything else ends it
for good, and the operator's memory of that kind would then move only at the periodic resync while the replica
stayed ready: an answer ``404 Not Found`` to the watch request or to its listing (the kind is not served: its
CRD was deleted, as an upgrade may delete and recreate it), or another 4xx that Kopf does not retry; an
``ERROR`` event in the stream other than 410 (Kopf raises ``WatchingError``); a listing that fails part way (a
page that expired a second time). Here, seen from Kopf's own calls (its API module as its watching module sees
it, and its listing routine): a watch request that fails with a 4xx (429 aside, which Kopf handles) and an
``ERROR`` event other than 410 become a ``410 Gone`` event, on which Kopf lists the kind again and goes on
watching from that listing; a listing that fails is started again from its first page after a short wait
(growing to :data:`RELIST_MAX_SECONDS`), for as long as it fails: once the CRD is back, the stream is back
within seconds. A listing started again hands Kopf some objects twice, each as a listing event (type None),
which the operator's handler takes as it takes any listing. Each stream that ended is told to the observer of
the operator on that event loop (``ended(plural, reason)``, ``reason`` one of :data:`END_REASONS`), which
counts it and reports the kind as not watched until Kopf reads the first page of a listing of it again
(:func:`observe_listings`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import re
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import kopf

# Kopf private: its API module (``get`` for a listing's pages, ``stream`` for a watch) and its listing
# routine, replaced as its listing and watching modules see them (:func:`resume_expired_listings`,
# :func:`restart_ended_streams`); its API errors, the only way to tell an apiserver's answer from anything
# else. None of them is exported by Kopf.
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import fetching as kopf_fetching
from kopf._cogs.clients import watching as kopf_watching

# Kopf private: the memories ``kopf.operator(memories=...)`` accepts, of a class Kopf does not export.
from kopf._core.reactor.inventory import ResourceMemories, ResourceMemory

from ome_selector.kube.connection import Credentials
from ome_selector.kube.objects import PAGE_SIZE

__all__ = [
    "CLIENT_ERROR",
    "END_REASONS",
    "LISTING_FAILED",
    "NOT_FOUND",
    "WATCH_ERROR",
    "ApiRetries",
    "FewerRetryLines",
    "ForgetfulMemories",
    "NoDiffBase",
    "cancel_orphaned_pause_waiters",
    "configure_logging",
    "configure_settings",
    "kopf_connection",
    "observe_ended_streams",
    "observe_listings",
    "restart_ended_streams",
    "resume_expired_listings",
]

logger = logging.getLogger(__name__)

# --- login --------------------------------------------------------------------------------------------------


def kopf_connection(credentials: Credentials) -> kopf.ConnectionInfo:
    """The operator's credentials, as Kopf's login handlers return them."""
    return kopf.ConnectionInfo(**dataclasses.asdict(credentials))


# --- settings -----------------------------------------------------------------------------------------------

#: Items per page of Kopf's own listing of a kind (as our listing's PAGE_SIZE).
KOPF_LIST_CHUNK = PAGE_SIZE
#: How long Kopf keeps an object's worker task after its last event.
KOPF_IDLE_WORKER_SECONDS = 0.1
#: Kopf's waits between two attempts of a failed request (its watch streams and listings): growing to the
#: maximum, then that again for as long as the apiserver is away.
KOPF_RETRY_SECONDS = (0.25, 0.5, 1.0)
KOPF_RETRY_MAX_SECONDS = 2.0


class ApiRetries:
    """Kopf's waits between attempts, never exhausted (SPEC §5 "Level-triggered resync": a relist within
    seconds of the apiserver's return). Kopf's own schedule grows to 13 s and then gives up: a watch stream
    whose request gave up is never started again, and the memory would hear nothing more of that kind. Each
    request iterates the schedule afresh."""

    # Kopf private: that its request routine iterates ``settings.networking.error_backoffs`` afresh for each
    # request and retries for as long as the iterable yields (an unsized one: no "#N/M" count, no last
    # attempt) is how ``kopf._cogs.clients.api.request`` is written, not a documented promise.

    def __iter__(self) -> Iterator[float]:
        yield from KOPF_RETRY_SECONDS
        yield from itertools.repeat(KOPF_RETRY_MAX_SECONDS)


class NoDiffBase(kopf.DiffBaseStorage):
    """Kopf's diff base, for an operator without change handlers: none built, stored or fetched.

    On every event Kopf deep-copies the object into its "essence" to diff it against the last handled one,
    which only change handlers read (the operator has ``@kopf.on.event`` handlers only, and reads the objects
    itself): 100,000 InferenceServices listed were 100,000 deep copies for nothing. An empty essence gives
    Kopf an empty diff, and nothing is written to the object.
    """

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def configure_settings(settings: kopf.OperatorSettings) -> None:
    """Kopf's settings for this operator (its webhook server, when there is one, is configured by the
    webhook's own ``WebhookServer.configure``)."""
    # Our events are recorded by the writer, once per changing write; Kopf's poster has no de-duplication.
    settings.posting.enabled = False
    # Kopf needs no CRD or namespace watching for a fixed set of kinds and namespaces (least privilege).
    settings.scanning.disabled = True
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.networking.request_timeout = 60
    settings.networking.error_backoffs = ApiRetries()
    _log_fewer_kopf_retries()
    # Kopf's own listing of each kind, in pages (it holds one page at a time, not every body at once).
    settings.watching.chunk_size = KOPF_LIST_CHUNK
    # Kopf keeps a task per object alive this long after its last event (5 s by default): after a listing of
    # thousands of objects that is thousands of idle tasks, each holding its last body. Our handler is
    # synchronous and quick, so a worker has nothing to wait for.
    settings.queueing.idle_timeout = KOPF_IDLE_WORKER_SECONDS
    settings.persistence.diffbase_storage = NoDiffBase()


# --- Kopf's lines for failed request attempts ---------------------------------------------------------------

#: Of one request's failed attempts, Kopf's line for each of the first few, then for every this many: about
#: one line each 30 s per watch stream while the apiserver is away, not one each 2 s.
KOPF_RETRY_LOG_FIRST = 3
KOPF_RETRY_LOG_EVERY = 15
#: Kopf's loggers that log a line for every failed attempt of its watch streams' and listings' requests.
# Kopf private: the module loggers (``logging.getLogger(__name__)``) of Kopf's watching module, which hands
# its logger to the requests of its watch streams and listings, and of its resource observer; Kopf documents
# only ``kopf.objects`` and ``kopf`` itself.
KOPF_RETRYING_LOGGERS = ("kopf._cogs.clients.watching", "kopf._core.reactor.observation")
# Kopf private: the text of the line ``kopf._cogs.clients.api.request`` logs for an attempt it will retry.
_RETRY_LINE = re.compile(r"^Request attempt #(\d+)(?:/\d+)? failed; will retry")


class FewerRetryLines(logging.Filter):
    """Keeps Kopf's "Request attempt #N failed; will retry" lines bounded in a long outage: the retries never
    end (``ApiRetries``), and each watch stream would log one every 2 s while the apiserver is away."""

    def filter(self, record: logging.LogRecord) -> bool:
        retry = _RETRY_LINE.match(record.getMessage())
        if retry is None:
            return True
        attempt = int(retry.group(1))
        return attempt <= KOPF_RETRY_LOG_FIRST or attempt % KOPF_RETRY_LOG_EVERY == 0


def _log_fewer_kopf_retries() -> None:
    for name in KOPF_RETRYING_LOGGERS:
        kopf_logger = logging.getLogger(name)
        if not any(isinstance(f, FewerRetryLines) for f in kopf_logger.filters):
            kopf_logger.addFilter(FewerRetryLines())


def configure_logging(level: str, *, json: bool) -> None:
    """Kopf's logging for ``ome-selector run``: its format (plain or JSON, as ours), and beneath ``debug`` no
    line per handled watch event."""
    kopf.configure(
        verbose=level == "debug",
        log_format=kopf.LogFormat.JSON if json else kopf.LogFormat.PLAIN,
        # Kopf's own reference to an object under `k8s`: `object` is the name in our lines (log_fields).
        log_refkey="k8s",
    )
    if level != "debug":
        # Kopf logs "Handler ... succeeded" for every watch event of every object: noise at this scale.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)


# --- memories and pause waiters -----------------------------------------------------------------------------


class ForgetfulMemories(ResourceMemories):
    """Kopf's memories of the objects it watches, none kept from one event to the next.

    Kopf keeps a record per object it has seen (a memo, an error throttler, indexing and daemon state: about
    1 KB) until the object is deleted: some 10 MiB for 12,000 objects. Only what the operator does not use
    reads them across events: change handlers, daemons, timers, indexes, a memo kept per object. With only
    ``@kopf.on.event`` (and admission) handlers, each event gets a fresh record that goes with it.
    """

    # Kopf private: ``recall``'s keyword ``ephemeral`` (a record not stored), which Kopf itself passes only
    # for the admission webhook's requests.
    async def recall(self, raw_body: kopf.RawBody, **options: Any) -> ResourceMemory:
        return await super().recall(raw_body, **options | {"ephemeral": True})


#: How Kopf names the task that tells a watch stream the operator paused (``streaming_block``).
# Kopf private: the task name ``kopf._cogs.clients.watching.streaming_block`` gives its pause waiter, the only
# way to find the waiters of streams that are gone.
KOPF_PAUSE_WAITER_PREFIX = "pause-waiter for "


def cancel_orphaned_pause_waiters() -> None:
    """Cancel the pause waiters of watch streams Kopf cancelled in the middle of an event.

    Such a stream's generator is never closed, so its waiter outlives it, and Kopf's stop waits 5 s for every
    task still running before it cancels them: every stop that came while an event was handled took 5 s more.
    The watch streams are all gone when the cleanup runs, so no live stream loses its waiter.
    """
    for task in asyncio.all_tasks():
        if task.get_name().startswith(KOPF_PAUSE_WAITER_PREFIX):
            task.cancel()


# --- listings -----------------------------------------------------------------------------------------------

EXPIRED = 410

#: Who hears of the listings Kopf starts, per event loop: tests run several operators in one process.
_listing_observers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Callable[[str], None]] = (
    weakref.WeakKeyDictionary()
)


def observe_listings(callback: Callable[[str], None]) -> None:
    """Call ``callback(plural)`` on the running event loop whenever Kopf has read the first page of a listing
    of a kind (at start, and after every gap in its watch), whether or not the listing holds anything."""
    _listing_observers[asyncio.get_running_loop()] = callback


def listed_plural(url: str) -> str | None:
    """The plural of the kind whose listing ``url`` starts, None for a later page or anything else."""
    # Kopf private: the URLs ``fetch_objs`` builds, the first page's without ``continue`` and each later
    # page's with it, the path ending in the plural (``Resource.get_url``).
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if query.get("continue") or query.get("watch") not in (None, "false", "0"):
        return None
    return parts.path.rstrip("/").rpartition("/")[2] or None


def expired_continue_token(error: BaseException) -> str | None:
    """The continue token an apiserver's ``410 Expired`` answer to a listing's page offers, None otherwise."""
    # Kopf private: an APIClientError's ``status``, and the apiserver's Status body as its second argument.
    if not isinstance(error, kopf_errors.APIClientError) or error.status != EXPIRED:
        return None
    payload = error.args[1] if len(error.args) > 1 else None
    if not isinstance(payload, dict) or payload.get("reason") != "Expired":
        return None
    token = (payload.get("metadata") or {}).get("continue")
    return token if isinstance(token, str) and token else None


def with_continue(url: str, token: str) -> str:
    """``url`` with its ``continue`` query parameter set to ``token``."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "continue"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("continue", token)])))


class _ResumingApi:
    """Kopf's API module as its listing sees it: a page whose continue token expired is asked for again with
    the apiserver's fresh token; everything else goes straight through."""

    def __init__(self, api: Any) -> None:
        self._api = api

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)

    async def get(self, url: str, **arguments: Any) -> Any:
        try:
            answer = await self._api.get(url=url, **arguments)
        except kopf_errors.APIClientError as error:
            token = expired_continue_token(error)
            if token is None:
                raise
            logger.warning("a page of Kopf's listing expired (the listing took too long): listing the rest")
            return await self._api.get(url=with_continue(url, token), **arguments)
        plural = listed_plural(url)
        observer = _listing_observers.get(asyncio.get_running_loop())
        if plural is not None and observer is not None:
            observer(plural)
        return answer


def resume_expired_listings() -> None:
    """Have Kopf's listings ask for an expired page again instead of failing (once per process)."""
    # Kopf private: ``kopf._cogs.clients.fetching.fetch_objs`` reads each page through its module's global
    # ``api`` (``api.get(url=...)``); replacing that global, process-wide, is the only way into its listing.
    if not isinstance(getattr(kopf_fetching, "api", None), _ResumingApi):
        setattr(kopf_fetching, "api", _ResumingApi(kopf_api))  # noqa: B010 - not exported by Kopf


# --- watch streams ------------------------------------------------------------------------------------------

#: Why a stream ended (the ``reason`` label of ``ome_selector_watch_restarts_total``): the kind is not served
#: (404), another 4xx answer, an ``ERROR`` event other than 410 Gone, a listing that failed part way.
NOT_FOUND = "not_found"
CLIENT_ERROR = "client_error"
WATCH_ERROR = "watch_error"
LISTING_FAILED = "listing_failed"
END_REASONS = (NOT_FOUND, CLIENT_ERROR, WATCH_ERROR, LISTING_FAILED)

#: The waits before a failed listing is started again: growing to the maximum, then that for as long as it
#: fails (as :class:`ApiRetries` for Kopf's requests).
RELIST_SECONDS = (0.25, 0.5, 1.0)
RELIST_MAX_SECONDS = 2.0
#: Of one kind's failed listings in a row, a line for the first and then for every this many.
RELIST_LOG_EVERY = 30

GONE = 410
NOT_FOUND_CODE = 404

_stream_observers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Callable[[str, str], None]] = (
    weakref.WeakKeyDictionary()
)


def observe_ended_streams(callback: Callable[[str, str], None]) -> None:
    """Call ``callback(plural, reason)`` on the running event loop whenever one of Kopf's watch streams of a
    kind ended in a way Kopf does not recover from, and is being started again."""
    _stream_observers[asyncio.get_running_loop()] = callback


def _ended(plural: str, reason: str) -> None:
    observer = _stream_observers.get(asyncio.get_running_loop())
    if observer is not None:
        observer(plural, reason)


def url_plural(url: str) -> str:
    """The plural of the kind a watch or listing URL is about (the last segment of its path)."""
    # Kopf private: the URLs ``watch_objs`` builds (``Resource.get_url``), the path ending in the plural.
    return urlsplit(url).path.rstrip("/").rpartition("/")[2]


def end_reason(error: BaseException) -> str | None:
    """Why a failed request ends Kopf's stream for good, None for an error Kopf deals with itself (429, which
    it retries, and anything that is not an answer of the apiserver)."""
    # Kopf private: its error classes, 429 (retried by Kopf) a subclass of its client error.
    if isinstance(error, kopf_errors.APITooManyRequestsError) or not isinstance(
        error, kopf_errors.APIClientError
    ):
        return None
    return NOT_FOUND if error.status == NOT_FOUND_CODE else CLIENT_ERROR


def _gone(message: str) -> dict[str, Any]:
    """The event on which Kopf lists the kind again and watches on from that listing."""
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Gone", "code": GONE}
    return {"type": "ERROR", "object": status | {"message": message}}


class _RestartingStreamApi:
    """Kopf's API module as its watching module sees it: a watch that would end for good ends in 410 Gone."""

    def __init__(self, api: Any) -> None:
        self._api = api

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)

    async def stream(self, url: str, **arguments: Any) -> AsyncIterator[Any]:
        plural = url_plural(url)
        try:
            async for raw in self._api.stream(url=url, **arguments):
                error = raw.get("object") if isinstance(raw, dict) and raw.get("type") == "ERROR" else None
                if error is not None and not (isinstance(error, dict) and error.get("code") == GONE):
                    logger.info("the watch of %s sent an error (%s): listing it again", plural, error)
                    _ended(plural, WATCH_ERROR)
                    yield _gone(f"watch error: {error}")
                    return
                yield raw
        except kopf_errors.APIClientError as failure:
            reason = end_reason(failure)
            if reason is None:
                raise
            logger.info("the watch of %s failed (HTTP %s): listing it again", plural, failure.status)
            _ended(plural, reason)
            yield _gone(f"watch failed with HTTP {failure.status}")


def _relist_waits() -> Iterator[float]:
    yield from RELIST_SECONDS
    while True:
        yield RELIST_MAX_SECONDS


class _RelistingFetching:
    """Kopf's listing routine as its watching module sees it: a listing that fails is started again."""

    def __init__(self, fetching: Any) -> None:
        self._fetching = fetching

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fetching, name)

    async def fetch_objs(self, **arguments: Any) -> AsyncIterator[Any]:
        # Kopf private: Kopf calls ``fetch_objs`` with keywords only, ``resource`` a Resource with ``plural``.
        resource = arguments.get("resource")
        plural = str(getattr(resource, "plural", resource))
        waits = _relist_waits()
        failures = 0
        while True:
            try:
                async for chunk in self._fetching.fetch_objs(**arguments):
                    yield chunk
            except kopf_errors.APIClientError as failure:
                reason = end_reason(failure)
                if reason is None:
                    raise
                if failures == 0:
                    # The first failure of a row ends the stream; the next ones are its restart failing.
                    _ended(plural, NOT_FOUND if reason == NOT_FOUND else LISTING_FAILED)
                if failures % RELIST_LOG_EVERY == 0:
                    logger.warning(
                        "listing %s failed (HTTP %s, %d time(s) in a row): listing it again",
                        plural,
                        failure.status,
                        failures + 1,
                    )
                failures += 1
                await asyncio.sleep(next(waits))
                continue
            if failures:
                logger.info("listed %s again after %d failed listing(s)", plural, failures)
            return


def restart_ended_streams() -> None:
    """Have Kopf's watch streams start again, with a listing, wherever Kopf would end them (once per
    process)."""
    # Kopf private: ``kopf._cogs.clients.watching`` streams each watch through its module's global ``api``
    # (``api.stream(url=...)``, in ``watch_objs``) and lists through its global ``fetching``
    # (``fetching.fetch_objs``, in ``continuous_watch``), and treats a 410 Gone event as the end of a watch
    # to be listed again; replacing those globals, process-wide, is the only way into its streams.
    if not isinstance(getattr(kopf_watching, "api", None), _RestartingStreamApi):
        setattr(kopf_watching, "api", _RestartingStreamApi(kopf_api))  # noqa: B010 - not exported by Kopf
    if not isinstance(getattr(kopf_watching, "fetching", None), _RelistingFetching):
        setattr(kopf_watching, "fetching", _RelistingFetching(kopf_fetching))  # noqa: B010
