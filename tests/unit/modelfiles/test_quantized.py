"""SPEC §10 (v6): parameter counts of quantized checkpoints as OME's model agent counts them (its
CountTensorParams) and OME main's quantization values, on the layouts of published quantized checkpoints
(MXFP4 gpt-oss-20b and -120b with glob exclusions, AutoGPTQ and AutoAWQ Llama-2-7B, ModelOpt NVFP4, W4A8 and
FP4 exports, block FP8 with weight_scale_inv, compressed-tensors FP8 and packed INT4, FBGEMM FP8), each count
worked out by hand below; the rules one by one on small headers; and hf_quant_config.json read under
config.json's bounds, a malformed one a named error."""

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
from ome_selector.modelfiles.learn import PACKED_INT4_NOTE
from ome_selector.modelfiles.safetensors import (
    MAX_EXCLUSION_STEPS,
    QuantAwareCounting,
    packing_factor,
    parse_header,
)
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

# gpt-oss-20b: the same layer with 32 experts (blocks [32, 5760, 90, 16] and [32, 2880, 90, 16]), 24 layers:
#   norms 5,760 + q 11,800,576 + k, v 2,950,144 + o 11,799,360 + sinks 64 + router 32 x 2880 + 32 = 92,192
#   + gate_up_blocks 265,420,800 x 2 + bias 184,320 + down_blocks 132,710,400 x 2 + bias 92,160
GPT_OSS_20B_LAYER = 5_760 + 11_800_576 + 2_950_144 + 11_799_360 + 64 + 92_192
GPT_OSS_20B_LAYER += 2 * 265_420_800 + 184_320 + 2 * 132_710_400 + 92_160  # 823,186,976
GPT_OSS_20B = 24 * GPT_OSS_20B_LAYER + 2 * 201_088 * 2_880 + 2_880  # 20,914,757,184: OME's 20.91B
# Counted as v5 of the upstream contract had it (scales x 2 as U8): the issue's 22.11B, above [18B, 22B].
GPT_OSS_20B_SCALES_DOUBLED = GPT_OSS_20B + 24 * 2 * (32 * 5760 * 90 + 32 * 2880 * 90)

