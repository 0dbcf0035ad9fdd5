"""What a model's files say about it: size, format, architecture, framework (SPEC §10).

Pure parts: :mod:`.safetensors` (header parsing and parameter counting), :mod:`.config` (``config.json``
and ``model_index.json``), :mod:`.estimate` (a count from ``config.json`` alone), :mod:`.learn` (which files
matter and what they give), :mod:`.fill` (which of it a model lacks). I/O: :mod:`.local` (a folder) and
:mod:`.hub` (``hf://`` through ``huggingface_hub``), joined by :func:`inspect_model`.
"""

from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.fill import LEARNABLE_FIELDS, describe_fill, fill_patch, missing_fields
from ome_selector.modelfiles.learn import ModelMetadata, NameVersion, WeightFile, learn, metadata_document
from ome_selector.modelfiles.source import Inspection, inspect_model

__all__ = [
    "LEARNABLE_FIELDS",
    "Inspection",
    "ModelFileError",
    "ModelMetadata",
    "NameVersion",
    "WeightFile",
    "describe_fill",
    "fill_patch",
    "inspect_model",
    "learn",
    "metadata_document",
    "missing_fields",
]
