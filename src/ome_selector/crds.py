"""The CustomResourceDefinitions ome-selector ships for the five ome.io kinds (SPEC §1).

The YAML lives once, in ``manifests/crds/``. A source checkout reads it there; an installed wheel carries
the same files as package data under ``ome_selector/crd_manifests/`` (in the source tree that directory is a
symlink to ``manifests/crds``, which setuptools follows when it builds the wheel).
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CRD_NAMES", "crd_documents"]

CRD_NAMES: tuple[str, ...] = (
    "basemodels.ome.io",
    "clusterbasemodels.ome.io",
    "clusterservingruntimes.ome.io",
    "inferenceservices.ome.io",
    "servingruntimes.ome.io",
)
"""The names of the shipped CRDs, in file-name order."""

_SOURCE_DIR = Path(__file__).resolve().parents[2] / "manifests" / "crds"
_PACKAGE_DIR = "crd_manifests"


def _yaml_files(directory: Traversable) -> list[Traversable]:
    return sorted(
        (entry for entry in directory.iterdir() if entry.is_file() and entry.name.endswith(".yaml")),
        key=lambda entry: entry.name,
    )


def _crd_files() -> list[Traversable]:
    if _SOURCE_DIR.is_dir():
        files = _yaml_files(_SOURCE_DIR)
        if files:
            return files
    return _yaml_files(resources.files("ome_selector") / _PACKAGE_DIR)


def crd_documents() -> list[dict[str, Any]]:
    """Every shipped CRD as a dict, ready for ``create_custom_resource_definition``; sorted by file name.

    Raises ``RuntimeError`` when the files are missing or do not hold exactly the expected CRDs, so a broken
    install fails loudly instead of installing a partial set.
    """
    documents: list[dict[str, Any]] = []
    for file in _crd_files():
        for document in yaml.safe_load_all(file.read_text(encoding="utf-8")):
            if document is None:
                continue
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                raise RuntimeError(f"{file.name}: not a CustomResourceDefinition")
            documents.append(document)
    names = tuple(sorted(str(document["metadata"]["name"]) for document in documents))
    if names != CRD_NAMES:
        raise RuntimeError(f"expected the CRDs {list(CRD_NAMES)}, found {list(names)}")
    return documents
