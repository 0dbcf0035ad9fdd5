"""SPEC §10.1-§10.3: every limit on reading a model, with its exact reason; files that are not regular files;
the grammars of learned values; and hostile headers cost bounded work (steps counted, never timed)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.model_folders import LLAMA_3_2_1B, write_json, write_safetensors
from ome_selector.api.jsonbounds import nesting_depth
from ome_selector.modelfiles import ModelFileError, NameVersion, inspect_model, metadata_document
from ome_selector.modelfiles import safetensors as safetensors_module
from ome_selector.modelfiles.config import transformers_config
from ome_selector.modelfiles.learn import metadata_from_document, shard_name_problem
from ome_selector.modelfiles.limits import ReadBudget, json_object, quoted
from ome_selector.modelfiles.local import LocalModelFolder
from ome_selector.modelfiles.safetensors import MAX_DIMENSION, parse_header

FILE = "/m/model.safetensors"


def _prefixed(header: bytes) -> bytes:
    return len(header).to_bytes(8, "little") + header


def _write_header(path: Path, header: bytes, data_bytes: int = 0) -> None:
    """A safetensors file with exactly ``header`` (the data after it left sparse)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        stream.write(_prefixed(header))
        stream.truncate(8 + len(header) + data_bytes)


def _tensor(shape: Any, end: int = 0) -> dict[str, Any]:
    return {"dtype": "U8", "shape": shape, "data_offsets": [0, end]}


def _header(tensors: dict[str, Any], metadata: Any = None) -> bytes:
    document = dict(tensors)
    if metadata is not None:
        document = {"__metadata__": metadata, **document}
    return json.dumps(document, separators=(",", ":")).encode()


def _sparse(path: Path, size: int, start: bytes = b"") -> None:
    with path.open("wb") as stream:
        stream.write(start)
        stream.truncate(size)


# --- every reason of SPEC §10.1, exactly, at the file it names ---------------------------------------------

