"""What to write onto a model: the learned fields its spec lacks, and nothing else (SPEC §10).

Pure functions over a model's ``spec`` as stored (a plain mapping) and a :class:`ModelMetadata`. The result is
the ``spec`` part of a JSON merge patch (RFC 7386) that only ever adds values: every key in it is absent from
the spec, so whoever set a field keeps it.

A field is absent when its key is missing, null or the empty string (the product reads an empty size as no
size and an empty format name as "not known yet", SPEC §1–§3). ``modelFormat`` and ``modelFramework`` are
absent when they have no ``name``; then each of ``name`` and ``version`` is filled only where absent, so a
version someone wrote without a name stays. Any other value, including ones the product cannot read, counts
as set and is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ome_selector.modelfiles.learn import ModelMetadata, NameVersion

__all__ = ["LEARNABLE_FIELDS", "describe_fill", "fill_patch", "missing_fields"]

#: The spec fields SPEC §10 learns from a model's files, in the order messages list them.
LEARNABLE_FIELDS = (
    "modelParameterSize",
    "modelFormat",
    "modelArchitecture",
    "modelFramework",
    "quantization",
    "maxTokens",
)
_NAMED_FIELDS = frozenset({"modelFormat", "modelFramework"})


def _absent(value: Any) -> bool:
    return value is None or value == ""


def _field_absent(spec: Mapping[str, Any], field: str) -> bool:
    value = spec.get(field)
    if field in _NAMED_FIELDS and isinstance(value, Mapping):
        return _absent(value.get("name"))
    return _absent(value)


def missing_fields(spec: Any) -> tuple[str, ...]:
    """The learnable fields ``spec`` lacks, in :data:`LEARNABLE_FIELDS` order (none for a spec that is not a
    mapping: nothing can be written into it)."""
    if spec is None:
        return LEARNABLE_FIELDS
    if not isinstance(spec, Mapping):
        return ()
    return tuple(field for field in LEARNABLE_FIELDS if _field_absent(spec, field))


def _name_version(value: NameVersion) -> dict[str, str]:
    learned = {"name": value.name}
    if value.version:
        learned["version"] = value.version
    return learned


def _learned(metadata: ModelMetadata) -> dict[str, Any]:
    """The learnable fields the files gave, as the spec writes them."""
    values: dict[str, Any] = {
        "modelParameterSize": metadata.model_parameter_size,
        "modelFormat": _name_version(metadata.model_format) if metadata.model_format else None,
        "modelArchitecture": metadata.architecture,
        "modelFramework": _name_version(metadata.framework) if metadata.framework else None,
        "quantization": metadata.quantization,
        "maxTokens": metadata.max_tokens,
    }
    return {field: value for field, value in values.items() if not _absent(value)}


def fill_patch(spec: Any, metadata: ModelMetadata) -> dict[str, Any]:
    """The ``spec`` merge patch setting what ``metadata`` learned and ``spec`` lacks; empty if nothing is."""
    current: Mapping[str, Any]
    if spec is None:
        current = {}
    elif isinstance(spec, Mapping):
        current = spec
    else:
        return {}
    patch: dict[str, Any] = {}
    for field, learned in _learned(metadata).items():
        if not _field_absent(current, field):
            continue
        existing = current.get(field)
        if field in _NAMED_FIELDS and isinstance(existing, Mapping):
            # No name yet: name and version are each filled only where absent.
            patch[field] = {key: part for key, part in learned.items() if _absent(existing.get(key))}
        else:
            patch[field] = learned
    return patch


def _shown(field: str, value: Any, metadata: ModelMetadata | None) -> str:
    if isinstance(value, Mapping):
        text = " ".join(str(value[key]) for key in ("name", "version") if key in value)
    else:
        text = str(value)
    if field == "modelParameterSize" and metadata is not None and metadata.estimated:
        text += " (estimated from config.json)"
    return f"{field} {text}"


def describe_fill(patch: Mapping[str, Any], metadata: ModelMetadata | None = None) -> list[str]:
    """One ``<field> <value>`` text per field of a :func:`fill_patch` result, in :data:`LEARNABLE_FIELDS`
    order; an estimated size says so when ``metadata`` is given."""
    return [_shown(field, patch[field], metadata) for field in LEARNABLE_FIELDS if field in patch]
