"""Reading one model's files in a child process, so that no parse holds the event loop (SPEC §10.7).

``json.loads``, ``bytes.decode`` and big-integer arithmetic hold the GIL for their whole call, so a thread
cannot keep the operator's loop free: a real 8.9 MB index alone takes 100-150 ms. Each model is therefore
read by a fresh interpreter running :mod:`ome_selector.modelfiles.child` (started with fork and exec of
``sys.executable``, as multiprocessing's ``spawn`` does: never a forked copy of the operator, whose threads'
locks and ~130 MiB it would inherit). The event loop only awaits the child's pipes and exit:

- the request (URI, endpoint, token) goes to the child's stdin: never argv, which ``/proc`` shows to all;
  the child's environment carries no token variable;
- every :attr:`ChildLimits.sample_every` the parent reads the child's ``VmRSS`` from ``/proc`` and kills it
  (SIGKILL) over :attr:`ChildLimits.max_rss`, and kills it at :attr:`ChildLimits.deadline`;
- the answer is at most 64 KiB of JSON, and is checked value by value
  (:func:`~ome_selector.modelfiles.learn.metadata_from_document`): the child is not trusted.

Every failure is a :class:`~ome_selector.modelfiles.ModelFileError` naming the model's URI (or the file
the child named), so the learner handles all of them alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ome_selector.modelfiles import ModelFileError, ModelMetadata
from ome_selector.modelfiles.child import MAX_ANSWER_BYTES, status_bytes
from ome_selector.modelfiles.learn import metadata_from_document
from ome_selector.modelfiles.limits import DEADLINE_SECONDS

__all__ = ["CHILD_MODULE", "MIB", "ChildLimits", "ModelReaderProcess"]

CHILD_MODULE = "ome_selector.modelfiles.child"
MIB = 1024 * 1024
#: Variables the Hub client would take a token from: the child gets the token only through its stdin.
_TOKEN_VARIABLES = frozenset({"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
#: A reason from the child is cut to this many characters (an event message is at most 1,024).
_MAX_REASON = 1024


@dataclass(frozen=True)
class ChildLimits:
    """What one child may use before the parent kills it (SPEC §10.7)."""

    deadline: float = DEADLINE_SECONDS
    max_rss: int = 256 * MIB
    sample_every: float = 0.1
    max_answer: int = MAX_ANSWER_BYTES


def _ended(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the model reader ended without an answer (killed by {name})"
    return f"the model reader ended without an answer (exit status {returncode})"


class ModelReaderProcess:
    """Reads models one child process each (the caller runs one at a time); :attr:`peak_rss` is the largest
    resident set the last child reached, as sampled and as the child itself measured."""

    def __init__(self, limits: ChildLimits | None = None, command: Sequence[str] | None = None) -> None:
        self.limits = limits or ChildLimits()
        self.command = tuple(command or (sys.executable, "-m", CHILD_MODULE))
        self.peak_rss = 0

    async def read(self, uri: str, *, endpoint: str | None = None, token: str | None = None) -> ModelMetadata:
        """What the files at ``uri`` say; ModelFileError for every way the read can fail."""
        request = json.dumps({"uri": uri, "endpoint": endpoint, "token": token}).encode()
        environment = {name: value for name, value in os.environ.items() if name not in _TOKEN_VARIABLES}
        # Fewer malloc arenas: the 1 GiB RLIMIT_AS backstop counts their reserved address space.
        environment["MALLOC_ARENA_MAX"] = "2"
        self.peak_rss = 0
        process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=environment,
        )
        try:
            return await self._supervise(uri, process, request)
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()

    async def _supervise(
        self, uri: str, process: asyncio.subprocess.Process, request: bytes
    ) -> ModelMetadata:
        assert process.stdin is not None
        assert process.stdout is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write(request)
            await process.stdin.drain()
            process.stdin.close()
        limits = self.limits
        exited = asyncio.ensure_future(process.wait())
        collected = _Answer(limits.max_answer)
        answer = asyncio.ensure_future(collected.read(process.stdout))
        deadline = asyncio.get_running_loop().time() + limits.deadline
        try:
            while not exited.done():
                await asyncio.wait({exited}, timeout=limits.sample_every)
                if exited.done():
                    break
                rss = status_bytes(str(process.pid), "VmRSS") or 0
                self.peak_rss = max(self.peak_rss, rss)
                killed = None
                if rss > limits.max_rss:
                    killed = f"reading the model used more than {limits.max_rss // MIB} MiB"
                elif asyncio.get_running_loop().time() >= deadline:
                    killed = f"not read within {limits.deadline:g} s"
                elif collected.overflow:
                    killed = f"the model reader answered more than {limits.max_answer} bytes"
                if killed is not None:
                    process.kill()
                    raise ModelFileError(uri, killed)
            data = await answer
        finally:
            answer.cancel()
            exited.cancel()
        if collected.overflow:
            raise ModelFileError(uri, f"the model reader answered more than {limits.max_answer} bytes")
        return self._metadata(uri, data, process.returncode)

    def _metadata(self, uri: str, data: bytes, returncode: int | None) -> ModelMetadata:
        if not data:
            raise ModelFileError(uri, _ended(returncode))
        try:
            document: Any = json.loads(data)
            if not isinstance(document, dict):
                raise ValueError("not an object")
            peak = document.get("peakRssBytes")
            if isinstance(peak, int) and not isinstance(peak, bool):
                self.peak_rss = max(self.peak_rss, peak)
            error = document.get("error")
            if isinstance(error, dict):
                location, reason = error.get("location"), error.get("reason")
                if not isinstance(location, str) or not isinstance(reason, str) or not reason:
                    raise ValueError("error")
                raise ModelFileError(location or uri, reason[:_MAX_REASON])
            metadata = metadata_from_document(document.get("metadata"))
        except (ValueError, RecursionError):
            raise ModelFileError(uri, "the model reader answered something other than metadata") from None
        return replace(metadata, source=uri)


class _Answer:
    """The first ``limit`` bytes a stream holds until its end; the rest is read and dropped, so that a pipe
    is never left full (a child blocked on it, its end never seen)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.overflow = False

    async def read(self, stream: asyncio.StreamReader) -> bytes:
        while chunk := await stream.read(64 * 1024):
            room = self.limit - len(self.data)
            self.data += chunk[:room]
            self.overflow = self.overflow or len(chunk) > room
        return bytes(self.data)
