"""A streaming list read as batches: lines cut anywhere, the initial events, the closing bookmark, and what
makes the reader fall back to pages."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.kube.objects import ApiError
from ome_selector.kube.watchlist import (
    INITIAL_EVENTS_END,
    StreamingListRefusedError,
    initial_state,
    lines,
    watch_list_query,
)


async def _chunks(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _collect(iterator: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in iterator]


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[start:end] for start, end in itertools.pairwise(points)]


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ")), max_size=8),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_lines_are_the_same_wherever_the_stream_is_cut(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(part + b"\n" for part in parts)
    assert asyncio.run(_collect(lines(_chunks(_cut(data, cuts))))) == parts


def test_a_last_line_without_a_newline_is_kept_and_a_line_over_the_limit_ends_the_stream() -> None:
    assert asyncio.run(_collect(lines(_chunks([b"a\nb", b"c"])))) == [b"a", b"bc"]
    with pytest.raises(ValueError, match="longer than 8 bytes"):
        asyncio.run(_collect(lines(_chunks([b"0123", b"45678", b"9\n"]), limit=8)))


def _event(kind: str, name: str = "x", **metadata: Any) -> bytes:
    return json.dumps({"type": kind, "object": {"metadata": {"name": name, **metadata}}}).encode()


END = _event("BOOKMARK", resourceVersion="42", annotations={INITIAL_EVENTS_END: "true"})


def _read(events: list[bytes], batch: int = 2) -> list[tuple[list[str], str | None]]:
    batches = asyncio.run(_collect(initial_state(_chunks(events), batch)))
    return [([body["metadata"]["name"] for body in bodies], version) for bodies, version in batches]


@pytest.mark.parametrize(
    ("events", "batches"),
    [
        pytest.param([END], [([], "42")], id="nothing listed"),
        pytest.param(
            [_event("ADDED", "a"), _event("ADDED", "b"), _event("ADDED", "c"), END],
            [(["a", "b"], None), (["c"], "42")],
            id="batches, the last with the version",
        ),
        pytest.param(
            [_event("ADDED", "a"), _event("ADDED", "b"), END],
            [(["a", "b"], None), ([], "42")],
            id="a full last batch, then an empty one with the version",
        ),
        pytest.param(
            [
                _event("ADDED", "a"),
                b"",
                _event("BOOKMARK", resourceVersion="7"),
                END,
                _event("ADDED", "late"),
            ],
            [(["a"], "42")],
            id="blank lines and plain bookmarks skipped, nothing read after the end",
        ),
    ],
)
def test_the_initial_events_come_in_batches_until_the_closing_bookmark(
    events: list[bytes], batches: list[tuple[list[str], str | None]]
) -> None:
    assert _read(events) == batches


@pytest.mark.parametrize(
    ("events", "lasting"),
    [
        pytest.param([_event("ADDED", "a")], False, id="the stream ends before the closing bookmark"),
        pytest.param(
            [_event("ADDED", "a"), _event("MODIFIED", "a"), END], True, id="a change before the end"
        ),
        pytest.param([_event("DELETED", "a")], True, id="a deletion before the end"),
    ],
)
def test_a_stream_without_the_closing_bookmark_is_refused(events: list[bytes], lasting: bool) -> None:
    """A change before the closing bookmark is what an apiserver that ignores sendInitialEvents sends: the
    caller lists in pages from then on. A stream cut short (an apiserver shutting down) refuses that listing
    only."""
    with pytest.raises(StreamingListRefusedError) as refused:
        _read(events)
    assert refused.value.lasting is lasting


def test_an_error_event_is_an_api_error_and_a_line_without_an_object_a_value_error() -> None:
    gone = json.dumps({"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "too old"}})
    with pytest.raises(ApiError) as raised:
        _read([gone.encode()])
    error: Any = raised.value  # the stub types body as bytes; call_api puts text there too
    assert (error.status, error.reason, error.body) == (410, "Expired", "too old")
    for line in (b'{"type": "ADDED"}', b"[1, 2]", b'"text"'):
        with pytest.raises(ValueError, match="without an object"):
            _read([line])
    with pytest.raises(json.JSONDecodeError):
        _read([b"{not json"])


def test_the_query_asks_for_the_initial_state_at_least_as_new_as_the_version_given() -> None:
    query = dict(watch_list_query(None))
    assert query["watch"] == query["sendInitialEvents"] == query["allowWatchBookmarks"] == "true"
    assert query["resourceVersionMatch"] == "NotOlderThan"
    assert "resourceVersion" not in query  # a consistent read
    assert dict(watch_list_query("17"))["resourceVersion"] == "17"
