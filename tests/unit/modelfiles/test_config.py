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
    ("quant_method", "expected"),
    [
        ("fp8", "fp8"),
        ("fbgemm_fp8", "fp8"),
        ("int4", "int4"),
        ("awq_int4", "int4"),
        ("int4_fp8_mix", "int4"),  # int4 wins, as OME maps it
        ("gptq", None),
        ("awq", None),
        ("bitsandbytes", None),
        ("compressed-tensors", None),
        ("FP8", None),  # the mapping is on the value as written
        ("", None),
        (None, None),
        (8, None),
    ],
)
def test_quantization_mapping(quant_method: object, expected: str | None) -> None:
    assert quantization(quant_method) == expected


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
