"""The safetensors header parser and parameter counting (pure): exact counts, every malformed header named."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.model_folders import Tensors, bert_minilm_tensors, safetensors_header
from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.safetensors import (
    MAX_HEADER_BYTES,
    Header,
    check_file_size,
    count_parameters,
    header_length,
    parse_header,
)

FILE = "/models/m/model.safetensors"


def _parse(tensors: Tensors, metadata: dict[str, str] | None = None) -> Header:
    head, _ = safetensors_header(tensors, metadata)
    return parse_header(FILE, head[8:])


def test_minilm_header_counts_every_tensor_and_buffer() -> None:
    header = _parse(bert_minilm_tensors(), {"format": "pt"})
    assert header.tensors == 104  # __metadata__ is not a tensor
    assert header.parameters == 22_713_728  # 22,713,216 weights + the 512 position_ids
    assert header.data_bytes == 22_713_216 * 4 + 512 * 8


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        ([], 0),
        ([[]], 0),  # a scalar (empty shape) is skipped, as OME counts
        ([[], [3]], 3),
        ([[0]], 0),  # an empty tensor has no parameters
        ([[2, 0, 5]], 0),
        ([[4096, 4096], [4096]], 4096 * 4096 + 4096),
        ([[1, 1, 1, 7]], 7),
        ([[128256, 8192], [8192]], 128256 * 8192 + 8192),
    ],
)
def test_count_parameters(shapes: list[list[int]], expected: int) -> None:
    assert count_parameters(shapes) == expected


def test_scalars_are_skipped_in_headers_too() -> None:
    header = _parse({"step": ("I64", []), "w": ("F32", [3, 4])})
    assert header.tensors == 2
    assert header.parameters == 12


@pytest.mark.parametrize("length", [0, 1, 4096, MAX_HEADER_BYTES])
def test_header_length_within_the_limit(length: int) -> None:
    assert header_length(FILE, length.to_bytes(8, "little") + b"{}") == length


@pytest.mark.parametrize("length", [MAX_HEADER_BYTES + 1, 2**63, 2**64 - 1])
def test_header_length_over_the_limit_names_the_file(length: int) -> None:
    with pytest.raises(ModelFileError) as error:
        header_length(FILE, length.to_bytes(8, "little"))
    assert str(error.value) == (
        f"{FILE}: safetensors header length {length} bytes exceeds the limit of 10485760 bytes"
    )


@pytest.mark.parametrize("prefix", [b"", b"\x01", b"\x00" * 7])
def test_a_prefix_shorter_than_8_bytes_is_truncated(prefix: bytes) -> None:
    with pytest.raises(ModelFileError, match=r"^/models/m/model\.safetensors: truncated: .* 8-byte"):
        header_length(FILE, prefix)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}', "not JSON"),
        (b"", "not JSON"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b"[]", "not a JSON object"),
        (b'"text"', "not a JSON object"),
        (b'{"w": 3}', "tensor 'w' is not a JSON object"),
        (b'{"w": {"shape": [1], "data_offsets": [0, 4]}}', "tensor 'w' has no dtype string"),
        (b'{"w": {"dtype": "", "shape": [1], "data_offsets": [0, 4]}}', "tensor 'w' has no dtype string"),
        (b'{"w": {"dtype": "F32", "data_offsets": [0, 4]}}', "tensor 'w' has no shape"),
        (b'{"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}', "tensor 'w' has no shape"),
        (b'{"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}}', "tensor 'w' has no shape"),
        (b'{"w": {"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}}', "tensor 'w' has no shape"),
        (b'{"w": {"dtype": "F32", "shape": "1x4", "data_offsets": [0, 4]}}', "tensor 'w' has no shape"),
        (b'{"w": {"dtype": "F32", "shape": [1]}}', "tensor 'w' has no data_offsets"),
        (b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}', "tensor 'w' has no data_offsets"),
        (b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}', "tensor 'w' has no data_offsets"),
        (b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, -4]}}', "tensor 'w' has no data_offsets"),
    ],
)
def test_malformed_headers_name_the_file_and_the_fault(data: bytes, reason: str) -> None:
    with pytest.raises(ModelFileError) as error:
        parse_header(FILE, data)
    message = str(error.value)
    assert message.startswith(f"{FILE}: invalid safetensors header: ")
    assert reason in message
    assert "\n" not in message


def test_a_file_shorter_than_its_offsets_is_truncated() -> None:
    header = _parse({"w": ("F32", [10])})
    check_file_size(FILE, 64, header, 8 + 64 + 40)  # exactly enough
    with pytest.raises(ModelFileError) as error:
        check_file_size(FILE, 64, header, 8 + 64 + 39)
    assert str(error.value) == (
        f"{FILE}: truncated: the safetensors header describes 112 bytes, the file has 111"
    )


_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12).filter(
    lambda name: name != "__metadata__"
)
_shapes = st.lists(st.integers(min_value=0, max_value=20_000), max_size=3)  # under 10**15 in all
_dtypes = st.sampled_from(["F32", "BF16", "I64", "U8", "F8_E4M3"])


@given(st.dictionaries(_names, st.tuples(_dtypes, _shapes), max_size=40))
def test_count_is_the_sum_of_non_scalar_shape_products(tensors: dict[str, tuple[str, list[int]]]) -> None:
    header = _parse(tensors, {"format": "pt"})
    assert header.tensors == len(tensors)
    assert header.parameters == sum(math.prod(shape) for _, shape in tensors.values() if shape)


def _outcome(data: bytes) -> str:
    """``parsed N`` for a header of N parameters, else the error message."""
    try:
        return f"parsed {parse_header(FILE, data).parameters}"
    except ModelFileError as error:
        return str(error)


@given(st.binary(max_size=64))
def test_arbitrary_bytes_parse_or_fail_with_a_named_error(data: bytes) -> None:
    outcome = _outcome(data)
    assert outcome.startswith((f"{FILE}: invalid safetensors header", "parsed ")), outcome


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5), st.lists, max_leaves=6)


@given(_json | st.dictionaries(st.sampled_from(["dtype", "shape", "data_offsets", "other"]), _json))
def test_arbitrary_json_entries_parse_or_fail_with_a_named_error(entry: object) -> None:
    outcome = _outcome(json.dumps({"t": entry}).encode())
    assert outcome.startswith(
        (
            f"{FILE}: invalid safetensors header: tensor 't' ",
            f"{FILE}: invalid safetensors header: nested deeper than 3 levels",
            "parsed ",
        )
    ), outcome
    assert "\n" not in outcome
