"""Kopf's watch streams never end: one that Kopf would give up is restarted with a fresh listing (SPEC §5).

Kopf restarts a watch stream with a full listing only after ``410 Gone``. Anything else ends it for good, and
the operator's memory of that kind would then move only at the periodic resync while the replica stayed ready:

- an answer ``404 Not Found`` to the watch request or to its listing (the kind is not served: its CRD was
  deleted, as an upgrade may delete and recreate it), or another 4xx that Kopf does not retry;
- an ``ERROR`` event in the stream other than 410 (Kopf raises ``WatchingError``);
- a listing that fails part way (a page that expired a second time, see :mod:`kopflisting`).

Here, seen from Kopf's own calls (its API module as its watching module sees it, and its listing routine):

- a watch request that fails with a 4xx (429 aside, which Kopf handles) and an ``ERROR`` event other than 410
  become a ``410 Gone`` event, on which Kopf lists the kind again and goes on watching from that listing;
- a listing that fails is started again from its first page after a short wait (growing to
  :data:`RELIST_MAX_SECONDS`), for as long as it fails: once the CRD is back, the stream is back within
  seconds. A listing started again hands Kopf some objects twice, each as a listing event (type None), which
  the operator's handler takes as it takes any listing.

Each stream that ended is told to the observer of the operator on that event loop (``ended(plural,
reason)``, ``reason`` one of :data:`END_REASONS`), which counts it and reports the kind as not watched until
Kopf reads the first page of a listing of it again (``kopflisting.observe_listings``).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from kopf._cogs.clients import api as kopf_api  # not exported by Kopf
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import fetching as kopf_fetching
from kopf._cogs.clients import watching as kopf_watching

__all__ = [
    "CLIENT_ERROR",
    "END_REASONS",
    "LISTING_FAILED",
    "NOT_FOUND",
    "WATCH_ERROR",
    "observe_ended_streams",
    "restart_ended_streams",
]

logger = logging.getLogger(__name__)

#: Why a stream ended (the ``reason`` label of ``ome_selector_watch_restarts_total``): the kind is not served
#: (404), another 4xx answer, an ``ERROR`` event other than 410 Gone, a listing that failed part way.
NOT_FOUND = "not_found"
CLIENT_ERROR = "client_error"
WATCH_ERROR = "watch_error"
LISTING_FAILED = "listing_failed"
END_REASONS = (NOT_FOUND, CLIENT_ERROR, WATCH_ERROR, LISTING_FAILED)

#: The waits before a failed listing is started again: growing to the maximum, then that for as long as it
#: fails (as ``app.ApiRetries`` for Kopf's requests).
RELIST_SECONDS = (0.25, 0.5, 1.0)
RELIST_MAX_SECONDS = 2.0
#: Of one kind's failed listings in a row, a line for the first and then for every this many.
RELIST_LOG_EVERY = 30

GONE = 410
NOT_FOUND_CODE = 404

_observers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Callable[[str, str], None]] = (
    weakref.WeakKeyDictionary()
)


def observe_ended_streams(callback: Callable[[str, str], None]) -> None:
    """Call ``callback(plural, reason)`` on the running event loop whenever one of Kopf's watch streams of a
    kind ended in a way Kopf does not recover from, and is being started again."""
    _observers[asyncio.get_running_loop()] = callback


def _ended(plural: str, reason: str) -> None:
    observer = _observers.get(asyncio.get_running_loop())
    if observer is not None:
        observer(plural, reason)


def url_plural(url: str) -> str:
    """The plural of the kind a watch or listing URL is about (the last segment of its path)."""
    return urlsplit(url).path.rstrip("/").rpartition("/")[2]


def end_reason(error: BaseException) -> str | None:
    """Why a failed request ends Kopf's stream for good, None for an error Kopf deals with itself (429, which
    it retries, and anything that is not an answer of the apiserver)."""
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
    if not isinstance(getattr(kopf_watching, "api", None), _RestartingStreamApi):
        setattr(kopf_watching, "api", _RestartingStreamApi(kopf_api))  # noqa: B010 - not exported by Kopf
    if not isinstance(getattr(kopf_watching, "fetching", None), _RelistingFetching):
        setattr(kopf_watching, "fetching", _RelistingFetching(kopf_fetching))  # noqa: B010
