"""What a model's files say about it: size, format, architecture, framework (SPEC §10).

Pure parts: :mod:`.safetensors` (header parsing and parameter counting), :mod:`.config` (``config.json``
and ``model_index.json``), :mod:`.estimate` (a count from ``config.json`` alone), :mod:`.learn` (which files
matter and what they give). I/O: :mod:`.local` (a folder) and :mod:`.hub` (``hf://`` through
``huggingface_hub``), joined by :func:`inspect_model`.
"""

from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.learn import ModelMetadata, NameVersion, WeightFile, learn, metadata_document
from ome_selector.modelfiles.source import Inspection, inspect_model

__all__ = [
    "Inspection",
    "ModelFileError",
    "ModelMetadata",
    "NameVersion",
    "WeightFile",
    "inspect_model",
    "learn",
    "metadata_document",
]
