"""A model repository on the Hugging Face Hub (``hf://ORG/NAME[@REVISION]``), read with ``huggingface_hub``.

The Hub client library provides the HTTP session (proxies, certificates, offline mode), the token
(``HF_TOKEN``, else the saved login) and the file URLs; the endpoint is ``HF_ENDPOINT`` when set. What is
fetched is bounded here, whatever a server does (SPEC §10.1, §10.6):

- the repository's file list and commit (the model info API), then every file at that commit, so all files
  come from one consistent revision;
- ``config.json``, ``model_index.json`` and safetensors indexes whole, each up to its size limit: a
  ``Content-Length`` over it is refused unread, a body is never collected past the limit + 1 byte;
- of each safetensors file exactly two ranges, the 8-byte length and the JSON header (HTTP range requests).
  A server that ignores ``Range`` is read only as far as those bytes, then the connection is dropped;
- every request with ``Accept-Encoding: identity``, connect within 10 s, no silence over 10 s, the whole
  answer within 60 s; redirects followed here (at most 3 hops, only to the hosts SPEC §10.6 allows), the
  token sent only to the endpoint's own origin; and for the whole model at most 4,200 requests,
  128,000,000 bytes and 120 s (a :class:`~.limits.ReadBudget`).

Server answers become one-line :class:`ModelFileError` messages naming the file.
"""

from __future__ import annotations

import ipaddress
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, quote, urljoin, urlsplit

import httpx2
from huggingface_hub import constants, get_session, get_token, hf_hub_url
from huggingface_hub.errors import OfflineModeIsEnabled

from ome_selector import __version__
from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.limits import (
    CONNECT_TIMEOUT,
    MAX_INDEX_BYTES,
    MAX_REDIRECTS,
    READ_GAP,
    REQUEST_DEADLINE,
    ReadBudget,
    json_object,
    oversized_reason,
)
from ome_selector.modelfiles.safetensors import (
    PREFIX_BYTES,
    Header,
    QuantAwareCounting,
    check_file_size,
    check_header_fits,
    header_length,
    parse_header,
)
from ome_selector.selection.messages import escape_controls

__all__ = [
    "HF_SCHEME",
    "REDIRECT_HOSTS_VARIABLE",
    "HubModelRef",
    "HubModelRepo",
    "RedirectPolicy",
    "is_hub_uri",
    "parse_hub_uri",
]

HF_SCHEME = "hf://"
#: Shards are fetched this many at a time (two small requests each).
CONCURRENT_SHARDS = 8
_DEFAULT_REVISION = "main"
#: A server's own error text is quoted up to this length.
_MAX_SERVER_MESSAGE = 200
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_URI = re.compile(rf"(?P<repo>{_NAME}/{_NAME})(?:@(?P<revision>[^\s@]+))?")
# Numbers of at most 20 digits: a server's header can never make a long conversion.
_CONTENT_RANGE = re.compile(r"bytes (?P<first>\d{1,20})-(?P<last>\d{1,20})/(?P<total>\d{1,20}|\*)")
_CONTENT_LENGTH = re.compile(r"\d{1,20}")
#: Extra hosts a mirror's redirects may go to (comma-separated), besides SPEC §10.6's own.
REDIRECT_HOSTS_VARIABLE = "OME_SELECTOR_REDIRECT_HOSTS"
#: The public Hub, and the domains its LFS and Xet CDNs live under.
_PUBLIC_HUB = "huggingface.co"
_HUB_DOMAINS = ("huggingface.co", "hf.co")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class HubModelRef:
    """A parsed ``hf://ORG/NAME[@REVISION]``."""

    repo_id: str
    revision: str | None


def is_hub_uri(source: str) -> bool:
    """Whether ``source`` names a Hub repository rather than a local folder."""
    return source.startswith(HF_SCHEME)


def parse_hub_uri(uri: str) -> HubModelRef:
    """The repository and revision ``uri`` names; ModelFileError when it is not ``hf://ORG/NAME[@REVISION]``."""
    match = _URI.fullmatch(uri.removeprefix(HF_SCHEME)) if is_hub_uri(uri) else None
    if match is None:
        raise ModelFileError(uri, "not a Hugging Face model URI: expected hf://ORG/NAME[@REVISION]")
    return HubModelRef(repo_id=match["repo"], revision=match["revision"])


