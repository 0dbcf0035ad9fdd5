"""SPEC §10 (v5): quantization-aware parameter counts and OME main's quantization values, on the layouts of
four published quantized checkpoints (MXFP4 gpt-oss, a ModelOpt NVFP4 export, compressed-tensors FP8, FBGEMM
FP8), each count worked out by hand below; the rules one by one on small headers; and hf_quant_config.json
read under config.json's bounds, a malformed one a named error."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hub_standin import Repo, hub_standin

from harness.model_folders import LLAMA_3_2_1B, write_json, write_safetensors
from harness.quantized_models import (
    QUANTIZED_MODELS,
    gpt_oss_tensors,
    stored_elements,
    write_quantized,
)
from ome_selector.modelfiles import ModelFileError, inspect_model
from ome_selector.modelfiles.safetensors import MAX_EXCLUSION_STEPS, QuantAwareCounting, parse_header
from ome_selector.selection.quantity import format_parameter_count, parse_parameter_count

CATALOG = Path(__file__).resolve().parents[2] / "data" / "ome-catalog"
FILE = "/m/model.safetensors"

# --- the four layouts, counted by hand ----------------------------------------------------------------------

# gpt-oss-120b (36 layers, hidden 2880, 64 heads of 64, 8 KV heads, 128 experts, vocab 201088). Per layer:
#   2 norms                                   2 x 2880                         =          5,760
#   q_proj weight + bias                      4096 x 2880 + 4096               =     11,800,576
#   k_proj, v_proj weight + bias              2 x (512 x 2880 + 512)           =      2,950,144
#   o_proj weight + bias                      2880 x 4096 + 2880               =     11,799,360
#   sinks                                     64                               =             64
#   router weight + bias                      128 x 2880 + 128                 =        368,768
#   gate_up_proj_blocks  U8 [128,5760,90,16]  1,061,683,200 stored, x 2        =  2,123,366,400
#   gate_up_proj_scales  U8 [128,5760,90]     a scale: not counted             =              0
#   gate_up_proj_bias                         128 x 5760                       =        737,280
#   down_proj_blocks     U8 [128,2880,90,16]  530,841,600 stored, x 2          =  1,061,683,200
#   down_proj_scales     U8 [128,2880,90]     not counted                      =              0
#   down_proj_bias                            128 x 2880                       =        368,640
#                                                                     a layer  =  3,213,080,192
# 36 layers = 115,670,886,912; embeddings and lm_head 2 x 201088 x 2880 = 1,158,266,880; final norm 2880.
GPT_OSS_120B = 36 * 3_213_080_192 + 2 * 201_088 * 2_880 + 2_880
# Stored elements (v4): the blocks once, the scales counted: about half.
GPT_OSS_120B_STORED = GPT_OSS_120B - 36 * (1_061_683_200 + 530_841_600) + 36 * (66_355_200 + 33_177_600)

# Llama-3.1-8B (32 layers, hidden 4096, intermediate 14336, 8 KV heads of 128, vocab 128256), NVFP4: each
# linear's U8 weight [out, in / 2] counts twice, i.e. out x in, as in BF16; its weight_scale [out, in / 16]
# ends in _scale and does not count; weight_scale_2 and input_scale are scalars (never counted). Per layer:
# q, o 2 x 4096 x 4096 + k, v 2 x 1024 x 4096 + gate, up, down 3 x 14336 x 4096 + 2 norms x 4096
LLAMA_8B_LAYER = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096 + 2 * 4096  # 218,112,000
LLAMA_3_1_8B_FP4 = 32 * LLAMA_8B_LAYER + 2 * 128_256 * 4096 + 4096  # embeddings, lm_head (BF16), norm
# Stored: the linears at half, plus their weight_scale: per layer (out x in) x (1/2 + 1/16).
LLAMA_8B_LINEARS = LLAMA_8B_LAYER - 2 * 4096
LLAMA_3_1_8B_FP4_STORED = LLAMA_3_1_8B_FP4 - 32 * LLAMA_8B_LINEARS // 2 + 32 * LLAMA_8B_LINEARS // 16

# Llama-3.3-70B FP8-dynamic (compressed-tensors: not quantization-aware, every stored element counts): the
# BF16 model's 70,553,706,496 plus each linear's per-channel weight_scale [out, 1]: per layer q 8192 + k 1024
# + v 1024 + o 8192 + gate 28672 + up 28672 + down 8192 = 83,968, over 80 layers.
LLAMA_3_3_70B_FP8 = 70_553_706_496 + 80 * 83_968

# Llama-3.1-405B FBGEMM FP8 (not quantization-aware): the BF16 model's 405,853,388,800 plus a per-channel
# weight_scale [out, 1] on the MLPs of layers 1-124 (attention, layers 0 and 125 are not converted): gate
# 53248 + up 53248 + down 16384 = 122,880 per layer.
LLAMA_3_1_405B_FP8 = 405_853_388_800 + 124 * 122_880

EXPECTED = {
    # name: (count, modelParameterSize, quantization, quantAware, the v4 count of stored elements)
    "gpt-oss-120b": (116_829_156_672, "116.83B", "mxfp4", True, 63_081_444_672),
    "Llama-3.1-8B-Instruct-FP4": (8_030_261_248, "8.03B", "nvfp4", True, 4_976_807_936),
    "Llama-3.3-70B-Instruct-FP8-dynamic": (
        70_560_423_936, "70.56B", "compressed-tensors", False, 70_560_423_936,
    ),
    "Llama-3.1-405B-Instruct-FP8": (405_868_625_920, "405.87B", "fbgemm_fp8", False, 405_868_625_920),
}  # fmt: skip


def test_the_hand_counts_are_the_table() -> None:
    assert EXPECTED["gpt-oss-120b"][0] == GPT_OSS_120B
    assert EXPECTED["gpt-oss-120b"][4] == GPT_OSS_120B_STORED
    assert EXPECTED["Llama-3.1-8B-Instruct-FP4"][0] == LLAMA_3_1_8B_FP4
    assert EXPECTED["Llama-3.1-8B-Instruct-FP4"][4] == LLAMA_3_1_8B_FP4_STORED
    assert EXPECTED["Llama-3.3-70B-Instruct-FP8-dynamic"][0] == LLAMA_3_3_70B_FP8
    assert EXPECTED["Llama-3.1-405B-Instruct-FP8"][0] == LLAMA_3_1_405B_FP8


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    written = {}
    for name, model in QUANTIZED_MODELS.items():
        folder = tmp_path_factory.mktemp("quantized") / name
        tensors = write_quantized(folder, model)
        assert stored_elements(tensors) == EXPECTED[name][4]  # the layout is the one counted above
        written[name] = folder
    return written


@pytest.mark.parametrize("name", list(QUANTIZED_MODELS))
def test_each_layout_reads_as_ome_counts_it(folders: dict[str, Path], name: str) -> None:
    count, size, quantization, quant_aware, _ = EXPECTED[name]
    metadata = inspect_model(str(folders[name])).metadata
    assert (metadata.parameter_count, metadata.model_parameter_size) == (count, size)
    assert (metadata.quantization, metadata.quant_aware, metadata.estimated) == (
        quantization,
        quant_aware,
        False,
    )
    assert sum(file.parameters for file in metadata.files) == count
    assert len(metadata.files) == QUANTIZED_MODELS[name].shards


def _runtime_range(path: str) -> tuple[str, str]:
    document = yaml.safe_load((CATALOG / path).read_text())
    size_range = document["spec"]["modelSizeRange"]
    return size_range["min"], size_range["max"]


@pytest.mark.parametrize(
    ("name", "bounds"),
    [
        ("gpt-oss-120b", ("115B", "125B")),
        ("Llama-3.1-8B-Instruct-FP4", ("7B", "9B")),
        ("Llama-3.3-70B-Instruct-FP8-dynamic", ("60B", "75B")),
        ("Llama-3.1-405B-Instruct-FP8", ("400B", "410B")),
    ],
)
def test_the_learned_size_lands_in_ome_catalogs_range(name: str, bounds: tuple[str, str]) -> None:
    """OME's catalog writes logical sizes; a size learned from the checkpoint must fall in its runtime's
    range, as written (the v4 count of a 4-bit checkpoint, about half, did not)."""
    assert _runtime_range(QUANTIZED_MODELS[name].catalog_runtime) == bounds
    low, high = (parse_parameter_count(bound) for bound in bounds)
    learned = parse_parameter_count(EXPECTED[name][1])
    assert low <= learned <= high
    stored = parse_parameter_count(format_parameter_count(EXPECTED[name][4]))
    assert (low <= stored <= high) == (not EXPECTED[name][3])


def test_the_nvfp4_export_reads_through_the_hub(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    with hub_standin() as hub:
        hub.repos["nvidia/Llama-3.1-8B-Instruct-FP4"] = Repo(folders["Llama-3.1-8B-Instruct-FP4"])
        hub.repos["openai/gpt-oss-120b"] = Repo(folders["gpt-oss-120b"])
        nvfp4 = inspect_model("hf://nvidia/Llama-3.1-8B-Instruct-FP4", endpoint=hub.url).metadata
        mxfp4 = inspect_model("hf://openai/gpt-oss-120b", endpoint=hub.url).metadata
        fetched = {request.path.rsplit("/", 1)[-1] for request in hub.requests}
    assert (nvfp4.parameter_count, nvfp4.quantization, nvfp4.quant_aware) == (8_030_261_248, "nvfp4", True)
    assert (mxfp4.parameter_count, mxfp4.quantization, mxfp4.quant_aware) == (116_829_156_672, "mxfp4", True)
    assert "hf_quant_config.json" in fetched


# --- the rules one by one, on small headers ----------------------------------------------------------------


def _header(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    return json.dumps(
        {
            name: {"dtype": dtype, "shape": shape, "data_offsets": [0, 0]}
            for name, (dtype, shape) in tensors.items()
        }
    ).encode()


@pytest.mark.parametrize(
    ("tensors", "exclusions", "plain", "quant_aware"),
    [
        ({"w": ("U8", [4, 8])}, (), 32, 64),  # two 4-bit values per byte
        ({"w": ("BF16", [4, 8])}, (), 32, 32),  # only U8 is packed
        ({"w": ("F8_E4M3", [4, 8])}, (), 32, 32),
        ({"w": ("I8", [4, 8])}, (), 32, 32),
        ({"x.weight_scale": ("F8_E4M3", [4, 2])}, (), 8, 0),  # ends in _scale: not a parameter
        ({"x.input_scale": ("F32", [1])}, (), 1, 0),
        ({"e.down_proj_scales": ("U8", [4, 2])}, (), 8, 0),  # gpt-oss's _scales too
        ({"x.weight_scale_2": ("F32", [1])}, (), 1, 1),  # does not end in _scale: counted
        ({"x.weight_scale_inv": ("F32", [2, 2])}, (), 4, 4),  # DeepSeek's block-FP8 scale: counted
        ({"x.scale": ("F32", [3])}, (), 3, 3),  # no underscore: not a _scale
        ({"s": ("U8", [])}, (), 0, 0),  # a scalar is never counted
        ({"w": ("U8", [0, 8])}, (), 0, 0),
        # an excluded module's U8 tensor counts once
        ({"lm_head.weight": ("U8", [4, 8])}, ("lm_head",), 32, 32),
        ({"model.lm_head.weight": ("U8", [4, 8])}, ("lm_head",), 32, 32),  # anywhere in the name
        ({"model.layers.0.mlp.gate.weight": ("U8", [2])}, ("model.layers.0.mlp.gate",), 2, 2),
        ({"model.layers.0.mlp.gate.weight": ("U8", [2])}, ("mlp.gate",), 2, 2),
        # a module is whole name parts: mlp.gate is not in mlp.gate_up_proj, nor layers.1 in layers.10
        ({"model.layers.0.mlp.gate_up_proj.weight": ("U8", [2])}, ("mlp.gate",), 2, 4),
        ({"model.layers.10.mlp.weight": ("U8", [2])}, ("layers.1",), 2, 4),
        ({"model.layers.10.mlp.weight": ("U8", [2])}, ("model.layers.*.mlp",), 2, 4),  # no wildcards
        ({"lm_head_extra.weight": ("U8", [2])}, ("lm_head",), 2, 4),
        # an excluded module's scale still is not a parameter
        ({"lm_head.weight_scale": ("F8_E4M3", [2])}, ("lm_head",), 2, 0),
    ],
)
def test_the_quantization_aware_rule(
    tensors: dict[str, tuple[str, list[int]]], exclusions: tuple[str, ...], plain: int, quant_aware: int
) -> None:
    data = _header(tensors)
    assert parse_header(FILE, data).parameters == plain
    assert parse_header(FILE, data, QuantAwareCounting(exclusions)).parameters == quant_aware


def test_matching_exclusions_is_bounded_and_named() -> None:
    """Matching costs each U8 name's parts times the lists' shapes (never their length); a header and lists
    that would take more than MAX_EXCLUSION_STEPS are refused with a named reason, before the work."""
    exclusions = [".".join(["a"] * parts + ["b"]) for parts in range(8)]  # 1 to 8 parts, never matching
    name = ".".join(["a"] * 1000)
    tensors = {f"{name}.{index}": ("U8", [1]) for index in range(MAX_EXCLUSION_STEPS // (1000 * 36) + 1)}
    with pytest.raises(ModelFileError) as error:
        parse_header(FILE, _header(tensors), QuantAwareCounting(exclusions))
    assert str(error.value) == (
        f"{FILE}: invalid safetensors header: matching its U8 tensor names against the quantization "
        "exclusion lists takes more than 10000000 steps"
    )
    # Half of it reads, and 500,000 exclusions cost no more than two shapes of them.
    fewer = dict(list(tensors.items())[: len(tensors) // 2])
    assert parse_header(FILE, _header(fewer), QuantAwareCounting(exclusions)).parameters == 2 * len(fewer)
    many = [f"module{index}" for index in range(500_000)]
    assert parse_header(FILE, _header(fewer), QuantAwareCounting(many)).parameters == 2 * len(fewer)


# --- the files: hf_quant_config.json beside config.json, under config.json's bounds -------------------------


def _nvfp4_folder(folder: Path, hf_quant_config: Any, config: dict[str, Any] | None = None) -> Path:
    write_json(folder / "config.json", config if config is not None else LLAMA_3_2_1B)
    write_safetensors(folder / "model.safetensors", {"w": ("U8", [4, 8]), "w_scale": ("F8_E4M3", [4])})
    if isinstance(hf_quant_config, bytes):
        (folder / "hf_quant_config.json").write_bytes(hf_quant_config)
    elif hf_quant_config is not None:
        write_json(folder / "hf_quant_config.json", hf_quant_config)
    return folder


_NVFP4 = {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}}


def test_hf_quant_config_wins_over_config_json(tmp_path: Path) -> None:
    config = LLAMA_3_2_1B | {"quantization_config": {"quant_method": "fp8"}}
    metadata = inspect_model(str(_nvfp4_folder(tmp_path, _NVFP4, config))).metadata
    assert (metadata.quantization, metadata.quant_aware, metadata.parameter_count) == ("nvfp4", True, 64)
    os.remove(tmp_path / "hf_quant_config.json")
    metadata = inspect_model(str(tmp_path)).metadata
    assert (metadata.quantization, metadata.quant_aware, metadata.parameter_count) == ("fp8", False, 36)


def test_hf_quant_config_is_read_only_beside_config_json(tmp_path: Path) -> None:
    folder = _nvfp4_folder(tmp_path, _NVFP4)
    os.remove(folder / "config.json")
    metadata = inspect_model(str(folder)).metadata
    assert (metadata.quantization, metadata.quant_aware, metadata.parameter_count) == (None, False, 36)


def test_an_estimated_count_is_not_quantization_aware(tmp_path: Path) -> None:
    write_json(tmp_path / "config.json", LLAMA_3_2_1B)
    write_json(tmp_path / "hf_quant_config.json", _NVFP4)
    metadata = inspect_model(str(tmp_path)).metadata
    assert (metadata.quantization, metadata.estimated, metadata.quant_aware) == ("nvfp4", True, False)


_INVALID_JSON = "invalid JSON: "


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{" + b" " * 4_000_000 + b"}", "larger than 4000000 bytes: not model metadata"),
        (
            b'{"quantization": ' + b"[" * 101 + b"]" * 101 + b"}",
            _INVALID_JSON + "nested deeper than 100 levels",
        ),
        (b'{"q": [' + b"0," * 500_000 + b"0]}", _INVALID_JSON + "more than 500000 JSON values"),
        (
            b'{"quantization": {"group_size": ' + b"1" * 5000 + b"}}",
            _INVALID_JSON + "a number is too long to read",
        ),
    ],
    ids=["too large", "too deep", "too many values", "a number too long"],
)
def test_hf_quant_config_has_config_json_bounds(tmp_path: Path, content: bytes, reason: str) -> None:
    with pytest.raises(ModelFileError) as error:
        inspect_model(str(_nvfp4_folder(tmp_path, content)))
    assert str(error.value) == f"{tmp_path / 'hf_quant_config.json'}: {reason}"


@pytest.mark.parametrize(
    "content",
    [b'{"quantization": {"quant_algo": "NVFP4"', b"[]", b"\xff\xfe", b""],
    ids=["cut", "a list", "binary", "empty"],
)
def test_a_malformed_hf_quant_config_is_a_named_error(tmp_path: Path, content: bytes) -> None:
    with pytest.raises(ModelFileError) as error:
        inspect_model(str(_nvfp4_folder(tmp_path, content)))
    assert str(error.value).startswith(f"{tmp_path / 'hf_quant_config.json'}: ")
    assert "\n" not in str(error.value)


def test_a_fifo_hf_quant_config_is_not_a_regular_file(tmp_path: Path) -> None:
    folder = _nvfp4_folder(tmp_path, None)
    os.mkfifo(folder / "hf_quant_config.json")
    with pytest.raises(ModelFileError) as error:
        inspect_model(str(folder))
    assert str(error.value) == f"{folder / 'hf_quant_config.json'}: not a regular file"


def test_a_quantization_value_over_the_limit_is_not_guessed_at(tmp_path: Path) -> None:
    folder = _nvfp4_folder(tmp_path, {"quantization": {"quant_algo": "NVFP4" + " " * 200}})
    metadata = inspect_model(str(folder)).metadata
    assert (metadata.quantization, metadata.quant_aware, metadata.parameter_count) == (None, False, 36)


def test_gpt_oss_small_layout_counts_blocks_twice_and_drops_scales(tmp_path: Path) -> None:
    """The gpt-oss layout at a small size, counted by hand: a check on the layout builder itself."""
    config = {
        "hidden_size": 64, "vocab_size": 10, "num_local_experts": 2, "intermediate_size": 64, "head_dim": 8,
        "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1,
    }  # fmt: skip
    tensors = gpt_oss_tensors(config)
    write_json(tmp_path / "config.json", {"quantization_config": {"quant_method": "mxfp4"}})
    write_safetensors(tmp_path / "model.safetensors", tensors)
    # embed + lm_head 2 x 10 x 64; norms 3 x 64; q 16 x 64 + 16; k, v 2 x (8 x 64 + 8); o 64 x 16 + 64;
    # sinks 2; router 2 x 64 + 2; experts: gate_up 2 x 128 x 64 (blocks x 2) + bias 2 x 128;
    # down 2 x 64 x 64 + bias 2 x 64; scales 0.
    expected = 1280 + 192 + 1040 + 1040 + 1088 + 2 + 130 + 2 * 128 * 64 + 256 + 2 * 64 * 64 + 128
    assert inspect_model(str(tmp_path)).metadata.parameter_count == expected == 29_732


def test_many_list_shapes_are_counted_not_looped_over() -> None:
    """Lists of 2,000 distinct shapes (1 to 2,000 parts): a short name costs only the shapes up to its own
    parts, found without looking at the others, and a long one is refused before any matching."""
    counting = QuantAwareCounting(".".join(["x"] * parts) for parts in range(1, 2001))
    assert (counting.steps(1), counting.steps(3), counting.steps(2000)) == (1, 3 * 6, 2000 * 2001 * 1000)
    short = {f"m{index}.weight": ("U8", [1]) for index in range(20_000)}
    assert parse_header(FILE, _header(short), counting).parameters == 40_000
    long_name = {".".join(["y"] * 3000): ("U8", [1])}
    with pytest.raises(ModelFileError, match="takes more than 10000000 steps"):
        parse_header(FILE, _header(long_name), counting)
