"""Reading model folders: sparse safetensors files with real headers, single and sharded, and every bad input.

Files are written with their real headers, then extended to the size the offsets imply without writing data
(sparse), so a 3B model costs a few kilobytes of disk.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.model_folders import (
    BERT_MINILM_CONFIG,
    LLAMA_3_2_1B,
    LLAMA_3_2_3B,
    QWEN2_5_7B,
    bert_minilm_tensors,
    decoder_tensors,
    write_json,
    write_safetensors,
    write_sharded,
)
from ome_selector.modelfiles import ModelFileError, NameVersion, WeightFile, inspect_model, metadata_document

SAFETENSORS = NameVersion("safetensors", "1.0.0")


def _bert(folder: Path) -> Path:
    write_safetensors(folder / "model.safetensors", bert_minilm_tensors(), {"format": "pt"})
    write_json(folder / "config.json", BERT_MINILM_CONFIG)
    return folder


def test_single_file_bert(tmp_path: Path) -> None:
    inspection = inspect_model(str(_bert(tmp_path)))
    metadata = inspection.metadata
    assert metadata.parameter_count == 22_713_728
    assert metadata.model_parameter_size == "22.71M"
    assert not metadata.estimated
    assert metadata.model_format == SAFETENSORS
    assert metadata.architecture == "BertModel"
    assert metadata.framework == NameVersion("transformers", "4.8.2")
    assert metadata.quantization is None
    assert metadata.max_tokens == 512
    assert metadata.files == (WeightFile("model.safetensors", 104, 22_713_728),)
    assert (tmp_path / "model.safetensors").stat().st_blocks * 512 < 64 * 1024  # sparse: no weights on disk


@pytest.mark.parametrize(
    ("config", "shards", "exact", "size"),
    [
        (LLAMA_3_2_1B, 1, 1_235_814_400, "1.24B"),
        (LLAMA_3_2_1B, 3, 1_235_814_400, "1.24B"),
        (LLAMA_3_2_3B, 2, 3_212_749_824, "3.21B"),
        (QWEN2_5_7B, 4, 7_615_616_512, "7.62B"),
    ],
)
def test_sharded_decoders_count_exactly(
    tmp_path: Path, config: dict[str, Any], shards: int, exact: int, size: str
) -> None:
    tensors = decoder_tensors(config)
    write_sharded(tmp_path, tensors, shards, {"format": "pt"})
    write_json(tmp_path / "config.json", config)
    metadata = inspect_model(str(tmp_path)).metadata
    assert (metadata.parameter_count, metadata.model_parameter_size, metadata.estimated) == (
        exact,
        size,
        False,
    )
    assert [file.name for file in metadata.files] == [
        f"model-{index:05d}-of-{shards:05d}.safetensors" for index in range(1, shards + 1)
    ]
    assert sum(file.tensors for file in metadata.files) == len(tensors)
    assert metadata.architecture == config["architectures"][0]
    assert metadata.max_tokens == config["max_position_embeddings"]


def test_a_single_file_wins_over_an_index(tmp_path: Path) -> None:
    write_sharded(tmp_path, {"a": ("F32", [10]), "b": ("F32", [20])}, 2)
    write_safetensors(tmp_path / "model.safetensors", {"w": ("F32", [7])})
    write_json(tmp_path / "config.json", {})
    assert inspect_model(str(tmp_path)).metadata.files == (WeightFile("model.safetensors", 1, 7),)


@pytest.mark.parametrize(
    ("count", "written"),
    [
        (350_000, "350000"),
        (999_999, "999999"),  # a bare integer below one million, never OME's K
        (1_000_000, "1M"),
        (1_005_000, "1.01M"),
        (22_713_216, "22.71M"),
        (999_994_999, "999.99M"),
        (999_995_000, "1B"),
        (999_999_999_999, "1T"),
    ],
)
def test_sizes_are_written_by_the_section_2_rule(tmp_path: Path, count: int, written: str) -> None:
    # One U8 tensor of ``count`` elements: the sparse file is as long as the weights would be.
    write_safetensors(tmp_path / "model.safetensors", {"w": ("U8", [count])})
    write_json(tmp_path / "config.json", {"architectures": ["X"]})
    metadata = inspect_model(str(tmp_path)).metadata
    assert (metadata.parameter_count, metadata.model_parameter_size) == (count, written)


def test_without_safetensors_the_count_is_estimated(tmp_path: Path) -> None:
    write_json(tmp_path / "config.json", QWEN2_5_7B)
    (tmp_path / "pytorch_model.bin").write_bytes(b"not read")
    document = metadata_document(inspect_model(str(tmp_path)).metadata)
    assert document == {
        "source": str(tmp_path),
        "parameterCount": 7_615_616_512,
        "estimated": True,
        "quantAware": False,
        "modelParameterSize": "7.62B",
        "modelFormat": None,
        "modelArchitecture": "Qwen2ForCausalLM",
        "modelFramework": {"name": "transformers", "version": "4.43.1"},
        "quantization": None,
        "maxTokens": 131072,
        "files": [],
        "notes": [],
    }


def test_an_unknown_family_without_weights_has_no_size(tmp_path: Path) -> None:
    write_json(tmp_path / "config.json", {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"]})
    metadata = inspect_model(str(tmp_path)).metadata
    assert (metadata.parameter_count, metadata.model_parameter_size, metadata.estimated) == (
        None,
        None,
        False,
    )
    assert metadata.model_format is None
    assert metadata.architecture == "MixtralForCausalLM"


def test_quantized_model(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "model.safetensors", {"w": ("F8_E4M3", [16, 16]), "s": ("F32", [])})
    write_json(tmp_path / "config.json", {"quantization_config": {"quant_method": "fbgemm_fp8"}})
    metadata = inspect_model(str(tmp_path)).metadata
    # SPEC §10: fbgemm_fp8 is kept apart from fp8; (v6) a quantized checkpoint's count is OME's (factor 1).
    assert (metadata.quantization, metadata.parameter_count, metadata.quant_aware) == (
        "fbgemm_fp8",
        256,
        True,
    )


def test_diffusers_pipeline_counts_its_components(tmp_path: Path) -> None:
    write_json(
        tmp_path / "model_index.json",
        {
            "_class_name": "StableDiffusionPipeline",
            "_diffusers_version": "0.21.0",
            "scheduler": ["diffusers", "PNDMScheduler"],
            "text_encoder": ["transformers", "CLIPTextModel"],
            "unet": ["diffusers", "UNet2DConditionModel"],
            "vae": ["diffusers", "AutoencoderKL"],
        },
    )
    write_safetensors(tmp_path / "text_encoder" / "model.safetensors", {"t": ("F16", [1000, 10])})
    write_sharded(tmp_path / "unet", {"u1": ("F16", [300]), "u2": ("F16", [200])}, 2)
    (tmp_path / "unet" / "model.safetensors.index.json").rename(
        tmp_path / "unet" / "diffusion_pytorch_model.safetensors.index.json"
    )
    write_safetensors(tmp_path / "vae" / "diffusion_pytorch_model.safetensors", {"v": ("F16", [50])})
    write_json(tmp_path / "scheduler" / "scheduler_config.json", {})
    metadata = inspect_model(str(tmp_path)).metadata
    assert metadata.model_format == NameVersion("diffusers", "0.21.0")
    assert metadata.parameter_count == 10_000 + 500 + 50
    assert [file.name for file in metadata.files] == [
        "text_encoder/model.safetensors",
        "unet/model-00001-of-00002.safetensors",
        "unet/model-00002-of-00002.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
    ]
    assert (metadata.architecture, metadata.framework) == (None, None)


# --- bad input: every error names the file ------------------------------------------------------------------


def _header_file(path: Path, prefix: bytes, header: bytes = b"", size: int | None = None) -> None:
    with path.open("wb") as stream:
        stream.write(prefix + header)
        if size is not None:
            stream.truncate(size)


def _length(value: int) -> bytes:
    return value.to_bytes(8, "little")


_VALID_HEADER = b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'


@pytest.mark.parametrize(
    ("make", "file", "reason"),
    [
        (lambda m: _header_file(m / "model.safetensors", _length(10_485_761)), "model.safetensors",
         "safetensors header length 10485761 bytes exceeds the limit of 10485760 bytes"),
        (lambda m: _header_file(m / "model.safetensors", b"\x05\x00"), "model.safetensors",
         "truncated: 2 bytes, shorter than the 8-byte safetensors header length"),
        (lambda m: _header_file(m / "model.safetensors", b""), "model.safetensors",
         "truncated: 0 bytes, shorter than the 8-byte safetensors header length"),
        (lambda m: _header_file(m / "model.safetensors", _length(4096), b'{"w":'), "model.safetensors",
         "truncated: the safetensors header is 4096 bytes, the file has 5 of them"),
        (lambda m: _header_file(m / "model.safetensors", _length(len(_VALID_HEADER)), _VALID_HEADER,
                                size=8 + len(_VALID_HEADER) + 15), "model.safetensors",
         "truncated: the safetensors header describes 79 bytes, the file has 78"),
        (lambda m: _header_file(m / "model.safetensors", _length(5), b"{nope"), "model.safetensors",
         "invalid safetensors header: not JSON (Expecting property name enclosed in double quotes)"),
        (lambda m: (m / "config.json").write_text("{,}"), "config.json",
         "invalid JSON: Expecting property name enclosed in double quotes at line 1"),
        (lambda m: (m / "config.json").write_text("[1, 2]"), "config.json", "invalid JSON: not an object"),
        (lambda m: (m / "config.json").write_bytes(b'{"a": "\xff"}'), "config.json",
         "invalid JSON: not UTF-8 text"),
        (lambda m: (m / "config.json").write_text("[" * 100_000), "config.json",
         "invalid JSON: nested deeper than 100 levels"),
        (lambda m: (m / "config.json").write_text("[" * 101 + "]" * 101), "config.json",
         "invalid JSON: nested deeper than 100 levels"),
        (lambda m: (m / "config.json").unlink(), "config.json",
         "missing (and no model_index.json): not a model folder"),
        (lambda m: (m / "config.json").write_bytes(b"x" * 4_000_001), "config.json",
         "larger than 4000000 bytes: not model metadata"),
        (lambda m: (m / "model_index.json").write_bytes(b" " * 4_000_001), "model_index.json",
         "larger than 4000000 bytes: not model metadata"),
        (lambda m: (m / "model.safetensors.index.json").write_bytes(b" " * 32_000_001),
         "model.safetensors.index.json", "larger than 32000000 bytes: not model metadata"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "m1.safetensors"}}),
         "m1.safetensors", "missing (a shard named in model.safetensors.index.json)"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"metadata": {}}),
         "model.safetensors.index.json", "no weight_map object mapping tensor names to shard file names"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": 3}}),
         "model.safetensors.index.json", "no weight_map object mapping tensor names to shard file names"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {}}),
         "model.safetensors.index.json", "weight_map names no shards"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "../x.safetensors"}}),
         "model.safetensors.index.json", "weight_map names '../x.safetensors', outside the model's folder"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "/etc/passwd"}}),
         "model.safetensors.index.json", "weight_map names '/etc/passwd', outside the model's folder"),
        (lambda m: (m / "model.safetensors.index.json").write_text(""), "model.safetensors.index.json",
         "invalid JSON: Expecting value at line 1"),
    ],
)  # fmt: skip
def test_bad_input_is_a_one_line_error_naming_the_file(
    tmp_path: Path, make: Callable[[Path], object], file: str, reason: str
) -> None:
    write_json(tmp_path / "config.json", LLAMA_3_2_1B)
    make(tmp_path)
    with pytest.raises(ModelFileError) as error:
        inspect_model(str(tmp_path))
    assert str(error.value) == f"{tmp_path / file}: {reason}"


def test_a_shard_that_is_a_directory_is_not_a_regular_file(tmp_path: Path) -> None:
    write_json(tmp_path / "config.json", {})
    write_json(tmp_path / "model.safetensors.index.json", {"weight_map": {"w": "shard.safetensors"}})
    (tmp_path / "shard.safetensors").mkdir()
    with pytest.raises(ModelFileError) as error:
        inspect_model(str(tmp_path))
    assert str(error.value) == f"{tmp_path / 'shard.safetensors'}: not a regular file"


@pytest.mark.parametrize(
    ("make", "reason"), [(lambda p: None, "no such directory"), (Path.touch, "not a directory")]
)
def test_the_source_must_be_a_folder(tmp_path: Path, make: Callable[[Path], object], reason: str) -> None:
    source = tmp_path / "model"
    make(source)
    with pytest.raises(ModelFileError) as error:
        inspect_model(str(source))
    assert str(error.value) == f"{source}: {reason}"


# --- never more than the headers ----------------------------------------------------------------------------


def _count_reads(patch: pytest.MonkeyPatch, counts: dict[str, int]) -> None:
    """Add every byte read from a file opened meanwhile to ``counts[path]`` (through os.open, os.read)."""
    paths: dict[int, str] = {}
    real_open, real_read = os.open, os.read

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        descriptor = real_open(path, flags, *args, **kwargs)
        paths[descriptor] = str(path)
        return descriptor

    def read(descriptor: int, size: int) -> bytes:
        data = real_read(descriptor, size)
        if descriptor in paths:
            counts[paths[descriptor]] = counts.get(paths[descriptor], 0) + len(data)
        return data

    patch.setattr(os, "open", open_)
    patch.setattr(os, "read", read)


_shapes = st.lists(st.integers(min_value=0, max_value=5000), max_size=3)
_tensors = st.dictionaries(st.from_regex(r"[a-z]{1,6}(\.[0-9]{1,2})?", fullmatch=True), st.tuples(
    st.sampled_from(["F32", "BF16", "U8"]), _shapes), min_size=1, max_size=30)  # fmt: skip


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(tensors=_tensors, shards=st.integers(min_value=1, max_value=4))
def test_only_headers_are_read_and_the_count_is_their_sum(
    tensors: dict[str, tuple[str, list[int]]], shards: int
) -> None:
    with tempfile.TemporaryDirectory() as directory, pytest.MonkeyPatch.context() as patch:
        folder = Path(directory)
        shards = min(shards, len(tensors))  # every shard holds a tensor, so the index names it
        header_bytes = write_sharded(folder, tensors, shards) if shards > 1 else {
            "model.safetensors": write_safetensors(folder / "model.safetensors", tensors)
        }  # fmt: skip
        write_json(folder / "config.json", {"architectures": ["Test"]})
        expected = {str(folder / name): size for name, size in header_bytes.items()}
        for json_file in ("config.json", "model.safetensors.index.json"):
            if (folder / json_file).exists():  # read whole: they are the metadata
                expected[str(folder / json_file)] = (folder / json_file).stat().st_size
        counts: dict[str, int] = {}
        _count_reads(patch, counts)
        inspection = inspect_model(directory)
    assert counts == expected
    assert inspection.bytes_read == sum(counts.values())
    assert inspection.metadata.parameter_count == sum(
        math.prod(shape) for _, shape in tensors.values() if shape
    )
