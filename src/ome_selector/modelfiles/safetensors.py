"""The safetensors header: its length prefix, its JSON, and the parameters it describes (pure, no I/O).

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON, then the tensor data. The JSON
maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the end of
the header); an optional ``__metadata__`` entry maps strings to strings. Only the prefix and the JSON are ever
needed here: the weights are never read.
"""

from __future__ import annotations

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
    "PREFIX_BYTES",
    "SCALE_NAMES",
    "SCALE_SUFFIXES",
    "Header",
    "QuantAwareCounting",
    "check_file_size",
    "check_header_fits",
    "count_parameters",
    "header_length",
    "is_scale",
    "packing_factor",
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

#: The last dot-separated part of a scale or zero-point tensor's name, exactly (SPEC §10): not a parameter
#: in a quantized checkpoint. ``qweight`` (GPTQ/AWQ's packed weight) and gpt-oss's ``*_blocks`` are weights.
SCALE_NAMES: Final = frozenset(
    {
        "weight_scale",
        "weight_scale_2",
        "weight_scale_inv",
        "input_scale",
        "k_scale",
        "v_scale",
        "kv_scale",
        "kv_cache_scaling_factor",
        "weight_zero_point",
        "scales",
        "zeros",
        "qzeros",
        "g_idx",
    }
)
#: ...or how that part ends (gpt-oss's ``gate_up_proj_scales``); each starts with ``_``, so ``scaled_weight``
#: is a weight.
SCALE_SUFFIXES: Final = (
    "_scale",
    "_scales",
    "_scale_2",
    "_scale_inv",
    "_input_scale",
    "_weight_scale",
    "_weight_scale_2",
    "_weight_scale_inv",
    "_weight_zero_point",
    "_kv_scale",
    "_kv_cache_scaling_factor",
)
#: What matching one header's packed tensor names against the exclusion patterns may cost (SPEC §10; the
#: "How an exclusion matches" choice): real checkpoints need a few thousand steps.
MAX_EXCLUSION_STEPS: Final = 10_000_000

#: Distinct last parts of names remembered by one count (real checkpoints have a few dozen).
_MAX_REMEMBERED = 4096
_FP4_ALGORITHMS = frozenset({"nvfp4", "mxfp4", "fp4"})
_BYTE_DTYPES = frozenset({"U8", "I8", "UINT8", "INT8"})
_INT4_FACTORS = {
    **dict.fromkeys(("I32", "U32", "INT32", "UINT32"), 8),
    **dict.fromkeys(("I16", "U16", "INT16", "UINT16"), 4),
    **dict.fromkeys(_BYTE_DTYPES, 2),
}


def is_scale(name: str) -> bool:
    """Whether ``name`` is a scale or zero-point tensor's (SPEC §10): its last dot-separated part is one of
    :data:`SCALE_NAMES` or ends in one of :data:`SCALE_SUFFIXES`."""
    last = name.rpartition(".")[2]
    return last in SCALE_NAMES or last.endswith(SCALE_SUFFIXES)


def packing_factor(algorithm: str, dtype: str) -> int:
    """The logical parameters one stored element of ``dtype`` holds under ``algorithm`` (SPEC §10, OME's
    packing factor): ``nvfp4``/``mxfp4``/``fp4`` in a byte type 2; an algorithm containing ``int4`` or ``w4a``
    8 in a 32-bit, 4 in a 16-bit and 2 in a byte type; 1 otherwise (FP8 and compressed-tensors included)."""
    name = algorithm.strip().lower()
    kind = dtype.strip().upper()
    if name in _FP4_ALGORITHMS:
        return 2 if kind in _BYTE_DTYPES else 1
    if "int4" in name or "w4a" in name:
        return _INT4_FACTORS.get(kind, 1)
    return 1


