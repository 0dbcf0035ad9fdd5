"""Canaries for operator/kopfwiring.py: each Kopf internal the product relies on is still there, as relied on.

Kopf's private modules, names, loggers and log texts carry no promise between its releases. pyproject.toml
pins Kopf's minor version while the product relies on any of them; when that pin is raised, these tests say
which reliance the new Kopf broke, each with what to look at. Behaviour through Kopf's own code is tested
beside the adaptations (test_kopfwiring_listings.py, test_kopfwiring_streams.py, and test_app.py's settings,
memories, pause-waiter and retry tests); here each reliance is checked at its source.
"""

from __future__ import annotations

import asyncio
import dis
import inspect
import logging
import re
import tomllib
from collections.abc import AsyncIterator, Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import pytest
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import fetching as kopf_fetching
from kopf._cogs.clients import watching as kopf_watching
from kopf._cogs.structs import references
from kopf._core.actions import execution
from kopf._core.intents import handlers
from kopf._core.reactor import inventory, observation

from ome_selector.operator import kopfwiring

REPO_ROOT = Path(__file__).resolve().parents[3]
PRODUCT = REPO_ROOT / "src" / "ome_selector"
FENCE = PRODUCT / "operator" / "kopfwiring.py"
LOGGER = logging.getLogger(__name__)


def _globals_read(function: Callable[..., Any]) -> set[str]:
    """The module-level names a function (or the generator it defines) looks up when it runs."""
    code = inspect.unwrap(function).__code__
    return {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}


def _source(obj: Any) -> str:
    return inspect.getsource(inspect.unwrap(obj))


def _keywords(function: Callable[..., Any]) -> set[str]:
    return set(inspect.signature(inspect.unwrap(function)).parameters)


# --- the pin and the fence ----------------------------------------------------------------------------------


def test_the_installed_kopf_is_the_minor_the_pin_allows() -> None:
    requirement = next(
        r
        for r in tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
        if re.match(r"kopf\b", r)
    )
    pinned = re.fullmatch(r"kopf>=(\d+)\.(\d+),<(\d+)\.(\d+)", requirement)
    assert pinned is not None, (
        f"pyproject.toml requires {requirement!r}: while operator/kopfwiring.py relies on Kopf's privates, "
        "pin one minor version (kopf>=X.Y,<X.Y+1) and raise it only with these canaries passing"
    )
    major, minor, upper_major, upper_minor = map(int, pinned.groups())
    assert (upper_major, upper_minor) == (major, minor + 1), f"{requirement!r} allows more than one minor"
    installed = tuple(int(part) for part in metadata.version("kopf").split(".")[:2])
    assert installed == (major, minor), f"Kopf {metadata.version('kopf')} installed, the pin is {requirement}"


def test_no_module_but_the_fence_names_kopf_s_private_modules() -> None:
    """import-linter sees imports; this sees the names in strings too (a logger's, a patched attribute's)."""
    private = re.compile(r"\bkopf\._(cogs|core|kits)\b")
    outside = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for path in sorted(PRODUCT.rglob("*.py"))
        if path != FENCE
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if private.search(line)
    ]
    assert outside == [], f"Kopf's private modules named outside operator/kopfwiring.py: {outside}"


# --- listings and watch streams: the module globals replaced process-wide -----------------------------------


def test_kopf_s_listing_reads_its_pages_through_its_module_s_api_global() -> None:
    """``resume_expired_listings`` replaces ``kopf._cogs.clients.fetching.api``: that is what Kopf's listing
    must still call, as ``api.get(url=..., ...)``."""
    assert "api" in _globals_read(kopf_fetching.fetch_objs), (
        "kopf._cogs.clients.fetching.fetch_objs no longer reads its pages through the module global `api`: "
        "resume_expired_listings and observe_listings would see nothing"
    )
    assert "url=" in _source(kopf_fetching.fetch_objs), "fetch_objs no longer passes url= to api.get"
    assert {"url", "settings", "logger"} <= _keywords(kopf_api.get), "kopf_api.get changed its signature"
    installed = kopf_fetching.api  # type: ignore[attr-defined]
    assert isinstance(installed, kopfwiring._ResumingApi) or installed is kopf_api, (
        f"kopf._cogs.clients.fetching.api is {installed!r}: Kopf's API module, or ours in its place, expected"
    )


def test_kopf_s_watch_streams_through_its_module_s_api_and_fetching_globals() -> None:
    """``restart_ended_streams`` replaces ``kopf._cogs.clients.watching.api`` (read by ``watch_objs``, as
    ``api.stream(url=...)``) and ``kopf._cogs.clients.watching.fetching`` (read by ``continuous_watch``, as
    ``fetching.fetch_objs(resource=..., ...)``)."""
    assert "api" in _globals_read(kopf_watching.watch_objs), (
        "kopf._cogs.clients.watching.watch_objs no longer streams through the module global `api`: "
        "restart_ended_streams would not see a watch that ends"
    )
    assert "fetching" in _globals_read(kopf_watching.continuous_watch), (
        "kopf._cogs.clients.watching.continuous_watch no longer lists through the module global `fetching`: "
        "a failed listing would not be started again"
    )
    assert "url=" in _source(kopf_watching.watch_objs), "watch_objs no longer passes url= to api.stream"
    assert {"url", "settings", "logger", "stopper"} <= _keywords(kopf_api.stream), (
        "kopf_api.stream changed its signature"
    )
    parameters = inspect.signature(kopf_fetching.fetch_objs).parameters
    assert "resource" in parameters, "fetch_objs takes resource= no more: _RelistingFetching reads it"
    assert parameters["resource"].kind is inspect.Parameter.KEYWORD_ONLY, "fetch_objs takes resource= no more"


