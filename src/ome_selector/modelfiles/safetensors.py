"""The safetensors header: its length prefix, its JSON, and the parameters it describes (pure, no I/O).

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON, then the tensor data. The JSON
maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the end of
the header); an optional ``__metadata__`` entry maps strings to strings. Only the prefix and the JSON are ever
needed here: the weights are never read.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.limits import MAX_PARAMETERS, parameters_reason, parse_json, quoted

__all__ = [
    "MAX_DIMENSION",
    "MAX_EXCLUSION_STEPS",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_DEPTH",
    "MAX_HEADER_VALUES",
    "MAX_RANK",
    "MAX_TENSORS",
    "PACKED_DTYPE",
    "PREFIX_BYTES",
    "SCALE_SUFFIXES",
    "Header",
    "QuantAwareCounting",
    "check_file_size",
    "check_header_fits",
    "count_parameters",
    "header_length",
    "parse_header",
]

#: The header length prefix: an unsigned 64-bit little-endian integer.
PREFIX_BYTES = 8
#: A longer header is refused without being read: OME's own limit, 10 MiB (SPEC §10.1; real: 1.25 MB).
MAX_HEADER_BYTES = 10_485_760
#: JSON values in one header, counted before parsing (an upper bound; real: about 78,000).
MAX_HEADER_VALUES = 1_000_000
#: The header object, a tensor entry, its shape list.
MAX_HEADER_DEPTH = 3
#: Tensors in one header, ``__metadata__`` not counted (real: 9,767).
MAX_TENSORS = 100_000
#: Dimensions of one shape (real: 5), and the largest one dimension (2**40; real: 262,144).
MAX_RANK = 8
MAX_DIMENSION = 2**40

_METADATA_KEY = "__metadata__"
_INVALID = "invalid safetensors header"

#: In an NVFP4 or MXFP4 checkpoint a ``U8`` tensor packs two 4-bit values per byte (SPEC §10).
PACKED_DTYPE: Final = "U8"
#: Block scales stored beside 4-bit weights are not parameters: ModelOpt's ``weight_scale``/``input_scale``
#: end in ``_scale``, gpt-oss's ``*_blocks`` come with ``*_scales`` (a choice where SPEC §10 is silent: OME's
#: count for gpt-oss-120b, about 117B, leaves them out).
SCALE_SUFFIXES: Final = ("_scale", "_scales")
#: Name parts looked at to match one header's ``U8`` tensor names against the exclusion lists. Real headers
#: need at most a few hundred thousand (100,000 tensors of 10 parts, two list shapes); the limit keeps a
#: hostile header with hostile lists as cheap as the rest of the parse.
MAX_EXCLUSION_STEPS: Final = 10_000_000


class QuantAwareCounting:
    """SPEC §10's quantization-aware count, for a checkpoint whose learned quantization is ``nvfp4`` or
    ``mxfp4``: a ``U8`` tensor counts twice its elements unless its name contains a module of the exclusion
    lists, and a tensor whose name ends in ``_scale`` or ``_scales`` does not count.

    A name contains a module when the module's dot-separated parts are consecutive parts of the name
    (``lm_head`` in ``lm_head.weight`` and ``model.lm_head.weight``; ``mlp.gate`` in ``mlp.gate.weight`` but
    not in ``mlp.gate_up_proj.weight``): sets of part tuples, so a name costs its parts times the list shapes,
    not the lists' length.
    """

    __slots__ = ("_by_parts", "_length_sums", "_lengths")

    def __init__(self, exclusions: Iterable[str] = ()) -> None:
        by_parts: dict[int, set[object]] = {}
        for module in exclusions:
            parts = tuple(module.split("."))
            # One part is compared with the name's parts as a string, more as a tuple of consecutive parts.
            by_parts.setdefault(len(parts), set()).add(parts if len(parts) > 1 else parts[0])
        self._by_parts = sorted(by_parts.items(), key=lambda item: item[0])
        # The lengths and their running sums: a name's cost is found by bisection, whatever the lists hold.
        self._lengths = [length for length, _ in self._by_parts]
        self._length_sums = [0, *itertools.accumulate(self._lengths)]

    def steps(self, parts: int) -> int:
        """What matching a name of ``parts`` parts costs (each list shape up to ``parts`` parts, each a pass
        over the name), counted before it is done."""
        return parts * self._length_sums[bisect.bisect_right(self._lengths, parts)]

    def excludes(self, parts: Sequence[str]) -> bool:
        """Whether the name of ``parts`` contains a module of the exclusion lists."""
        for length, modules in self._by_parts:
            if length > len(parts):
                break
            if length == 1:
                if not modules.isdisjoint(parts):
                    return True
            elif not modules.isdisjoint(zip(*(parts[start:] for start in range(length)), strict=False)):
                return True
        return False

    @property
    def has_exclusions(self) -> bool:
        return bool(self._by_parts)


@dataclass(frozen=True, slots=True)
class Header:
    """What one header says, and all that is kept of it (SPEC §10.1 "Streaming": not its tensors)."""

    #: Tensors (``__metadata__`` is not a tensor).
    tensors: int
    #: Their parameters, scalars with an empty shape skipped (SPEC §10).
    parameters: int
    #: The bytes of tensor data described: the file must hold at least that much after the header.
    data_bytes: int


def count_parameters(shapes: Iterable[Sequence[int]]) -> int:
    """The sum of the products of ``shapes``, skipping empty shapes (scalars), as OME counts."""
    total = 0
    for shape in shapes:
        if shape:
            product = 1
            for size in shape:
                product *= size
            total += product
    return total


def header_length(location: str, prefix: bytes | bytearray) -> int:
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


def check_header_fits(location: str, length: int, file_size: int) -> None:
    """ModelFileError when a file of ``file_size`` bytes cannot hold a header of ``length`` bytes (checked
    from the size, before the header is read)."""
    available = max(file_size - PREFIX_BYTES, 0)
    if length > available:
        raise ModelFileError(
            location, f"truncated: the safetensors header is {length} bytes, the file has {available} of them"
        )


def _natural(value: object) -> bool:
    """A JSON integer >= 0 (JSON's true/false are not numbers here; the parser makes exact ints)."""
    return type(value) is int and value >= 0


def _children(value: object) -> Iterable[object]:
    """The values in a parsed container (the parser makes exact dicts and lists), none in anything else."""
    if type(value) is dict:
        return value.values()
    if type(value) is list:
        return value
    return ()


def _deeper_than_three(document: dict[str, Any]) -> bool:
    """Whether a container sits inside a container inside an entry of ``document``: :data:`MAX_HEADER_DEPTH`
    spelled out, one pass, each value looked at once (a generic walk costs seconds at 1,000,000 values)."""
    return any(
        type(grandchild) is dict or type(grandchild) is list
        for entry in document.values()
        for child in _children(entry)
        for grandchild in _children(child)
    )


def _invalid(location: str, name: str, what: str) -> ModelFileError:
    return ModelFileError(location, f"{_INVALID}: tensor {quoted(name)} {what}")


_NO_SHAPE = "has no shape (a list of integers >= 0)"
_EXCLUSION_REASON = (
    f"{_INVALID}: matching its U8 tensor names against the quantization exclusion lists takes more than "
    f"{MAX_EXCLUSION_STEPS} steps"
)


def _tensor(location: str, name: str, entry: object) -> tuple[int, int]:
    """A tensor entry's parameters and data end; ModelFileError when the entry is not a valid one."""
    if type(entry) is not dict:
        raise _invalid(location, name, "is not a JSON object")
    dtype = entry.get("dtype")
    if type(dtype) is not str or not dtype:
        raise _invalid(location, name, "has no dtype string")
    shape = entry.get("shape")
    if type(shape) is not list:
        raise _invalid(location, name, _NO_SHAPE)
    # Rank and dimension come before any arithmetic: at most 8 products of numbers <= 2**40.
    if len(shape) > MAX_RANK:
        raise _invalid(location, name, f"has {len(shape)} dimensions, more than {MAX_RANK}")
    for size in shape:
        if type(size) is not int or size < 0:
            raise _invalid(location, name, _NO_SHAPE)
        if size > MAX_DIMENSION:
            raise _invalid(location, name, f"has a dimension over {MAX_DIMENSION}")
    offsets = entry.get("data_offsets")
    if (
        type(offsets) is not list
        or len(offsets) != 2
        or not _natural(offsets[0])
        or not _natural(offsets[1])
        or offsets[0] > offsets[1]
    ):
        raise _invalid(location, name, "has no data_offsets [begin, end] with 0 <= begin <= end")
    return count_parameters((shape,)), offsets[1]


def _document(location: str, data: bytes | bytearray) -> dict[str, Any]:
    """The header's JSON object, every check of SPEC §10.1 that needs no tensor done."""
    document = parse_json(
        location,
        data,
        invalid=_INVALID,
        max_values=MAX_HEADER_VALUES,
        max_depth=MAX_HEADER_DEPTH,
        syntax=lambda error: f"not JSON ({error.msg})",
    )
    if not isinstance(document, dict):
        raise ModelFileError(location, f"{_INVALID}: not a JSON object")
    if _deeper_than_three(document):
        raise ModelFileError(location, f"{_INVALID}: nested deeper than {MAX_HEADER_DEPTH} levels")
    metadata = document.get(_METADATA_KEY, {})
    if not isinstance(metadata, dict) or not all(isinstance(value, str) for value in metadata.values()):
        raise ModelFileError(location, f"{_INVALID}: {_METADATA_KEY} is not an object of strings")
    if len(document) - (_METADATA_KEY in document) > MAX_TENSORS:
        raise ModelFileError(location, f"{_INVALID}: more than {MAX_TENSORS} tensors")
    return document


def parse_header(
    location: str, data: bytes | bytearray, counting: QuantAwareCounting | None = None
) -> Header:
    """The header in ``data`` (the JSON after the length prefix); ModelFileError naming ``location``.

    With ``counting``, parameters are counted quantization-aware (SPEC §10). The running total is compared
    with :data:`MAX_PARAMETERS` after each tensor.
    """
    document = _document(location, data)
    tensors = parameters = data_bytes = steps = 0
    for name, entry in document.items():
        if name == _METADATA_KEY:
            continue
        count, end = _tensor(location, name, entry)
        if counting is not None and count:
            if name.endswith(SCALE_SUFFIXES):
                count = 0
            elif entry["dtype"] == PACKED_DTYPE:
                if counting.has_exclusions:
                    parts = name.split(".")
                    steps += counting.steps(len(parts))
                    if steps > MAX_EXCLUSION_STEPS:
                        raise ModelFileError(location, _EXCLUSION_REASON)
                    count *= 1 if counting.excludes(parts) else 2
                else:
                    count *= 2
        tensors += 1
        parameters += count
        data_bytes = max(data_bytes, end)
        if parameters > MAX_PARAMETERS:
            raise ModelFileError(location, parameters_reason())
    return Header(tensors=tensors, parameters=parameters, data_bytes=data_bytes)


def check_file_size(location: str, header_bytes: int, header: Header, file_size: int) -> None:
    """ModelFileError when a file of ``file_size`` bytes cannot hold the data its header describes."""
    needed = PREFIX_BYTES + header_bytes + header.data_bytes
    if file_size < needed:
        raise ModelFileError(
            location,
            f"truncated: the safetensors header describes {needed} bytes, the file has {file_size}",
        )
