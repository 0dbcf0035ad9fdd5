"""Model folders for tests, benchmarks and the demo: real safetensors headers over sparse data, and real
architectures' shapes.

A file gets its 8-byte length, its JSON header, then is truncated (extended) to the size the offsets imply, so
a 1B-parameter model costs a few kilobytes of disk. Shapes and configs are those of the published models.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1}

#: name -> (dtype, shape)
Tensors = Mapping[str, tuple[str, Sequence[int]]]


def safetensors_header(tensors: Tensors, metadata: Mapping[str, str] | None = None) -> tuple[bytes, int]:
    """The 8-byte length and JSON header for ``tensors`` laid out in order; the bytes of data after it."""
    entries: dict[str, Any] = {}
    if metadata is not None:
        entries["__metadata__"] = dict(metadata)
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * DTYPE_BYTES[dtype]
        entries[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    header = json.dumps(entries, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)  # safetensors pads the header to 8 bytes with spaces
    return len(header).to_bytes(8, "little") + header, offset


def write_safetensors(path: Path, tensors: Tensors, metadata: Mapping[str, str] | None = None) -> int:
    """Write a sparse safetensors file; returns the header bytes (length prefix included)."""
    head, data_bytes = safetensors_header(tensors, metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        stream.write(head)
        stream.truncate(len(head) + data_bytes)
    return len(head)


def write_json(path: Path, document: Any) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(document, indent=2).encode()
    path.write_bytes(data)
    return len(data)


def write_sharded(
    folder: Path, tensors: Tensors, shards: int, metadata: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Split ``tensors`` over ``shards`` files plus ``model.safetensors.index.json``; header bytes by file."""
    names = list(tensors)
    bounds = [len(names) * index // shards for index in range(shards + 1)]  # as even as can be
    header_bytes: dict[str, int] = {}
    weight_map: dict[str, str] = {}
    for index in range(shards):
        shard = f"model-{index + 1:05d}-of-{shards:05d}.safetensors"
        chunk = {name: tensors[name] for name in names[bounds[index] : bounds[index + 1]]}
        header_bytes[shard] = write_safetensors(folder / shard, chunk, metadata)
        weight_map.update(dict.fromkeys(chunk, shard))
    index_document = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    write_json(folder / "model.safetensors.index.json", index_document)
    return header_bytes


# --- published models ---------------------------------------------------------------------------------------


def bert_minilm_tensors() -> dict[str, tuple[str, Sequence[int]]]:
    """sentence-transformers/all-MiniLM-L6-v2 (BertModel): 104 tensors, 22,713,728 parameters.

    22,713,216 weights plus the 512-element ``position_ids`` buffer, which the file stores and OME counts.
    """
    hidden, intermediate, vocab, positions = 384, 1536, 30522, 512
    tensors: dict[str, tuple[str, Sequence[int]]] = {
        "embeddings.position_ids": ("I64", [1, positions]),
        "embeddings.word_embeddings.weight": ("F32", [vocab, hidden]),
        "embeddings.position_embeddings.weight": ("F32", [positions, hidden]),
        "embeddings.token_type_embeddings.weight": ("F32", [2, hidden]),
        "embeddings.LayerNorm.weight": ("F32", [hidden]),
        "embeddings.LayerNorm.bias": ("F32", [hidden]),
    }
    for layer in range(6):
        prefix = f"encoder.layer.{layer}"
        for projection in ("query", "key", "value"):
            tensors[f"{prefix}.attention.self.{projection}.weight"] = ("F32", [hidden, hidden])
            tensors[f"{prefix}.attention.self.{projection}.bias"] = ("F32", [hidden])
        tensors[f"{prefix}.attention.output.dense.weight"] = ("F32", [hidden, hidden])
        tensors[f"{prefix}.attention.output.dense.bias"] = ("F32", [hidden])
        tensors[f"{prefix}.attention.output.LayerNorm.weight"] = ("F32", [hidden])
        tensors[f"{prefix}.attention.output.LayerNorm.bias"] = ("F32", [hidden])
        tensors[f"{prefix}.intermediate.dense.weight"] = ("F32", [intermediate, hidden])
        tensors[f"{prefix}.intermediate.dense.bias"] = ("F32", [intermediate])
        tensors[f"{prefix}.output.dense.weight"] = ("F32", [hidden, intermediate])
        tensors[f"{prefix}.output.dense.bias"] = ("F32", [hidden])
        tensors[f"{prefix}.output.LayerNorm.weight"] = ("F32", [hidden])
        tensors[f"{prefix}.output.LayerNorm.bias"] = ("F32", [hidden])
    tensors["pooler.dense.weight"] = ("F32", [hidden, hidden])
    tensors["pooler.dense.bias"] = ("F32", [hidden])
    return tensors


BERT_MINILM_CONFIG: dict[str, Any] = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "hidden_size": 384,
    "intermediate_size": 1536,
    "num_attention_heads": 12,
    "num_hidden_layers": 6,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "vocab_size": 30522,
    "transformers_version": "4.8.2",
}


