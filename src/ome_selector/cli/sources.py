"""Where `kubectl ome-selector runtime explain` gets its objects from, and how they become a catalog (SPEC
§6).

An :class:`ObjectSource` yields raw object bodies, each with the place it came from; :func:`read_catalog`
turns them into a :class:`~ome_selector.catalog.catalog.Catalog` with the same defaults and validation as the
CRDs, keeping the last definition of an object as ``kubectl apply`` does. The offline mode uses
:class:`FileSource`, which walks files and directories in kubectl's order (and builds ``-k`` kustomizations
with ``kubectl kustomize``) and hands each text to the product's one manifest reader
(:func:`ome_selector.api.manifests.read_manifest`); the live mode (reading the cluster through one consistent
listing) plugs in as another source, so validation, duplicate resolution and rendering are shared.

Every problem is raised as :class:`SourceError`, whose text is the user-facing message (it names the file and,
for an invalid object, the field path).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol

from ome_selector.api.loading import LoadError, Redefinition, keep_last_definitions, key_of, load_resource
from ome_selector.api.manifests import Positions, read_manifest
from ome_selector.api.resources import API_GROUP_VERSION, ObjectKey, Resource
from ome_selector.catalog.catalog import Catalog

__all__ = [
    "DEFAULT_NAMESPACE",
    "MANIFEST_SUFFIXES",
    "FileSource",
    "Kustomization",
    "ObjectSource",
    "RawObject",
    "SourceError",
    "build_kustomization",
    "load_catalog",
    "objects_by_key",
    "parse_documents",
    "read_catalog",
    "redefinition_warnings",
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
    which its CRDs defaulted and validated already (SPEC §1 "Loading from files"). ``positions`` gives the
    line of the object and of its fields in the file (None for a body read from a cluster).
    """

    body: Mapping[str, Any]
    origin: str
    document: int | None = None
    path: str = ""
    from_file: bool = True
    positions: Positions | None = field(default=None, compare=False)

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
class Kustomization:
    """A kustomization directory named with ``-k`` (SPEC §6): its objects are what ``kubectl kustomize``
    builds from it (:func:`build_kustomization`)."""

    directory: str


@dataclass(frozen=True, slots=True)
class FileSource:
    """The objects in files and directories named with `-f`, and in kustomizations named with `-k` (SPEC §6),
    in command-line order; never touches the kubeconfig.

    Directories are walked recursively in kubectl's order (:func:`_walk`) for ``*.yaml``, ``*.yml`` and
    ``*.json``; a file named explicitly is read whatever its name; a file reached twice (named twice, or also
    through a directory or a link) is read once; ``-`` is standard input.
    """

    paths: Sequence[str | Kustomization]
    namespace: str = DEFAULT_NAMESPACE

    def read(self) -> list[RawObject]:
        objects: list[RawObject] = []
        for display, text, json_only in self._texts():
            objects.extend(parse_documents(text, display, json_only=json_only))
        return objects

    def files(self) -> list[str]:
        """The files :meth:`read` reads, in order, as messages name them (``-`` for standard input)."""
        return [item for item in self._inputs() if isinstance(item, str)]

    def _inputs(self) -> list[str | Kustomization]:
        seen: set[str] = set()
        inputs: list[str | Kustomization] = []
        for path in self.paths:
            if isinstance(path, Kustomization):
                inputs.append(path)
                continue
            for candidate in _expand(path):
                identity = candidate if candidate == STDIN else os.path.realpath(candidate)
                if identity not in seen:
                    seen.add(identity)
                    inputs.append(candidate)
        return inputs

    def _texts(self) -> Iterator[tuple[str, str, bool]]:
        """``(how messages name it, its text, whether it is read as JSON)`` for each input."""
        for item in self._inputs():
            if isinstance(item, Kustomization):
                yield kustomization_origin(item.directory), build_kustomization(item.directory), False
                continue
            if item == STDIN:
                yield "<stdin>", sys.stdin.read(), False
                continue
            try:
                data = Path(item).read_bytes()
            except OSError as error:
                raise SourceError(f"{item}: cannot read: {error.strerror or error}") from error
            try:
                yield item, data.decode("utf-8-sig"), _is_json(item)
            except UnicodeDecodeError as error:
                raise SourceError(f"{item}: not UTF-8 text (byte {error.start})") from error


