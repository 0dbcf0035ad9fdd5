"""What a model's files say about it (SPEC §10): which files to read, and the metadata they give.

:func:`learn` decides which files matter and combines what they say; it reads them only through a
:class:`ModelFiles` (a local folder, a Hub repository), so the decisions are the same wherever the files are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ome_selector.modelfiles.config import DiffusersPipeline, diffusers_pipeline, transformers_config
from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.estimate import estimate_parameters
from ome_selector.modelfiles.safetensors import Header
from ome_selector.selection.quantity import format_parameter_count

__all__ = [
    "CONFIG",
    "MODEL_INDEX",
    "SAFETENSORS_FORMAT",
    "SAFETENSORS_INDEX",
    "SAFETENSORS_SINGLE",
    "ModelFiles",
    "ModelMetadata",
    "NameVersion",
    "WeightFile",
    "learn",
    "metadata_document",
    "safe_relative_name",
]

CONFIG = "config.json"
MODEL_INDEX = "model_index.json"
SAFETENSORS_SINGLE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
#: A diffusers component's weights, besides the transformers names above.
_DIFFUSERS_SINGLE = "diffusion_pytorch_model.safetensors"
_DIFFUSERS_INDEX = "diffusion_pytorch_model.safetensors.index.json"
SAFETENSORS_FORMAT_VERSION = "1.0.0"


class ModelFiles(Protocol):
    """Read access to one model's files, by names relative to the model's root (``/`` separated)."""

    def location(self, name: str) -> str:
        """The file as the user knows it, for messages."""

    def exists(self, name: str) -> bool:
        """Whether the file exists."""

    def read_json(self, name: str) -> dict[str, Any]:
        """The JSON object in the file; ModelFileError when it is missing, too large or not a JSON object."""

    def read_headers(self, names: Sequence[str]) -> list[Header]:
        """The safetensors headers of the files, in order, read no further; ModelFileError when invalid."""


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

    @property
    def model_parameter_size(self) -> str | None:
        """``modelParameterSize`` as SPEC §2 writes it (``22.71M``, ``350000``)."""
        return None if self.parameter_count is None else format_parameter_count(self.parameter_count)


def safe_relative_name(name: str) -> bool:
    """Whether ``name`` stays inside the model's root: relative, ``/``-separated, no ``.``/``..`` parts."""
    parts = name.split("/")
    return bool(name) and "\\" not in name and all(part not in ("", ".", "..") for part in parts)


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _shards(files: ModelFiles, index_name: str, folder: str) -> list[str]:
    """The shard files an index names (sorted, each once), checked to exist inside the model."""
    location = files.location(index_name)
    weight_map = files.read_json(index_name).get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(shard, str) for shard in weight_map.values()):
        raise ModelFileError(location, "no weight_map object mapping tensor names to shard file names")
    if not weight_map:
        raise ModelFileError(location, "weight_map names no shards")
    shards = []
    for shard in sorted(set(weight_map.values())):
        if not safe_relative_name(shard):
            raise ModelFileError(location, f"weight_map names {shard!r}, outside the model's folder")
        name = _join(folder, shard)
        if not files.exists(name):
            raise ModelFileError(files.location(name), f"missing (a shard named in {index_name})")
        shards.append(name)
    return shards


def _weights_in(files: ModelFiles, folder: str, singles: Sequence[str], indexes: Sequence[str]) -> list[str]:
    """The safetensors files of one model (or pipeline component): a single file, else an index's shards."""
    for single in singles:
        if files.exists(name := _join(folder, single)):
            return [name]
    for index in indexes:
        if files.exists(name := _join(folder, index)):
            return _shards(files, name, folder)
    return []


def _pipeline_weights(files: ModelFiles, pipeline: DiffusersPipeline) -> list[str]:
    names: list[str] = []
    for component in pipeline.components:
        if not safe_relative_name(component):
            raise ModelFileError(files.location(MODEL_INDEX), f"component {component!r} is not a folder name")
        names += _weights_in(
            files,
            component,
            (_DIFFUSERS_SINGLE, SAFETENSORS_SINGLE),
            (_DIFFUSERS_INDEX, SAFETENSORS_INDEX),
        )
    return names


def learn(files: ModelFiles, source: str) -> ModelMetadata:
    """Everything SPEC §10 learns from one model's files; ``source`` is echoed as given.

    Raises ModelFileError (naming the file) when a file that matters is missing, too large or malformed.
    """
    config = files.read_json(CONFIG) if files.exists(CONFIG) else None
    pipeline = diffusers_pipeline(files.read_json(MODEL_INDEX)) if files.exists(MODEL_INDEX) else None
    if config is None and pipeline is None:
        raise ModelFileError(files.location(CONFIG), f"missing (and no {MODEL_INDEX}): not a model folder")

    if pipeline is not None:
        weight_names = _pipeline_weights(files, pipeline)
        weights_format = NameVersion("diffusers", pipeline.diffusers_version)
    else:
        weight_names = _weights_in(files, "", (SAFETENSORS_SINGLE,), (SAFETENSORS_INDEX,))
        weights_format = SAFETENSORS_FORMAT
    headers = files.read_headers(weight_names)
    weight_files = tuple(
        WeightFile(name=name, tensors=len(header.tensors), parameters=header.parameters)
        for name, header in zip(weight_names, headers, strict=True)
    )

    settings = transformers_config(config or {})
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
    )


def _name_version(value: NameVersion | None) -> dict[str, Any] | None:
    return None if value is None else {"name": value.name, "version": value.version}


def metadata_document(metadata: ModelMetadata) -> dict[str, Any]:
    """The `kubectl ome model inspect -o json` document of SPEC §10 (absent values are null)."""
    return {
        "source": metadata.source,
        "parameterCount": metadata.parameter_count,
        "estimated": metadata.estimated,
        "modelParameterSize": metadata.model_parameter_size,
        "modelFormat": _name_version(metadata.model_format),
        "modelArchitecture": metadata.architecture,
        "modelFramework": _name_version(metadata.framework),
        "quantization": metadata.quantization,
        "maxTokens": metadata.max_tokens,
        "files": [
            {"name": file.name, "tensors": file.tensors, "parameters": file.parameters}
            for file in metadata.files
        ],
    }
