"""The bounds on reading one model's files (SPEC §10.1), alike for a local folder and ``hf://``, CLI and
operator; and the JSON reader every metadata file goes through (pure, no I/O).

Checks that need no parsing come first (sizes, then the value count at C speed), so a refused file is never
decoded or parsed; what the parser itself raises on hostile text (deep nesting, a number too long to convert,
memory) becomes one of the reasons of SPEC §10.1, never a traceback.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from ome_selector.api.jsonbounds import count_values_bound, nesting_depth
from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.selection.messages import ELLIPSIS, escape_controls

__all__ = [
    "CONNECT_TIMEOUT",
    "DEADLINE_SECONDS",
    "MAX_CONFIG_BYTES",
    "MAX_INDEX_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_JSON_VALUES",
    "MAX_MODEL_BYTES",
    "MAX_PARAMETERS",
    "MAX_REDIRECTS",
    "MAX_REQUESTS",
    "MAX_SHARDS",
    "READ_GAP",
    "REQUEST_DEADLINE",
    "ReadBudget",
    "json_object",
    "oversized_reason",
    "parameters_reason",
    "parse_json",
    "quoted",
]

#: ``config.json`` and ``model_index.json`` (the largest real one is under 2 MB).
MAX_CONFIG_BYTES = 4_000_000
#: ``*.safetensors.index.json`` (DeepSeek-V3's is 8.9 MB; the largest real one about 12.5 MB).
MAX_INDEX_BYTES = 32_000_000
#: JSON values in any metadata file, counted before parsing (an upper bound).
MAX_JSON_VALUES = 500_000
#: Nesting of any metadata file, as SPEC §7 and the manifest reader.
MAX_JSON_DEPTH = 100
#: Parameters of a whole model: 1000T, a thousand times the largest real model.
MAX_PARAMETERS = 10**15
#: Distinct shards of one model, summed over a pipeline's components.
MAX_SHARDS = 1024
#: Bytes read for one model: bodies received, or bytes read from disk.
MAX_MODEL_BYTES = 128_000_000
#: HTTP requests for one model, each redirect hop counted (a valid model needs at most 4,104).
MAX_REQUESTS = 4200
#: Seconds from the first request until a model must be read (a deadline).
DEADLINE_SECONDS = 120.0
#: One HTTP request: to connect, for the whole answer (a deadline), and the longest silence.
CONNECT_TIMEOUT = 10.0
REQUEST_DEADLINE = 60.0
READ_GAP = 10.0
#: Redirect hops one request follows (SPEC §10.6).
MAX_REDIRECTS = 3
#: Names in reasons are cut to this many characters.
_SHOWN_NAME = 128


def quoted(name: str) -> str:
    """``name`` in single quotes with SPEC §7's escapes, cut to 128 characters ending in ``…``."""
    escaped = escape_controls(name[: _SHOWN_NAME + 1])  # a few characters looked at, whatever the name
    if len(escaped) > _SHOWN_NAME:
        escaped = escaped[: _SHOWN_NAME - 1] + ELLIPSIS
    return f"'{escaped}'"


def oversized_reason(limit: int) -> str:
    return f"larger than {limit} bytes: not model metadata"


def parameters_reason() -> str:
    return f"more than {MAX_PARAMETERS} parameters: not a real model"


def parse_json(
    location: str,
    data: bytes | bytearray,
    *,
    invalid: str,
    max_values: int,
    max_depth: int,
    syntax: Callable[[json.JSONDecodeError], str],
) -> Any:
    """The JSON document in ``data``, its values counted before it is parsed; every error a ModelFileError
    whose reason starts with ``invalid`` (``syntax`` words a syntax error). The caller checks its nesting."""
    if count_values_bound(data) > max_values:
        raise ModelFileError(location, f"{invalid}: more than {max_values} JSON values")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ModelFileError(location, f"{invalid}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ModelFileError(location, f"{invalid}: {syntax(error)}") from None
    except RecursionError:  # the decoder recurses per level of nesting
        raise ModelFileError(location, f"{invalid}: nested deeper than {max_depth} levels") from None
    except ValueError:  # an integer beyond Python's 4,300-digit conversion limit
        raise ModelFileError(location, f"{invalid}: a number is too long to read") from None
    except MemoryError:
        raise ModelFileError(location, f"{invalid}: more than {max_values} JSON values") from None


def json_object(location: str, data: bytes | bytearray) -> dict[str, Any]:
    """The JSON object in ``data`` (a metadata file already within its byte limit); ModelFileError naming
    ``location`` otherwise."""
    document = parse_json(
        location,
        data,
        invalid="invalid JSON",
        max_values=MAX_JSON_VALUES,
        max_depth=MAX_JSON_DEPTH,
        syntax=lambda error: f"{error.msg} at line {error.lineno}",
    )
    if nesting_depth(document, MAX_JSON_DEPTH + 1).depth > MAX_JSON_DEPTH:
        raise ModelFileError(location, f"invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(document, dict):
        raise ModelFileError(location, "invalid JSON: not an object")
    return document


class ReadBudget:
    """What reading one model may cost (SPEC §10.1): bytes, HTTP requests and the wall clock from the first
    read. Shared by the threads of one reader; every error names the model's ``source``."""

    def __init__(
        self,
        source: str,
        *,
        max_bytes: int = MAX_MODEL_BYTES,
        max_requests: int = MAX_REQUESTS,
        deadline: float = DEADLINE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.max_bytes = max_bytes
        self.max_requests = max_requests
        self.deadline = deadline
        self._clock = clock
        self._started: float | None = None
        self._lock = threading.Lock()
        self.bytes_read = 0
        self.requests = 0

    def remaining(self) -> float:
        """Seconds left before the deadline; ModelFileError once it has passed (the clock starts here)."""
        with self._lock:
            now = self._clock()
            if self._started is None:
                self._started = now
            left = self._started + self.deadline - now
        if left <= 0:
            raise ModelFileError(self.source, f"not read within {self.deadline:g} s")
        return left

    def request(self) -> None:
        """Count one HTTP request (or redirect hop), refused past the limit."""
        self.remaining()
        with self._lock:
            self.requests += 1
            over = self.requests > self.max_requests
        if over:
            raise ModelFileError(self.source, f"more than {self.max_requests} HTTP requests for one model")

    def allow(self, wanted: int) -> None:
        """Refuse before reading ``wanted`` more bytes when they would pass the limit."""
        with self._lock:
            over = self.bytes_read + wanted > self.max_bytes
        if over:
            raise ModelFileError(self.source, f"more than {self.max_bytes} bytes read for one model")

    def received(self, count: int) -> None:
        """Count ``count`` bytes read, refused once past the limit."""
        with self._lock:
            self.bytes_read += count
            over = self.bytes_read > self.max_bytes
        if over:
            raise ModelFileError(self.source, f"more than {self.max_bytes} bytes read for one model")
