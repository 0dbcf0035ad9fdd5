"""What a model's files say about it (SPEC §10): which files to read, and the metadata they give.

:func:`learn` decides which files matter and combines what they say; it reads them only through a
:class:`ModelFiles` (a local folder, a Hub repository), so the decisions are the same wherever the files are.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ome_selector.modelfiles.config import (
    QUANTIZATIONS,
    DiffusersPipeline,
    diffusers_pipeline,
    learned_architecture,
    learned_max_tokens,
    learned_version,
    transformers_config,
)
from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.estimate import estimate_parameters
from ome_selector.modelfiles.limits import (
    MAX_CONFIG_BYTES,
    MAX_INDEX_BYTES,
    MAX_PARAMETERS,
    MAX_SHARDS,
    parameters_reason,
    quoted,
)
from ome_selector.modelfiles.safetensors import Header, QuantAwareCounting
from ome_selector.selection.quantity import format_parameter_count

__all__ = [
    "CONFIG",
    "HF_QUANT_CONFIG",
    "MODEL_INDEX",
    "PACKED_INT4_NOTE",
    "SAFETENSORS_FORMAT",
    "SAFETENSORS_INDEX",
    "SAFETENSORS_SINGLE",
    "ModelFiles",
    "ModelMetadata",
    "NameVersion",
    "WeightFile",
    "learn",
    "metadata_document",
    "metadata_from_document",
    "shard_name_problem",
]

CONFIG = "config.json"
#: ModelOpt's quantization config, beside ``config.json``: its algorithm wins (SPEC §10).
HF_QUANT_CONFIG = "hf_quant_config.json"
MODEL_INDEX = "model_index.json"
SAFETENSORS_SINGLE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
#: A diffusers component's weights, besides the transformers names above.
_DIFFUSERS_SINGLE = "diffusion_pytorch_model.safetensors"
_DIFFUSERS_INDEX = "diffusion_pytorch_model.safetensors.index.json"
SAFETENSORS_FORMAT_VERSION = "1.0.0"
#: What `model inspect` notes for a compressed-tensors checkpoint with packed INT4 weights (SPEC §9, §10).
PACKED_INT4_NOTE = (
    "compressed-tensors packs 4-bit weights into weight_packed tensors, which are counted once per stored "
    "element, as OME counts them: the size is about 8 times low on those layers"
)


class ModelFiles(Protocol):
    """Read access to one model's files, by names relative to the model's root (``/`` separated)."""

    def location(self, name: str) -> str:
        """The file as the user knows it, for messages."""

    def exists(self, name: str) -> bool:
        """Whether the file exists."""

    def read_json(self, name: str, limit: int) -> dict[str, Any]:
        """The JSON object in the file; ModelFileError when it is missing, over ``limit`` bytes or not a
        JSON object."""

    def read_headers(self, names: Sequence[str], counting: QuantAwareCounting | None = None) -> list[Header]:
        """What the safetensors headers of the files say, in order, read no further (parameters counted
        quantization-aware with ``counting``); ModelFileError when invalid."""


@dataclass(frozen=True, slots=True)
class NameVersion:
    """``modelFormat`` or ``modelFramework``."""

    name: str
    version: str | None


SAFETENSORS_FORMAT = NameVersion("safetensors", SAFETENSORS_FORMAT_VERSION)


@dataclass(frozen=True, slots=True)
class WeightFile:
    """One safetensors file read: its tensors (``__metadata__`` not counted) and parameters."""

    name: str
    tensors: int
    parameters: int
    #: Whether the file was counted by SPEC §10's rule for quantized checkpoints (else every element).
    quant_aware: bool = False


@dataclass(frozen=True, slots=True)
class ModelMetadata:
    """What was learned; None where the files do not say."""

    source: str
    parameter_count: int | None
    estimated: bool
    model_format: NameVersion | None
    architecture: str | None
    framework: NameVersion | None
    quantization: str | None
    max_tokens: int | None
    files: tuple[WeightFile, ...]
    #: Whether the count followed SPEC §10's rule for quantized checkpoints (any algorithm).
    quant_aware: bool = False
    #: SPEC §10's notes on the count (compressed-tensors' packed INT4, counted as OME counts it).
    notes: tuple[str, ...] = ()

    @property
    def model_parameter_size(self) -> str | None:
        """``modelParameterSize`` as SPEC §2 writes it (``22.71M``, ``350000``)."""
        return None if self.parameter_count is None else format_parameter_count(self.parameter_count)


#: A shard name's length in characters, and each of its parts' in UTF-8 bytes (SPEC §10.1).
MAX_SHARD_NAME = 1024
MAX_SHARD_NAME_PART = 255
_UNPRINTABLE = frozenset({"Cc", "Cf"})


def _has_control(name: str) -> bool:
    """Whether ``name`` holds a control, format or separator character (Cc, Cf, U+2028, U+2029)."""
    if name.isprintable():  # the common case, at C speed: none of them is printable
        return False
    return any(
        unicodedata.category(character) in _UNPRINTABLE or character in "\u2028\u2029" for character in name
    )


def shard_name_problem(name: str) -> str | None:
    """Why ``name`` is not a shard name of SPEC §10.1's grammar, or None when it is one: ``outside the
    model's folder`` for a path that escapes it, ``not a plain file name`` for the rest."""
    parts = name.split("/")
    if name.startswith("/") or "\\" in name or ".." in parts:
        return "outside the model's folder"
    if (
        not 1 <= len(name) <= MAX_SHARD_NAME
        or any(
            part in ("", ".") or len(part.encode("utf-8", "replace")) > MAX_SHARD_NAME_PART for part in parts
        )
        or _has_control(name)
    ):
        return "not a plain file name"
    return None


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _shards(files: ModelFiles, index_name: str, folder: str, before: int) -> list[str]:
    """The shard files an index names (sorted, each once), checked to exist inside the model; ``before``
    shards were named by other components' indexes."""
    location = files.location(index_name)
    weight_map = files.read_json(index_name, MAX_INDEX_BYTES).get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(shard, str) for shard in weight_map.values()):
        raise ModelFileError(location, "no weight_map object mapping tensor names to shard file names")
    if not weight_map:
        raise ModelFileError(location, "weight_map names no shards")
    distinct = set(weight_map.values())
    if before + len(distinct) > MAX_SHARDS:
        reason = f"weight_map names {before + len(distinct)} shards, more than the limit of {MAX_SHARDS}"
        raise ModelFileError(location, reason)
    for shard in distinct:  # every name is checked before any file is looked at
        if (problem := shard_name_problem(shard)) is not None:
            raise ModelFileError(location, f"weight_map names {quoted(shard)}, {problem}")
    shards = []
    for shard in sorted(distinct):
        name = _join(folder, shard)
        if not files.exists(name):
            raise ModelFileError(files.location(name), f"missing (a shard named in {index_name})")
        shards.append(name)
    return shards