_INVALID = "invalid safetensors header: "
_LONG_NUMBER = b'{"w":{"dtype":"U8","shape":[' + b"9" * 5000 + b'],"data_offsets":[0,0]}}'
_MANY_VALUES = b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[' + b"0," * 1_000_000 + b"0]}}"
_MANY_TENSORS = (
    b"{" + b",".join(b'"t%d":{}' % index for index in range(100_001)) + b"}"  # counted before any entry
)


@pytest.mark.parametrize(
    ("make", "file", "reason"),
    [
        (lambda m: _sparse(m / "model.safetensors", 100, (10_485_761).to_bytes(8, "little")),
         "model.safetensors", "safetensors header length 10485761 bytes exceeds the limit of 10485760 bytes"),
        (lambda m: _sparse(m / "model.safetensors", 1000, (5000).to_bytes(8, "little")),
         "model.safetensors", "truncated: the safetensors header is 5000 bytes, the file has 992 of them"),
        (lambda m: _write_header(m / "model.safetensors", _MANY_VALUES),
         "model.safetensors", _INVALID + "more than 1000000 JSON values"),
        (lambda m: _write_header(m / "model.safetensors", _header({"w": _tensor([[1]])})),
         "model.safetensors", _INVALID + "nested deeper than 3 levels"),
        (lambda m: _write_header(m / "model.safetensors", b'{"w":' * 100_000 + b"1" + b"}" * 100_000),
         "model.safetensors", _INVALID + "nested deeper than 3 levels"),
        (lambda m: _write_header(m / "model.safetensors", _header({"w": _tensor([1])}, {"format": 1})),
         "model.safetensors", _INVALID + "__metadata__ is not an object of strings"),
        (lambda m: _write_header(m / "model.safetensors", _header({"w": _tensor([1])}, ["pt"])),
         "model.safetensors", _INVALID + "__metadata__ is not an object of strings"),
        (lambda m: _write_header(m / "model.safetensors", _MANY_TENSORS),
         "model.safetensors", _INVALID + "more than 100000 tensors"),
        (lambda m: _write_header(m / "model.safetensors", _header({"w": _tensor([1] * 9)})),
         "model.safetensors", _INVALID + "tensor 'w' has 9 dimensions, more than 8"),
        (lambda m: _write_header(m / "model.safetensors", _header({"w": _tensor([2**40 + 1])})),
         "model.safetensors", _INVALID + "tensor 'w' has a dimension over 1099511627776"),
        (lambda m: _write_header(m / "model.safetensors", _header({"w": _tensor([1.0])})),
         "model.safetensors", _INVALID + "tensor 'w' has no shape (a list of integers >= 0)"),
        (lambda m: _write_header(m / "model.safetensors", _header({"w": _tensor(["NaN"])})),
         "model.safetensors", _INVALID + "tensor 'w' has no shape (a list of integers >= 0)"),
        (lambda m: _write_header(m / "model.safetensors", b'{"w":{"dtype":"U8","shape":[NaN]}}'),
         "model.safetensors", _INVALID + "tensor 'w' has no shape (a list of integers >= 0)"),
        (lambda m: _write_header(m / "model.safetensors", _LONG_NUMBER),
         "model.safetensors", _INVALID + "a number is too long to read"),
        (lambda m: (m / "config.json").write_text('{"max_position_embeddings": ' + "9" * 5000 + "}"),
         "config.json", "invalid JSON: a number is too long to read"),
        (lambda m: _write_header(m / "model.safetensors", _header({"w": _tensor([2**40, 910])})),
         "model.safetensors", "more than 1000000000000000 parameters: not a real model"),
        (lambda m: _sparse(m / "config.json", 4_000_001), "config.json",
         "larger than 4000000 bytes: not model metadata"),
        (lambda m: _sparse(m / "model.safetensors.index.json", 32_000_001), "model.safetensors.index.json",
         "larger than 32000000 bytes: not model metadata"),
        (lambda m: (m / "config.json").write_text("[" + "0," * 500_000 + "0]"), "config.json",
         "invalid JSON: more than 500000 JSON values"),
        (lambda m: (m / "config.json").write_text("[" * 101 + "]" * 101), "config.json",
         "invalid JSON: nested deeper than 100 levels"),
        (lambda m: write_json(m / "model.safetensors.index.json",
                              {"weight_map": {f"t{i}": f"s{i}.safetensors" for i in range(1025)}}),
         "model.safetensors.index.json", "weight_map names 1025 shards, more than the limit of 1024"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "a/../../x"}}),
         "model.safetensors.index.json", "weight_map names 'a/../../x', outside the model's folder"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "a\\b"}}),
         "model.safetensors.index.json", "weight_map names 'a\\b', outside the model's folder"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "x\x1b[2J\u202e"}}),
         "model.safetensors.index.json", "weight_map names 'x\\x1b[2J\\u202e', not a plain file name"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "a//b"}}),
         "model.safetensors.index.json", "weight_map names 'a//b', not a plain file name"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "z" * 256}}),
         "model.safetensors.index.json", f"weight_map names '{'z' * 127}…', not a plain file name"),
    ],
)  # fmt: skip
def test_every_limit_has_its_reason_at_the_file(
    tmp_path: Path, make: Callable[[Path], object], file: str, reason: str
) -> None:
    write_json(tmp_path / "config.json", LLAMA_3_2_1B)
    make(tmp_path)
    with pytest.raises(ModelFileError) as error:
        inspect_model(str(tmp_path))
    assert str(error.value) == f"{tmp_path / file}: {reason}"


def test_the_parameter_total_is_refused_at_the_file_that_passes_it(tmp_path: Path) -> None:
    # Two shards of 6 x 10**14: each is a possible file, the second passes 10**15.
    shards = {"a": "s1.safetensors", "b": "s2.safetensors"}
    write_json(tmp_path / "model.safetensors.index.json", {"weight_map": shards})
    for tensor, shard in shards.items():
        _write_header(tmp_path / shard, _header({tensor: _tensor([600_000, 10**9])}))
    with pytest.raises(ModelFileError) as error:
        inspect_model(str(tmp_path))
    assert (
        str(error.value)
        == f"{tmp_path / 's2.safetensors'}: more than 1000000000000000 parameters: not a real model"
    )


def test_a_header_longer_than_the_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    _sparse(tmp_path / "model.safetensors", 1000, (5000).to_bytes(8, "little"))
    folder = LocalModelFolder(tmp_path)
    with pytest.raises(ModelFileError, match="the file has 992 of them"):
        folder.read_headers(["model.safetensors"])
    assert folder.bytes_read == 8  # the length only


def test_an_oversized_metadata_file_is_refused_unread(tmp_path: Path) -> None:
    _sparse(tmp_path / "config.json", 4_000_001)
    folder = LocalModelFolder(tmp_path)
    with pytest.raises(ModelFileError, match="larger than 4000000 bytes"):
        folder.read_json("config.json", 4_000_000)
    assert folder.bytes_read == 0


