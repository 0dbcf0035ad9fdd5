"""`kubectl ome-selector model inspect -o manifest`: the learned fields as a BaseModel or ClusterBaseModel
manifest (SPEC §10), for catalogs kept in Git rather than patched live with ``--apply``.

The spec holds exactly the fields ``--apply`` would set on a model that sets none
(:func:`~ome_selector.modelfiles.fill_patch` of an empty spec); the name is ``--name``, else one derived from
the source (the last segment of the folder or repository, lowercased, every run of other characters than
``a-z``, ``0-9``, ``.`` and ``-`` made one ``-``, at most 63 characters).
"""

from __future__ import annotations

import re
from typing import Any

from ome_selector.api.resources import Kind
from ome_selector.cli.render import escaped_yaml
from ome_selector.modelfiles import ModelMetadata, fill_patch

__all__ = ["NAME_LIMIT", "ManifestError", "manifest", "manifest_name", "render_manifest"]

#: The longest derived name (a DNS label's length, so the name is valid for either kind).
NAME_LIMIT = 63
_OTHER = re.compile(r"[^a-z0-9.-]+")


class ManifestError(ValueError):
    """No name could be derived; ``str()`` is the one-line message."""


def manifest_name(source: str) -> str:
    """The model name derived from ``source`` (``hf://ORG/NAME[@REV]`` or a folder)."""
    path = source.removeprefix("hf://").split("@", 1)[0] if source.startswith("hf://") else source
    last = path.rstrip("/").rsplit("/", 1)[-1]
    name = _OTHER.sub("-", last.lower())[:NAME_LIMIT].strip(".-")
    if not name:
        raise ManifestError(f"cannot derive a model name from {source!r}; give --name")
    return name


def manifest(metadata: ModelMetadata, kind: Kind, name: str, namespace: str | None) -> dict[str, Any]:
    """The manifest document: apiVersion, kind, metadata (a BaseModel's namespace when given) and spec."""
    meta: dict[str, Any] = {"name": name}
    if kind.namespaced and namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": kind.value,
        "metadata": meta,
        "spec": fill_patch(None, metadata),
    }


def render_manifest(metadata: ModelMetadata, kind: Kind, name: str | None, namespace: str | None) -> str:
    """The YAML of :func:`manifest` (control characters escaped as SPEC §10.4 says)."""
    return escaped_yaml(manifest(metadata, kind, name or manifest_name(metadata.source), namespace))
