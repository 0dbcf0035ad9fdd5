"""A local stand-in for the Hugging Face Hub: serves model folders in the Hub's URL shapes, with Range.

The real ``huggingface_hub`` client talks to it through ``HF_ENDPOINT``. It answers the requests the model
reader makes, in the shapes ``huggingface_hub`` itself uses (read from its source):

- ``GET /api/models/ORG/NAME/revision/REV`` -> ``{"id", "sha", "siblings": [{"rfilename"}]}`` (model info);
- ``GET /ORG/NAME/resolve/REV/PATH`` -> the file, ``206`` with ``Content-Range`` for ``Range: bytes=a-b``,
  ``416`` past its end;
- errors as the Hub gives them: ``X-Error-Code`` ``RepoNotFound`` (401 without a token for a private
  repository, 404 otherwise), ``GatedRepo`` (403), ``RevisionNotFound``, ``EntryNotFound`` (404).

It records every request and the body bytes it sent, so tests can assert what was fetched. A client has the
whole answer a moment before the server thread records it, so reading the record waits until no request is
being answered.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_INFO = re.compile(r"/api/models/(?P<repo>[^/]+/[^/]+)/revision/(?P<revision>[^/]+)")
_RESOLVE = re.compile(r"/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<path>.+)")
_RANGE = re.compile(r"bytes=(?P<first>\d+)-(?P<last>\d+)")


@dataclass
class Repo:
    """A repository served from ``folder``; ``token`` makes it private, ``gated`` refuses every file."""

    folder: Path
    token: str | None = None
    gated: bool = False


@dataclass
class Request:
    method: str
    path: str
    range: str | None
    authorization: str | None
    status: int
    body_bytes: int
    #: When the request arrived (time.monotonic()): the record's order, since a quick later request can be
    #: recorded before an earlier one whose thread was descheduled between its answer and its record.
    arrived: float
    #: When the answer was sent (time.monotonic()).
    at: float = field(default_factory=time.monotonic)


#: How long reading the record waits for answers in progress (a stuck client would otherwise hang a test).
_SETTLE_TIMEOUT = 10.0


@dataclass
class HubStandIn:
    """The server's state: repositories by id, options, and the requests it answered."""

    repos: dict[str, Repo] = field(default_factory=dict)
    ignore_range: bool = False
    #: A file request's path -> where to redirect it (None: answer it); redirects are answered 302.
    redirect: Callable[[str], str | None] | None = None
    #: Seconds between the bytes of a file's body (0: all at once): a trickling server.
    trickle: float = 0.0
    url: str = ""
    _answered: list[Request] = field(default_factory=list)
    _in_progress: int = 0
    _changed: threading.Condition = field(default_factory=threading.Condition)

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Around the handling of one request: readers of the record wait until it is recorded."""
        with self._changed:
            self._in_progress += 1
        try:
            yield
        finally:
            with self._changed:
                self._in_progress -= 1
                self._changed.notify_all()

    def record(self, request: Request) -> None:
        with self._changed:
            self._answered.append(request)
            self._answered.sort(key=lambda answered: answered.arrived)

    @property
    def requests(self) -> list[Request]:
        """The requests answered so far, once none is being answered."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._in_progress == 0, timeout=_SETTLE_TIMEOUT):
                raise TimeoutError(
                    f"a request to the Hub stand-in is still being answered after {_SETTLE_TIMEOUT}s"
                )
            return list(self._answered)

    @property
    def bytes_served(self) -> int:
        return sum(request.body_bytes for request in self.requests)

    def served_paths(self) -> list[str]:
        return [request.path for request in self.requests]

    def requests_snapshot(self) -> list[Request]:
        """The requests answered so far, without waiting (the list grows while the server runs)."""
        with self._changed:
            return list(self._answered)