@pytest.mark.parametrize(
    ("spend", "reason"),
    [
        (lambda budget: budget.received(128_000_001), "more than 128000000 bytes read for one model"),
        (lambda budget: budget.allow(128_000_001), "more than 128000000 bytes read for one model"),
        (
            lambda budget: [budget.request() for _ in range(4201)],
            "more than 4200 HTTP requests for one model",
        ),
    ],
)
def test_the_budget_of_one_model_names_its_source(spend: Callable[[ReadBudget], object], reason: str) -> None:
    budget = ReadBudget("hf://org/model")
    with pytest.raises(ModelFileError) as error:
        spend(budget)
    assert str(error.value) == f"hf://org/model: {reason}"


def test_the_deadline_counts_from_the_first_read() -> None:
    now = [1000.0]
    budget = ReadBudget("hf://org/model", clock=lambda: now[0])
    now[0] += 500  # before the first read: nothing counts
    assert budget.remaining() == 120.0
    now[0] += 119.5
    assert budget.remaining() == pytest.approx(0.5)
    now[0] += 0.5
    with pytest.raises(ModelFileError) as error:
        budget.request()
    assert str(error.value) == "hf://org/model: not read within 120 s"


def test_the_byte_budget_covers_a_local_folder(tmp_path: Path) -> None:
    write_json(tmp_path / "config.json", LLAMA_3_2_1B)
    size = (tmp_path / "config.json").stat().st_size
    folder = LocalModelFolder(tmp_path, "the-model", ReadBudget("the-model", max_bytes=size - 1))
    with pytest.raises(ModelFileError) as error:
        folder.read_json("config.json", 4_000_000)
    assert str(error.value) == f"the-model: more than {size - 1} bytes read for one model"


def test_names_in_reasons_are_quoted_escaped_and_cut() -> None:
    assert quoted("w") == "'w'"
    assert quoted("a\x1b[31mb\u202e") == "'a\\x1b[31mb\\u202e'"
    assert quoted("n" * 128) == f"'{'n' * 128}'"
    assert quoted("n" * 129) == f"'{'n' * 127}…'"
    bell = "\\x07"
    assert quoted("\x07" * 10_000_000) == "'" + bell * 31 + "\\x0…'"  # a few characters looked at


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("model-00001-of-00191.safetensors", None),
        ("sub/dir/x.safetensors", None),
        ("é" * 127, None),  # 254 bytes
        ("é" * 128, "not a plain file name"),  # 256 bytes in one part
        ("x" * 1024, "not a plain file name"),
        ("/".join(["x" * 200] * 6), "not a plain file name"),  # 1,205 characters
        ("", "not a plain file name"),
        ("./x", "not a plain file name"),
        ("x/", "not a plain file name"),
        ("a\u2028b", "not a plain file name"),
        ("a\u200bb", "not a plain file name"),  # Cf: zero width space
        ("a\tb", "not a plain file name"),
        ("../x", "outside the model's folder"),
        ("/etc/passwd", "outside the model's folder"),
        ("a/../../b", "outside the model's folder"),
        ("..\\x", "outside the model's folder"),
    ],
)
def test_shard_name_grammar(name: str, problem: str | None) -> None:
    assert shard_name_problem(name) == problem


# --- SPEC §10.2: files that are not regular files -----------------------------------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _loop(path: Path) -> None:
    path.symlink_to(path.name)


@pytest.mark.parametrize(
    ("make", "reason"),
    [(_fifo, "not a regular file"), (_loop, "cannot read: Too many levels of symbolic links")],
)
def test_a_fifo_or_a_symlink_loop_is_an_error_not_absent(
    tmp_path: Path, make: Callable[[Path], None], reason: str
) -> None:
    write_json(tmp_path / "config.json", LLAMA_3_2_1B)
    make(tmp_path / "model.safetensors")
    outcome: list[BaseException | object] = []
    # In a thread, so that a reader that blocked on the FIFO fails the test instead of hanging it.
    worker = threading.Thread(target=lambda: outcome.append(_outcome(tmp_path)), daemon=True)
    worker.start()
    worker.join(30)
    assert outcome, "the reader blocked"
    (error,) = outcome
    assert isinstance(error, ModelFileError)
    assert str(error) == f"{tmp_path / 'model.safetensors'}: {reason}"