# Llama-2-7B (32 layers, hidden 4096, intermediate 11008, 32 KV heads, vocab 32000, fp16): its linears hold
# 4 x 4096 x 4096 + 3 x 4096 x 11008 = 202,375,168 values a layer.
LLAMA_2_7B_LINEARS = 4 * 4096 * 4096 + 3 * 4096 * 11008
LLAMA_2_7B_REST = 2 * 32_000 * 4096 + 4096 + 32 * 2 * 4096  # embeddings, lm_head, final and layer norms
# AutoGPTQ, INT4_GPTQ: a qweight I32 [in / 8, out] counts x 8 = in x out; scales, qzeros, g_idx count 0; each
# linear's F16 bias counts (4 x 4096 + 2 x 11008 + 4096 = 42,496 a layer), and each layer's inv_freq F32 [64].
LLAMA_2_7B_GPTQ = 32 * (LLAMA_2_7B_LINEARS + 42_496 + 64) + LLAMA_2_7B_REST  # 6,739,777,536: 6.74B
# v5 counted every stored element (not nvfp4/mxfp4): the qweights once plus qzeros, scales and g_idx a layer
# (q, k, v, o: qzeros 32 x 512, scales 32 x 4096, g_idx 4096; gate, up: 32 x 1376, 32 x 11008, 4096; down
# 86 x 512, 86 x 4096, 11008): 1.13B, which lands in [500M, 2B].
_GPTQ_SIDE = 4 * (32 * 512 + 32 * 4096 + 4096) + 2 * (32 * 1376 + 32 * 11008 + 4096) + 86 * 512 + 86 * 4096
LLAMA_2_7B_GPTQ_STORED = 32 * (LLAMA_2_7B_LINEARS // 8 + _GPTQ_SIDE + 11008 + 42_496 + 64) + LLAMA_2_7B_REST
# AutoAWQ GEMM: qweight I32 [in, out / 8] x 8 = in x out, qzeros and scales 0, no bias: the fp16 count.
LLAMA_2_7B_AWQ = 32 * LLAMA_2_7B_LINEARS + LLAMA_2_7B_REST  # 6,738,415,616
LLAMA_2_7B_AWQ_STORED = (
    32 * (LLAMA_2_7B_LINEARS // 8 + 4 * (32 * 512 + 32 * 4096) + 2 * (32 * 1376 + 32 * 11008))
    + 32 * (86 * 512 + 86 * 4096)
    + LLAMA_2_7B_REST
)
# ModelOpt W4A8_AWQ (w4a, U8 -> 2): each linear's U8 [out, in / 2] counts out x in; weight_scale [out, in /
# 128], pre_quant_scale [in] (ends in _scale), input_scale and weight_scale_2 count 0: Llama-3.1-8B's count.
LLAMA_3_1_8B_W4A8 = LLAMA_3_1_8B_FP4
_LLAMA_8B_INPUTS = 6 * 4096 + 14336  # the in widths of q, k, v, o, gate, up (4096) and down, a layer
LLAMA_3_1_8B_W4A8_STORED = (
    LLAMA_3_1_8B_FP4 - 32 * LLAMA_8B_LINEARS // 2 + 32 * LLAMA_8B_LINEARS // 128 + 32 * _LLAMA_8B_INPUTS
)
# Block FP8 (fp8: factor 1): each F32 weight_scale_inv [out / 128, in / 128] counts 0; v5 counted them:
# q, o 32 x 32, k, v 8 x 32, gate, up 112 x 32, down 32 x 112 = 13,312 a layer.
LLAMA_3_1_8B_FP8_BLOCK = LLAMA_3_1_8B_FP4
LLAMA_3_1_8B_FP8_BLOCK_STORED = LLAMA_3_1_8B_FP4 + 32 * 13_312
# compressed-tensors W4A16 (factor 1, OME's parity: SPEC §9): a weight_packed I32 [out, in / 8] counts
# out x in / 8, its weight_scale 0, its I64 weight_shape [2] 2 (not a scale): 8 times low on the linears.
LLAMA_3_1_8B_W4A16 = 32 * (LLAMA_8B_LINEARS // 8 + 7 * 2 + 2 * 4096) + 2 * 128_256 * 4096 + 4096
LLAMA_3_1_8B_W4A16_STORED = LLAMA_3_1_8B_W4A16 + 32 * LLAMA_8B_LINEARS // 128

# Llama-3.3-70B FP8-dynamic (compressed-tensors: factor 1): each linear's per-channel weight_scale [out, 1]
# counts 0 (v6), so the count is the BF16 model's 70,553,706,496; v5 counted the scales too: per layer q 8192
# + k 1024 + v 1024 + o 8192 + gate 28672 + up 28672 + down 8192 = 83,968, over 80 layers.
LLAMA_3_3_70B_FP8 = 70_553_706_496
LLAMA_3_3_70B_FP8_STORED = 70_553_706_496 + 80 * 83_968

# Llama-3.1-405B FBGEMM FP8 (factor 1): the per-channel weight_scale [out, 1] on the MLPs of layers 1-124
# counts 0 (v6): the BF16 model's 405,853,388,800; v5 added gate 53248 + up 53248 + down 16384 = 122,880 a
# layer over 124 layers.
LLAMA_3_1_405B_FP8 = 405_853_388_800
LLAMA_3_1_405B_FP8_STORED = 405_853_388_800 + 124 * 122_880

EXPECTED = {
    # name: (count, modelParameterSize, quantization, the count of stored elements, v5's count)
    "gpt-oss-120b": (GPT_OSS_120B, "116.83B", "mxfp4", GPT_OSS_120B_STORED, GPT_OSS_120B),
    "gpt-oss-20b": (GPT_OSS_20B, "20.91B", "mxfp4", 11_956_805_184, GPT_OSS_20B),
    "Llama-2-7B-GPTQ": (LLAMA_2_7B_GPTQ, "6.74B", "int4", LLAMA_2_7B_GPTQ_STORED, LLAMA_2_7B_GPTQ_STORED),
    "Llama-2-7B-AWQ": (LLAMA_2_7B_AWQ, "6.74B", "int4", LLAMA_2_7B_AWQ_STORED, LLAMA_2_7B_AWQ_STORED),
    "Llama-3.1-8B-Instruct-W4A8": (
        LLAMA_3_1_8B_W4A8, "8.03B", "int4", LLAMA_3_1_8B_W4A8_STORED, LLAMA_3_1_8B_W4A8_STORED,
    ),
    "Llama-3.1-8B-Instruct-FP4-modelopt": (
        LLAMA_3_1_8B_FP4, "8.03B", None, LLAMA_3_1_8B_FP4_STORED, LLAMA_3_1_8B_FP4_STORED,
    ),
    "Llama-3.1-8B-Instruct-FP8-block": (
        LLAMA_3_1_8B_FP8_BLOCK, "8.03B", "fp8", LLAMA_3_1_8B_FP8_BLOCK_STORED, LLAMA_3_1_8B_FP8_BLOCK_STORED,
    ),
    "Llama-3.1-8B-Instruct-W4A16": (
        LLAMA_3_1_8B_W4A16, "1.92B", "compressed-tensors", LLAMA_3_1_8B_W4A16_STORED,
        LLAMA_3_1_8B_W4A16_STORED,
    ),
    "Llama-3.1-8B-Instruct-FP4": (
        LLAMA_3_1_8B_FP4, "8.03B", "nvfp4", LLAMA_3_1_8B_FP4_STORED, LLAMA_3_1_8B_FP4,
    ),
    "Llama-3.3-70B-Instruct-FP8-dynamic": (
        LLAMA_3_3_70B_FP8, "70.55B", "compressed-tensors", LLAMA_3_3_70B_FP8_STORED, LLAMA_3_3_70B_FP8_STORED,
    ),
    "Llama-3.1-405B-Instruct-FP8": (
        LLAMA_3_1_405B_FP8, "405.85B", "fbgemm_fp8", LLAMA_3_1_405B_FP8_STORED, LLAMA_3_1_405B_FP8_STORED,
    ),
}  # fmt: skip


def test_the_hand_counts_are_the_issues_worked_examples() -> None:
    """4-bit GPTQ Llama-2-7B 6.74B (v5: 1.13B), gpt-oss-20b 20.91B (22.11B with its scales doubled),
    gpt-oss-120b 116.83B: the numbers worked out from OME's rule on the published layouts."""
    assert (LLAMA_2_7B_GPTQ, LLAMA_2_7B_GPTQ_STORED) == (6_739_777_536, 1_131_329_536)
    assert format_parameter_count(LLAMA_2_7B_GPTQ_STORED) == "1.13B"
    assert (GPT_OSS_20B, GPT_OSS_20B_SCALES_DOUBLED) == (20_914_757_184, 22_109_150_784)
    assert format_parameter_count(GPT_OSS_20B_SCALES_DOUBLED) == "22.11B"
    assert GPT_OSS_120B == 116_829_156_672
    assert LLAMA_2_7B_AWQ == 6_738_415_616  # meta-llama/Llama-2-7b-hf's published count
    assert LLAMA_3_1_8B_W4A16 == 1_923_355_072


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    written = {}
    for name, model in QUANTIZED_MODELS.items():
        folder = tmp_path_factory.mktemp("quantized") / name
        tensors = write_quantized(folder, model)
        assert stored_elements(tensors) == EXPECTED[name][3]  # the layout is the one counted above
        written[name] = folder
    return written


@pytest.mark.parametrize("name", list(QUANTIZED_MODELS))
def test_each_layout_reads_as_ome_counts_it(folders: dict[str, Path], name: str) -> None:
    count, size, quantization, _, _ = EXPECTED[name]
    metadata = inspect_model(str(folders[name])).metadata
    assert (metadata.parameter_count, metadata.model_parameter_size) == (count, size)
    assert (metadata.quantization, metadata.quant_aware, metadata.estimated) == (quantization, True, False)
    assert sum(file.parameters for file in metadata.files) == count
    assert len(metadata.files) == QUANTIZED_MODELS[name].shards
    assert all(file.quant_aware for file in metadata.files)  # each file says which rule counted it
    assert metadata.notes == ((PACKED_INT4_NOTE,) if name == "Llama-3.1-8B-Instruct-W4A16" else ())


def _runtime_range(path: str) -> tuple[str, str]:
    document = yaml.safe_load((CATALOG / path).read_text())
    size_range = document["spec"]["modelSizeRange"]
    return size_range["min"], size_range["max"]


@pytest.mark.parametrize(
    ("name", "bounds"),
    [
        ("gpt-oss-120b", ("115B", "125B")),
        ("gpt-oss-20b", ("18B", "22B")),
        ("Llama-2-7B-GPTQ", ("5B", "10B")),
        ("Llama-2-7B-AWQ", ("5B", "10B")),
        ("Llama-3.1-8B-Instruct-W4A8", ("7B", "9B")),
        ("Llama-3.1-8B-Instruct-FP4-modelopt", ("7B", "9B")),
        ("Llama-3.1-8B-Instruct-FP8-block", ("7B", "9B")),
        ("Llama-3.1-8B-Instruct-FP4", ("7B", "9B")),
        ("Llama-3.3-70B-Instruct-FP8-dynamic", ("60B", "75B")),
        ("Llama-3.1-405B-Instruct-FP8", ("400B", "410B")),
    ],
)
def test_the_learned_size_lands_in_ome_catalogs_range(name: str, bounds: tuple[str, str]) -> None:
    """OME's catalog writes logical sizes; a size learned from the checkpoint falls in its catalog model's
    runtime range, as OME's count does (v5's count of a GPTQ, AWQ or W4A8 checkpoint did not)."""
    assert _runtime_range(QUANTIZED_MODELS[name].catalog_runtime) == bounds
    low, high = (parse_parameter_count(bound) for bound in bounds)
    assert low <= parse_parameter_count(EXPECTED[name][1]) <= high
    v5 = parse_parameter_count(format_parameter_count(EXPECTED[name][4]))
    packed_int = name in ("Llama-2-7B-GPTQ", "Llama-2-7B-AWQ", "Llama-3.1-8B-Instruct-W4A8")
    assert (low <= v5 <= high) == (not packed_int and name != "Llama-3.1-8B-Instruct-FP4-modelopt")


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


_MXFP4 = "mxfp4"
_GLOBS = ("model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head")


@pytest.mark.parametrize(
    ("tensors", "algorithm", "exclusions", "plain", "counted"),
    [
        # the packing factor of (algorithm, dtype)
        ({"w": ("U8", [4, 8])}, "NVFP4", (), 32, 64),
        ({"w": ("I8", [4, 8])}, " mxfp4 ", (), 32, 64),  # lower-cased and trimmed; I8 too (v6)
        ({"w": ("U8", [4, 8])}, "FP4", (), 32, 64),
        ({"w": ("BF16", [4, 8])}, "NVFP4", (), 32, 32),
        ({"w": ("I32", [4, 8])}, "NVFP4", (), 32, 32),  # fp4 packs only bytes
        ({"w": ("I32", [4, 8])}, "INT4_GPTQ", (), 32, 256),
        ({"w": ("U32", [4, 8])}, "int4_awq", (), 32, 256),
        ({"w": ("I16", [4, 8])}, "W4A16", (), 32, 128),
        ({"w": ("U8", [4, 8])}, "W4A8_AWQ", (), 32, 64),
        ({"w": ("F16", [4, 8])}, "INT4_AWQ", (), 32, 32),
        ({"w": ("I32", [4, 8])}, "GPTQ", (), 32, 32),  # upper-case GPTQ never read its bits: factor 1
        ({"w": ("I32", [4, 8])}, "compressed-tensors", (), 32, 32),  # OME's parity (SPEC §9)
        ({"x.weight_packed": ("I32", [4, 8])}, "compressed-tensors", (), 32, 32),
        ({"x.weight_packed": ("I32", [4, 8])}, "W4A16", (), 32, 256),  # packed by another name: x 8
        ({"w": ("F8_E4M3", [4, 8])}, "FP8", (), 32, 32),
        ({"w": ("U8", [4, 8])}, "", (), 32, 32),  # quantized without an algorithm
        # a scale or zero point counts 0, by its last part exactly or its ending
        ({"x.weight_scale_2": ("F32", [1])}, "NVFP4", (), 1, 0),
        ({"x.weight_scale_inv": ("F32", [2, 2])}, "fp8", (), 4, 0),  # DeepSeek's block-FP8 scale (v6)
        ({"x.input_scale": ("F32", [1])}, "fp8", (), 1, 0),
        ({"x.k_scale": ("F32", [1])}, "fp8", (), 1, 0),
        ({"x.kv_cache_scaling_factor": ("F32", [1])}, "fp8", (), 1, 0),
        ({"x.weight_zero_point": ("I8", [3])}, "fp8", (), 3, 0),
        ({"x.scales": ("F16", [3])}, "INT4_GPTQ", (), 3, 0),
        ({"x.qzeros": ("I32", [3])}, "INT4_GPTQ", (), 3, 0),  # I32, still a zero point: not x 8
        ({"x.g_idx": ("I32", [3])}, "INT4_GPTQ", (), 3, 0),
        ({"x.zeros": ("I32", [3])}, "INT4_GPTQ", (), 3, 0),
        ({"e.down_proj_scales": ("U8", [4, 2])}, _MXFP4, (), 8, 0),
        ({"x.pre_quant_scale": ("F16", [3])}, "W4A8_AWQ", (), 3, 0),
        ({"x.foo_weight_zero_point": ("F16", [3])}, "fp8", (), 3, 0),
        ({"x.qweight": ("I32", [3])}, "INT4_GPTQ", (), 3, 24),  # a packed weight, not a scale
        ({"e.down_proj_blocks": ("U8", [3])}, _MXFP4, (), 3, 6),
        ({"model.scaled_weight": ("U8", [3])}, _MXFP4, (), 3, 6),  # scale elsewhere than its ending
        ({"x.scale": ("F32", [3])}, "fp8", (), 3, 3),  # no underscore: not a _scale
        ({"weight_scale.x": ("F32", [3])}, "fp8", (), 3, 3),  # only the last part is looked at
        ({"x.weight_scale_3": ("F32", [3])}, "fp8", (), 3, 3),
        ({"s": ("U8", [])}, _MXFP4, (), 0, 0),  # a scalar is never counted
        ({"w": ("U8", [0, 8])}, _MXFP4, (), 0, 0),
        # an excluded tensor counts its elements: a pattern without * is a substring of the name
        ({"lm_head.weight": ("U8", [4, 8])}, _MXFP4, ("lm_head",), 32, 32),
        ({"lm_head_extra.weight": ("U8", [2])}, _MXFP4, ("lm_head",), 2, 2),  # a substring (v6)
        ({"model.layers.10.mlp.weight": ("U8", [2])}, _MXFP4, ("layers.1",), 2, 2),  # layers.10 (v6)
        ({"model.layers.0.mlp.gate_up_proj.weight": ("U8", [2])}, _MXFP4, ("mlp.gate",), 2, 2),
        ({"model.layers.0.mlp.up.weight": ("U8", [2])}, _MXFP4, ("mlp.gate", ""), 2, 4),
        ({"Lm_Head.weight": ("U8", [2])}, _MXFP4, ("lm_head",), 2, 4),  # case-sensitive
        # a pattern with * is a glob, each * one or more characters but no dot, anywhere in the name (v6)
        ({"model.layers.3.self_attn.q.weight": ("U8", [2])}, _MXFP4, _GLOBS, 2, 2),
        ({"model.layers.12.mlp.router.weight": ("U8", [2])}, _MXFP4, _GLOBS, 2, 2),
        ({"model.layers.3.mlp.experts.gate_up_proj_blocks": ("U8", [2])}, _MXFP4, _GLOBS, 2, 4),
        ({"x.model.layers.3.self_attnx.w": ("U8", [2])}, _MXFP4, _GLOBS, 2, 2),  # unanchored both ends
        ({"model.layers..self_attn.w": ("U8", [2])}, _MXFP4, _GLOBS, 2, 4),  # * is at least one character
        ({"model.layers.1.2.self_attn.w": ("U8", [2])}, _MXFP4, _GLOBS, 2, 4),  # * is one part
        ({"model.layers.10.mlp.w": ("U8", [2])}, _MXFP4, ("layers.1*.mlp",), 2, 2),  # inside a part
        ({"model.layers.1.mlp.w": ("U8", [2])}, _MXFP4, ("layers.1*.mlp",), 2, 4),
        ({"model.layers.0.self_attn.q.w": ("U8", [2])}, _MXFP4, ("model.layers.0.self_attn*",), 2, 4),
        ({"model.layers.0.self_attn_x.w": ("U8", [2])}, _MXFP4, ("model.layers.0.self_attn*",), 2, 2),
        ({"ab.cd": ("U8", [2])}, _MXFP4, ("*",), 2, 2),
        ({"a.b.c": ("U8", [2])}, _MXFP4, ("a.*.*.d",), 2, 4),
        ({"xa1b2c.d": ("U8", [2])}, _MXFP4, ("a*b*c",), 2, 2),
        ({"xab2c.d": ("U8", [2])}, _MXFP4, ("a*b*c",), 2, 4),  # each * needs a character
        ({"aXbY.bZc": ("U8", [2])}, _MXFP4, ("a*b*c",), 2, 4),  # never across a dot
        # an excluded tensor's scale still counts 0
        ({"lm_head.weight_scale": ("F8_E4M3", [2])}, "NVFP4", ("lm_head",), 2, 0),
    ],
)
def test_the_quantized_rule(
    tensors: dict[str, tuple[str, list[int]]],
    algorithm: str,
    exclusions: tuple[str, ...],
    plain: int,
    counted: int,
) -> None:
    data = _header(tensors)
    assert parse_header(FILE, data).parameters == plain
    assert parse_header(FILE, data, QuantAwareCounting(algorithm, exclusions)).parameters == counted


@pytest.mark.parametrize(
    ("algorithm", "dtype", "factor"),
    [
        ("nvfp4", "uint8", 2),
        ("MXFP4", " int8 ", 2),
        ("fp4", "U16", 1),
        ("w4a8_awq", "UINT32", 8),
        ("int4_awq", "INT16", 4),
        ("xint4x", "I32", 8),
        ("nvfp4_awq", "U8", 1),  # neither exactly an fp4 name nor int4/w4a
        ("  ", "U8", 1),
        ("fp8", "F8_E4M3", 1),
    ],
)
def test_the_packing_factor(algorithm: str, dtype: str, factor: int) -> None:
    assert packing_factor(algorithm, dtype) == factor


def test_matching_exclusions_is_bounded_and_named() -> None:
    """Only packed tensors are matched; each costs, before the work, one step per substring pattern and per
    64 characters, and per part its globs' literals; a header past MAX_EXCLUSION_STEPS is refused."""
    exclusions = [f"module{index}" for index in range(1000)]
    tensors = {f"m.{index}": ("U8", [1]) for index in range(MAX_EXCLUSION_STEPS // 1000 + 1)}
    with pytest.raises(ModelFileError) as error:
        parse_header(FILE, _header(tensors), QuantAwareCounting(_MXFP4, exclusions))
    assert str(error.value) == (
        f"{FILE}: invalid safetensors header: matching its packed tensor names against the quantization "
        "exclusions takes more than 10000000 steps"
    )
    fewer = dict(list(tensors.items())[: len(tensors) // 2])
    assert parse_header(FILE, _header(fewer), QuantAwareCounting(_MXFP4, exclusions)).parameters == 2 * len(
        fewer
    )
    # BF16 tensors are never matched: factor 1 counts alike either way
    plain = {name: ("BF16", [1]) for name in tensors}
    assert parse_header(FILE, _header(plain), QuantAwareCounting(_MXFP4, exclusions)).parameters == len(plain)


def test_a_hostile_glob_is_linear() -> None:
    """A glob of many stars over a long name of one part: searches, never backtracking."""
    counting = QuantAwareCounting(_MXFP4, ["a*" * 2000 + "b"])
    name = "a" * 100_000
    assert counting.steps(name) == 2001
    assert not counting.excludes(name)
    assert not counting.excludes("x." + "a" * 3000 + "b.y")  # 2,000 a's and 2,000 more characters, then b
    assert counting.excludes("x." + "a" * 5000 + "b.y")


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
    metadata = inspect_model(str(tmp_path)).metadata  # fp8: factor 1, w_scale a scale
    assert (metadata.quantization, metadata.quant_aware, metadata.parameter_count) == ("fp8", True, 32)


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
    metadata = inspect_model(str(folder)).metadata  # no quantization learned, but counted as OME counts
    assert (metadata.quantization, metadata.quant_aware, metadata.parameter_count) == (None, True, 64)


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


def test_the_child_reader_says_which_rule_counted(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's child reader (SPEC §10.7) counts as the CLI does and answers quantAware, which the
    operator checks and keeps."""
    from ome_selector.modelfiles.child import answer
    from ome_selector.modelfiles.learn import metadata_from_document

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    with hub_standin() as hub:
        hub.repos["TheBloke/Llama-2-7B-GPTQ"] = Repo(folders["Llama-2-7B-GPTQ"])
        document = answer({"uri": "hf://TheBloke/Llama-2-7B-GPTQ", "endpoint": hub.url})["metadata"]
    assert (document["parameterCount"], document["quantAware"], document["quantization"]) == (
        LLAMA_2_7B_GPTQ,
        True,
        "int4",
    )
    learned = metadata_from_document(document)
    assert (learned.parameter_count, learned.quant_aware, learned.model_parameter_size) == (
        6_739_777_536,
        True,
        "6.74B",
    )