def _weights_in(
    files: ModelFiles, folder: str, singles: Sequence[str], indexes: Sequence[str], before: int = 0
) -> list[str]:
    """The safetensors files of one model (or pipeline component): a single file, else an index's shards."""
    for single in singles:
        if files.exists(name := _join(folder, single)):
            return [name]
    for index in indexes:
        if files.exists(name := _join(folder, index)):
            return _shards(files, name, folder, before)
    return []


def _pipeline_weights(files: ModelFiles, pipeline: DiffusersPipeline) -> list[str]:
    names: list[str] = []
    for component in pipeline.components:
        if shard_name_problem(component) is not None:
            reason = f"component {quoted(component)} is not a folder name"
            raise ModelFileError(files.location(MODEL_INDEX), reason)
        names += _weights_in(
            files,
            component,
            (_DIFFUSERS_SINGLE, SAFETENSORS_SINGLE),
            (_DIFFUSERS_INDEX, SAFETENSORS_INDEX),
            len(names),
        )
    return names


def learn(files: ModelFiles, source: str) -> ModelMetadata:
    """Everything SPEC §10 learns from one model's files; ``source`` is echoed as given.

    Raises ModelFileError (naming the file) when a file that matters is missing, too large or malformed. A
    folder with safetensors weights and neither ``config.json`` nor ``model_index.json`` is a model too: its
    count and format are learned, nothing else (SPEC §10 "Bounds").
    """
    config = files.read_json(CONFIG, MAX_CONFIG_BYTES) if files.exists(CONFIG) else None
    # Read with config.json's own bounds, and only beside it (SPEC §10).
    hf_quant_config = None
    if config is not None and files.exists(HF_QUANT_CONFIG):
        hf_quant_config = files.read_json(HF_QUANT_CONFIG, MAX_CONFIG_BYTES)
    pipeline = None
    if files.exists(MODEL_INDEX):
        pipeline = diffusers_pipeline(files.read_json(MODEL_INDEX, MAX_CONFIG_BYTES))

    if pipeline is not None:
        weight_names = _pipeline_weights(files, pipeline)
        weights_format = NameVersion("diffusers", pipeline.diffusers_version)
    else:
        weight_names = _weights_in(files, "", (SAFETENSORS_SINGLE,), (SAFETENSORS_INDEX,))
        weights_format = SAFETENSORS_FORMAT
    if config is None and pipeline is None and not weight_names:
        raise ModelFileError(files.location(CONFIG), f"missing (and no {MODEL_INDEX}): not a model folder")
    settings = transformers_config(config or {}, hf_quant_config)
    quantized = settings.quantized
    counting = None if quantized is None else QuantAwareCounting(quantized.algorithm, quantized.exclusions)
    weight_files, packed = _weight_files(files, weight_names, counting)
    parameter_count: int | None
    if weight_files:
        parameter_count, estimated = sum(file.parameters for file in weight_files), False
    else:
        parameter_count = estimate_parameters(config) if config is not None else None
        estimated = parameter_count is not None
    framework_version = settings.transformers_version
    return ModelMetadata(
        source=source,
        parameter_count=parameter_count,
        estimated=estimated,
        model_format=weights_format if weight_files else None,
        architecture=settings.architecture,
        framework=NameVersion("transformers", framework_version) if framework_version else None,
        quantization=settings.quantization,
        max_tokens=settings.max_tokens,
        files=weight_files,
        quant_aware=counting is not None and bool(weight_files),
        notes=(PACKED_INT4_NOTE,) if packed and settings.quantization == "compressed-tensors" else (),
    )


