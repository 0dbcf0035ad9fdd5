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
import re
import tomllib
from collections.abc import Callable
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
from kopf._core.actions import execution
from kopf._core.intents import handlers
from kopf._core.reactor import inventory, observation

from ome_selector.operator import kopfwiring

REPO_ROOT = Path(__file__).resolve().parents[3]
PRODUCT = REPO_ROOT / "src" / "ome_selector"
FENCE = PRODUCT / "operator" / "kopfwiring.py"


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
    assert isinstance(kopf_fetching.api, kopfwiring._ResumingApi) or kopf_fetching.api is kopf_api  # type: ignore[attr-defined]


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
    assert {"url", "settings", "logger", "stopper"} <= _keywords(kopf_api.stream)
    parameters = inspect.signature(kopf_fetching.fetch_objs).parameters
    assert parameters["resource"].kind is inspect.Parameter.KEYWORD_ONLY, "fetch_objs takes resource= no more"
    assert hasattr(kopf_watching.Bookmark, "LISTED"), "Kopf's watch marks the end of a listing otherwise"


def test_kopf_lists_a_kind_again_after_a_410_gone_event() -> None:
    """Both adaptations turn a stream's end into a ``410 Gone`` event: Kopf must still take that as the end of
    a watch to be listed again, and anything else as an error."""
    source = _source(kopf_watching.continuous_watch)
    assert "== 410" in source, "continuous_watch no longer restarts on an ERROR event with code 410"
    assert "WatchingError" in source, "continuous_watch no longer raises WatchingError on another ERROR event"


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
    assert error.status == 410
    assert error.args[1] == expired, "an API error no longer carries the Status body as its second argument"
    assert kopfwiring.expired_continue_token(error) == "t"
    assert isinstance(_raised(404, {"kind": "Status"}), kopf_errors.APINotFoundError)
    too_many = _raised(429, {"kind": "Status"})
    assert isinstance(too_many, kopf_errors.APITooManyRequestsError)
    assert isinstance(too_many, kopf_errors.APIClientError), "429 is no longer a client error: see end_reason"
    assert kopfwiring.end_reason(too_many) is None


# --- retries and their lines --------------------------------------------------------------------------------


def test_kopf_s_requests_take_an_unsized_retry_schedule_as_endless() -> None:
    """``ApiRetries`` (settings.networking.error_backoffs) is an unsized iterable: Kopf's request routine must
    still iterate it afresh per request and stop only when it ends."""
    source = _source(kopf_api.request)
    assert "settings.networking.error_backoffs" in source, "Kopf's requests no longer read error_backoffs"
    assert "Sized" in source, "Kopf's requests no longer tell a sized schedule from an endless one"
    assert not hasattr(kopfwiring.ApiRetries(), "__len__")


def test_kopf_still_logs_the_retry_line_that_is_thinned() -> None:
    """``FewerRetryLines`` matches Kopf's "Request attempt #N failed; will retry" (``#N/M`` for a sized
    schedule) by its text."""
    source = _source(kopf_api.request)
    assert 'f"Request attempt {idx} failed; will retry' in source, "Kopf's retry line changed its text"
    assert 'f"#{retry}/{count}"' in source, "Kopf numbers a sized schedule's attempts otherwise"
    assert 'f"#{retry}"' in source, "Kopf numbers an endless schedule's attempts otherwise"
    for idx in ("#7", "#7/9"):
        line = f"Request attempt {idx} failed; will retry: GET /x -> error"
        assert kopfwiring._RETRY_LINE.match(line) is not None


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
    assert name in kopfwiring.KOPF_RETRYING_LOGGERS
    assert module.logger.name == name, f"{module.__name__}'s logger is now {module.logger.name!r}"
    assert "logger" in _globals_read(getattr(module, user)), f"{name}.{user} no longer uses its module logger"


# --- memories and pause waiters -----------------------------------------------------------------------------


def test_kopf_s_memories_still_recall_ephemerally_and_are_what_kopf_operator_takes() -> None:
    parameters = inspect.signature(inventory.ResourceMemories.recall).parameters
    assert "ephemeral" in parameters, "ResourceMemories.recall lost `ephemeral`: ForgetfulMemories would keep"
    assert parameters["ephemeral"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "memories" in inspect.signature(kopf.operator).parameters, "kopf.operator takes no memories="
    assert issubclass(kopfwiring.ForgetfulMemories, inventory.ResourceMemories)


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
    assert 'f"Webhook {self.id!r}"' in _source(handlers.WebhookHandler.__str__)
    source = _source(execution)
    assert 'f"{handler} succeeded."' in source, "Kopf logs a webhook's success otherwise"
    assert 'f"{handler} failed permanently:' in source, "Kopf logs a webhook's failure otherwise"
