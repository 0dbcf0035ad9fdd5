"""The largest published checkpoints' tensor layouts, for tests and benchmarks of SPEC §10.1's limits.

Shapes follow the published configs; files are written sparse (headers only) by
:func:`harness.model_folders.write_sharded`. DeepSeek-V3's layout is exact (91,991 tensors: block-FP8 weights,
each with its ``weight_scale_inv``, and the multi-token-prediction layer 61); Kimi-K2 is the same architecture
with 384 experts, filled up to its published 139,644 tensors with small norm-sized tensors; Qwen3-235B-A22B
and Llama-3.1-405B are exact (235,093,634,560 and 405,853,388,800 parameters).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.model_folders import _decoder, decoder_tensors

__all__ = ["LARGE_MODELS", "LLAMA_3_1_405B", "deepseek_v3_tensors", "kimi_k2_tensors", "qwen3_moe_tensors"]

Tensors = dict[str, tuple[str, Sequence[int]]]

LLAMA_3_1_405B = _decoder(
    "llama", "LlamaForCausalLM", vocab=128256, hidden=16384, intermediate=53248, layers=126, heads=128,
    kv_heads=8, max_positions=131072, tied=False, transformers_version="4.42.3",
)  # fmt: skip


def _blocks(size: int) -> int:
    return -(-size // 128)


def _fp8(tensors: Tensors, name: str, shape: tuple[int, int]) -> None:
    """A block-FP8 linear weight and its scales, one F32 per 128 x 128 block."""
    tensors[f"{name}.weight"] = ("F8_E4M3", shape)
    tensors[f"{name}.weight_scale_inv"] = ("F32", (_blocks(shape[0]), _blocks(shape[1])))


def _deepseek_layer(tensors: Tensors, prefix: str, experts: int, dense: bool) -> None:
    hidden, heads = 7168, 128
    tensors[f"{prefix}.input_layernorm.weight"] = ("BF16", (hidden,))
    tensors[f"{prefix}.post_attention_layernorm.weight"] = ("BF16", (hidden,))
    attention = f"{prefix}.self_attn"
    _fp8(tensors, f"{attention}.q_a_proj", (1536, hidden))
    tensors[f"{attention}.q_a_layernorm.weight"] = ("BF16", (1536,))
    _fp8(tensors, f"{attention}.q_b_proj", (heads * (128 + 64), 1536))
    _fp8(tensors, f"{attention}.kv_a_proj_with_mqa", (512 + 64, hidden))
    tensors[f"{attention}.kv_a_layernorm.weight"] = ("BF16", (512,))
    _fp8(tensors, f"{attention}.kv_b_proj", (heads * (128 + 128), 512))
    _fp8(tensors, f"{attention}.o_proj", (hidden, heads * 128))
    mlp = f"{prefix}.mlp"
    if dense:
        for name, shape in (
            ("gate_proj", (18432, hidden)),
            ("up_proj", (18432, hidden)),
            ("down_proj", (hidden, 18432)),
        ):
            _fp8(tensors, f"{mlp}.{name}", shape)
        return
    tensors[f"{mlp}.gate.weight"] = ("BF16", (experts, hidden))
    tensors[f"{mlp}.gate.e_score_correction_bias"] = ("F32", (experts,))
    for expert in [*(f"experts.{index}" for index in range(experts)), "shared_experts"]:
        for name, shape in (
            ("gate_proj", (2048, hidden)),
            ("up_proj", (2048, hidden)),
            ("down_proj", (hidden, 2048)),
        ):
            _fp8(tensors, f"{mlp}.{expert}.{name}", shape)


def _deepseek(experts: int, dense_layers: int, mtp: bool) -> Tensors:
    hidden, vocab = 7168, 129280
    tensors: Tensors = {"model.embed_tokens.weight": ("BF16", (vocab, hidden))}
    for layer in range(61):
        _deepseek_layer(tensors, f"model.layers.{layer}", experts, dense=layer < dense_layers)
    tensors["model.norm.weight"] = ("BF16", (hidden,))
    tensors["lm_head.weight"] = ("BF16", (vocab, hidden))
    if mtp:  # layer 61 predicts the next token but one
        _deepseek_layer(tensors, "model.layers.61", experts, dense=False)
        for name, shape in (
            ("enorm.weight", (hidden,)),
            ("hnorm.weight", (hidden,)),
            ("eh_proj.weight", (hidden, 2 * hidden)),
            ("embed_tokens.weight", (vocab, hidden)),
            ("shared_head.norm.weight", (hidden,)),
            ("shared_head.head.weight", (vocab, hidden)),
        ):
            tensors[f"model.layers.61.{name}"] = ("BF16", shape)
    return tensors


def deepseek_v3_tensors() -> Tensors:
    """deepseek-ai/DeepSeek-V3: 91,991 tensors."""
    return _deepseek(experts=256, dense_layers=3, mtp=True)


def kimi_k2_tensors() -> Tensors:
    """moonshotai/Kimi-K2-Instruct's size: 139,644 tensors (DeepSeek-V3's architecture with 384 experts)."""
    tensors = _deepseek(experts=384, dense_layers=1, mtp=False)
    for index in range(139_644 - len(tensors)):
        tensors[f"model.layers.{index % 61}.extra_norm_{index}.weight"] = ("BF16", (7168,))
    return tensors


def qwen3_moe_tensors() -> Tensors:
    """Qwen/Qwen3-235B-A22B: 94 layers of 128 experts, 235,093,634,560 parameters."""
    hidden, vocab, heads, kv_heads, head_dim, expert_width = 4096, 151936, 64, 4, 128, 1536
    tensors: Tensors = {"model.embed_tokens.weight": ("BF16", (vocab, hidden))}
    for layer in range(94):
        prefix = f"model.layers.{layer}"
        tensors[f"{prefix}.input_layernorm.weight"] = ("BF16", (hidden,))
        tensors[f"{prefix}.post_attention_layernorm.weight"] = ("BF16", (hidden,))
        for name, shape in (
            ("q_proj", (heads * head_dim, hidden)),
            ("k_proj", (kv_heads * head_dim, hidden)),
            ("v_proj", (kv_heads * head_dim, hidden)),
            ("o_proj", (hidden, heads * head_dim)),
        ):
            tensors[f"{prefix}.self_attn.{name}.weight"] = ("BF16", shape)
        tensors[f"{prefix}.self_attn.q_norm.weight"] = ("BF16", (head_dim,))
        tensors[f"{prefix}.self_attn.k_norm.weight"] = ("BF16", (head_dim,))
        tensors[f"{prefix}.mlp.gate.weight"] = ("BF16", (128, hidden))
        for expert in range(128):
            for name, shape in (
                ("gate_proj", (expert_width, hidden)),
                ("up_proj", (expert_width, hidden)),
                ("down_proj", (hidden, expert_width)),
            ):
                tensors[f"{prefix}.mlp.experts.{expert}.{name}.weight"] = ("BF16", shape)
    tensors["model.norm.weight"] = ("BF16", (hidden,))
    tensors["lm_head.weight"] = ("BF16", (vocab, hidden))
    return tensors


def _llama_405b() -> Tensors:
    return dict(decoder_tensors(LLAMA_3_1_405B))


#: name -> (tensors, shards, the published parameter count or None when the layout is only the size).
LARGE_MODELS = {
    "Llama-3.1-405B": (_llama_405b, 191, 405_853_388_800),
    "DeepSeek-V3": (deepseek_v3_tensors, 163, None),
    "Kimi-K2": (kimi_k2_tensors, 62, None),
    "Qwen3-235B-A22B": (qwen3_moe_tensors, 118, 235_093_634_560),
}
