"""What config.json and model_index.json give (pure): architecture, framework, quantization, maxTokens."""

from __future__ import annotations

from typing import Any

import pytest

from ome_selector.modelfiles.config import (
    DiffusersPipeline,
    TransformersConfig,
    diffusers_pipeline,
    quantization,
    transformers_config,
)


@pytest.mark.parametrize(
    ("algorithm", "bits", "expected"),
    [
        # SPEC §10 (v5), in its order: the exact names first
        ("fbgemm_fp8", None, "fbgemm_fp8"),  # kept apart from fp8 (v4 made it fp8)
        ("nvfp4", None, "nvfp4"),
        ("NVFP4", None, "nvfp4"),  # ModelOpt's quant_algo is upper-case: lower-cased first
        ("mxfp4", None, "mxfp4"),
        (" MXFP4 ", None, "mxfp4"),  # and trimmed
        ("compressed-tensors", None, "compressed-tensors"),
        ("compressed_tensors", None, "compressed-tensors"),
        # then "containing"
        ("int4", None, "int4"),
        ("awq_int4", None, "int4"),
        ("int4_fp8_mix", None, "int4"),  # int4 wins, as OME maps it
        ("W4A8_AWQ", None, "int4"),
        ("w4a16_nvfp4", None, "int4"),  # not exactly nvfp4: w4a decides
        ("W4A8_NVFP4_FP8", None, "int4"),
        ("fp8", None, "fp8"),
        ("FP8", None, "fp8"),
        ("FP8_PB_WO", None, "fp8"),
        ("nvfp4_awq", None, None),  # only nvfp4 exactly is nvfp4
        ("fbgemm_fp8 ", None, "fbgemm_fp8"),
        ("fbgemm-fp8", None, "fp8"),  # not exactly fbgemm_fp8: contains fp8
        # gptq and awq with their bits
        ("gptq", 4, "int4"),
        ("awq", 4, "int4"),
        ("GPTQ", 4, "int4"),
        ("gptq", 8, None),  # int8_gptq: no mapping
        ("gptq", None, None),
        ("awq", "4", None),  # bits that are not an integer are not read
        ("gptq", True, None),
        ("gptq", 0, None),
        ("bitsandbytes", 4, None),  # only gptq and awq read their bits
        # anything else
        ("bitsandbytes", None, None),
        ("", None, None),
        (None, None, None),
        (8, None, None),
        # a value longer than 128 characters is not guessed at, whatever it contains
        ("int4" + "x" * 124, None, "int4"),
        ("int4" + "x" * 125, None, None),
        ("fp8" + " " * 200, None, None),
    ],
)
def test_quantization_mapping(algorithm: object, bits: object, expected: str | None) -> None:
    assert quantization(algorithm, bits) == expected


def _quantized(quantization_config: object) -> dict[str, Any]:
    return {"architectures": ["LlamaForCausalLM"], "quantization_config": quantization_config}


