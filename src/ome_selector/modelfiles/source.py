"""Inspect a model given as the user gives it: a local folder, or ``hf://ORG/NAME[@REVISION]``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.learn import ModelMetadata, learn
from ome_selector.modelfiles.local import LocalModelFolder

__all__ = ["Inspection", "inspect_model"]


@dataclass(frozen=True, slots=True)
class Inspection:
    """What a model's files say, and what reading them cost."""

    metadata: ModelMetadata
    #: Bytes read from files or received from the Hub (JSON files and safetensors headers only).
    bytes_read: int
    #: Files opened (a folder) or HTTP requests made (the Hub).
    reads: int


def inspect_model(source: str, *, endpoint: str | None = None, token: str | bool | None = None) -> Inspection:
    """Learn SPEC §10's metadata from ``source``; ModelFileError (naming the file) when it cannot be read,
    also for every limit of SPEC §10.1.

    ``endpoint`` and ``token`` apply to ``hf://`` sources (default: ``HF_ENDPOINT``; ``HF_TOKEN``, else the
    saved login; ``False`` or ``""`` reads without any token).
    """
    if source.startswith("hf://"):
        # Only a Hub source pays for loading the HTTP client.
        from ome_selector.modelfiles.hub import HubModelRepo  # noqa: PLC0415

        repo = HubModelRepo(source, endpoint=endpoint, token=token)
        metadata = learn(repo, source)
        return Inspection(metadata=metadata, bytes_read=repo.bytes_read, reads=repo.requests)
    root = Path(source)
    if not root.is_dir():
        raise ModelFileError(source, "not a directory" if root.exists() else "no such directory")
    folder = LocalModelFolder(root, source)
    metadata = learn(folder, source)
    return Inspection(metadata=metadata, bytes_read=folder.bytes_read, reads=folder.files_read)