def _outcome(folder: Path) -> BaseException | object:
    try:
        return inspect_model(str(folder))
    except ModelFileError as error:
        return error


def test_a_dangling_symlink_is_missing(tmp_path: Path) -> None:
    write_json(tmp_path / "config.json", LLAMA_3_2_1B)
    (tmp_path / "model.safetensors").symlink_to("nowhere.safetensors")
    metadata = inspect_model(str(tmp_path)).metadata
    assert (metadata.estimated, metadata.files) == (True, ())


def test_the_hugging_face_cache_layout_reads_through_its_symlinks(tmp_path: Path) -> None:
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "0123abc"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    write_json(blobs / "c0ffee", LLAMA_3_2_1B)
    write_safetensors(blobs / "beef", {"w": ("U8", [12])})
    (snapshot / "config.json").symlink_to("../../blobs/c0ffee")
    (snapshot / "model.safetensors").symlink_to("../../blobs/beef")
    metadata = inspect_model(str(snapshot)).metadata
    assert (metadata.parameter_count, metadata.architecture) == (12, "LlamaForCausalLM")


# --- a folder with weights and no config.json (SPEC §10 "Bounds") -----------------------------------------


@pytest.mark.parametrize("shards", [1, 3])
def test_weights_without_config_learn_the_count_and_format_only(tmp_path: Path, shards: int) -> None:
    if shards == 1:
        write_safetensors(tmp_path / "model.safetensors", {"w": ("BF16", [10, 10])})
    else:
        weight_map = {f"w{i}": f"s{i}.safetensors" for i in range(shards)}
        write_json(tmp_path / "model.safetensors.index.json", {"weight_map": weight_map})
        for tensor, shard in weight_map.items():
            write_safetensors(tmp_path / shard, {tensor: ("BF16", [10, 10])})
    document = metadata_document(inspect_model(str(tmp_path)).metadata)
    assert {key: value for key, value in document.items() if key != "files"} == {
        "source": str(tmp_path),
        "parameterCount": 100 * shards,
        "estimated": False,
        "quantAware": False,
        "modelParameterSize": str(100 * shards),
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelArchitecture": None,
        "modelFramework": None,
        "quantization": None,
        "maxTokens": None,
        "notes": [],
    }


# --- SPEC §10.3: learned values outside their grammar teach nothing ---------------------------------------


@pytest.mark.parametrize(
    ("config", "field", "learned"),
    [
        ({"architectures": ["Qwen2_5_VLForConditionalGeneration"]}, "architecture",
         "Qwen2_5_VLForConditionalGeneration"),
        ({"architectures": ["Evil\x1b[2J"]}, "architecture", None),
        ({"architectures": ["Llama\u202eXXX"]}, "architecture", None),
        ({"architectures": ["9Lives"]}, "architecture", None),
        ({"architectures": ["A" * 129]}, "architecture", None),
        ({"architectures": ["A" * 128]}, "architecture", "A" * 128),
        ({"transformers_version": "4.45.0.dev0"}, "transformers_version", "4.45.0.dev0"),
        ({"transformers_version": "4.45\n"}, "transformers_version", None),
        ({"transformers_version": "1" * 65}, "transformers_version", None),
        ({"transformers_version": "-1"}, "transformers_version", None),
        ({"max_position_embeddings": 2**31 - 1}, "max_tokens", 2**31 - 1),
        ({"max_position_embeddings": 2**31}, "max_tokens", None),
        ({"max_position_embeddings": 0}, "max_tokens", None),
        ({"max_position_embeddings": True}, "max_tokens", None),
    ],
)  # fmt: skip
def test_learned_values_have_grammars(config: dict[str, Any], field: str, learned: object) -> None:
    assert getattr(transformers_config(config), field) == learned


def test_a_value_outside_its_grammar_leaves_the_rest_learned(tmp_path: Path) -> None:
    write_json(tmp_path / "config.json", LLAMA_3_2_1B | {"architectures": ["X\x9b31m"]})
    write_safetensors(tmp_path / "model.safetensors", {"w": ("U8", [5])})
    metadata = inspect_model(str(tmp_path)).metadata
    assert (metadata.architecture, metadata.parameter_count, metadata.max_tokens) == (None, 5, 131072)
    assert metadata.framework == NameVersion("transformers", "4.45.0.dev0")


