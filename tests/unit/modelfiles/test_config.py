"""What config.json and model_index.json give (pure): architecture, framework, quantization, maxTokens."""

from __future__ import annotations

from typing import Any

import pytest

from ome_selector.modelfiles.config import (
    DiffusersPipeline,
    Quantized,
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
        (" gptq ", 4, "int4"),  # trimmed first
        # (v6) OME compares the method names case-sensitively: GPTQ stays GPTQ, which maps to nothing
        ("GPTQ", 4, None),
        ("Awq", 4, None),
        ("gptq", 40, "int4"),  # INT40_GPTQ contains int4, as OME reads it
        ("gptq", 2**63 - 1, None),  # OME's bits is a Go int
        ("gptq", 8, None),  # int8_gptq: no mapping
        ("gptq", None, None),
        ("awq", "4", None),  # bits that are not an integer are not read
        ("gptq", True, None),
        ("gptq", 0, None),
        ("bitsandbytes", 4, None),  # only gptq and awq read their bits
        # anything else
        ("bitsandbytes", None, None),
        ("fp4", None, None),  # (v6) ModelOpt's FP4 is counted packed but learns no quantization
        ("FP4", None, None),
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


_ALL_LISTS = {
    "quant_method": "mxfp4",
    "modules_to_not_convert": ["lm_head", "model.layers.*.self_attn"],
    "ignore": ["vision_tower"],
    "ignored_layers": ["model.layers.0.mlp.gate"],
    "exclude_modules": ["never", "read"],
}


@pytest.mark.parametrize(
    ("config", "hf_quant_config", "expected", "quantized"),
    [
        # (v6) hf_quant_config.json (ModelOpt), when it parses, decides alone: algorithm and exclusions
        (
            _quantized({"quant_method": "fp8", "ignore": ["x"]}),
            {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}},
            "nvfp4",
            Quantized("NVFP4", ("lm_head",)),
        ),
        # ... even without an algorithm: quantized, factor 1, no quantization learned
        (_quantized({"quant_method": "fp8"}), {"quantization": {"quant_algo": None}}, None, Quantized("")),
        (_quantized({"quant_method": "fp8"}), {"producer": {"name": "modelopt"}}, None, Quantized("")),
        # one that does not parse as OME reads it (a field of the wrong JSON type): config.json decides
        (_quantized({"quant_method": "fp8"}), {"quantization": "NVFP4"}, "fp8", Quantized("fp8")),
        (_quantized({"quant_method": "fp8"}), {"quantization": {"quant_algo": 4}}, "fp8", Quantized("fp8")),
        (
            _quantized({"quant_method": "fp8"}),
            {"quantization": {"quant_algo": "NVFP4", "group_size": 16.5}},
            "fp8",
            Quantized("fp8"),
        ),
        (
            _quantized({"quant_method": "fp8"}),
            {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head", 3]}},
            "fp8",
            Quantized("fp8"),
        ),
        (_quantized({"quant_method": "fp8"}), {"quant_method": 1}, "fp8", Quantized("fp8")),
        # an algorithm that maps to nothing still makes the checkpoint quantized
        (
            _quantized({"quant_method": "fp8"}),
            {"quantization": {"quant_algo": "W8A8_SQ"}},
            None,
            Quantized("W8A8_SQ"),
        ),
        # quant_algo (trimmed, not empty) wins over quant_method
        (
            _quantized({"quant_method": "modelopt", "quant_algo": " NVFP4 "}),
            None,
            "nvfp4",
            Quantized("NVFP4"),
        ),
        (_quantized({"quant_method": "mxfp4", "quant_algo": "  "}), None, "mxfp4", Quantized("mxfp4")),
        (_quantized({"quant_method": "mxfp4", "quant_algo": 7}), None, "mxfp4", Quantized("mxfp4")),
        # gptq/awq bits, lower case only
        (_quantized({"quant_method": "gptq", "bits": 4}), None, "int4", Quantized("INT4_GPTQ")),
        (_quantized({"quant_method": "GPTQ", "bits": 4}), None, None, Quantized("GPTQ")),
        (_quantized({"quant_method": "awq", "bits": 4.0}), None, None, Quantized("awq")),
        # no algorithm: not quantized
        (_quantized({"quant_method": ""}), None, None, None),
        (_quantized({"bits": 4}), None, None, None),
        (_quantized("mxfp4"), None, None, None),
        # the first non-empty list of three, never their union; exclude_modules only in hf_quant_config.json
        (_quantized(_ALL_LISTS), None, "mxfp4", Quantized("mxfp4", ("lm_head", "model.layers.*.self_attn"))),
        (
            _quantized(_ALL_LISTS | {"modules_to_not_convert": []}),
            None,
            "mxfp4",
            Quantized("mxfp4", ("vision_tower",)),
        ),
        (
            _quantized(_ALL_LISTS | {"modules_to_not_convert": None, "ignore": []}),
            None,
            "mxfp4",
            Quantized("mxfp4", ("model.layers.0.mlp.gate",)),
        ),
        # anything but a string in the chosen list names no module
        (
            _quantized({"quant_method": "compressed-tensors", "ignore": ["lm_head", 3, None]}),
            None,
            "compressed-tensors",
            Quantized("compressed-tensors", ("lm_head",)),
        ),
    ],
)
def test_quantization_from_both_files(
    config: dict[str, Any],
    hf_quant_config: dict[str, Any] | None,
    expected: str | None,
    quantized: Quantized | None,
) -> None:
    settings = transformers_config(config, hf_quant_config)
    assert (settings.quantization, settings.quantized) == (expected, quantized)
    assert settings.quant_aware == (quantized is not None)


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
            TransformersConfig("LlamaForCausalLM", "4.45.0.dev0", "fp8", 131072, Quantized("fp8")),
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