def _decoder(
    model_type: str,
    architecture: str,
    *,
    vocab: int,
    hidden: int,
    intermediate: int,
    layers: int,
    heads: int,
    kv_heads: int,
    max_positions: int,
    tied: bool,
    transformers_version: str,
    head_dim: int | None = None,
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "architectures": [architecture],
        "model_type": model_type,
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "max_position_embeddings": max_positions,
        "tie_word_embeddings": tied,
        "rms_norm_eps": 1e-06,
        "torch_dtype": "bfloat16",
        "transformers_version": transformers_version,
    }
    if head_dim is not None:
        config["head_dim"] = head_dim
    return config


# The values of the models' published config.json files (the fields that shape the weights).
LLAMA_3_2_1B = _decoder(
    "llama", "LlamaForCausalLM", vocab=128256, hidden=2048, intermediate=8192, layers=16, heads=32,
    kv_heads=8, head_dim=64, max_positions=131072, tied=True, transformers_version="4.45.0.dev0",
)  # fmt: skip
LLAMA_3_2_3B = _decoder(
    "llama", "LlamaForCausalLM", vocab=128256, hidden=3072, intermediate=8192, layers=28, heads=24,
    kv_heads=8, head_dim=128, max_positions=131072, tied=True, transformers_version="4.45.0.dev0",
)  # fmt: skip
LLAMA_3_70B = _decoder(
    "llama", "LlamaForCausalLM", vocab=128256, hidden=8192, intermediate=28672, layers=80, heads=64,
    kv_heads=8, max_positions=8192, tied=False, transformers_version="4.40.0.dev0",
)  # fmt: skip
QWEN2_5_0_5B = _decoder(
    "qwen2", "Qwen2ForCausalLM", vocab=151936, hidden=896, intermediate=4864, layers=24, heads=14,
    kv_heads=2, max_positions=32768, tied=True, transformers_version="4.40.1",
)  # fmt: skip
QWEN2_5_7B = _decoder(
    "qwen2", "Qwen2ForCausalLM", vocab=152064, hidden=3584, intermediate=18944, layers=28, heads=28,
    kv_heads=4, max_positions=131072, tied=False, transformers_version="4.43.1",
)  # fmt: skip
QWEN3_8B = _decoder(
    "qwen3", "Qwen3ForCausalLM", vocab=151936, hidden=4096, intermediate=12288, layers=36, heads=32,
    kv_heads=8, head_dim=128, max_positions=40960, tied=False, transformers_version="4.51.0",
)  # fmt: skip
MISTRAL_7B_V0_1 = _decoder(
    "mistral", "MistralForCausalLM", vocab=32000, hidden=4096, intermediate=14336, layers=32, heads=32,
    kv_heads=8, max_positions=32768, tied=False, transformers_version="4.34.0.dev0",
)  # fmt: skip


def decoder_tensors(config: Mapping[str, Any], dtype: str = "BF16") -> dict[str, tuple[str, Sequence[int]]]:
    """The tensors transformers saves for a Llama/Mistral/Qwen2/Qwen3 ``config``, named as it names them."""
    hidden, vocab = config["hidden_size"], config["vocab_size"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    intermediate = config["intermediate_size"]
    qwen2, qwen3 = config["model_type"] == "qwen2", config["model_type"] == "qwen3"
    attention_bias = config.get("attention_bias", False)
    tensors: dict[str, tuple[str, Sequence[int]]] = {"model.embed_tokens.weight": (dtype, [vocab, hidden])}
    for layer in range(config["num_hidden_layers"]):
        prefix = f"model.layers.{layer}"
        tensors[f"{prefix}.input_layernorm.weight"] = (dtype, [hidden])
        widths = {"q_proj": heads * head_dim, "k_proj": kv_heads * head_dim, "v_proj": kv_heads * head_dim}
        for projection, width in widths.items():
            tensors[f"{prefix}.self_attn.{projection}.weight"] = (dtype, [width, hidden])
            if qwen2 or attention_bias:
                tensors[f"{prefix}.self_attn.{projection}.bias"] = (dtype, [width])
        tensors[f"{prefix}.self_attn.o_proj.weight"] = (dtype, [hidden, heads * head_dim])
        if attention_bias:
            tensors[f"{prefix}.self_attn.o_proj.bias"] = (dtype, [hidden])
        if qwen3:
            tensors[f"{prefix}.self_attn.q_norm.weight"] = (dtype, [head_dim])
            tensors[f"{prefix}.self_attn.k_norm.weight"] = (dtype, [head_dim])
        for projection, shape in (
            ("gate_proj", [intermediate, hidden]),
            ("up_proj", [intermediate, hidden]),
            ("down_proj", [hidden, intermediate]),
        ):
            tensors[f"{prefix}.mlp.{projection}.weight"] = (dtype, shape)
            if config.get("mlp_bias", False):
                tensors[f"{prefix}.mlp.{projection}.bias"] = (dtype, shape[:1])
        tensors[f"{prefix}.post_attention_layernorm.weight"] = (dtype, [hidden])
    tensors["model.norm.weight"] = (dtype, [hidden])
    if not config["tie_word_embeddings"]:
        tensors["lm_head.weight"] = (dtype, [vocab, hidden])
    return tensors