def test_kopf_lists_a_kind_again_after_a_410_gone_event() -> None:
    """Both adaptations turn a stream's end into a ``410 Gone`` event: Kopf must still take that as the end of
    a watch to be listed again, and anything else as an error."""
    source = _source(kopf_watching.continuous_watch)
    assert "== 410" in source, "continuous_watch no longer restarts on an ERROR event with code 410"
    assert "WatchingError" in source, "continuous_watch no longer raises WatchingError on another ERROR event"


def test_kopf_s_listing_and_watch_urls_tell_what_the_adaptations_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``listed_plural`` takes a URL without ``continue`` for the first page of a listing (so that every
    listing is told once, also an empty one) and ``url_plural`` the path's last segment for the kind: run
    Kopf's own listing and watch, and read the URLs they ask for."""
    resource = references.Resource(group="ome.io", version="v1beta1", plural="basemodels", namespaced=True)
    settings = kopf.OperatorSettings()
    settings.watching.chunk_size = 1
    namespace = references.NamespaceName("a")
    urls: list[str] = []

    class Recorder:
        async def get(self, url: str, **_: Any) -> Any:
            urls.append(url)
            return {"items": [{}], "metadata": {"continue": "" if len(urls) > 1 else "next"}}

        async def stream(self, url: str, **_: Any) -> AsyncIterator[Any]:
            urls.append(url)
            empty: tuple[Any, ...] = ()
            for raw in empty:
                yield raw

    monkeypatch.setattr(kopf_fetching, "api", Recorder())
    monkeypatch.setattr(kopf_watching, "api", Recorder())

    async def run() -> None:
        chunks = kopf_fetching.fetch_objs(
            settings=settings, resource=resource, namespace=namespace, logger=LOGGER
        )
        assert len([chunk async for chunk in chunks]) == 2, "Kopf's listing did not read both pages"
        stopper: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watch = kopf_watching.watch_objs(
            settings=settings, resource=resource, namespace=namespace, operator_pause_waiter=stopper
        )
        assert [raw async for raw in watch] == [], "Kopf's watch made up events of its own"

    asyncio.run(run())
    assert len(urls) == 3, f"Kopf asked for {urls}: two pages and a watch expected"
    assert [kopfwiring.listed_plural(url) for url in urls] == ["basemodels", None, None], (
        f"Kopf's listing and watch URLs are {urls}: listed_plural would tell a listing's first page wrongly "
        "(observe_listings would miss a listing, or tell one more than once)"
    )
    assert {kopfwiring.url_plural(url) for url in urls} == {"basemodels"}, (
        f"Kopf's URLs {urls} do not end in the plural: the kind of an ended stream would be wrong"
    )