def _expand(path: str) -> list[str]:
    """``path`` itself, or the manifests under it when it is a directory, in kubectl's order (SPEC §6)."""
    if path == STDIN:
        return [STDIN]
    if not os.path.exists(path):
        raise SourceError(f'the path "{path}" does not exist')
    if not os.path.isdir(path):
        return [path]
    return _walk(path)


def _walk(root: str) -> list[str]:
    """The manifests under the directory ``root``, in the order of Go's ``filepath.Walk``, which ``kubectl
    apply -R -f`` uses: each directory's entries sorted by the bytes of their names, a subdirectory walked
    where its name sorts among the files (``a/z.yaml`` before ``a.yaml``); links to directories are not
    followed, and only regular files named ``*.yaml``, ``*.yml`` or ``*.json`` are read. Iterative, so a
    deep tree costs no recursion."""
    found: list[str] = []
    pending: list[Iterator[os.DirEntry[str]]] = [_entries(root)]
    while pending:
        entry = next(pending[-1], None)
        if entry is None:
            pending.pop()
        elif entry.is_dir(follow_symlinks=False):
            pending.append(_entries(entry.path))
        elif entry.name.endswith(MANIFEST_SUFFIXES) and entry.is_file():
            found.append(entry.path)
    return found


def _entries(directory: str) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as scanned:
            return iter(sorted(scanned, key=lambda entry: os.fsencode(entry.name)))
    except OSError as error:
        _raise_walk_error(error)


def _raise_walk_error(error: OSError) -> NoReturn:
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
    return [
        RawObject(item.body, origin, item.document, item.path, positions=item.positions) for item in objects
    ]


# ------------------------------------------------------------------------------------------------------------
# Kustomizations (-k)

#: How long ``kubectl kustomize`` may take, and how much YAML it may print (SPEC §6).
KUSTOMIZE_TIMEOUT_S = 60.0
MAX_KUSTOMIZE_OUTPUT = 64 * 1024 * 1024
#: How much of kubectl's stderr a failure shows.
_STDERR_SHOWN = 4096


def kustomization_origin(directory: str) -> str:
    """How messages name the objects a kustomization builds."""
    return f"kustomization {directory}"


def build_kustomization(
    directory: str, *, timeout: float = KUSTOMIZE_TIMEOUT_S, limit: int = MAX_KUSTOMIZE_OUTPUT
) -> str:
    """The YAML ``kubectl kustomize DIRECTORY`` prints, run with the ``kubectl`` found on ``PATH`` (the real
    kustomize that kubectl embeds, so ``-k`` reads what ``kubectl apply -k`` applies) and no kubeconfig.

    Bounded: a build that runs longer than ``timeout`` seconds or prints more than ``limit`` bytes is
    stopped; every failure (no kubectl, not a directory, kustomize's own error) is a :class:`SourceError`.
    """
    if not os.path.isdir(directory):
        raise SourceError(f'the path "{directory}" is not a directory (-k takes a kustomization directory)')
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SourceError(f"-k {directory}: kubectl not found on PATH (-k runs `kubectl kustomize DIR`)")
    environment = {**os.environ, "KUBECONFIG": os.devnull}
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(
                [kubectl, "kustomize", directory],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=environment,
            )
        except OSError as error:
            raise SourceError(f"-k {directory}: cannot run {kubectl}: {error.strerror or error}") from error
        try:
            output = _read_bounded(process, directory, timeout, limit)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if process.returncode != 0:
            errors.seek(0)
            said = errors.read(_STDERR_SHOWN).decode("utf-8", "replace").strip()
            raise SourceError(f"kubectl kustomize {directory}: {_kubectl_error(said, process.returncode)}")
    try:
        return output.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SourceError(f"kubectl kustomize {directory}: not UTF-8 text (byte {error.start})") from error