def _weight_files(
    files: ModelFiles, names: Sequence[str], counting: QuantAwareCounting | None
) -> tuple[tuple[WeightFile, ...], int]:
    """Each file's summary, and the ``*.weight_packed`` tensors they hold; the running total is refused at
    the file where it passes the limit."""
    weight_files: list[WeightFile] = []
    total = packed = 0
    for name, header in zip(names, files.read_headers(names, counting), strict=True):
        total += header.parameters
        packed += header.packed
        if total > MAX_PARAMETERS:
            raise ModelFileError(files.location(name), parameters_reason())
        weight_files.append(
            WeightFile(
                name=name,
                tensors=header.tensors,
                parameters=header.parameters,
                quant_aware=counting is not None,
            )
        )
    return tuple(weight_files), packed


def _name_version(value: NameVersion | None) -> dict[str, Any] | None:
    return None if value is None else {"name": value.name, "version": value.version}


def metadata_document(metadata: ModelMetadata) -> dict[str, Any]:
    """The `kubectl ome-selector model inspect -o json` document of SPEC §10 (absent values are null)."""
    return {
        "source": metadata.source,
        "parameterCount": metadata.parameter_count,
        "estimated": metadata.estimated,
        "quantAware": metadata.quant_aware,
        "modelParameterSize": metadata.model_parameter_size,
        "modelFormat": _name_version(metadata.model_format),
        "modelArchitecture": metadata.architecture,
        "modelFramework": _name_version(metadata.framework),
        "quantization": metadata.quantization,
        "maxTokens": metadata.max_tokens,
        "files": [
            {
                "name": file.name,
                "tensors": file.tensors,
                "parameters": file.parameters,
                "quantAware": file.quant_aware,
            }
            for file in metadata.files
        ],
        "notes": list(metadata.notes),
    }


_FORMAT_NAMES = frozenset({"safetensors", "diffusers"})


def _learned_name_version(value: object, names: frozenset[str]) -> NameVersion | None:
    if not isinstance(value, dict) or value.get("name") not in names:
        raise ValueError("name")
    version = value.get("version")
    if version is not None and learned_version(version) is None:
        raise ValueError("version")
    return NameVersion(value["name"], version)


def metadata_from_document(document: object) -> ModelMetadata:
    """The metadata a :func:`metadata_document` holds (without its files), every value checked against
    SPEC §10.3; ValueError for anything else: it comes from another process, which is not trusted."""
    if not isinstance(document, dict):
        raise ValueError("not an object")
    count = document.get("parameterCount")
    if count is not None and (
        not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_PARAMETERS
    ):
        raise ValueError("parameterCount")
    estimated = document.get("estimated")
    if not isinstance(estimated, bool):
        raise ValueError("estimated")
    source = document.get("source")
    if not isinstance(source, str):
        raise ValueError("source")
    checked: dict[str, Any] = {}
    for key, check in (
        ("modelArchitecture", learned_architecture),
        ("maxTokens", learned_max_tokens),
    ):
        value = document.get(key)
        if value is not None and check(value) is None:
            raise ValueError(key)
        checked[key] = value
    quantization = document.get("quantization")
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError("quantization")
    quant_aware = document.get("quantAware")
    if not isinstance(quant_aware, bool):
        raise ValueError("quantAware")
    model_format = document.get("modelFormat")
    framework = document.get("modelFramework")
    return ModelMetadata(
        source=source,
        parameter_count=count,
        estimated=estimated,
        model_format=None if model_format is None else _learned_name_version(model_format, _FORMAT_NAMES),
        architecture=checked["modelArchitecture"],
        framework=None
        if framework is None
        else _learned_name_version(framework, frozenset({"transformers"})),
        quantization=quantization,
        max_tokens=checked["maxTokens"],
        files=(),
        quant_aware=quant_aware,
    )
