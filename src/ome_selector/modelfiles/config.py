"""What ``config.json``, ``hf_quant_config.json`` and ``model_index.json`` say about a model (SPEC §10; pure,
no I/O).

Values of the wrong type, or outside their grammar (SPEC §10.3), teach nothing: they leave the field unset
rather than fail the whole model, since everything else may still be learnable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EXCLUSION_KEYS",
    "MAX_QUANTIZATION_TEXT",
    "MAX_TOKENS",
    "QUANTIZATIONS",
    "QUANT_AWARE",
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
#: Every ``quantization`` SPEC §10 learns (OME main's values).
QUANTIZATIONS = frozenset({"fbgemm_fp8", "nvfp4", "mxfp4", "compressed-tensors", "int4", "fp8"})
#: The learned values under which the parameter count is quantization-aware (SPEC §10).
QUANT_AWARE = frozenset({"nvfp4", "mxfp4"})
#: A longer algorithm name is not guessed at (no "contains int4" over megabytes): the limit of the longest
#: grammar of SPEC §10.3, ``modelArchitecture``.
MAX_QUANTIZATION_TEXT = 128
#: The lists of modules a quantization config leaves unquantized (ModelOpt, transformers, compressed-tensors,
#: FBGEMM/vLLM): their ``U8`` tensors count once even in a 4-bit checkpoint (SPEC §10).
EXCLUSION_KEYS = ("exclude_modules", "modules_to_not_convert", "ignore", "ignored_layers")
#: gptq and awq name their bits apart: ``bits: 4`` reads as ``int4_gptq`` (OME main).
_BITS_METHODS = frozenset({"gptq", "awq"})
_MAX_BITS = 64


@dataclass(frozen=True, slots=True)
class TransformersConfig:
    """The fields of a ``config.json`` that become model metadata."""

    architecture: str | None
    transformers_version: str | None
    quantization: str | None
    max_tokens: int | None
    #: The module names of the quantization configs' exclusion lists (SPEC §10), each once.
    exclusions: frozenset[str] = frozenset()

    @property
    def quant_aware(self) -> bool:
        """Whether the parameter count follows SPEC §10's quantization-aware rule."""
        return self.quantization in QUANT_AWARE


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


def quantization(algorithm: object, bits: object = None) -> str | None:
    """OME main's mapping of a quantization algorithm (SPEC §10): lower-cased and trimmed, exactly
    ``fbgemm_fp8``, ``nvfp4``, ``mxfp4`` or ``compressed-tensors`` (also ``compressed_tensors``), else one
    containing ``int4`` or ``w4a`` is ``int4``, else one containing ``fp8`` is ``fp8``, else unset.
    ``gptq``/``awq`` with an integer ``bits`` read as ``int<bits>_gptq``/``int<bits>_awq`` first. A value
    longer than :data:`MAX_QUANTIZATION_TEXT` characters is not guessed at."""
    if not isinstance(algorithm, str) or len(algorithm) > MAX_QUANTIZATION_TEXT:
        return None
    name = algorithm.strip().lower()
    if name in _BITS_METHODS and type(bits) is int and 0 < bits <= _MAX_BITS:
        name = f"int{bits}_{name}"
    if name in ("fbgemm_fp8", "nvfp4", "mxfp4"):
        return name
    if name in ("compressed-tensors", "compressed_tensors"):
        return "compressed-tensors"
    if "int4" in name or "w4a" in name:
        return "int4"
    if "fp8" in name:
        return "fp8"
    return None


def _section(document: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    section = document.get(key) if document is not None else None
    return section if isinstance(section, dict) else {}


def _algorithm(section: Mapping[str, Any]) -> object:
    """``quant_algo`` when it is a string, else ``quant_method`` (ModelOpt's name before transformers')."""
    algorithm = section.get("quant_algo")
    return algorithm if isinstance(algorithm, str) else section.get("quant_method")


def _exclusions(*sections: Mapping[str, Any]) -> frozenset[str]:
    """Every non-empty string of the sections' exclusion lists (anything else in them names no module)."""
    names: set[str] = set()
    for section in sections:
        for key in EXCLUSION_KEYS:
            entries = section.get(key)
            if isinstance(entries, list):
                names.update(entry for entry in entries if isinstance(entry, str) and entry)
    return frozenset(names)


def transformers_config(
    document: Mapping[str, Any], hf_quant_config: Mapping[str, Any] | None = None
) -> TransformersConfig:
    """The metadata a ``config.json`` document gives, with the ``hf_quant_config.json`` beside it (ModelOpt)
    when there is one: its ``quantization.quant_algo`` wins over ``quantization_config`` (SPEC §10)."""
    architectures = document.get("architectures")
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    embedded = _section(document, "quantization_config")
    modelopt = _section(hf_quant_config, "quantization")
    algorithm = modelopt.get("quant_algo")
    if isinstance(algorithm, str):
        learned = quantization(algorithm)
    else:  # a ModelOpt file without an algorithm says nothing about it: config.json does
        learned = quantization(_algorithm(embedded), embedded.get("bits"))
    max_tokens = document.get("max_position_embeddings")
    return TransformersConfig(
        architecture=learned_architecture(first),
        transformers_version=learned_version(document.get("transformers_version")),
        quantization=learned,
        max_tokens=learned_max_tokens(max_tokens),
        exclusions=_exclusions(modelopt, embedded) if learned in QUANT_AWARE else frozenset(),
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
