"""The safetensors header: its length prefix, its JSON, and the parameters it describes (pure, no I/O).

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON, then the tensor data. The JSON
maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the end of
the header); an optional ``__metadata__`` entry maps strings to strings. Only the prefix and the JSON are ever
needed here: the weights are never read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ome_selector.modelfiles.errors import ModelFileError

__all__ = [
    "MAX_HEADER_BYTES",
    "PREFIX_BYTES",
    "Header",
    "Tensor",
    "check_file_size",
    "count_parameters",
    "header_length",
    "parse_header",
]

#: The header length prefix: an unsigned 64-bit little-endian integer.
PREFIX_BYTES = 8
#: A longer header is refused without being read (SPEC §10): it cannot be a real model's.
MAX_HEADER_BYTES = 100_000_000

_METADATA_KEY = "__metadata__"


@dataclass(frozen=True, slots=True)
class Tensor:
    """One entry of a header."""

    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True, slots=True)
class Header:
    """A parsed header: the tensors by name (``__metadata__`` is not a tensor)."""

    tensors: Mapping[str, Tensor]

    @property
    def parameters(self) -> int:
        """The parameters of all tensors, scalars with an empty shape skipped (SPEC §10)."""
        return count_parameters(tensor.shape for tensor in self.tensors.values())

    @property
    def data_bytes(self) -> int:
        """The bytes of tensor data the header describes: the file must hold at least that much after it."""
        return max((tensor.end for tensor in self.tensors.values()), default=0)


def count_parameters(shapes: Iterable[Sequence[int]]) -> int:
    """The sum of the products of ``shapes``, skipping empty shapes (scalars), as OME counts."""
    return sum(math.prod(shape) for shape in shapes if shape)


def header_length(location: str, prefix: bytes) -> int:
    """The header length in a file's first :data:`PREFIX_BYTES` bytes; ModelFileError if too short or long."""
    if len(prefix) < PREFIX_BYTES:
        raise ModelFileError(
            location, f"truncated: {len(prefix)} bytes, shorter than the 8-byte safetensors header length"
        )
    length = int.from_bytes(prefix[:PREFIX_BYTES], "little")
    if length > MAX_HEADER_BYTES:
        raise ModelFileError(
            location,
            f"safetensors header length {length} bytes exceeds the limit of {MAX_HEADER_BYTES} bytes",
        )
    return length


def _natural(value: object) -> bool:
    """A JSON integer >= 0 (JSON's true/false are not numbers here)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tensor(location: str, name: str, entry: object) -> Tensor:
    def invalid(what: str) -> ModelFileError:
        return ModelFileError(location, f"invalid safetensors header: tensor {name!r} {what}")

    if not isinstance(entry, dict):
        raise invalid("is not a JSON object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or not dtype:
        raise invalid("has no dtype string")
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(_natural(size) for size in shape):
        raise invalid("has no shape (a list of integers >= 0)")
    offsets = entry.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_natural(offset) for offset in offsets)
        or offsets[0] > offsets[1]
    ):
        raise invalid("has no data_offsets [begin, end] with 0 <= begin <= end")
    return Tensor(dtype=dtype, shape=tuple(shape), begin=offsets[0], end=offsets[1])


def parse_header(location: str, data: bytes) -> Header:
    """The header in ``data`` (the JSON after the length prefix); ModelFileError naming ``location``."""
    try:
        document: Any = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ModelFileError(location, "invalid safetensors header: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ModelFileError(location, f"invalid safetensors header: not JSON ({error.msg})") from None
    if not isinstance(document, dict):
        raise ModelFileError(location, "invalid safetensors header: not a JSON object")
    tensors = {
        name: _tensor(location, name, entry) for name, entry in document.items() if name != _METADATA_KEY
    }
    return Header(tensors=tensors)


def check_file_size(location: str, header_bytes: int, header: Header, file_size: int) -> None:
    """ModelFileError when a file of ``file_size`` bytes cannot hold the data its header describes."""
    needed = PREFIX_BYTES + header_bytes + header.data_bytes
    if file_size < needed:
        raise ModelFileError(
            location,
            f"truncated: the safetensors header describes {needed} bytes, the file has {file_size}",
        )