def _files(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


def _handler(hub: HubStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The head and the body are two writes: with Nagle's algorithm the body of every small answer waited
        # for the client's delayed ACK, 40 ms a file on localhost, which the real Hub does not cost.
        disable_nagle_algorithm = True
        arrived = 0.0

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: tests read ``hub.requests`` instead."""

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self._send_chunks(status, len(body), iter([body]), headers)

        def _send_chunks(
            self, status: int, length: int, chunks: Iterator[bytes], headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            sent = 0
            try:
                for chunk in chunks:
                    self.wfile.write(chunk)
                    sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client hung up: count only what was written
            hub.record(
                Request(
                    method=self.command,
                    path=self.path,
                    range=self.headers.get("Range"),
                    authorization=self.headers.get("Authorization"),
                    status=status,
                    body_bytes=sent,
                    arrived=self.arrived,
                )
            )

        def _error(self, status: int, code: str) -> None:
            body = json.dumps({"error": code}).encode()
            self._send(status, body, {"X-Error-Code": code, "Content-Type": "application/json"})

        def _repo(self, repo_id: str) -> Repo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound")
                return None
            if repo.token is not None and self.headers.get("Authorization") != f"Bearer {repo.token}":
                self._error(401, "RepoNotFound")
                return None
            return repo

        def do_GET(self) -> None:
            self.arrived = time.monotonic()
            with hub.answering():
                self._answer_get()

        def _answer_get(self) -> None:
            path = unquote(urlsplit(self.path).path)
            if info := _INFO.fullmatch(path):
                if (repo := self._repo(info["repo"])) is None:
                    return
                if info["revision"] not in ("main", COMMIT):
                    self._error(404, "RevisionNotFound")
                    return
                siblings = [{"rfilename": name} for name in _files(repo.folder)]
                document = {"id": info["repo"], "sha": COMMIT, "siblings": siblings}
                self._send(200, json.dumps(document).encode(), {"Content-Type": "application/json"})
            elif resolve := _RESOLVE.fullmatch(path):
                target = hub.redirect(self.path) if hub.redirect is not None else None
                if target is not None:
                    self._send(302, b"", {"Location": target})
                    return
                if (repo := self._repo(resolve["repo"])) is None:
                    return
                if repo.gated:
                    self._error(403, "GatedRepo")
                elif resolve["revision"] not in ("main", COMMIT):
                    self._error(404, "RevisionNotFound")
                elif not (file := repo.folder / resolve["path"]).is_file():
                    self._error(404, "EntryNotFound")
                else:
                    self._file(file)
            else:
                self._send(404)

        def _file(self, file: Path) -> None:
            size = file.stat().st_size
            headers = {"Accept-Ranges": "bytes"}
            wanted = _RANGE.fullmatch(self.headers.get("Range", ""))
            if wanted is None or hub.ignore_range:
                with file.open("rb") as stream:
                    self._send_chunks(200, size, iter(lambda: stream.read(1 << 16), b""), headers)
                return
            first, last = int(wanted["first"]), int(wanted["last"])
            if first >= size:
                self._send(416, b"", {"Content-Range": f"bytes */{size}"})
                return
            last = min(last, size - 1)
            with file.open("rb") as stream:
                stream.seek(first)
                body = stream.read(last - first + 1)
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
            if hub.trickle:
                self._send_chunks(206, len(body), _trickled(body, hub.trickle), headers)
            else:
                self._send(206, body, headers)

    return Handler


def _trickled(body: bytes, interval: float) -> Iterator[bytes]:
    for index in range(len(body)):
        time.sleep(interval)
        yield body[index : index + 1]


class _Server(ThreadingHTTPServer):
    # The reader opens several connections at once; the default listen backlog (5) would drop some SYNs and
    # cost the client a one-second retransmit.
    request_queue_size = 64
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up early is expected
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@contextmanager
def hub_standin() -> Iterator[HubStandIn]:
    """A running stand-in on a free local port; ``hub.url`` is its endpoint for ``HF_ENDPOINT``."""
    hub = HubStandIn()
    server = _Server(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="hub-standin", daemon=True
    )
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main(argv: list[str]) -> int:
    """``python hub_standin.py ORG/NAME=FOLDER ...``: serve the folders from a process of its own (so that a
    test's own threads do not share the GIL with it); prints the endpoint, serves until stdin closes."""
    with hub_standin() as hub:
        for argument in argv:
            repo_id, _, folder = argument.partition("=")
            hub.repos[repo_id] = Repo(Path(folder))
        print(hub.url, flush=True)
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
