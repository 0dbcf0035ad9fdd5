"""Kopf's listing of a kind survives an expired continue token, and is seen even when it is empty.

Kopf lists each kind in pages (``settings.watching.chunk_size``) and asks for the next page only once it has
handled every event of the last one. The apiserver keeps a listing's snapshot for about 5 minutes (its etcd
compaction interval); a listing that takes longer — 10,000 InferenceServices on a busy 2-core node while the
first conditions are written — gets ``410 Expired`` for its next page, which Kopf does not catch: the operator
stopped. Here such a page is asked for again with the token the apiserver offers in that answer (the rest of
the list at the current resourceVersion, possibly inconsistent with the pages before). That is enough: Kopf's
listing only feeds watch events, and the listing of our own that follows it (``Operator.resync`` after Kopf's
listing events) reconciles the catalog with one consistent listing.

Kopf lists a kind again after every watch gap (410 Gone). The operator must resync then (SPEC §5), but a
listing of a kind that has become empty — its last object deleted during the gap — hands no event to any
handler, so only the listing itself can say that it happened: :func:`observe_listings` has a callback called
with the kind's plural each time Kopf reads the first page of a listing.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from kopf._cogs.clients import api as kopf_api  # not exported by Kopf
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import fetching as kopf_fetching

__all__ = ["observe_listings", "resume_expired_listings"]

logger = logging.getLogger(__name__)

EXPIRED = 410

#: Who hears of the listings Kopf starts, per event loop: tests run several operators in one process.
_observers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Callable[[str], None]] = (
    weakref.WeakKeyDictionary()
)


def observe_listings(callback: Callable[[str], None]) -> None:
    """Call ``callback(plural)`` on the running event loop whenever Kopf has read the first page of a listing
    of a kind (at start, and after every gap in its watch), whether or not the listing holds anything."""
    _observers[asyncio.get_running_loop()] = callback


def listed_plural(url: str) -> str | None:
    """The plural of the kind whose listing ``url`` starts, None for a later page or anything else."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if query.get("continue") or query.get("watch") not in (None, "false", "0"):
        return None
    return parts.path.rstrip("/").rpartition("/")[2] or None


def expired_continue_token(error: BaseException) -> str | None:
    """The continue token an apiserver's ``410 Expired`` answer to a listing's page offers, None otherwise."""
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
        observer = _observers.get(asyncio.get_running_loop())
        if plural is not None and observer is not None:
            observer(plural)
        return answer


def resume_expired_listings() -> None:
    """Have Kopf's listings ask for an expired page again instead of failing (once per process)."""
    if not isinstance(getattr(kopf_fetching, "api", None), _ResumingApi):
        setattr(kopf_fetching, "api", _ResumingApi(kopf_api))  # noqa: B010 - not exported by Kopf
