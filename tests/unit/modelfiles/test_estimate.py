"""The count estimated from config.json alone, against the published models' exact counts.

Each row is a model's published config.json (the fields that shape its weights) and the parameter count of
its published safetensors weights. The relative error column records how far the estimate is from that count;
for the covered families the formula is exact, so every row is 0.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.model_folders import (
    LLAMA_3_2_1B,
    LLAMA_3_2_3B,
    LLAMA_3_70B,
    MISTRAL_7B_V0_1,
    QWEN2_5_0_5B,
    QWEN2_5_7B,
    QWEN3_8B,
    decoder_tensors,
)
from ome_selector.modelfiles.estimate import ESTIMATED_MODEL_TYPES, estimate_parameters
from ome_selector.modelfiles.safetensors import count_parameters

#: (model, config.json, exact count of the published weights, relative error of the estimate)
PUBLISHED = [
    ("meta-llama/Llama-3.2-1B", LLAMA_3_2_1B, 1_235_814_400, 0.0),
    ("meta-llama/Llama-3.2-3B", LLAMA_3_2_3B, 3_212_749_824, 0.0),
    ("meta-llama/Meta-Llama-3-70B", LLAMA_3_70B, 70_553_706_496, 0.0),
    ("Qwen/Qwen2.5-0.5B", QWEN2_5_0_5B, 494_032_768, 0.0),
    ("Qwen/Qwen2.5-7B", QWEN2_5_7B, 7_615_616_512, 0.0),
    ("Qwen/Qwen3-8B", QWEN3_8B, 8_190_735_360, 0.0),
    ("mistralai/Mistral-7B-v0.1", MISTRAL_7B_V0_1, 7_241_732_096, 0.0),
]


@pytest.mark.parametrize(("model", "config", "exact", "relative_error"), PUBLISHED)
def test_estimate_against_the_published_count(
    model: str, config: dict[str, Any], exact: int, relative_error: float
) -> None:
    estimate = estimate_parameters(config)
    assert estimate is not None, model
    assert (estimate - exact) / exact == relative_error, f"{model}: estimated {estimate}, exact {exact}"


@pytest.mark.parametrize(("model", "config", "exact", "relative_error"), PUBLISHED)
def test_the_generated_checkpoint_shapes_have_the_published_count(
    model: str, config: dict[str, Any], exact: int, relative_error: float
) -> None:
    """The shapes the reader tests write are the real checkpoints' (so their exact counts mean something)."""
    del relative_error
    assert count_parameters(shape for _, shape in decoder_tensors(config).values()) == exact, model


def test_head_dim_defaults_to_hidden_over_heads() -> None:
    without_head_dim = {key: value for key, value in LLAMA_3_2_1B.items() if key != "head_dim"}
    assert estimate_parameters(without_head_dim) == 1_235_814_400
    assert estimate_parameters({**without_head_dim, "num_key_value_heads": None}) == estimate_parameters(
        {**without_head_dim, "num_key_value_heads": 32}
    )


_SMALL_LLAMA = {
    "model_type": "llama",
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 176,
    "num_hidden_layers": 3,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}


@pytest.mark.parametrize(
    "config",
    [
        _SMALL_LLAMA,
        {**_SMALL_LLAMA, "attention_bias": True},
        {**_SMALL_LLAMA, "mlp_bias": True},
        {**_SMALL_LLAMA, "attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True},
        {**_SMALL_LLAMA, "head_dim": 16},
        {**_SMALL_LLAMA, "model_type": "mistral"},
        {**_SMALL_LLAMA, "model_type": "qwen2"},
        {**_SMALL_LLAMA, "model_type": "qwen2", "tie_word_embeddings": True},
        {**_SMALL_LLAMA, "model_type": "qwen3", "head_dim": 32},
        {**_SMALL_LLAMA, "model_type": "qwen3", "attention_bias": True},
    ],
)
def test_bias_norm_and_tying_variants_match_the_checkpoint_layout(config: dict[str, Any]) -> None:
    layout = decoder_tensors(config)
    assert estimate_parameters(config) == count_parameters(shape for _, shape in layout.values())


def test_biases_the_family_does_not_have_are_not_counted() -> None:
    mistral = {**_SMALL_LLAMA, "model_type": "mistral"}
    assert estimate_parameters({**mistral, "attention_bias": True, "mlp_bias": True}) == estimate_parameters(
        mistral
    )


@pytest.mark.parametrize(
    "config",
    [
        {},
        {**_SMALL_LLAMA, "model_type": "mixtral"},  # mixture of experts: not covered
        {**_SMALL_LLAMA, "model_type": "bert"},
        {**_SMALL_LLAMA, "model_type": None},
        {key: value for key, value in _SMALL_LLAMA.items() if key != "model_type"},
        {key: value for key, value in _SMALL_LLAMA.items() if key != "vocab_size"},
        {**_SMALL_LLAMA, "hidden_size": 0},
        {**_SMALL_LLAMA, "num_hidden_layers": "3"},
        {**_SMALL_LLAMA, "intermediate_size": 17.5},
        {**_SMALL_LLAMA, "num_attention_heads": True},
        {**_SMALL_LLAMA, "hidden_size": 65},  # heads do not divide it and no head_dim says otherwise
    ],
)
def test_no_estimate_for_other_families_or_missing_dimensions(config: dict[str, Any]) -> None:
    assert estimate_parameters(config) is None


def test_covered_families() -> None:
    assert ESTIMATED_MODEL_TYPES == ("llama", "mistral", "qwen2", "qwen3")
