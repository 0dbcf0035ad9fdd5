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
    "DiffusersPipeline",
    "Quantized",
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
#: A longer algorithm name is not guessed at (no "contains int4" over megabytes): the limit of the longest
#: grammar of SPEC §10.3, ``modelArchitecture``.
MAX_QUANTIZATION_TEXT = 128
#: ``quantization_config``'s lists of modules left unquantized, in the order OME reads them: the first that is
#: not empty is the one (transformers, compressed-tensors, vLLM), never their union (SPEC §10).
EXCLUSION_KEYS = ("modules_to_not_convert", "ignore", "ignored_layers")
#: gptq and awq name their bits apart: ``bits: 4`` reads as ``INT4_GPTQ``, only for the lower-case method
#: names (OME compares them case-sensitively).
_BITS_METHODS = frozenset({"gptq", "awq"})
#: OME's ``bits`` is a Go ``int``.
_MAX_BITS = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Quantized:
    """How a quantized checkpoint is counted (SPEC §10, OME's resolved quantization config): its algorithm as
    written (maybe empty) and its exclusion patterns."""

    algorithm: str
    exclusions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TransformersConfig:
    """The fields of a ``config.json`` that become model metadata."""

    architecture: str | None
    transformers_version: str | None
    quantization: str | None
    max_tokens: int | None
    #: Set when the checkpoint is quantized, whatever its algorithm (SPEC §10): its count is OME's.
    quantized: Quantized | None = None

    @property
    def quant_aware(self) -> bool:
        """Whether the parameter count follows SPEC §10's rule for quantized checkpoints."""
        return self.quantized is not None


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
    containing ``int4`` or ``w4a`` is ``int4``, else one containing ``fp8`` is ``fp8``, else unset (``fp4``
    too). ``gptq``/``awq``, trimmed and exactly in lower case, with a positive integer ``bits`` read as
    ``INT<bits>_GPTQ``/``INT<bits>_AWQ`` first. A value longer than :data:`MAX_QUANTIZATION_TEXT` characters
    is not guessed at."""
    if not isinstance(algorithm, str) or len(algorithm) > MAX_QUANTIZATION_TEXT:
        return None
    return _mapped(_with_bits(algorithm.strip(), bits))


def _with_bits(method: str, bits: object) -> str:
    if method in _BITS_METHODS and type(bits) is int and 0 < bits <= _MAX_BITS:
        return f"INT{bits}_{method.upper()}"
    return method


def _mapped(algorithm: str) -> str | None:
    name = algorithm.strip().lower()
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


def _is_text_or_null(value: object) -> bool:
    return value is None or isinstance(value, str)


def _modelopt(document: Mapping[str, Any] | None) -> Quantized | None:
    """What an ``hf_quant_config.json`` says, when it parses as OME reads it: each field it reads of its JSON
    type (or null), else None and ``config.json`` decides (SPEC §10)."""
    if document is None or not _is_text_or_null(document.get("quant_method")):
        return None
    section = document.get("quantization")
    if section is None:
        return Quantized("")
    if not isinstance(section, dict):
        return None
    algorithm, exclusions = section.get("quant_algo"), section.get("exclude_modules")
    group_size = section.get("group_size")
    if (
        not _is_text_or_null(algorithm)
        or not _is_text_or_null(section.get("kv_cache_quant_algo"))
        or not (group_size is None or type(group_size) is int)
        or not (exclusions is None or (isinstance(exclusions, list) and all(map(_is_text, exclusions))))
    ):
        return None
    return Quantized(algorithm or "", tuple(exclusions or ()))


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _embedded(section: Mapping[str, Any]) -> Quantized | None:
    """``config.json``'s ``quantization_config``, as OME resolves it: ``quant_algo`` (trimmed) when it is not
    empty, else ``quant_method`` (trimmed, with gptq/awq bits); None without an algorithm (not quantized)."""
    algorithm = section.get("quant_algo")
    if isinstance(algorithm, str) and algorithm.strip():
        resolved = algorithm.strip()
    else:
        method = section.get("quant_method")
        resolved = _with_bits(method.strip(), section.get("bits")) if isinstance(method, str) else ""
    if not resolved:
        return None
    exclusions: tuple[str, ...] = ()
    for key in EXCLUSION_KEYS:
        entries = section.get(key)
        if isinstance(entries, list) and entries:
            # Anything but a string in a list names no module.
            exclusions = tuple(entry for entry in entries if isinstance(entry, str))
            break
    return Quantized(resolved, exclusions)


def transformers_config(
    document: Mapping[str, Any], hf_quant_config: Mapping[str, Any] | None = None
) -> TransformersConfig:
    """The metadata a ``config.json`` document gives, with the ``hf_quant_config.json`` beside it (ModelOpt)
    when there is one: when it parses it decides alone, algorithm and exclusions, else ``quantization_config``
    does (SPEC §10)."""
    architectures = document.get("architectures")
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    quantized = _modelopt(hf_quant_config)
    if quantized is None:
        quantized = _embedded(_section(document, "quantization_config"))
    learned = None
    if quantized is not None and len(quantized.algorithm) <= MAX_QUANTIZATION_TEXT:
        learned = _mapped(quantized.algorithm)
    max_tokens = document.get("max_position_embeddings")
    return TransformersConfig(
        architecture=learned_architecture(first),
        transformers_version=learned_version(document.get("transformers_version")),
        quantization=learned,
        max_tokens=learned_max_tokens(max_tokens),
        quantized=quantized,
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