def _piece_matches(segments: Sequence[str], text: str, at_start: bool, at_end: bool) -> bool:
    """Whether a dot-free glob piece (its literal ``segments`` between ``*``, each ``*`` one or more
    characters) matches ``text`` (a dot-free name part) in full, at its start, at its end or anywhere.

    Each literal is placed as far left as it can go (leaving the most room for the rest), which is exact for
    a wildcard that matches any run of at least one character: only ``str`` searches, linear in ``text``."""
    first, last = segments[0], segments[-1]
    if len(segments) == 1:
        if at_start and at_end:
            return text == first
        if at_start:
            return text.startswith(first)
        return text.endswith(first) if at_end else first in text
    if at_start:
        if not text.startswith(first):
            return False
        position = len(first)
    else:
        found = text.find(first)
        if found < 0:
            return False
        position = found + len(first)
    for literal in segments[1:-1]:
        found = text.find(literal, position + 1)
        if found < 0:
            return False
        position = found + len(literal)
    if at_end:
        return len(text) - len(last) >= position + 1 and text.endswith(last)
    return text.find(last, position + 1) >= 0


class _Glob:
    """An exclusion pattern with ``*``: each ``*`` matches one or more characters other than ``.`` (OME's
    ``[^.]+``), the pattern anywhere in the name. A ``.`` of the pattern can only meet a ``.`` of the name, so
    the pattern's dot-separated pieces meet consecutive parts of the name: the first a part's end, the last
    a part's start, those between whole parts (one piece: anywhere in one part)."""

    __slots__ = ("literals", "pieces", "weight")

    def __init__(self, pattern: str) -> None:
        self.pieces = tuple(tuple(piece.split("*")) for piece in pattern.split("."))
        #: What trying it at one part of a name costs: one search per literal.
        self.weight = sum(len(piece) for piece in self.pieces)
        #: The text between its stars: a name it matches holds each (a quick test, at C speed, first).
        self.literals = tuple(literal for literal in pattern.split("*") if literal)

    def matches(self, name: str, parts: Sequence[str]) -> bool:
        if not all(literal in name for literal in self.literals):
            return False
        pieces = self.pieces
        if len(pieces) == 1:
            return any(_piece_matches(pieces[0], part, False, False) for part in parts)
        span = len(pieces) - 1
        for start in range(len(parts) - span):
            if (
                _piece_matches(pieces[0], parts[start], False, True)
                and all(
                    _piece_matches(pieces[offset], parts[start + offset], True, True)
                    for offset in range(1, span)
                )
                and _piece_matches(pieces[span], parts[start + span], True, False)
            ):
                return True
        return False