#: How kubectl logs a failed command through klog: ``E1207 15:50:53.244335   29889 run.go:72] "command failed"
#: err="..."``.
_KLOG_ERROR = re.compile(r'^[EFW]\d{4} [^\]]*\] "command failed" err="(?P<error>.*)"$')


def _kubectl_error(stderr: str, status: int) -> str:
    """The first line of what kubectl said, without its ``error: `` prefix or klog's header."""
    first = stderr.splitlines()[0] if stderr else f"exit status {status}"
    logged = _KLOG_ERROR.match(first)
    if logged is not None:
        return logged.group("error").replace('\\"', '"')
    return first.removeprefix("error: ")


def _read_bounded(process: subprocess.Popen[bytes], directory: str, timeout: float, limit: int) -> bytes:
    """What ``process`` prints on stdout until it closes it, at most ``limit`` bytes within ``timeout``
    seconds."""
    assert process.stdout is not None
    descriptor = process.stdout.fileno()
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([descriptor], [], [], remaining)[0]:
            raise SourceError(f"kubectl kustomize {directory}: no result within {timeout:g} s")
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise SourceError(f"kubectl kustomize {directory}: more than {limit} bytes of output")
        chunks.append(chunk)
    remaining = max(deadline - time.monotonic(), 0.0)
    try:
        process.wait(timeout=remaining)
    except subprocess.TimeoutExpired:
        raise SourceError(f"kubectl kustomize {directory}: no result within {timeout:g} s") from None
    return b"".join(chunks)


# ------------------------------------------------------------------------------------------------------------
# Catalog


def load_catalog(objects: Iterable[RawObject], namespace: str) -> Catalog:
    """The catalog of :func:`read_catalog`, without its redefinitions (for objects read from a cluster, which
    has none)."""
    return read_catalog(objects, namespace)[0]


def read_catalog(objects: Iterable[RawObject], namespace: str) -> tuple[Catalog, list[Redefinition]]:
    """The catalog of the ``ome.io/v1beta1`` objects in ``objects`` (other kinds and apiVersions are skipped)
    and the objects defined more than once.

    A namespaced object without ``metadata.namespace`` is placed in ``namespace``. An object the API server
    would reject is a :class:`SourceError`. Of objects with one kind, namespace and name the last one read is
    kept, as ``kubectl apply`` leaves it (SPEC §6); :func:`redefinition_warnings` words the others.
    """
    definitions: list[tuple[ObjectKey, str, Resource]] = []
    for raw in objects:
        try:
            resource = load_resource(raw.body, default_namespace=namespace, from_file=raw.from_file)
        except LoadError as error:
            located = error.within(raw.path) if raw.path else error
            raise SourceError(f"{raw.location}: {_object_label(raw.body)}{located}") from error
        if resource is not None:
            place = f"{raw.origin} (document {raw.document})" if raw.document is not None else raw.origin
            definitions.append((resource.key, place, resource))
    kept, redefined = keep_last_definitions(definitions)
    return Catalog.from_resources(kept), redefined


def redefinition_warnings(redefined: Iterable[Redefinition]) -> list[str]:
    """The stderr lines for objects defined more than once, one per object (SPEC §6)."""
    return [f"Warning: {redefinition.warning}" for redefinition in redefined]


def objects_by_key(objects: Iterable[RawObject], namespace: str) -> dict[ObjectKey, RawObject]:
    """Each object of the five kinds by its key (a namespaced one without a namespace in ``namespace``), the
    last one where a key repeats: where findings about it are located (SPEC §11)."""
    found: dict[ObjectKey, RawObject] = {}
    for raw in objects:
        if raw.body.get("apiVersion") != API_GROUP_VERSION:
            continue
        key = key_of(raw.body, default_namespace=namespace)
        if key is not None:
            found[key] = raw
    return found


def _object_label(body: Mapping[str, Any]) -> str:
    """``<Kind> <name>: `` for an error message, when the body has both; else nothing."""
    kind = body.get("kind")
    metadata = body.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if isinstance(kind, str) and isinstance(name, str) and kind and name:
        return f"{kind} {name}: "
    return ""