#: Why a read without the token failed, whatever the status (401, 403 or 404) or the Hub's error code: a
#: private, gated or missing repository read this way must not be told apart.
ANONYMOUS_UNREADABLE = "not found or not public (read without the Hub token)"
_HIDDEN_WITHOUT_TOKEN = frozenset({401, 403, 404})
_HIDDEN_CODES = frozenset({"RepoNotFound", "GatedRepo", "RevisionNotFound", "EntryNotFound"})


def _status_reason(response: httpx2.Response, *, anonymous: bool = False) -> str:
    """What an error answer means, in one line (the Hub says which error in ``X-Error-Code``)."""
    status = response.status_code
    code = response.headers.get("X-Error-Code")
    if anonymous and (status in _HIDDEN_WITHOUT_TOKEN or code in _HIDDEN_CODES):
        return ANONYMOUS_UNREADABLE
    if code == "GatedRepo":
        return "gated repository: HF_TOKEN must be a token of an account that accepted its terms"
    if code == "RepoNotFound" or status == 401:
        return f"repository not found, or private and HF_TOKEN is missing or has no access (HTTP {status})"
    if code == "RevisionNotFound":
        return f"revision not found (HTTP {status})"
    if code == "EntryNotFound" or status == 404:
        return f"missing (HTTP {status})"
    if status == 416:
        return "truncated: the file ends before the bytes asked for (HTTP 416)"
    if status == 403:
        return "forbidden (HTTP 403): HF_TOKEN has no access"
    message = response.headers.get("X-Error-Message", "")[:_MAX_SERVER_MESSAGE]
    return f"HTTP {status}" + (f": {message}" if message else "")


def _origin(url: SplitResult) -> tuple[str, str, int | None]:
    port = url.port or _DEFAULT_PORTS.get(url.scheme)
    return url.scheme, (url.hostname or ""), port


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class RedirectPolicy:
    """Where a request to ``endpoint`` may be redirected (SPEC §10.6)."""

    endpoint: SplitResult
    extra_hosts: frozenset[str] = frozenset()

    @classmethod
    def for_endpoint(cls, endpoint: str, extra_hosts: Sequence[str] | None = None) -> RedirectPolicy:
        if extra_hosts is None:
            extra_hosts = os.environ.get(REDIRECT_HOSTS_VARIABLE, "").split(",")
        hosts = frozenset(host.strip().lower() for host in extra_hosts if host.strip())
        return cls(urlsplit(endpoint), hosts)

    def allows(self, target: SplitResult) -> bool:
        """Whether a redirect to ``target`` may be followed: its scheme, host and address."""
        try:
            host = (target.hostname or "").lower()
            target.port  # noqa: B018 - a port that is not a number raises here
        except ValueError:
            return False
        own = (self.endpoint.hostname or "").lower()
        if not host:
            return False
        if target.scheme != "https" and not (target.scheme == "http" == self.endpoint.scheme and host == own):
            return False
        if _is_ip(host):
            return host == own
        if host == own or host in self.extra_hosts:
            return True
        return own == _PUBLIC_HUB and any(host == d or host.endswith(f".{d}") for d in _HUB_DOMAINS)