class _Answer:
    """What ``kopf._cogs.clients.errors.check_response`` reads of an aiohttp response."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self._body = status, body
        self.headers: dict[str, str] = {}

    async def json(self) -> dict[str, Any]:
        return self._body

    def raise_for_status(self) -> None:
        raise aiohttp.ClientResponseError(None, (), status=self.status)  # type: ignore[arg-type]


def _raised(status: int, body: dict[str, Any]) -> kopf_errors.APIError:
    try:
        asyncio.run(kopf_errors.check_response(_Answer(status, body)))  # type: ignore[arg-type]
    except kopf_errors.APIError as error:
        return error
    raise AssertionError(f"check_response raised nothing for HTTP {status}")


def test_kopf_s_api_errors_carry_what_the_adaptations_read() -> None:
    """``expired_continue_token`` reads an APIClientError's ``status`` and the apiserver's Status body as its
    second argument; ``end_reason`` tells 429 (which Kopf retries) from the other 4xx answers."""
    expired = {"kind": "Status", "code": 410, "reason": "Expired", "metadata": {"continue": "t"}}
    error = _raised(410, expired)
    assert type(error) is kopf_errors.APIClientError, f"a 410 answer raises {type(error).__name__}"
    assert getattr(error, "status", None) == 410, (
        "Kopf's API errors no longer carry the HTTP status as .status"
    )
    assert error.args[1:2] == (expired,), (
        f"an API error no longer carries the Status body as its second argument (args {error.args!r}): "
        "expired_continue_token would find no continue token, and an expired page would stop the operator"
    )
    assert kopfwiring.expired_continue_token(error) == "t"
    not_found = _raised(404, {"kind": "Status"})
    assert isinstance(not_found, kopf_errors.APINotFoundError), (
        f"a 404 answer raises {type(not_found).__name__}"
    )
    too_many = _raised(429, {"kind": "Status"})
    assert isinstance(too_many, kopf_errors.APITooManyRequestsError), (
        f"a 429 answer raises {type(too_many).__name__}: end_reason would end a stream Kopf retries itself"
    )
    assert isinstance(too_many, kopf_errors.APIClientError), "429 is no longer a client error: see end_reason"
    assert kopfwiring.end_reason(too_many) is None


# --- retries and their lines --------------------------------------------------------------------------------


def test_kopf_s_requests_take_an_unsized_retry_schedule_as_endless() -> None:
    """``ApiRetries`` (settings.networking.error_backoffs) is an unsized iterable: Kopf's request routine must
    still iterate it afresh per request and stop only when it ends."""
    source = _source(kopf_api.request)
    assert "settings.networking.error_backoffs" in source, "Kopf's requests no longer read error_backoffs"
    assert "Sized" in source, "Kopf's requests no longer tell a sized schedule from an endless one"
    assert not hasattr(kopfwiring.ApiRetries(), "__len__"), "ApiRetries is sized: Kopf would stop at its end"


def test_kopf_still_logs_the_retry_line_that_is_thinned() -> None:
    """``FewerRetryLines`` matches Kopf's "Request attempt #N failed; will retry" (``#N/M`` for a sized
    schedule) by its text."""
    source = _source(kopf_api.request)
    assert 'f"Request attempt {idx} failed; will retry' in source, "Kopf's retry line changed its text"
    assert 'f"#{retry}/{count}"' in source, "Kopf numbers a sized schedule's attempts otherwise"
    assert 'f"#{retry}"' in source, "Kopf numbers an endless schedule's attempts otherwise"
    for idx in ("#7", "#7/9"):
        line = f"Request attempt {idx} failed; will retry: GET /x -> error"
        assert kopfwiring._RETRY_LINE.match(line) is not None, f"FewerRetryLines does not match {line!r}"


@pytest.mark.parametrize(
    ("name", "module", "user"),
    [
        pytest.param("kopf._cogs.clients.watching", kopf_watching, "watch_objs", id="watching"),
        pytest.param("kopf._core.reactor.observation", observation, "resource_observer", id="observation"),
    ],
)
def test_the_retrying_loggers_are_still_kopf_s_module_loggers(name: str, module: Any, user: str) -> None:
    """``FewerRetryLines`` is added to these loggers by name: each must still be its module's logger, handed
    by its functions (``user`` one of them) to the requests they make."""
    assert name in kopfwiring.KOPF_RETRYING_LOGGERS, f"{name} is no longer thinned: update this canary"
    assert module.logger.name == name, f"{module.__name__}'s logger is now {module.logger.name!r}"
    assert "logger" in _globals_read(getattr(module, user)), f"{name}.{user} no longer uses its module logger"


# --- memories and pause waiters -----------------------------------------------------------------------------


def test_kopf_s_memories_still_recall_ephemerally_and_are_what_kopf_operator_takes() -> None:
    parameters = inspect.signature(inventory.ResourceMemories.recall).parameters
    assert "ephemeral" in parameters, "ResourceMemories.recall lost `ephemeral`: ForgetfulMemories would keep"
    assert parameters["ephemeral"].kind is inspect.Parameter.KEYWORD_ONLY, "recall takes ephemeral= otherwise"
    assert "memories" in inspect.signature(kopf.operator).parameters, "kopf.operator takes no memories="
    assert issubclass(kopfwiring.ForgetfulMemories, inventory.ResourceMemories), (
        "ForgetfulMemories is not Kopf's ResourceMemories"
    )


def test_kopf_still_names_a_watch_stream_s_pause_waiter_by_the_prefix_cancelled() -> None:
    source = _source(kopf_watching.streaming_block)
    assert f'name=f"{kopfwiring.KOPF_PAUSE_WAITER_PREFIX}{{resource}}"' in source, (
        "Kopf's streaming_block names its pause waiter otherwise: cancel_orphaned_pause_waiters would miss "
        "them, and a stop during an event would again take 5 s longer"
    )


# --- a log text relied on outside the fence -----------------------------------------------------------------


def test_kopf_still_logs_a_webhook_s_outcome_as_the_webhook_server_s_filter_expects() -> None:
    """webhook/server.py drops Kopf's "Webhook '<id>' succeeded." and "... failed permanently: ..." lines (on
    ``kopf.objects``) by their prefix ``Webhook '<id>' ``."""
    assert 'f"Webhook {self.id!r}"' in _source(handlers.WebhookHandler.__str__), (
        "Kopf names a webhook handler otherwise in its lines: webhook/server.py's filter would let every "
        "admission request log a line again"
    )
    source = _source(execution)
    assert 'f"{handler} succeeded."' in source, "Kopf logs a webhook's success otherwise"
    assert 'f"{handler} failed permanently:' in source, "Kopf logs a webhook's failure otherwise"
