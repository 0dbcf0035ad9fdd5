"""What ``config.json`` and ``model_index.json`` say about a model (SPEC §10; pure, no I/O).

Values of the wrong type, or outside their grammar (SPEC §10.3), teach nothing: they leave the field unset
rather than fail the whole model, since everything else may still be learnable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_TOKENS",
    "DiffusersPipeline",
    "TransformersConfig",
    "diffusers_pipeline",
    "learned_architecture",
    "learned_max_tokens",
    "learned_version",
    "quantization",
    "transformers_config",
]

#: The grammars of learned values (SPEC §10.3): every real architecture and version matches.
_ARCHITECTURE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}")
#: OME's ``maxTokens`` is an int32.
MAX_TOKENS = 2**31 - 1


@dataclass(frozen=True, slots=True)
class TransformersConfig:
    """The fields of a ``config.json`` that become model metadata."""

    architecture: str | None
    transformers_version: str | None
    quantization: str | None
    max_tokens: int | None


@dataclass(frozen=True, slots=True)
class DiffusersPipeline:
    """A diffusers ``model_index.json``: its version and the components that may carry weights."""

    diffusers_version: str | None
    components: tuple[str, ...]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _matching(grammar: re.Pattern[str], value: object) -> str | None:
    return value if isinstance(value, str) and grammar.fullmatch(value) else None


def learned_architecture(value: object) -> str | None:
    """``value`` when it is a ``modelArchitecture`` of SPEC §10.3's grammar, else None."""
    return _matching(_ARCHITECTURE, value)


def learned_version(value: object) -> str | None:
    """``value`` when it is a transformers or diffusers version of SPEC §10.3's grammar, else None."""
    return _matching(_VERSION, value)


def learned_max_tokens(value: object) -> int | None:
    """``value`` when it is a ``maxTokens`` of SPEC §10.3 (an int32 >= 1), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_TOKENS:
        return value
    return None


def quantization(quant_method: object) -> str | None:
    """OME's mapping of ``quantization_config.quant_method``: ``int4``, else ``fp8``, else unset."""
    if not isinstance(quant_method, str):
        return None
    if "int4" in quant_method:
        return "int4"
    if "fp8" in quant_method:
        return "fp8"
    return None


def transformers_config(document: Mapping[str, Any]) -> TransformersConfig:
    """The metadata a ``config.json`` document gives."""
    architectures = document.get("architectures")
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    quantization_config = document.get("quantization_config")
    quant_method = quantization_config.get("quant_method") if isinstance(quantization_config, dict) else None
    max_tokens = document.get("max_position_embeddings")
    return TransformersConfig(
        architecture=learned_architecture(first),
        transformers_version=learned_version(document.get("transformers_version")),
        quantization=quantization(quant_method),
        max_tokens=learned_max_tokens(max_tokens),
    )


def _is_component(value: object) -> bool:
    """A pipeline component entry: ``[library, class]`` (``[null, null]`` marks an unused slot)."""
    return isinstance(value, list) and len(value) == 2 and all(_text(part) for part in value)


def diffusers_pipeline(document: Mapping[str, Any]) -> DiffusersPipeline:
    """The pipeline a ``model_index.json`` document describes (keys starting ``_`` are its own attributes)."""
    components = tuple(
        sorted(key for key, value in document.items() if not key.startswith("_") and _is_component(value))
    )
    return DiffusersPipeline(
        diffusers_version=learned_version(document.get("_diffusers_version")), components=components
    )