class HubModelRepo:
    """One model repository at one commit, read with bounded HTTP requests."""

    def __init__(
        self,
        uri: str,
        *,
        endpoint: str | None = None,
        token: str | bool | None = None,
        redirect_hosts: Sequence[str] | None = None,
        budget: ReadBudget | None = None,
    ) -> None:
        """Look up ``uri``'s files and commit; ModelFileError when the repository or revision cannot be read.

        ``endpoint`` defaults to ``HF_ENDPOINT`` (read now, not at import), else the Hub's; ``token`` to the
        Hub client's own choice (``HF_TOKEN``, else the saved login); ``False`` or ``""`` reads without any
        token, and then a repository that cannot be read is :data:`ANONYMOUS_UNREADABLE` whatever the answer;
        ``redirect_hosts`` to ``OME_SELECTOR_REDIRECT_HOSTS``.
        """
        ref = parse_hub_uri(uri)
        self.uri = uri
        self.repo_id = ref.repo_id
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        self.budget = budget or ReadBudget(uri)
        try:
            self._policy = RedirectPolicy.for_endpoint(self.endpoint, redirect_hosts)
        except ValueError as error:
            raise ModelFileError(uri, f"invalid Hub endpoint {self.endpoint!r}: {error}") from None
        self._origin = _origin(self._policy.endpoint)
        # No token at all (not even the saved login): errors must not tell private from missing (SPEC §10.6).
        self._anonymous = token is False or token == ""
        chosen = None if self._anonymous else (token if isinstance(token, str) else get_token())
        self._authorization = f"Bearer {chosen}" if chosen else None
        self._headers = {"User-Agent": f"ome-selector/{__version__}", "Accept-Encoding": "identity"}
        revision = ref.revision or _DEFAULT_REVISION
        info_url = f"{self.endpoint}/api/models/{ref.repo_id}/revision/{quote(revision, safe='')}"
        info = json_object(uri, self._get(uri, info_url, start=0, length=None, limit=MAX_INDEX_BYTES)[0])
        siblings = info.get("siblings")
        if not isinstance(siblings, list):
            raise ModelFileError(uri, "the Hub's model info lists no files")
        self._files = frozenset(
            sibling["rfilename"]
            for sibling in siblings
            if isinstance(sibling, dict) and isinstance(sibling.get("rfilename"), str)
        )
        sha = info.get("sha")
        # Every later request reads this commit, even if the branch moves meanwhile.
        self.revision = sha if isinstance(sha, str) and sha else revision

    @property
    def bytes_read(self) -> int:
        """Bytes received so far (response bodies)."""
        return self.budget.bytes_read

    @property
    def requests(self) -> int:
        """HTTP requests made so far, each redirect hop counted."""
        return self.budget.requests

    def location(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def exists(self, name: str) -> bool:
        return name in self._files

    def read_json(self, name: str, limit: int) -> dict[str, Any]:
        data, _ = self._get_file(name, start=0, length=None, limit=limit)
        return json_object(self.location(name), data)

    def read_headers(self, names: Sequence[str], counting: QuantAwareCounting | None = None) -> list[Header]:
        if len(names) <= 1:
            return [self._read_header(name, counting) for name in names]
        return self._in_parallel(names, counting)

    def _in_parallel(self, names: Sequence[str], counting: QuantAwareCounting | None) -> list[Header]:
        """Each file's header, :data:`CONCURRENT_SHARDS` at a time; after an error no more requests start,
        and the error of the first such file (in order) is raised. The threads are daemons: Ctrl-C ends the
        command at once, without waiting for the requests in flight (each ends within its own deadline)."""
        headers: list[Header | None] = [None] * len(names)
        errors: dict[int, BaseException] = {}
        work = iter(enumerate(names))
        lock = threading.Lock()

        def read() -> None:
            while True:
                with lock:
                    item = None if errors else next(work, None)
                if item is None:
                    return
                index, name = item
                try:
                    headers[index] = self._read_header(name, counting)
                except BaseException as error:  # raised again below, in the caller's thread
                    with lock:
                        errors[index] = error
                    return

        threads = [
            threading.Thread(target=read, name="hub-headers", daemon=True)
            for _ in range(min(CONCURRENT_SHARDS, len(names)))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[min(errors)]
        return [header for header in headers if header is not None]

    def _read_header(self, name: str, counting: QuantAwareCounting | None) -> Header:
        location = self.location(name)
        prefix, file_size = self._get_file(name, start=0, length=PREFIX_BYTES)
        length = header_length(location, prefix)
        if file_size is not None:
            check_header_fits(location, length, file_size)
        data = self._get_file(name, start=PREFIX_BYTES, length=length)[0] if length else b""
        header = parse_header(location, data, counting)
        if file_size is not None:
            check_file_size(location, length, header, file_size)
        return header

    def _get_file(
        self, name: str, *, start: int, length: int | None, limit: int = 0
    ) -> tuple[bytes | bytearray, int | None]:
        url = hf_hub_url(self.repo_id, name, revision=self.revision, endpoint=self.endpoint)
        return self._get(self.location(name), url, start=start, length=length, limit=limit)

    def _headers_for(self, url: str) -> dict[str, str]:
        """The request headers; the token only for the endpoint's own origin (CDN URLs are pre-signed)."""
        headers = dict(self._headers)
        if self._authorization is not None and _origin(urlsplit(url)) == self._origin:
            headers["Authorization"] = self._authorization
        return headers

    @contextmanager
    def _answer(self, location: str, url: str, headers: dict[str, str]) -> Iterator[httpx2.Response]:
        """The final answer to a GET of ``url``, redirects followed under the policy of SPEC §10.6."""
        for _ in range(MAX_REDIRECTS + 1):
            self.budget.request()
            timeout = httpx2.Timeout(READ_GAP, connect=min(CONNECT_TIMEOUT, self.budget.remaining()))
            with self._stream(location, url, {**headers, **self._headers_for(url)}, timeout) as response:
                target = response.headers.get("Location") if response.status_code in _REDIRECTS else None
                if target is None:
                    yield response
                    return
            try:
                url = urljoin(url, target)
                split = urlsplit(url)
            except ValueError:
                split = urlsplit("")
            if not self._policy.allows(split):
                host = escape_controls((split.hostname or target)[:128])
                raise ModelFileError(location, f"redirected to {host}, which is not an allowed Hub host")
        raise ModelFileError(location, f"more than {MAX_REDIRECTS} redirects")

    @contextmanager
    def _stream(
        self, location: str, url: str, headers: dict[str, str], timeout: httpx2.Timeout
    ) -> Iterator[httpx2.Response]:
        try:
            with get_session().stream(
                "GET", url, headers=headers, timeout=timeout, follow_redirects=False
            ) as response:
                yield response
        except OfflineModeIsEnabled:
            raise ModelFileError(location, "cannot read: HF_HUB_OFFLINE is set") from None
        except httpx2.TimeoutException:
            raise ModelFileError(location, self._too_slow()) from None
        except httpx2.HTTPError as error:
            reason = str(error) or type(error).__name__
            raise ModelFileError(location, f"cannot reach {self.endpoint}: {reason}") from None
        except httpx2.InvalidURL as error:
            raise ModelFileError(location, f"invalid Hub endpoint {self.endpoint!r}: {error}") from None

    def _too_slow(self) -> str:
        return f"no complete answer from {self.endpoint} within {REQUEST_DEADLINE:g} s"

    def _get(
        self, location: str, url: str, *, start: int, length: int | None, limit: int = 0
    ) -> tuple[bytes | bytearray, int | None]:
        """``length`` bytes from ``start`` by a range request, or (``length`` None) the whole body up to
        ``limit`` bytes; with the file's size when the answer tells it."""
        headers: dict[str, str] = {}
        if length is not None:
            headers["Range"] = f"bytes={start}-{start + length - 1}"
        started = time.monotonic()
        with self._answer(location, url, headers) as response:
            if response.status_code >= 400:
                raise ModelFileError(location, _status_reason(response, anonymous=self._anonymous))
            skip, size = 0, None
            content_length = response.headers.get("Content-Length", "")
            known = int(content_length) if _CONTENT_LENGTH.fullmatch(content_length) else None
            if length is None:
                if known is not None and known > limit:  # refused unread
                    raise ModelFileError(location, oversized_reason(limit))
                wanted = limit + 1
            elif response.status_code == 206:
                match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", ""))
                if match is None or int(match["first"]) != start:
                    raise ModelFileError(location, "the server answered a range request with another range")
                size = None if match["total"] == "*" else int(match["total"])
                wanted = length
            else:  # the server ignored Range and sends the whole file: read only as far as needed
                skip, wanted = start, start + length
                size = known
            self.budget.allow(min(wanted, known) if known is not None else 0)
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk[: wanted - len(body)]  # never collected past what was asked
                self.budget.received(len(chunk))
                if len(body) >= wanted:
                    break
                if time.monotonic() - started > REQUEST_DEADLINE:
                    raise ModelFileError(location, self._too_slow())
                self.budget.remaining()
        if length is None:
            if len(body) > limit:
                raise ModelFileError(location, oversized_reason(limit))
            return body, None  # not copied: a 32 MB index is held once (SPEC §10.7's memory)
        data = bytes(body[skip : skip + length])
        if len(data) < length:
            raise ModelFileError(
                location, f"truncated: wanted {length} bytes at offset {start}, the server sent {len(data)}"
            )
        return data, size