@pytest.mark.parametrize(
    ("config", "hf_quant_config", "expected", "exclusions"),
    [
        # hf_quant_config.json (ModelOpt) wins over the embedded quantization_config
        (
            _quantized({"quant_method": "fp8"}),
            {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}},
            "nvfp4",
            {"lm_head"},
        ),
        # quant_algo wins over quant_method
        (_quantized({"quant_method": "modelopt", "quant_algo": "NVFP4"}), None, "nvfp4", set()),
        (_quantized({"quant_method": "mxfp4", "quant_algo": 7}), None, "mxfp4", set()),
        # a ModelOpt file without a string quant_algo says nothing: config.json does
        (_quantized({"quant_method": "fp8"}), {"quantization": {"quant_algo": None}}, "fp8", set()),
        (_quantized({"quant_method": "fp8"}), {"producer": {"name": "modelopt"}}, "fp8", set()),
        (_quantized({"quant_method": "fp8"}), {"quantization": "NVFP4"}, "fp8", set()),
        # ... but one that names an algorithm decides, even one that maps to nothing
        (_quantized({"quant_method": "fp8"}), {"quantization": {"quant_algo": "W8A8_SQ"}}, None, set()),
        # gptq/awq bits are read in config.json's quantization_config
        (_quantized({"quant_method": "gptq", "bits": 4, "group_size": 128}), None, "int4", set()),
        # the four exclusion lists, from both files, each name once; only what could name a module
        (
            _quantized(
                {
                    "quant_method": "mxfp4",
                    "modules_to_not_convert": ["lm_head", "model.embed_tokens"],
                    "ignore": ["lm_head", 3, "", None, ["x"]],
                    "ignored_layers": ["model.layers.0.mlp.gate"],
                    "exclude_modules": "lm_head",
                }
            ),
            {"quantization": {"exclude_modules": ["vision_tower"]}},
            "mxfp4",
            {"lm_head", "model.embed_tokens", "model.layers.0.mlp.gate", "vision_tower"},
        ),
        # exclusions matter only to the quantization-aware count: not kept for another quantization
        (
            _quantized({"quant_method": "compressed-tensors", "ignore": ["lm_head"]}),
            None,
            "compressed-tensors",
            set(),
        ),
        (
            _quantized({"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head"]}),
            None,
            "fbgemm_fp8",
            set(),
        ),
    ],
)
def test_quantization_from_both_files(
    config: dict[str, Any], hf_quant_config: dict[str, Any] | None, expected: str | None, exclusions: set[str]
) -> None:
    settings = transformers_config(config, hf_quant_config)
    assert (settings.quantization, settings.exclusions) == (expected, frozenset(exclusions))
    assert settings.quant_aware == (expected in ("nvfp4", "mxfp4"))


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {
                "architectures": ["LlamaForCausalLM"],
                "transformers_version": "4.45.0.dev0",
                "max_position_embeddings": 131072,
                "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"},
            },
            TransformersConfig("LlamaForCausalLM", "4.45.0.dev0", "fp8", 131072),
        ),
        ({}, TransformersConfig(None, None, None, None)),
        (
            {"architectures": ["A", "B"], "max_position_embeddings": 512},
            TransformersConfig("A", None, None, 512),
        ),
        # values of the wrong type teach nothing
        (
            {
                "architectures": "LlamaForCausalLM",
                "transformers_version": 4.45,
                "max_position_embeddings": True,
                "quantization_config": "fp8",
            },
            TransformersConfig(None, None, None, None),
        ),
        (
            {"architectures": [], "transformers_version": "", "max_position_embeddings": 0},
            TransformersConfig(None, None, None, None),
        ),
        (
            {"architectures": [None], "max_position_embeddings": -1},
            TransformersConfig(None, None, None, None),
        ),
        ({"max_position_embeddings": 4096.0}, TransformersConfig(None, None, None, None)),
        ({"quantization_config": {"bits": 4}}, TransformersConfig(None, None, None, None)),
    ],
)
def test_transformers_config(document: dict[str, Any], expected: TransformersConfig) -> None:
    assert transformers_config(document) == expected


def test_diffusers_pipeline_components_and_version() -> None:
    model_index = {
        "_class_name": "StableDiffusionPipeline",
        "_diffusers_version": "0.6.0",
        "feature_extractor": ["transformers", "CLIPImageProcessor"],
        "safety_checker": [None, None],  # an unused slot
        "scheduler": ["diffusers", "PNDMScheduler"],
        "text_encoder": ["transformers", "CLIPTextModel"],
        "tokenizer": ["transformers", "CLIPTokenizer"],
        "unet": ["diffusers", "UNet2DConditionModel"],
        "vae": ["diffusers", "AutoencoderKL"],
        "requires_safety_checker": False,
    }
    assert diffusers_pipeline(model_index) == DiffusersPipeline(
        diffusers_version="0.6.0",
        components=("feature_extractor", "scheduler", "text_encoder", "tokenizer", "unet", "vae"),
    )


def test_diffusers_pipeline_without_version() -> None:
    assert diffusers_pipeline({"_diffusers_version": 6}) == DiffusersPipeline(None, ())
