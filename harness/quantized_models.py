"""Quantized checkpoints' layouts, for tests and benchmarks of SPEC §10's quantization-aware counts.

Each is written as the published checkpoint lays it out (tensor names, dtypes and shapes; the config files
that say how it is quantized), over sparse files (headers only), by :func:`write_quantized`:

- ``gpt-oss-120b`` (MXFP4, ``quant_method: mxfp4`` in ``config.json``): each expert projection is a ``U8``
  ``*_blocks`` tensor (two 4-bit values per byte, 16 bytes per block of 32) with a ``U8`` ``*_scales`` tensor
  (one exponent per block); attention, router, embeddings and biases stay BF16.
- ``Llama-3.1-8B-Instruct-FP4`` (a ModelOpt NVFP4 export, ``hf_quant_config.json`` with
  ``quant_algo: NVFP4`` and ``exclude_modules: [lm_head]``): each linear of the layers is a ``U8`` ``weight``
  (``[out, in / 2]``), an F8 ``weight_scale`` (one per 16 values), a scalar F32 ``weight_scale_2`` and a
  scalar F32 ``input_scale``; ``lm_head`` stays BF16.
- ``Llama-3.3-70B-Instruct-FP8-dynamic`` (compressed-tensors FP8, ``ignore: [lm_head]``): each linear of the
  layers is an F8 ``weight`` with a BF16 per-channel ``weight_scale`` (``[out, 1]``).
- ``Llama-3.1-405B-Instruct-FP8`` (``quant_method: fbgemm_fp8``): the MLPs of layers 1-124 are F8 ``weight``
  with an F32 per-channel ``weight_scale``; attention, the MLPs of the first and last layers and ``lm_head``
  are in ``modules_to_not_convert`` and stay BF16.

And (SPEC §10 v6, OME's packing factors) these, each as its producer writes it:

- ``gpt-oss-20b`` (MXFP4, the 120b's layout with 24 layers of 32 experts).
- ``Llama-2-7B-GPTQ`` (AutoGPTQ, ``quant_method: gptq``, ``bits: 4``, as TheBloke/Llama-2-7B-GPTQ): each
  linear an ``I32`` ``qweight`` ``[in / 8, out]`` (eight 4-bit values each), ``qzeros`` ``[in / 128, out /
  8]``, F16 ``scales`` ``[in / 128, out]``, ``g_idx`` ``[in]`` and an F16 ``bias``; a rotary ``inv_freq``
  per layer; 1,219 tensors.
- ``Llama-2-7B-AWQ`` (AutoAWQ GEMM, ``quant_method: awq``, ``bits: 4``): ``qweight`` ``[in, out / 8]``,
  ``qzeros`` and ``scales`` as GPTQ's, no bias nor ``g_idx``; 739 tensors.
- ``Llama-3.1-8B-Instruct-W4A8`` (ModelOpt ``W4A8_AWQ``): the NVFP4 export's shapes, a ``U8`` weight of two
  4-bit values a byte, an F16 ``weight_scale`` per group of 128, a ``pre_quant_scale`` ``[in]``.
- ``Llama-3.1-8B-Instruct-FP4-modelopt`` (ModelOpt ``quant_algo: FP4``): the NVFP4 export's tensors.
- ``Llama-3.1-8B-Instruct-FP8-block`` (``quant_method: fp8``, ``weight_block_size: [128, 128]``, as
  DeepSeek-V3 writes FP8): each linear an F8 ``weight`` with an F32 ``weight_scale_inv`` per 128 x 128 block.
- ``Llama-3.1-8B-Instruct-W4A16`` (compressed-tensors ``pack-quantized``, as
  RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16): each linear an ``I32`` ``weight_packed`` ``[out, in
  / 8]``, a BF16 ``weight_scale`` ``[out, in / 128]`` and an ``I64`` ``weight_shape`` ``[2]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.large_models import LLAMA_3_1_405B
from harness.model_folders import _decoder, decoder_tensors, write_json, write_sharded

__all__ = [
    "GPT_OSS_20B",
    "GPT_OSS_120B",
    "LLAMA_2_7B",
    "LLAMA_3_1_8B",
    "LLAMA_3_3_70B",
    "QUANTIZED_MODELS",
    "QuantizedModel",
    "awq_tensors",
    "block_fp8_tensors",
    "compressed_fp8_tensors",
    "compressed_w4a16_tensors",
    "fbgemm_fp8_tensors",
    "gpt_oss_tensors",
    "gptq_tensors",
    "modelopt_nvfp4_tensors",
    "modelopt_w4a8_tensors",
    "stored_elements",
    "write_quantized",
]

Tensors = dict[str, tuple[str, Sequence[int]]]

#: openai/gpt-oss-120b's config.json (the fields that shape the weights, and its quantization_config).
GPT_OSS_120B: dict[str, Any] = {
    "architectures": ["GptOssForCausalLM"],
    "model_type": "gpt_oss",
    "attention_bias": True,
    "head_dim": 64,
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "max_position_embeddings": 131072,
    "num_attention_heads": 64,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "num_local_experts": 128,
    "experts_per_token": 4,
    "quantization_config": {
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
        "quant_method": "mxfp4",
    },
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.55.0.dev0",
    "vocab_size": 201088,
}
#: openai/gpt-oss-20b's config.json: the 120b's with 24 layers of 32 experts.
GPT_OSS_20B: dict[str, Any] = {**GPT_OSS_120B, "num_hidden_layers": 24, "num_local_experts": 32}
#: meta-llama/Llama-2-7b-hf's config.json, as the GPTQ and AWQ exports carry it.
LLAMA_2_7B = _decoder(
    "llama", "LlamaForCausalLM", vocab=32000, hidden=4096, intermediate=11008, layers=32, heads=32,
    kv_heads=32, max_positions=4096, tied=False, transformers_version="4.30.2",
)  # fmt: skip
LLAMA_3_1_8B = _decoder(
    "llama", "LlamaForCausalLM", vocab=128256, hidden=4096, intermediate=14336, layers=32, heads=32,
    kv_heads=8, max_positions=131072, tied=False, transformers_version="4.43.0.dev0",
)  # fmt: skip
LLAMA_3_3_70B = _decoder(
    "llama", "LlamaForCausalLM", vocab=128256, hidden=8192, intermediate=28672, layers=80, heads=64,
    kv_heads=8, max_positions=131072, tied=False, transformers_version="4.47.0.dev0",
)  # fmt: skip

#: ModelOpt's hf_quant_config.json of an NVFP4 export.
NVFP4_HF_QUANT_CONFIG: dict[str, Any] = {
    "producer": {"name": "modelopt", "version": "0.27.1"},
    "quantization": {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": None,
        "group_size": 16,
        "exclude_modules": ["lm_head"],
    },
}
#: llm-compressor's quantization_config of an FP8-dynamic model (per-channel weights, dynamic activations).
COMPRESSED_FP8_CONFIG: dict[str, Any] = {
    "config_groups": {
        "group_0": {
            "input_activations": {"dynamic": True, "num_bits": 8, "strategy": "token", "type": "float"},
            "targets": ["Linear"],
            "weights": {"dynamic": False, "num_bits": 8, "strategy": "channel", "type": "float"},
        }
    },
    "format": "float-quantized",
    "ignore": ["lm_head"],
    "kv_cache_scheme": None,
    "quant_method": "compressed-tensors",
    "quantization_status": "compressed",
}

_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _is_layer_linear(name: str) -> bool:
    parts = name.split(".")
    return name.startswith("model.layers.") and parts[-1] == "weight" and parts[-2] in _LINEARS


def gpt_oss_tensors(config: Mapping[str, Any]) -> Tensors:
    """gpt-oss's tensors, named and shaped as openai/gpt-oss-120b stores them (MXFP4 experts)."""
    hidden, vocab, experts = config["hidden_size"], config["vocab_size"], config["num_local_experts"]
    intermediate, head_dim = config["intermediate_size"], config["head_dim"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    blocks = hidden // 32  # 32 values per block, 16 bytes of two 4-bit values each
    tensors: Tensors = {"model.embed_tokens.weight": ("BF16", (vocab, hidden))}
    for layer in range(config["num_hidden_layers"]):
        prefix = f"model.layers.{layer}"
        tensors[f"{prefix}.input_layernorm.weight"] = ("BF16", (hidden,))
        tensors[f"{prefix}.post_attention_layernorm.weight"] = ("BF16", (hidden,))
        for projection, width in (
            ("q_proj", heads * head_dim),
            ("k_proj", kv_heads * head_dim),
            ("v_proj", kv_heads * head_dim),
        ):
            tensors[f"{prefix}.self_attn.{projection}.weight"] = ("BF16", (width, hidden))
            tensors[f"{prefix}.self_attn.{projection}.bias"] = ("BF16", (width,))
        tensors[f"{prefix}.self_attn.o_proj.weight"] = ("BF16", (hidden, heads * head_dim))
        tensors[f"{prefix}.self_attn.o_proj.bias"] = ("BF16", (hidden,))
        tensors[f"{prefix}.self_attn.sinks"] = ("BF16", (heads,))
        tensors[f"{prefix}.mlp.router.weight"] = ("BF16", (experts, hidden))
        tensors[f"{prefix}.mlp.router.bias"] = ("BF16", (experts,))
        mlp = f"{prefix}.mlp.experts"
        for projection, rows in (("gate_up_proj", 2 * intermediate), ("down_proj", hidden)):
            tensors[f"{mlp}.{projection}_blocks"] = ("U8", (experts, rows, blocks, 16))
            tensors[f"{mlp}.{projection}_scales"] = ("U8", (experts, rows, blocks))
            tensors[f"{mlp}.{projection}_bias"] = ("BF16", (experts, rows))
    tensors["model.norm.weight"] = ("BF16", (hidden,))
    tensors["lm_head.weight"] = ("BF16", (vocab, hidden))
    return tensors


def modelopt_nvfp4_tensors(config: Mapping[str, Any]) -> Tensors:
    """A ModelOpt NVFP4 export of a Llama-style ``config``: every linear of the layers packed, ``lm_head``
    (excluded) and the rest BF16."""
    tensors: Tensors = {}
    for name, (dtype, shape) in decoder_tensors(config).items():
        if not _is_layer_linear(name):
            tensors[name] = (dtype, shape)
            continue
        rows, columns = shape
        module = name.removesuffix(".weight")
        tensors[f"{module}.input_scale"] = ("F32", ())
        tensors[name] = ("U8", (rows, columns // 2))
        tensors[f"{module}.weight_scale"] = ("F8_E4M3", (rows, columns // 16))
        tensors[f"{module}.weight_scale_2"] = ("F32", ())
    return tensors


def compressed_fp8_tensors(config: Mapping[str, Any]) -> Tensors:
    """A compressed-tensors FP8-dynamic model of a Llama-style ``config``: every linear of the layers F8 with
    a per-channel BF16 scale."""
    tensors: Tensors = {}
    for name, (dtype, shape) in decoder_tensors(config).items():
        if not _is_layer_linear(name):
            tensors[name] = (dtype, shape)
            continue
        tensors[name] = ("F8_E4M3", shape)
        tensors[f"{name.removesuffix('.weight')}.weight_scale"] = ("BF16", (shape[0], 1))
    return tensors


def _fbgemm_not_converted(config: Mapping[str, Any]) -> list[str]:
    """Llama-3.1-405B-Instruct-FP8's ``modules_to_not_convert``: attention everywhere, the first and last
    layers' MLPs, ``lm_head``."""
    last = config["num_hidden_layers"] - 1
    modules = [
        f"model.layers.{layer}.self_attn.{projection}"
        for layer in range(config["num_hidden_layers"])
        for projection in ("q_proj", "k_proj", "v_proj", "o_proj")
    ]
    modules += [
        f"model.layers.{layer}.mlp.{p}" for layer in (0, last) for p in ("gate_proj", "up_proj", "down_proj")
    ]
    return [*modules, "lm_head"]


def fbgemm_fp8_tensors(config: Mapping[str, Any]) -> Tensors:
    """An FBGEMM FP8 model of a Llama-style ``config``: the linears not in ``modules_to_not_convert`` F8,
    each with a per-channel F32 scale."""
    not_converted = set(_fbgemm_not_converted(config))
    tensors: Tensors = {}
    for name, (dtype, shape) in decoder_tensors(config).items():
        if not _is_layer_linear(name) or name.removesuffix(".weight") in not_converted:
            tensors[name] = (dtype, shape)
            continue
        tensors[name] = ("F8_E4M3", shape)
        tensors[f"{name.removesuffix('.weight')}.weight_scale"] = ("F32", (shape[0], 1))
    return tensors


def _linear_shape(name: str, shape: Sequence[int]) -> tuple[str, int, int]:
    rows, columns = shape
    return name.removesuffix(".weight"), rows, columns


def gptq_tensors(config: Mapping[str, Any]) -> Tensors:
    """AutoGPTQ's 4-bit export of a Llama-style ``config`` (group size 128, with biases and ``g_idx``)."""
    tensors: Tensors = {}
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    for name, (_, shape) in decoder_tensors(config).items():
        if not _is_layer_linear(name):
            tensors[name] = ("F16", shape)  # an fp16 export
            if name.endswith(".input_layernorm.weight"):
                layer = name.removesuffix(".input_layernorm.weight")
                tensors[f"{layer}.self_attn.rotary_emb.inv_freq"] = ("F32", (head_dim // 2,))
            continue
        module, out, columns = _linear_shape(name, shape)
        tensors[f"{module}.bias"] = ("F16", (out,))
        tensors[f"{module}.g_idx"] = ("I32", (columns,))
        tensors[f"{module}.qweight"] = ("I32", (columns // 8, out))
        tensors[f"{module}.qzeros"] = ("I32", (columns // 128, out // 8))
        tensors[f"{module}.scales"] = ("F16", (columns // 128, out))
    return tensors


def awq_tensors(config: Mapping[str, Any]) -> Tensors:
    """AutoAWQ's 4-bit GEMM export of a Llama-style ``config`` (group size 128)."""
    tensors: Tensors = {}
    for name, (_, shape) in decoder_tensors(config).items():
        if not _is_layer_linear(name):
            tensors[name] = ("F16", shape)
            continue
        module, out, columns = _linear_shape(name, shape)
        tensors[f"{module}.qweight"] = ("I32", (columns, out // 8))
        tensors[f"{module}.qzeros"] = ("I32", (columns // 128, out // 8))
        tensors[f"{module}.scales"] = ("F16", (columns // 128, out))
    return tensors


def modelopt_w4a8_tensors(config: Mapping[str, Any]) -> Tensors:
    """ModelOpt's W4A8_AWQ export of a Llama-style ``config``: two 4-bit values a byte, a scale per group of
    128, the AWQ pre-quantization scale, an activation scale and a second weight scale."""
    tensors: Tensors = {}
    for name, (dtype, shape) in decoder_tensors(config).items():
        if not _is_layer_linear(name):
            tensors[name] = (dtype, shape)
            continue
        module, out, columns = _linear_shape(name, shape)
        tensors[f"{module}.input_scale"] = ("F32", ())
        tensors[f"{module}.pre_quant_scale"] = ("F16", (columns,))
        tensors[name] = ("U8", (out, columns // 2))
        tensors[f"{module}.weight_scale"] = ("F16", (out, columns // 128))
        tensors[f"{module}.weight_scale_2"] = ("F32", ())
    return tensors


def block_fp8_tensors(config: Mapping[str, Any]) -> Tensors:
    """Block-FP8 (DeepSeek-V3's way) of a Llama-style ``config``: an F32 ``weight_scale_inv`` a block."""
    tensors: Tensors = {}
    for name, (dtype, shape) in decoder_tensors(config).items():
        tensors[name] = ("F8_E4M3" if _is_layer_linear(name) else dtype, shape)
        if _is_layer_linear(name):
            module, out, columns = _linear_shape(name, shape)
            tensors[f"{module}.weight_scale_inv"] = ("F32", (-(-out // 128), -(-columns // 128)))
    return tensors


def compressed_w4a16_tensors(config: Mapping[str, Any]) -> Tensors:
    """compressed-tensors' pack-quantized W4A16 of a Llama-style ``config``: eight 4-bit values an I32."""
    tensors: Tensors = {}
    for name, (dtype, shape) in decoder_tensors(config).items():
        if not _is_layer_linear(name):
            tensors[name] = (dtype, shape)
            continue
        module, out, columns = _linear_shape(name, shape)
        tensors[f"{module}.weight_packed"] = ("I32", (out, columns // 8))
        tensors[f"{module}.weight_scale"] = ("BF16", (out, columns // 128))
        tensors[f"{module}.weight_shape"] = ("I64", (2,))
    return tensors


def stored_elements(tensors: Tensors) -> int:
    """What a count of stored elements gives (SPEC §10 before v5): every non-scalar tensor's product."""
    return sum(math.prod(shape) for _, shape in tensors.values() if shape)


@dataclass(frozen=True)
class QuantizedModel:
    """One published quantized checkpoint's layout."""

    #: The Hub repository it is published as.
    repo: str
    config: Mapping[str, Any]
    tensors: Callable[[], Tensors]
    shards: int
    #: ``hf_quant_config.json``, for a ModelOpt export.
    hf_quant_config: Mapping[str, Any] | None = None
    #: OME's catalog runtime (tests/data/ome-catalog) whose range the checkpoint's size must fall in.
    catalog_runtime: str = ""


def _with(config: Mapping[str, Any], quantization_config: Mapping[str, Any]) -> dict[str, Any]:
    return {**config, "quantization_config": dict(quantization_config)}


_GPTQ_CONFIG = {
    "bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": False, "sym": True,
    "true_sequential": True, "model_name_or_path": None, "model_file_base_name": "model",
    "quant_method": "gptq",
}  # fmt: skip
_AWQ_CONFIG = {"quant_method": "awq", "zero_point": True, "group_size": 128, "bits": 4, "version": "gemm"}
_W4A8_HF_QUANT_CONFIG: dict[str, Any] = {
    "producer": {"name": "modelopt", "version": "0.27.1"},
    "quantization": {
        "quant_algo": "W4A8_AWQ",
        "kv_cache_quant_algo": None,
        "group_size": 128,
        "exclude_modules": ["lm_head"],
    },
}
_FP4_HF_QUANT_CONFIG: dict[str, Any] = {
    "producer": {"name": "modelopt", "version": "0.27.1"},
    "quantization": {"quant_algo": "FP4", "kv_cache_quant_algo": None, "exclude_modules": ["lm_head"]},
}
_BLOCK_FP8_CONFIG = {
    "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128],
}  # fmt: skip
_W4A16_WEIGHTS = {
    "dynamic": False, "group_size": 128, "num_bits": 4, "strategy": "group", "symmetric": True, "type": "int",
}  # fmt: skip
_COMPRESSED_W4A16_CONFIG: dict[str, Any] = {
    "config_groups": {
        "group_0": {
            "input_activations": None,
            "targets": ["Linear"],
            "weights": _W4A16_WEIGHTS,
        }
    },
    "format": "pack-quantized",
    "ignore": ["lm_head"],
    "quant_method": "compressed-tensors",
    "quantization_status": "compressed",
}


QUANTIZED_MODELS = {
    "gpt-oss-120b": QuantizedModel(
        "openai/gpt-oss-120b",
        GPT_OSS_120B,
        lambda: gpt_oss_tensors(GPT_OSS_120B),
        15,
        catalog_runtime="runtimes/srt/openai/gpt-oss-120b-rt.yaml",
    ),
    "gpt-oss-20b": QuantizedModel(
        "openai/gpt-oss-20b",
        GPT_OSS_20B,
        lambda: gpt_oss_tensors(GPT_OSS_20B),
        3,
        catalog_runtime="runtimes/srt/lmsys/gpt-oss-20b-bf16-rt.yaml",
    ),
    "Llama-2-7B-GPTQ": QuantizedModel(
        "TheBloke/Llama-2-7B-GPTQ",
        _with(LLAMA_2_7B, _GPTQ_CONFIG),
        lambda: gptq_tensors(LLAMA_2_7B),
        1,
        catalog_runtime="runtimes/srt/meta/llama-2-7b-rt.yaml",
    ),
    "Llama-2-7B-AWQ": QuantizedModel(
        "TheBloke/Llama-2-7B-AWQ",
        _with(LLAMA_2_7B, _AWQ_CONFIG),
        lambda: awq_tensors(LLAMA_2_7B),
        1,
        catalog_runtime="runtimes/srt/meta/llama-2-7b-rt.yaml",
    ),
    "Llama-3.1-8B-Instruct-W4A8": QuantizedModel(
        "nvidia/Llama-3.1-8B-Instruct-W4A8",
        LLAMA_3_1_8B,
        lambda: modelopt_w4a8_tensors(LLAMA_3_1_8B),
        2,
        hf_quant_config=_W4A8_HF_QUANT_CONFIG,
        catalog_runtime="runtimes/srt/meta/llama-3-1-8b-instruct-rt.yaml",
    ),
    "Llama-3.1-8B-Instruct-FP4-modelopt": QuantizedModel(
        "nvidia/Llama-3.1-8B-Instruct-FP4-modelopt",
        LLAMA_3_1_8B,
        lambda: modelopt_nvfp4_tensors(LLAMA_3_1_8B),
        2,
        hf_quant_config=_FP4_HF_QUANT_CONFIG,
        catalog_runtime="runtimes/srt/meta/llama-3-1-8b-instruct-rt.yaml",
    ),
    "Llama-3.1-8B-Instruct-FP8-block": QuantizedModel(
        "example/Llama-3.1-8B-Instruct-FP8-block",
        _with(LLAMA_3_1_8B, _BLOCK_FP8_CONFIG),
        lambda: block_fp8_tensors(LLAMA_3_1_8B),
        2,
        catalog_runtime="runtimes/srt/meta/llama-3-1-8b-instruct-rt.yaml",
    ),
    "Llama-3.1-8B-Instruct-W4A16": QuantizedModel(
        "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16",
        _with(LLAMA_3_1_8B, _COMPRESSED_W4A16_CONFIG),
        lambda: compressed_w4a16_tensors(LLAMA_3_1_8B),
        2,
    ),
    "Llama-3.1-8B-Instruct-FP4": QuantizedModel(
        "nvidia/Llama-3.1-8B-Instruct-FP4",
        LLAMA_3_1_8B,
        lambda: modelopt_nvfp4_tensors(LLAMA_3_1_8B),
        2,
        hf_quant_config=NVFP4_HF_QUANT_CONFIG,
        catalog_runtime="runtimes/srt/meta/llama-3-1-8b-instruct-rt.yaml",
    ),
    "Llama-3.3-70B-Instruct-FP8-dynamic": QuantizedModel(
        "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
        _with(LLAMA_3_3_70B, COMPRESSED_FP8_CONFIG),
        lambda: compressed_fp8_tensors(LLAMA_3_3_70B),
        15,
        catalog_runtime="runtimes/vllm/llama-3-3-70b-instruct-fp8-dynamic-rt.yaml",
    ),
    "Llama-3.1-405B-Instruct-FP8": QuantizedModel(
        "meta-llama/Llama-3.1-405B-Instruct-FP8",
        _with(
            LLAMA_3_1_405B,
            {
                "activation_scale_ub": 1200.0,
                "modules_to_not_convert": _fbgemm_not_converted(LLAMA_3_1_405B),
                "quant_method": "fbgemm_fp8",
            },
        ),
        lambda: fbgemm_fp8_tensors(LLAMA_3_1_405B),
        109,
        catalog_runtime="runtimes/srt/meta/llama-3-1-405b-instruct-fp8-rt.yaml",
    ),
}


def write_quantized(folder: Path, model: QuantizedModel, tensors: Tensors | None = None) -> Tensors:
    """Write ``model``'s folder (config files, sharded sparse safetensors); returns its tensors."""
    tensors = model.tensors() if tensors is None else tensors
    write_json(folder / "config.json", model.config)
    if model.hf_quant_config is not None:
        write_json(folder / "hf_quant_config.json", model.hf_quant_config)
    write_sharded(folder, tensors, model.shards, {"format": "pt"})
    return tensors
