"""Streaming lists: the apiserver's watch-list (``sendInitialEvents``), read as batches of objects.

A paged listing of 100,000 InferenceServices costs the apiserver a read from etcd for every continued page
(16–20 s here, whatever the page size); the same objects streamed as the initial events of a watch come from
its watch cache in about 4 s, one object per line, so the reader holds one batch at a time as with pages. The
stream ends with a bookmark annotated ``k8s.io/initial-events-end``, which carries the resourceVersion of the
state sent (at least as new as the one asked for: ``resourceVersionMatch=NotOlderThan``).

An apiserver with the WatchList feature off (Kubernetes 1.33 by default) refuses the request (422), and one
that ignores ``sendInitialEvents`` sends a change before any closing bookmark: either is a lasting
:class:`StreamingListRefusedError`, and the caller lists in pages instead, from then on. A stream that ends
before its closing bookmark (an apiserver shutting down closes its watches) or a watch cache still being
filled after the apiserver started (429) refuses only that listing: it is read in pages, from etcd.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

__all__ = [
    "BUSY_STATUS",
    "INITIAL_EVENTS_END",
    "MAX_LINE_BYTES",
    "REFUSED_STATUSES",
    "STREAM_SECONDS",
    "StreamingListRefusedError",
    "initial_state",
    "lines",
    "watch_list_query",
]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
#: A line (one event) longer than this ends the stream with an error: the apiserver stores objects of at most
#: a few MiB, and the reader must not buffer without bound.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Answers that mean "not here": the feature is off (422, or 400 from a server that validates the options
#: differently), or the client may list but not watch (403).
REFUSED_STATUSES = frozenset({400, 403, 422})
#: "Not now": the watch cache is (re)initializing; a list is read from etcd meanwhile.
BUSY_STATUS = 429
#: The server ends the stream after this long, so a server that never sends the closing bookmark does not
#: keep the reader forever.
STREAM_SECONDS = 600


class StreamingListRefusedError(Exception):
    """The apiserver does not stream this list; list it in pages. ``lasting``: it never will (otherwise only
    now: a watch cache that is still being filled after the apiserver started answers 429)."""

    def __init__(self, why: str, *, lasting: bool = True) -> None:
        super().__init__(why)
        self.lasting = lasting


def watch_list_query(resource_version: str | None) -> list[tuple[str, Any]]:
    """The query of a streaming list at least as new as ``resource_version`` (None: a consistent read)."""
    query: list[tuple[str, Any]] = [
        ("watch", "true"),
        ("sendInitialEvents", "true"),
        ("allowWatchBookmarks", "true"),
        ("resourceVersionMatch", "NotOlderThan"),
        ("timeoutSeconds", STREAM_SECONDS),
    ]
    if resource_version:
        query.append(("resourceVersion", resource_version))
    return query


async def lines(chunks: AsyncIterable[bytes], limit: int = MAX_LINE_BYTES) -> AsyncIterator[bytes]:
    """The newline-separated lines of a byte stream cut anywhere into ``chunks`` (without the newlines)."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            yield bytes(buffer[start:end])
            start = end + 1
        del buffer[:start]
        if len(buffer) > limit:
            raise ValueError(f"an event of the streaming list is longer than {limit} bytes")
    if buffer:
        yield bytes(buffer)


async def initial_state(
    events: AsyncIterable[bytes], batch: int
) -> AsyncIterator[tuple[list[dict[str, Any]], str | None]]:
    """The objects of the initial events, ``batch`` at a time, each batch with None; the last batch (possibly
    empty) with the resourceVersion of the closing bookmark.

    Raises :class:`StreamingListRefusedError` when another change comes before the closing bookmark (a
    server that ignores ``sendInitialEvents``: lasting) or the stream ends before it (this time only), and
    :class:`ApiException` for an ``ERROR`` event (e.g. 410 Gone), as a list call would.
    """
    bodies: list[dict[str, Any]] = []
    async for line in events:
        if not line.strip():
            continue
        event = json.loads(line)
        kind = event.get("type") if isinstance(event, dict) else None
        body = event.get("object") if isinstance(event, dict) else None
        if not isinstance(body, dict):
            raise ValueError(f"a streaming list event without an object: {line[:200]!r}")
        if kind == "ADDED":
            bodies.append(body)
            if len(bodies) >= batch:
                yield bodies, None
                bodies = []
        elif kind == "BOOKMARK":
            metadata = body.get("metadata") or {}
            if (metadata.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                version = metadata.get("resourceVersion")
                yield bodies, version if isinstance(version, str) else None
                return
        elif kind == "ERROR":
            error = ApiException(status=body.get("code"), reason=body.get("reason"))
            error.body = body.get("message")
            raise error
        else:
            raise StreamingListRefusedError(f"a {kind} event came before the end of the initial state")
    raise StreamingListRefusedError("the stream ended before the end of the initial state", lasting=False)
