"""A model repository on the Hugging Face Hub (``hf://ORG/NAME[@REVISION]``), read with ``huggingface_hub``.

The Hub client library provides the HTTP session (proxies, certificates, offline mode), the token
(``HF_TOKEN``, else the saved login) and the file URLs; the endpoint is ``HF_ENDPOINT`` when set. What is
fetched is bounded here, whatever a server does:

- the repository's file list and commit (the model info API), then every file at that commit, so all files
  come from one consistent revision;
- ``config.json``, ``model_index.json`` and safetensors indexes whole, up to a size limit;
- of each safetensors file exactly two ranges, the 8-byte length and the JSON header (HTTP range requests).
  A server that ignores ``Range`` is read only as far as those bytes, then the connection is dropped.

Server answers become one-line :class:`ModelFileError` messages naming the file.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx2
from huggingface_hub import constants, get_session, get_token, hf_hub_url
from huggingface_hub.errors import OfflineModeIsEnabled

from ome_selector import __version__
from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.local import MAX_JSON_BYTES, parse_json_object
from ome_selector.modelfiles.safetensors import (
    PREFIX_BYTES,
    Header,
    check_file_size,
    header_length,
    parse_header,
)

__all__ = ["HF_SCHEME", "HubModelRef", "HubModelRepo", "is_hub_uri", "parse_hub_uri"]

HF_SCHEME = "hf://"
#: Shards are fetched this many at a time (two small requests each).
CONCURRENT_SHARDS = 8
_DEFAULT_REVISION = "main"
#: A server's own error text is quoted up to this length.
_MAX_SERVER_MESSAGE = 200
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_URI = re.compile(rf"(?P<repo>{_NAME}/{_NAME})(?:@(?P<revision>[^\s@]+))?")
_CONTENT_RANGE = re.compile(r"bytes (?P<first>\d+)-(?P<last>\d+)/(?P<total>\d+|\*)")


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


class HubModelRepo:
    """One model repository at one commit, read with bounded HTTP requests."""

    def __init__(
        self,
        uri: str,
        *,
        endpoint: str | None = None,
        token: str | bool | None = None,
        timeout: float = constants.HF_HUB_DOWNLOAD_TIMEOUT,
    ) -> None:
        """Look up ``uri``'s files and commit; ModelFileError when the repository or revision cannot be read.

        ``endpoint`` defaults to ``HF_ENDPOINT`` (read now, not at import), else the Hub's; ``token`` to the
        Hub client's own choice (``HF_TOKEN``, else the saved login); ``False`` reads without any token,
        and then a repository that cannot be read is :data:`ANONYMOUS_UNREADABLE` whatever the answer.
        """
        ref = parse_hub_uri(uri)
        self.uri = uri
        self.repo_id = ref.repo_id
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        self.timeout = timeout
        self._anonymous = token is False
        token = None if token is False else (token or get_token())
        self._headers = {"User-Agent": f"ome-selector/{__version__}"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._lock = threading.Lock()
        #: Bytes received so far (response bodies), and in how many requests.
        self.bytes_read = 0
        self.requests = 0
        revision = ref.revision or _DEFAULT_REVISION
        info_url = f"{self.endpoint}/api/models/{ref.repo_id}/revision/{quote(revision, safe='')}"
        info = parse_json_object(uri, self._get(uri, info_url, start=0, length=None)[0])
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

    def location(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def exists(self, name: str) -> bool:
        return name in self._files

    def read_json(self, name: str) -> dict[str, Any]:
        data, _ = self._get_file(name, start=0, length=None)
        return parse_json_object(self.location(name), data)

    def read_headers(self, names: Sequence[str]) -> list[Header]:
        if len(names) <= 1:
            return [self._read_header(name) for name in names]
        with ThreadPoolExecutor(max_workers=min(CONCURRENT_SHARDS, len(names))) as pool:
            futures = [pool.submit(self._read_header, name) for name in names]
            try:
                return [future.result() for future in futures]
            finally:
                for future in futures:  # after an error, start no more requests
                    future.cancel()

    def _read_header(self, name: str) -> Header:
        location = self.location(name)
        prefix, file_size = self._get_file(name, start=0, length=PREFIX_BYTES)
        length = header_length(location, prefix)
        data = self._get_file(name, start=PREFIX_BYTES, length=length)[0] if length else b""
        header = parse_header(location, data)
        if file_size is not None:
            check_file_size(location, length, header, file_size)
        return header

    def _get_file(self, name: str, *, start: int, length: int | None) -> tuple[bytes, int | None]:
        url = hf_hub_url(self.repo_id, name, revision=self.revision, endpoint=self.endpoint)
        return self._get(self.location(name), url, start=start, length=length)

    @contextmanager
    def _stream(self, location: str, url: str, headers: dict[str, str]) -> Iterator[httpx2.Response]:
        try:
            with get_session().stream("GET", url, headers=headers, timeout=self.timeout) as response:
                self._count(0, request=True)
                yield response
        except OfflineModeIsEnabled:
            raise ModelFileError(location, "cannot read: HF_HUB_OFFLINE is set") from None
        except httpx2.TimeoutException:
            reason = f"no answer from {self.endpoint} within {self.timeout} s"
            raise ModelFileError(location, reason) from None
        except httpx2.HTTPError as error:
            reason = str(error) or type(error).__name__
            raise ModelFileError(location, f"cannot reach {self.endpoint}: {reason}") from None
        except httpx2.InvalidURL as error:
            raise ModelFileError(location, f"invalid Hub endpoint {self.endpoint!r}: {error}") from None

    def _get(self, location: str, url: str, *, start: int, length: int | None) -> tuple[bytes, int | None]:
        """``length`` bytes from ``start`` by a range request, or (``length`` None) the whole body up to
        :data:`MAX_JSON_BYTES`; with the file's size when the answer tells it."""
        headers = dict(self._headers)
        if length is not None:
            # Offsets count the file's own bytes: no content encoding.
            headers.update({"Range": f"bytes={start}-{start + length - 1}", "Accept-Encoding": "identity"})
        with self._stream(location, url, headers) as response:
            if response.status_code >= 400:
                raise ModelFileError(location, _status_reason(response, anonymous=self._anonymous))
            skip, size = 0, None
            if length is None:
                wanted = MAX_JSON_BYTES + 1
            elif response.status_code == 206:
                match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", ""))
                if match is None or int(match["first"]) != start:
                    raise ModelFileError(location, "the server answered a range request with another range")
                size = None if match["total"] == "*" else int(match["total"])
                wanted = length
            else:  # the server ignored Range and sends the whole file: read only as far as needed
                skip, wanted = start, start + length
                content_length = response.headers.get("Content-Length", "")
                size = int(content_length) if content_length.isdigit() else None
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                self._count(len(chunk))
                if len(body) >= wanted:
                    break
        if length is None:
            if len(body) > MAX_JSON_BYTES:
                raise ModelFileError(location, f"larger than {MAX_JSON_BYTES} bytes: not model metadata")
            return bytes(body), None
        data = bytes(body[skip : skip + length])
        if len(data) < length:
            raise ModelFileError(
                location, f"truncated: wanted {length} bytes at offset {start}, the server sent {len(data)}"
            )
        return data, size

    def _count(self, received: int, *, request: bool = False) -> None:
        with self._lock:
            self.bytes_read += received
            self.requests += int(request)
