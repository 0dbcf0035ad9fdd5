"""Kopf's watch streams are started again, with a listing, wherever Kopf would give them up (SPEC §5)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import kopf
import pytest
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import watching as kopf_watching
from kopf._cogs.structs import references

from ome_selector.operator import kopfwiring
from ome_selector.operator.kopfwiring import (
    CLIENT_ERROR,
    LISTING_FAILED,
    NOT_FOUND,
    WATCH_ERROR,
    observe_ended_streams,
    restart_ended_streams,
)

RESOURCE = references.Resource(group="ome.io", version="v1beta1", plural="basemodels", namespaced=True)
WATCH_URL = "/apis/ome.io/v1beta1/basemodels?watch=true&resourceVersion=5"
MODEL = {"metadata": {"name": "m", "uid": "u", "resourceVersion": "7"}}


def _error(status: int) -> kopf_errors.APIClientError:
    kind = {404: kopf_errors.APINotFoundError, 429: kopf_errors.APITooManyRequestsError}
    payload = {"kind": "Status", "code": status, "message": "no"}
    return kind.get(status, kopf_errors.APIClientError)(payload, status=status, headers={})  # type: ignore[arg-type]


class _Stream:
    """Kopf's API module as a watch sees it: each call streams the next script (events, then maybe an
    error)."""

    def __init__(self, *scripts: list[Any]) -> None:
        self.scripts = list(scripts)
        self.urls: list[str] = []

    async def stream(self, url: str, **_: Any) -> AsyncIterator[Any]:
        self.urls.append(url)
        for item in self.scripts.pop(0):
            if isinstance(item, BaseException):
                raise item
            yield item


class _Fetching:
    """Kopf's listing routine: each call lists the next script (pages, then maybe an error)."""

    def __init__(self, *scripts: list[Any]) -> None:
        self.scripts = list(scripts)
        self.calls = 0

    async def fetch_objs(self, **_: Any) -> AsyncIterator[Any]:
        self.calls += 1
        for item in self.scripts.pop(0):
            if isinstance(item, BaseException):
                raise item
            yield item


async def _collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in stream]


def _observed(coroutine: Any) -> tuple[Any, list[tuple[str, str]]]:
    ended: list[tuple[str, str]] = []

    async def run() -> Any:
        observe_ended_streams(lambda plural, reason: ended.append((plural, reason)))
        return await coroutine

    return asyncio.run(run()), ended


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        pytest.param(404, NOT_FOUND, id="404: the CRD was deleted"),
        pytest.param(400, CLIENT_ERROR, id="another 4xx"),
    ],
)
def test_a_watch_request_kopf_would_give_up_ends_with_410_gone(status: int, reason: str) -> None:
    api = _Stream([_error(status)])
    events, ended = _observed(_collect(kopfwiring._RestartingStreamApi(api).stream(WATCH_URL)))
    assert [(e["type"], e["object"]["code"]) for e in events] == [("ERROR", 410)]
    assert ended == [("basemodels", reason)]


def test_an_error_event_other_than_410_ends_the_stream_with_410_gone() -> None:
    added = {"type": "ADDED", "object": MODEL}
    api = _Stream([added, {"type": "ERROR", "object": {"code": 500, "message": "boom"}}, added])
    events, ended = _observed(_collect(kopfwiring._RestartingStreamApi(api).stream(WATCH_URL)))
    assert [(e["type"], (e["object"].get("code"))) for e in events] == [("ADDED", None), ("ERROR", 410)]
    assert ended == [("basemodels", WATCH_ERROR)]


def test_what_kopf_handles_itself_goes_through() -> None:
    gone = {"type": "ERROR", "object": {"code": 410, "message": "too old"}}
    events, ended = _observed(_collect(kopfwiring._RestartingStreamApi(_Stream([gone])).stream(WATCH_URL)))
    assert events == [gone]
    with pytest.raises(kopf_errors.APITooManyRequestsError):
        _observed(_collect(kopfwiring._RestartingStreamApi(_Stream([_error(429)])).stream(WATCH_URL)))
    assert ended == []


@pytest.fixture
def no_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kopfwiring, "RELIST_SECONDS", (0.0,))
    monkeypatch.setattr(kopfwiring, "RELIST_MAX_SECONDS", 0.0)


@pytest.mark.usefixtures("no_waits")
def test_a_failed_listing_is_started_again_until_it_succeeds_and_told_once() -> None:
    page = ([MODEL], "9")
    fetching = _Fetching([_error(404)], [_error(404)], [page, _error(410)], [page])
    pages, ended = _observed(_collect(kopfwiring._RelistingFetching(fetching).fetch_objs(resource=RESOURCE)))
    assert pages == [page, page]  # the page before the failure, then the whole listing again
    assert fetching.calls == 4
    assert ended == [("basemodels", NOT_FOUND)]  # one end: the failures after it are its restart failing


@pytest.mark.usefixtures("no_waits")
def test_a_listing_failing_part_way_is_told_as_such() -> None:
    fetching = _Fetching([([MODEL], "9"), _error(410)], [])
    _, ended = _observed(_collect(kopfwiring._RelistingFetching(fetching).fetch_objs(resource=RESOURCE)))
    assert ended == [("basemodels", LISTING_FAILED)]


@pytest.mark.usefixtures("no_waits")
def test_kopf_s_watch_after_a_404_lists_again_instead_of_ending(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through Kopf's own stream: a 404 on the watch (the CRD deleted) makes Kopf's continuous watch return,
    as after 410 Gone (its infinite watch then lists again), not raise; without the adaptation it raises."""
    settings = kopf.OperatorSettings()

    async def watch() -> list[Any]:
        stopper: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        return await _collect(
            kopf_watching.continuous_watch(
                settings=settings, resource=RESOURCE, namespace=None, operator_pause_waiter=stopper
            )
        )

    def adapted(api: _Stream, fetching: _Fetching) -> None:
        monkeypatch.setattr(kopf_watching, "api", kopfwiring._RestartingStreamApi(api))
        monkeypatch.setattr(kopf_watching, "fetching", kopfwiring._RelistingFetching(fetching))

    adapted(_Stream([_error(404)]), _Fetching([([MODEL], "9")]))
    events, ended = _observed(watch())
    assert events[0] == {"type": None, "object": MODEL}
    assert events[1] is kopf_watching.Bookmark.LISTED
    assert len(events) == 2
    assert ended == [("basemodels", NOT_FOUND)]

    monkeypatch.setattr(kopf_watching, "api", _Stream([_error(404)]))  # Kopf alone
    monkeypatch.setattr(kopf_watching, "fetching", _Fetching([([MODEL], "9")]))
    with pytest.raises(kopf_errors.APINotFoundError):
        _observed(watch())


def test_installed_once_on_kopf_s_watching_module() -> None:
    restart_ended_streams()
    restart_ended_streams()
    api, fetching = kopf_watching.api, kopf_watching.fetching  # type: ignore[attr-defined]
    assert isinstance(api, kopfwiring._RestartingStreamApi)
    assert not isinstance(api._api, kopfwiring._RestartingStreamApi)
    assert isinstance(fetching, kopfwiring._RelistingFetching)
    assert not isinstance(fetching._fetching, kopfwiring._RelistingFetching)
