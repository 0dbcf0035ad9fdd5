"""The model reader in a process of its own: ``python -m ome_selector.modelfiles.child`` (SPEC §10.7).

The operator reads each model in a fresh interpreter, so that no parse can hold its event loop: this module
is that interpreter's program. It reads one request, a JSON object ``{"uri", "endpoint", "token"}`` on stdin
(the token never in argv: ``/proc/*/cmdline`` is readable), sets its own backstops (``RLIMIT_CPU`` 60 s,
``RLIMIT_AS`` 1 GiB), reads the model with :func:`~ome_selector.modelfiles.inspect_model` under every limit
of SPEC §10.1, writes one answer of at most :data:`MAX_ANSWER_BYTES` on stdout and exits:

- ``{"metadata": <the inspect -o json document, without files>}``, or
- ``{"error": {"location": ..., "reason": ...}}`` for a model that cannot be read.

The parent enforces the real bounds (the deadline, the memory) and validates the answer
(:func:`~ome_selector.modelfiles.learn.metadata_from_document`): nothing here is trusted.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.learn import metadata_document
from ome_selector.modelfiles.source import inspect_model

__all__ = [
    "CPU_SECONDS",
    "MAX_ADDRESS_SPACE",
    "MAX_ANSWER_BYTES",
    "MAX_REQUEST_BYTES",
    "answer",
    "main",
    "status_bytes",
]

#: The answer and the request are small: the six fields and a few counts; a URI, an endpoint, a token.
MAX_ANSWER_BYTES = 64 * 1024
MAX_REQUEST_BYTES = 64 * 1024
#: Backstops only: the parent kills the child at its deadline and over its memory cap first.
CPU_SECONDS = 60
MAX_ADDRESS_SPACE = 1024 * 1024 * 1024
#: A reason is cut to this many characters (a message is at most 1,024).
_MAX_TEXT = 2048


def _limit_self() -> None:
    for limit, value in ((resource.RLIMIT_CPU, CPU_SECONDS), (resource.RLIMIT_AS, MAX_ADDRESS_SPACE)):
        _, hard = resource.getrlimit(limit)
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(limit, (soft, hard))


def status_bytes(process: str, field: str) -> int | None:
    """A size in bytes from ``/proc/<process>/status`` (``VmRSS``, ``VmHWM``), None when it cannot be read
    (the process is gone): one small read."""
    prefix = f"{field}:".encode()
    try:
        with open(f"/proc/{process}/status", "rb") as status:
            for line in status:
                if line.startswith(prefix):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def answer(request: Any) -> dict[str, Any]:
    """The answer to one request (never raises for a model that cannot be read)."""
    if not isinstance(request, dict) or not isinstance(request.get("uri"), str):
        return {"error": {"location": "", "reason": "the model reader got no model to read"}}
    from ome_selector.modelfiles.hub import is_hub_uri  # noqa: PLC0415 - the parent imports this module too

    if not is_hub_uri(request["uri"]):  # the operator reads only the Hub, never this pod's own files
        return {"error": {"location": request["uri"][:_MAX_TEXT], "reason": "not an hf:// URI"}}
    uri = request["uri"]
    endpoint = request.get("endpoint")
    token = request.get("token")
    try:
        metadata = inspect_model(
            uri,
            endpoint=endpoint if isinstance(endpoint, str) else None,
            token=token if isinstance(token, str) else "",  # no token given: anonymous, never the saved one
        ).metadata
    except ModelFileError as error:
        return {"error": {"location": error.location[:_MAX_TEXT], "reason": error.reason[:_MAX_TEXT]}}
    except Exception as error:  # whatever a library raises is a failure to read, said once
        reason = f"{type(error).__name__}: {error}"[:_MAX_TEXT]
        return {"error": {"location": uri[:_MAX_TEXT], "reason": reason}}
    document = metadata_document(metadata)
    document["files"] = []  # the operator keeps no file summaries (SPEC §10.3)
    document["source"] = document["source"][:_MAX_TEXT]
    return {"metadata": document}


def main() -> int:
    _limit_self()
    data = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
    try:
        request = json.loads(data) if len(data) <= MAX_REQUEST_BYTES else None
    except ValueError:
        request = None
    document = answer(request)
    # VmHWM: the peak of this address space (ru_maxrss would keep the starting process's across exec).
    if (peak := status_bytes("self", "VmHWM")) is not None:
        document["peakRssBytes"] = peak
    text = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
    sys.stdout.write(text[: MAX_ANSWER_BYTES + 1])
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
