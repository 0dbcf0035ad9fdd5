"""Kopf's listing asks for a page whose continue token expired again, with the apiserver's fresh token."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import fetching as kopf_fetching

from ome_selector.operator import kopfwiring
from ome_selector.operator.kopfwiring import expired_continue_token, resume_expired_listings, with_continue

URL = "/apis/ome.io/v1beta1/inferenceservices?limit=500&continue=old"


def _expired(reason: str = "Expired", token: str | None = "fresh") -> kopf_errors.APIClientError:
    payload: dict[str, Any] = {"kind": "Status", "code": 410, "reason": reason, "message": "too old"}
    if token is not None:
        payload["metadata"] = {"continue": token}
    return kopf_errors.APIClientError(payload, status=410, headers={})  # type: ignore[arg-type]


class _Api:
    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.urls: list[str] = []

    async def get(self, url: str, **_: Any) -> Any:
        self.urls.append(url)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


def test_an_expired_page_is_asked_for_again_with_the_fresh_token() -> None:
    api = _Api(_expired(), {"items": []})
    page = asyncio.run(kopfwiring._ResumingApi(api).get(URL, settings=None))
    assert page == {"items": []}
    assert api.urls == [URL, "/apis/ome.io/v1beta1/inferenceservices?limit=500&continue=fresh"]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(_expired(reason="Gone"), id="a 410 that is not an expired listing"),
        pytest.param(_expired(token=None), id="no token offered"),
        pytest.param(kopf_errors.APIClientError("forbidden", status=403, headers={}), id="another error"),
    ],
)
def test_other_errors_go_through(error: kopf_errors.APIClientError) -> None:
    api = _Api(error)
    with pytest.raises(kopf_errors.APIClientError):
        asyncio.run(kopfwiring._ResumingApi(api).get(URL))
    assert expired_continue_token(error) is None
    assert api.urls == [URL]


def test_the_continue_parameter_is_replaced_or_added() -> None:
    assert with_continue("/x?limit=5", "t") == "/x?limit=5&continue=t"
    assert with_continue("/x?continue=a&limit=5", "b") == "/x?limit=5&continue=b"


def test_kopf_s_listing_reads_through_it_once_installed() -> None:
    resume_expired_listings()
    resume_expired_listings()
    installed = kopf_fetching.api  # type: ignore[attr-defined]
    assert isinstance(installed, kopfwiring._ResumingApi)
    assert not isinstance(installed._api, kopfwiring._ResumingApi)


@pytest.mark.parametrize(
    ("url", "plural"),
    [
        pytest.param(
            "https://h/apis/ome.io/v1beta1/clusterservingruntimes?limit=500", "clusterservingruntimes"
        ),
        pytest.param("/apis/ome.io/v1beta1/namespaces/a/inferenceservices?limit=5", "inferenceservices"),
        pytest.param("/apis/ome.io/v1beta1/basemodels", "basemodels", id="no query"),
        pytest.param("/apis/ome.io/v1beta1/basemodels?limit=5&continue=abc", None, id="a later page"),
        pytest.param("/apis/ome.io/v1beta1/basemodels?watch=true", None, id="a watch"),
    ],
)
def test_the_first_page_of_a_listing_names_its_kind(url: str, plural: str | None) -> None:
    assert kopfwiring.listed_plural(url) == plural


def test_a_listing_is_seen_on_its_own_loop_also_when_it_is_empty() -> None:
    """A kind whose last object vanished during a watch gap lists empty: no event reaches any handler, so the
    listing itself is reported (SPEC §5), once per listing, and only to the operator on that event loop."""
    seen: list[str] = []
    first = "/apis/ome.io/v1beta1/clusterservingruntimes?limit=500"

    async def operator() -> None:
        kopfwiring.observe_listings(seen.append)
        api = kopfwiring._ResumingApi(_Api({"items": [], "metadata": {"continue": "next"}}, {"items": []}))
        await api.get(first)
        await api.get(first + "&continue=next")

    async def another_operator() -> None:  # its own loop, no observer
        await kopfwiring._ResumingApi(_Api({"items": []})).get(first)

    asyncio.run(operator())
    asyncio.run(another_operator())
    assert seen == ["clusterservingruntimes"]
