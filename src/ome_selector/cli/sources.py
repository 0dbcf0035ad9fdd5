"""Where `kubectl ome-selector runtime explain` gets its objects from, and how they become a catalog (SPEC
§6).

An :class:`ObjectSource` yields raw object bodies, each with the place it came from; :func:`load_catalog`
turns them into a :class:`~ome_selector.catalog.catalog.Catalog` with the same defaults and validation as the
CRDs. The offline mode uses :class:`FileSource`, which walks files and directories and hands each file's text
to the product's one manifest reader (:func:`ome_selector.api.manifests.read_manifest`); the live mode
(reading the cluster through one consistent listing) plugs in as another source, so validation, duplicate
detection and rendering are shared.

Every problem is raised as :class:`SourceError`, whose text is the user-facing message (it names the file and,
for an invalid object, the field path).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ome_selector.api.loading import LoadError, load_resource
from ome_selector.api.manifests import read_manifest
from ome_selector.api.resources import ObjectKey
from ome_selector.catalog.catalog import Catalog

__all__ = [
    "DEFAULT_NAMESPACE",
    "MANIFEST_SUFFIXES",
    "FileSource",
    "ObjectSource",
    "RawObject",
    "SourceError",
    "load_catalog",
    "parse_documents",
]

#: The namespace when `-n` is not given in offline mode (SPEC §6).
DEFAULT_NAMESPACE = "default"
#: Files read when a directory is named (kubectl's set).
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: How standard input is named with `-f`, as in kubectl.
STDIN = "-"


class SourceError(Exception):
    """A problem reading or validating the objects; ``str()`` is the message shown to the user."""


@dataclass(frozen=True, slots=True)
class RawObject:
    """One object body as read, and where it came from.

    ``origin`` names the file (or ``<stdin>``, or the cluster) and is what a duplicate error shows;
    ``document`` (1-based, set when the file holds several) and ``path`` (``items[3]`` in a ``kind: List``)
    locate the object in it for validation errors. ``from_file`` is false for a body read from a cluster,
    which its CRDs defaulted and validated already (SPEC §1 "Loading from files").
    """

    body: Mapping[str, Any]
    origin: str
    document: int | None = None
    path: str = ""
    from_file: bool = True

    @property
    def location(self) -> str:
        """``<origin>`` or ``<origin>: document <n>``, the prefix of every message about this object."""
        return f"{self.origin}: document {self.document}" if self.document is not None else self.origin


class ObjectSource(Protocol):
    """A supply of raw objects and the namespace explain looks at.

    The namespace belongs to the source because each mode resolves it differently: offline it is `-n`, else
    ``default``; live it is `-n`, else the kubeconfig context's, else ``default``.
    """

    @property
    def namespace(self) -> str: ...

    def read(self) -> list[RawObject]:
        """Every object the source holds; raises :class:`SourceError` rather than returning a partial list."""
        ...


# ------------------------------------------------------------------------------------------------------------
# Files


@dataclass(frozen=True, slots=True)
class FileSource:
    """The objects in files and directories named with `-f` (SPEC §6); never touches the kubeconfig.

    Directories are walked recursively in name order for ``*.yaml``, ``*.yml`` and ``*.json``; a file named
    explicitly is read whatever its name; a file reached twice (named twice, or also through a directory or a
    link) is read once; ``-`` is standard input.
    """

    paths: Sequence[str]
    namespace: str = DEFAULT_NAMESPACE

    def read(self) -> list[RawObject]:
        objects: list[RawObject] = []
        for display, text in self._texts():
            objects.extend(parse_documents(text, display, json_only=_is_json(display)))
        return objects

    def files(self) -> list[str]:
        """The files :meth:`read` reads, in order, as messages name them (``-`` for standard input)."""
        seen: set[str] = set()
        files: list[str] = []
        for path in self.paths:
            for candidate in _expand(path):
                identity = candidate if candidate == STDIN else os.path.realpath(candidate)
                if identity not in seen:
                    seen.add(identity)
                    files.append(candidate)
        return files

    def _texts(self) -> Iterator[tuple[str, str]]:
        for file in self.files():
            if file == STDIN:
                yield "<stdin>", sys.stdin.read()
                continue
            try:
                data = Path(file).read_bytes()
            except OSError as error:
                raise SourceError(f"{file}: cannot read: {error.strerror or error}") from error
            try:
                yield file, data.decode("utf-8-sig")
            except UnicodeDecodeError as error:
                raise SourceError(f"{file}: not UTF-8 text (byte {error.start})") from error


def _expand(path: str) -> list[str]:
    """``path`` itself, or the manifests under it when it is a directory."""
    if path == STDIN:
        return [STDIN]
    if not os.path.exists(path):
        raise SourceError(f'the path "{path}" does not exist')
    if not os.path.isdir(path):
        return [path]
    found: list[str] = []
    for directory, subdirectories, names in os.walk(path, onerror=_raise_walk_error):
        subdirectories.sort()
        found.extend(
            os.path.join(directory, name)
            for name in sorted(names)
            if name.endswith(MANIFEST_SUFFIXES) and os.path.isfile(os.path.join(directory, name))
        )
    return found


def _raise_walk_error(error: OSError) -> None:
    raise SourceError(f"{error.filename}: cannot read directory: {error.strerror or error}") from error


def _is_json(display: str) -> bool:
    return display.endswith(".json")


def parse_documents(text: str, origin: str, *, json_only: bool = False) -> list[RawObject]:
    """The objects in one file (see :func:`~ome_selector.api.manifests.read_manifest`), each named by
    ``origin``; a file that is not a manifest is a :class:`SourceError` naming ``origin``."""
    try:
        objects = read_manifest(text, json_stream=json_only)
    except LoadError as error:
        raise SourceError(f"{origin}: {error}") from error
    return [RawObject(item.body, origin, item.document, item.path) for item in objects]


# ------------------------------------------------------------------------------------------------------------
# Catalog


def load_catalog(objects: Iterable[RawObject], namespace: str) -> Catalog:
    """The catalog of the ``ome.io/v1beta1`` objects in ``objects``; other kinds and apiVersions are skipped.

    A namespaced object without ``metadata.namespace`` is placed in ``namespace``. An object the API server
    would reject, or a second object with the same kind, namespace and name, is a :class:`SourceError`.
    """
    catalog = Catalog()
    origins: dict[ObjectKey, str] = {}
    for raw in objects:
        try:
            resource = load_resource(raw.body, default_namespace=namespace, from_file=raw.from_file)
        except LoadError as error:
            located = error.within(raw.path) if raw.path else error
            raise SourceError(f"{raw.location}: {_object_label(raw.body)}{located}") from error
        if resource is None:
            continue
        key = resource.key
        first = origins.get(key)
        if first is not None:
            raise SourceError(f"{key} is defined twice: in {first} and in {raw.origin}")
        origins[key] = raw.origin
        catalog.upsert(resource)
    return catalog


def _object_label(body: Mapping[str, Any]) -> str:
    """``<Kind> <name>: `` for an error message, when the body has both; else nothing."""
    kind = body.get("kind")
    metadata = body.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if isinstance(kind, str) and isinstance(name, str) and kind and name:
        return f"{kind} {name}: "
    return ""