@pytest.mark.parametrize(
    "change",
    [
        {"modelArchitecture": "bad\x1b"},
        {"maxTokens": 2**31},
        {"maxTokens": "5"},
        {"parameterCount": 10**15 + 1},
        {"parameterCount": True},
        {"estimated": 1},
        {"quantization": "int8"},
        {"quantization": "NVFP4"},  # learned values are lower-case
        {"quantAware": None},
        {"quantAware": "true"},
        {"modelFormat": {"name": "gguf", "version": None}},
        {"modelFramework": {"name": "transformers", "version": "4\u202e"}},
        {"source": None},
    ],
)
def test_another_process_answer_is_checked_value_by_value(change: dict[str, Any]) -> None:
    good = {
        "source": "hf://a/b",
        "parameterCount": 8,
        "estimated": False,
        "quantAware": False,
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelArchitecture": "LlamaForCausalLM",
        "modelFramework": {"name": "transformers", "version": "4.45.0"},
        "quantization": "fp8",
        "maxTokens": 131072,
        "files": [],
    }
    assert metadata_from_document(good).architecture == "LlamaForCausalLM"
    # every quantization SPEC §10 (v5) learns is taken, and quantAware as sent
    for value in ("fbgemm_fp8", "nvfp4", "mxfp4", "compressed-tensors", "int4", "fp8", None):
        metadata = metadata_from_document(
            good | {"quantization": value, "quantAware": value in ("nvfp4", "mxfp4")}
        )
        assert (metadata.quantization, metadata.quant_aware) == (value, value in ("nvfp4", "mxfp4"))
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError: the parent says "something other"
        metadata_from_document(good | change)


# --- hostile headers: bounded work, counted in steps -------------------------------------------------------

_hostile_numbers = st.one_of(
    st.integers(min_value=0, max_value=2**40),
    st.integers(min_value=2**40, max_value=10**4000),
    st.integers(max_value=-1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=3),
)
_hostile_shapes = st.lists(_hostile_numbers, max_size=40) | st.lists(
    st.integers(min_value=2**30, max_value=2**40), min_size=1, max_size=12
)


class _Multiplications:
    """Counts the multiplications of the parameter count and the largest number multiplied."""

    def __init__(self) -> None:
        self.steps = 0
        self.largest = 0

    def count(self, shapes: Any) -> int:
        total = 0
        for shape in shapes:
            assert len(shape) <= 8, "a product of more than 8 dimensions was computed"
            product = 1
            for size in shape:
                self.steps += 1
                self.largest = max(self.largest, size)
                product *= size
            total += product if shape else 0
        return total


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_hostile_shapes, min_size=1, max_size=30))
def test_hostile_shapes_are_refused_before_any_arithmetic(shapes: list[list[Any]]) -> None:
    tensors = {f"t{index}": _tensor(shape) for index, shape in enumerate(shapes)}
    data = json.dumps(tensors, allow_nan=True).encode()
    counter = _Multiplications()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(safetensors_module, "count_parameters", counter.count)
        try:
            header = parse_header(FILE, data)
        except ModelFileError as error:
            message = str(error)
            assert message.startswith(f"{FILE}: "), message
            assert "\n" not in message
        else:
            assert header.parameters <= 10**15
    # At most 8 multiplications of numbers <= 2**40 per tensor, whatever the shapes.
    assert counter.steps <= 8 * len(shapes)
    assert counter.largest <= MAX_DIMENSION


def _json_outcome(data: bytes) -> dict[str, Any] | ModelFileError:
    try:
        return json_object("config.json", data)
    except ModelFileError as error:
        return error


_deep = st.integers(min_value=1, max_value=200_000).map(lambda depth: b"[" * depth + b"]" * depth)
_wide = st.integers(min_value=1, max_value=600_000).map(lambda count: b"[" + b"0," * count + b"0]")
_digits = st.integers(min_value=1, max_value=20_000).map(lambda digits: b'{"a":' + b"7" * digits + b"}")


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.one_of(_deep, _wide, _digits, st.binary(max_size=200)))
def test_hostile_metadata_files_fail_with_a_named_reason_and_bounded_nesting_work(data: bytes) -> None:
    document = _json_outcome(data)
    if isinstance(document, ModelFileError):
        assert str(document).startswith("config.json: invalid JSON: "), str(document)
        return
    # Parsed: within every limit, and the nesting check visited each container at most once.
    depth = nesting_depth(document, 101)
    assert depth.depth <= 100
    assert depth.steps <= data.count(b"[") + data.count(b"{")