class QuantAwareCounting:
    """SPEC §10's count for a quantized checkpoint (OME's ``CountTensorParams``), given its algorithm and its
    exclusion patterns: a scale or zero point counts 0; a tensor an exclusion matches counts its elements;
    any other its elements times :func:`packing_factor`.

    An exclusion with ``*`` is a glob (:class:`_Glob`), any other a substring of the name. Only a tensor whose
    factor is above 1 is matched at all: with factor 1 both ways count alike.
    """

    __slots__ = ("_factors", "_globs", "_scales", "_substrings", "_weight", "algorithm", "packs")

    def __init__(self, algorithm: str = "", exclusions: Iterable[str] = ()) -> None:
        self.algorithm = algorithm
        #: Whether some dtype packs several values under this algorithm (else every factor is 1).
        name = algorithm.strip().lower()
        self.packs = name in _FP4_ALGORITHMS or "int4" in name or "w4a" in name
        #: :func:`is_scale` by a name's last part (few distinct ones: ``weight``, ``bias``, ...).
        self._scales: dict[str, bool] = {}
        patterns = dict.fromkeys(pattern for pattern in exclusions if pattern)
        self._substrings = tuple(pattern for pattern in patterns if "*" not in pattern)
        self._globs = tuple(_Glob(pattern) for pattern in patterns if "*" in pattern)
        self._weight = sum(glob.weight for glob in self._globs)
        self._factors: dict[str, int] = {}

    @property
    def scale_parts(self) -> dict[str, bool]:
        """The last parts whose :meth:`is_scale_part` is known."""
        return self._scales

    def is_scale_part(self, last: str) -> bool:
        """:func:`is_scale` of a name whose last part is ``last``, remembered (at most
        :data:`_MAX_REMEMBERED` parts: real checkpoints have a few dozen, ``weight``, ``bias``, ...)."""
        scale = self._scales.get(last)
        if scale is None:
            scale = last in SCALE_NAMES or last.endswith(SCALE_SUFFIXES)
            if len(self._scales) < _MAX_REMEMBERED:
                self._scales[last] = scale
        return scale

    def factor(self, dtype: str) -> int:
        """:func:`packing_factor` of this algorithm and ``dtype`` (worked out once per dtype)."""
        factor = self._factors.get(dtype)
        if factor is None:
            factor = self._factors[dtype] = packing_factor(self.algorithm, dtype)
        return factor

    def steps(self, name: str) -> int:
        """What matching ``name`` costs, counted before it is done: one step per substring pattern and per
        started 64 characters of the name, and per part of the name each glob's literals."""
        substrings = len(self._substrings) * (1 + len(name) // 64)
        return substrings + (name.count(".") + 1) * self._weight if self._globs else substrings

    def excludes(self, name: str) -> bool:
        """Whether an exclusion pattern matches ``name``."""
        if any(pattern in name for pattern in self._substrings):
            return True
        if not self._globs:
            return False
        parts = name.split(".")
        return any(glob.matches(name, parts) for glob in self._globs)

    @property
    def has_exclusions(self) -> bool:
        return bool(self._substrings or self._globs)


@dataclass(frozen=True, slots=True)
class Header:
    """What one header says, and all that is kept of it (SPEC §10.1 "Streaming": not its tensors)."""

    #: Tensors (``__metadata__`` is not a tensor).
    tensors: int
    #: Their parameters, scalars with an empty shape skipped (SPEC §10).
    parameters: int
    #: The bytes of tensor data described: the file must hold at least that much after the header.
    data_bytes: int
    #: Under a quantized count, the tensors named ``*.weight_packed`` (compressed-tensors' packed INT4, which
    #: OME counts with factor 1: SPEC §9).
    packed: int = 0


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


_PACKED_WEIGHT = "weight_packed"
_NO_SHAPE = "has no shape (a list of integers >= 0)"
_EXCLUSION_REASON = (
    f"{_INVALID}: matching its packed tensor names against the quantization exclusions takes more than "
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

    With ``counting`` (a quantized checkpoint), parameters are counted as OME counts them (SPEC §10). The
    running total is compared with :data:`MAX_PARAMETERS` after each tensor.
    """
    document = _document(location, data)
    tensors = parameters = data_bytes = steps = packed = 0
    # Looked up once: the per-tensor work of a quantized count is a few dictionary lookups (SPEC §10).
    scales, packs = (counting.scale_parts, counting.packs) if counting is not None else ({}, False)
    for name, entry in document.items():
        if name == _METADATA_KEY:
            continue
        count, end = _tensor(location, name, entry)
        if counting is not None and count:
            last = name.rpartition(".")[2]
            if last == _PACKED_WEIGHT:
                packed += 1
            scale = scales.get(last)
            if scale or (scale is None and counting.is_scale_part(last)):
                count = 0
            elif packs and (factor := counting.factor(entry["dtype"])) > 1:
                if counting.has_exclusions:
                    steps += counting.steps(name)
                    if steps > MAX_EXCLUSION_STEPS:
                        raise ModelFileError(location, _EXCLUSION_REASON)
                    if not counting.excludes(name):
                        count *= factor
                else:
                    count *= factor
        tensors += 1
        parameters += count
        data_bytes = max(data_bytes, end)
        if parameters > MAX_PARAMETERS:
            raise ModelFileError(location, parameters_reason())
    return Header(tensors=tensors, parameters=parameters, data_bytes=data_bytes, packed=packed)


def check_file_size(location: str, header_bytes: int, header: Header, file_size: int) -> None:
    """ModelFileError when a file of ``file_size`` bytes cannot hold the data its header describes."""
    needed = PREFIX_BYTES + header_bytes + header.data_bytes
    if file_size < needed:
        raise ModelFileError(
            location,
            f"truncated: the safetensors header describes {needed} bytes, the file has {file_size}",
        )
