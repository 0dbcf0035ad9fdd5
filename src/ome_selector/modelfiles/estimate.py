"""A parameter count estimated from ``config.json`` alone, for models without safetensors weights (pure).

Covers the decoder-only families built like Llama: token embeddings; per layer an attention block with grouped
KV heads (q, k, v, o projections), a gated MLP (gate, up, down) and two RMSNorms; a final norm; an output
projection unless it is tied to the embeddings. The families differ only in biases and norms:

=========  ================================================  ==========================
family     attention biases                                  extra per layer
=========  ================================================  ==========================
llama      q, k, v, o when ``attention_bias``; MLP biases     --
           when ``mlp_bias``
mistral    none                                              --
qwen2      q, k, v (always; o has none)                      --
qwen3      q, k, v, o when ``attention_bias``                q_norm, k_norm (head_dim)
=========  ================================================  ==========================

For these families the formula is the models' exact count (see the tests), so "estimated" only means it did
not come from the weights. Any other ``model_type``, or a missing or malformed dimension, gives no estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ESTIMATED_MODEL_TYPES", "estimate_parameters"]


@dataclass(frozen=True, slots=True)
class _Family:
    qkv_bias: bool  # q, k and v projections always have biases
    optional_attention_bias: bool  # `attention_bias: true` adds biases to q, k, v and o
    optional_mlp_bias: bool  # `mlp_bias: true` adds biases to gate, up and down
    qk_norm: bool  # per-head RMSNorm on queries and keys


_FAMILIES: dict[str, _Family] = {
    "llama": _Family(qkv_bias=False, optional_attention_bias=True, optional_mlp_bias=True, qk_norm=False),
    "mistral": _Family(qkv_bias=False, optional_attention_bias=False, optional_mlp_bias=False, qk_norm=False),
    "qwen2": _Family(qkv_bias=True, optional_attention_bias=False, optional_mlp_bias=False, qk_norm=False),
    "qwen3": _Family(qkv_bias=False, optional_attention_bias=True, optional_mlp_bias=False, qk_norm=True),
}

#: The ``model_type`` values :func:`estimate_parameters` covers.
ESTIMATED_MODEL_TYPES: tuple[str, ...] = tuple(_FAMILIES)


def _positive(config: Mapping[str, Any], key: str) -> int | None:
    value = config.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _flag(config: Mapping[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    return value if isinstance(value, bool) else default


def estimate_parameters(config: Mapping[str, Any]) -> int | None:
    """The parameter count of the model ``config`` (a ``config.json`` document) describes, or None.

    None when the ``model_type`` is not one of :data:`ESTIMATED_MODEL_TYPES` or a dimension is missing.
    """
    model_type = config.get("model_type")
    family = _FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        return None
    vocab = _positive(config, "vocab_size")
    hidden = _positive(config, "hidden_size")
    layers = _positive(config, "num_hidden_layers")
    heads = _positive(config, "num_attention_heads")
    intermediate = _positive(config, "intermediate_size")
    if vocab is None or hidden is None or layers is None or heads is None or intermediate is None:
        return None
    kv_heads = _positive(config, "num_key_value_heads") or heads
    head_dim = _positive(config, "head_dim")
    if head_dim is None:
        if hidden % heads:
            return None
        head_dim = hidden // heads

    q_width, kv_width = heads * head_dim, kv_heads * head_dim
    attention = hidden * q_width + 2 * hidden * kv_width + q_width * hidden
    if family.qkv_bias:
        attention += q_width + 2 * kv_width
    if family.optional_attention_bias and _flag(config, "attention_bias", default=False):
        attention += q_width + 2 * kv_width + hidden
    if family.qk_norm:
        attention += 2 * head_dim
    mlp = 3 * hidden * intermediate
    if family.optional_mlp_bias and _flag(config, "mlp_bias", default=False):
        mlp += 2 * intermediate + hidden
    layer = attention + mlp + 2 * hidden  # input and post-attention norms

    embeddings = vocab * hidden
    output = 0 if _flag(config, "tie_word_embeddings", default=False) else vocab * hidden
    return embeddings + layers * layer + hidden + output
