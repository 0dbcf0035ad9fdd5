"""Loading the five kinds from object bodies (API watch bodies, admission requests, parsed manifests), as the
CRDs would.

:func:`load_resource` applies the CRD defaults (``weight: 1``, ``operator: Equal``, ``priority: 1``, ...) and
the CRD validation (``supportedModelFormats[].modelFormat.name`` and ``spec.model.name`` required,
``priority`` >= 1, strings, booleans and integers where the schema has them; ``null`` counts as absent) and
raises only :class:`LoadError`, whose ``path`` names the field. Documents of other apiVersions or kinds give
None. Text becomes bodies in :mod:`.manifests`.

Also the one way to name a field (:func:`field_path`, from ``paths``), to describe a bad value
(:func:`describe_value`) and to read an object's identity from a body (:func:`key_of`).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from ome_selector.api.bounds import oversized
from ome_selector.api.paths import field_path
from ome_selector.api.resources import (
    API_GROUP_VERSION,
    DEPLOYMENT_MODE_ENUM,
    INHERIT_FROM_ANNOTATION,
    READ_ANNOTATIONS,
    RUNTIME_PROFILE_ANNOTATION,
    InferenceService,
    InferenceServiceSpec,
    Kind,
    Model,
    ModelSpec,
    ObjectKey,
    Resource,
    Runtime,
    RuntimeSpec,
)

__all__ = [
    "LoadError",
    "Redefinition",
    "describe_value",
    "field_path",
    "keep_last_definitions",
    "key_of",
    "load_resource",
    "load_stored",
    "stored_or_absent",
]

_KINDS = {kind.value: kind for kind in Kind}


class LoadError(ValueError):
    """A document the API server would reject, or text that is not a manifest.

    ``path`` is the field path, e.g. ``spec.supportedModelFormats[0].priority`` (``""`` for the document
    itself); ``document`` (1-based) is set when the text held several documents.
    """

    def __init__(self, path: str, message: str, *, document: int | None = None) -> None:
        self.path = path
        self.message = message
        self.document = document
        where = [f"document {document}"] if document is not None else []
        super().__init__(": ".join([*where, *([path] if path else []), message]))

    def within(self, prefix: str) -> LoadError:
        """The same error with ``prefix`` put before its path (e.g. ``items[3]`` in a List)."""
        return LoadError(field_path(prefix, self.path), self.message, document=self.document)

    def in_document(self, document: int | None) -> LoadError:
        """The same error located in the ``document``-th document of a text."""
        return LoadError(self.path, self.message, document=document)


_TYPE_NAMES = {
    "string_type": "a string",
    "bool_type": "a boolean",
    "int_type": "an integer",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "tuple_type": "an array",
    "list_type": "an array",
}


#: How much of a value an error message shows.
_SHOWN = 60


def describe_value(value: Any) -> str:
    """A short description of a value for an error message: ``7 (int)``, ``'yes' (str)``, ``an object``.

    It never looks at more than the first characters of a value, whatever its size or nesting.
    """
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, str):
        text = repr(value[: _SHOWN + 1])
    elif isinstance(value, bool | float):
        text = repr(value)
    elif isinstance(value, int):
        # Writing a huge integer in decimal costs time quadratic in its size (and Python refuses beyond 4300
        # digits): such a value is described by its size.
        text = repr(value) if value.bit_length() <= 200 else f"<{value.bit_length()}-bit integer>"
    else:
        return type(value).__name__
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 3] + "..."
    return f"{text} ({type(value).__name__})"


def key_of(body: Mapping[str, Any], *, default_namespace: str | None = None) -> ObjectKey | None:
    """The identity of the object ``body`` describes, None when it is not one of the five kinds or has no
    name (or, for a namespaced kind, no namespace and no ``default_namespace``). Nothing else is validated."""
    kind_text = body.get("kind")
    kind = _KINDS.get(kind_text) if isinstance(kind_text, str) else None
    metadata = body.get("metadata")
    if kind is None or not isinstance(metadata, Mapping):
        return None
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    if not kind.namespaced:
        return ObjectKey(kind, None, name)
    namespace = metadata.get("namespace") or default_namespace
    return ObjectKey(kind, namespace, name) if isinstance(namespace, str) else None


def _from_validation_error(prefix: str, error: ValidationError) -> LoadError:
    first = error.errors(include_url=False)[0]
    kind = first["type"]
    path = field_path(prefix, *(part if isinstance(part, int) else str(part) for part in first["loc"]))
    if kind == "missing":
        return LoadError(path, "required value")
    if kind in _TYPE_NAMES:
        return LoadError(path, f"must be {_TYPE_NAMES[kind]}, not {describe_value(first.get('input'))}")
    if kind == "greater_than_equal":
        limit = (first.get("ctx") or {}).get("ge")
        return LoadError(
            path, f"must be greater than or equal to {limit}, not {describe_value(first.get('input'))}"
        )
    return LoadError(path, str(first.get("msg", "invalid value")))


def _string(metadata: Mapping[str, Any], field: str, *, required: bool = False) -> str | None:
    value = metadata.get(field)
    if value is None:
        if required:
            raise LoadError(f"metadata.{field}", "required value")
        return None
    if not isinstance(value, str):
        raise LoadError(f"metadata.{field}", f"must be a string, not {describe_value(value)}")
    if required and not value:
        raise LoadError(f"metadata.{field}", "required value")
    return value


def _string_map(raw: Any, path: str, wanted: frozenset[str]) -> dict[str, str] | None:
    """The entries of an annotations map ``raw`` (at ``path``) whose keys are ``wanted``, None when there are
    none; every value is checked (one that is not a string is an error wherever it is)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise LoadError(path, f"must be an object, not {describe_value(raw)}")
    kept: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(value, str) or not isinstance(key, str):
            raise LoadError(f"{path}.{key}", f"must be a string, not {describe_value(value)}")
        if key in wanted:
            kept[key] = value
    return kept or None


def _annotations(metadata: Mapping[str, Any]) -> dict[str, str] | None:
    """The annotations of an InferenceService that selection reads (:data:`READ_ANNOTATIONS`)."""
    return _string_map(metadata.get("annotations"), "metadata.annotations", READ_ANNOTATIONS)


_RUNTIME_ANNOTATIONS = frozenset({INHERIT_FROM_ANNOTATION, RUNTIME_PROFILE_ANNOTATION})
#: The components whose ``annotations`` maps are read (SPEC §1, §3.3), by kind of object.
_RUNTIME_COMPONENTS = ("engineConfig", "decoderConfig")
_ISVC_COMPONENTS = ("engine", "decoder")


def _check_component_annotations(spec: Mapping[str, Any], components: tuple[str, ...]) -> None:
    """Every value of the components' ``annotations`` maps must be a string, as the CRDs say (SPEC §1)."""
    for component in components:
        part = spec.get(component)
        if isinstance(part, Mapping):
            _string_map(part.get("annotations"), f"spec.{component}.annotations", frozenset())


def _as_the_crd_defaults(spec: dict[str, Any]) -> None:
    """What the InferenceService CRD does at the API server and a file has not had done (SPEC §1): the enum
    of ``spec.deploymentMode`` and the default ``spec.runtime.kind: ClusterServingRuntime``."""
    mode = spec.get("deploymentMode")
    if isinstance(mode, str) and mode not in DEPLOYMENT_MODE_ENUM:
        allowed = ", ".join(f'"{value}"' for value in DEPLOYMENT_MODE_ENUM)
        raise LoadError("spec.deploymentMode", f"must be one of {allowed}, not {describe_value(mode)}")
    runtime = spec.get("runtime")
    if isinstance(runtime, Mapping) and runtime.get("kind") is None:
        spec["runtime"] = {**runtime, "kind": "ClusterServingRuntime"}


#: Equal InferenceService specs are one object: thousands of InferenceServices name a few models and runtimes
#: in a few ways. Weak: a spec no InferenceService holds any more is let go.
_SPECS: weakref.WeakValueDictionary[InferenceServiceSpec, InferenceServiceSpec] = (
    weakref.WeakValueDictionary()
)


def _shared(spec: InferenceServiceSpec) -> InferenceServiceSpec:
    try:
        kept = _SPECS.get(spec)
        if kept is None:
            _SPECS[spec] = kept = spec
    except TypeError:  # not hashable (every field of the model is, today): not shared
        return spec
    return kept


def _generation(metadata: Mapping[str, Any]) -> int | None:
    value = metadata.get("generation")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise LoadError("metadata.generation", f"must be an integer, not {describe_value(value)}")
    return value


def _storage_uri(storage: object) -> str | None:
    """``storage.storageUri`` when it is a non-empty string; anything else says nothing (never an error)."""
    uri = storage.get("storageUri") if isinstance(storage, Mapping) else None
    return uri if isinstance(uri, str) and uri else None


def load_resource(
    doc: Mapping[str, Any], *, default_namespace: str | None = None, from_file: bool = False
) -> Resource | None:
    """The resource ``doc`` describes, None when it is not one of the five ``ome.io/v1beta1`` kinds.

    A namespaced object without ``metadata.namespace`` is put in ``default_namespace`` (an error without one);
    cluster-scoped objects get no namespace. Raises :class:`LoadError` (and nothing else) for an invalid
    document.

    ``from_file``: the document comes from a file, not from the API server, so what the shipped CRD does
    there is done here too (SPEC §1 "Loading from files"): a ``spec.deploymentMode`` outside the enum is an
    error, and an absent ``spec.runtime.kind`` becomes ``ClusterServingRuntime``. An object read from a
    cluster passed whatever CRD is installed there (SPEC §3.3: an unknown mode declares nothing).
    """
    if not isinstance(doc, Mapping):
        raise LoadError("", f"a resource must be an object, not {describe_value(doc)}")
    try:
        return _load(doc, default_namespace, from_file)
    except LoadError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as error:
        # Not expected (validation errors are converted where they arise), but the contract is "only
        # LoadError".
        raise LoadError("", f"invalid document: {error}") from None


def load_stored(body: Mapping[str, Any]) -> Resource | None:
    """An object as the API server holds it, read as every part of the product reads one: too large to read
    (:func:`~ome_selector.api.bounds.oversized`) or invalid to our model, it raises :class:`LoadError`."""
    too_large = oversized(body)
    if too_large is not None:
        raise LoadError("", too_large)
    return load_resource(body)


def stored_or_absent(body: Mapping[str, Any] | None) -> Resource | None:
    """:func:`load_stored`, with an object the product cannot read treated as absent (SPEC "Objects the
    product cannot read"), as the webhook reads them. The operator also logs and forgets one, so it calls
    :func:`load_stored` itself."""
    if body is None:
        return None
    try:
        return load_stored(body)
    except LoadError:
        return None


def _load(doc: Mapping[str, Any], default_namespace: str | None, from_file: bool) -> Resource | None:
    if doc.get("apiVersion") != API_GROUP_VERSION:
        return None
    kind_text = doc.get("kind")
    kind = _KINDS.get(kind_text) if isinstance(kind_text, str) else None
    if kind is None:
        return None

    metadata = doc.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise LoadError("metadata", f"must be an object, not {describe_value(metadata)}")
    name = _string(metadata, "name", required=True) or ""
    namespace: str | None = None
    if kind.namespaced:
        namespace = _string(metadata, "namespace") or default_namespace
        if not namespace:
            raise LoadError("metadata.namespace", f"required value (a {kind.value} is namespaced)")
    uid = _string(metadata, "uid")
    resource_version = _string(metadata, "resourceVersion")

    spec = doc.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise LoadError("spec", f"must be an object, not {describe_value(spec)}")
    spec = dict(spec)

    try:
        if kind.is_model:
            _string_map(metadata.get("annotations"), "metadata.annotations", frozenset())
            return Model(
                kind=kind,
                name=name,
                namespace=namespace,
                spec=ModelSpec.model_validate(spec),
                uid=uid,
                resource_version=resource_version,
                storage_uri=_storage_uri(spec.get("storage")),
            )
        if kind.is_runtime:
            _check_component_annotations(spec, _RUNTIME_COMPONENTS)
            annotations = _string_map(
                metadata.get("annotations"), "metadata.annotations", _RUNTIME_ANNOTATIONS
            )
            read = annotations or {}
            return Runtime(
                kind=kind,
                name=name,
                namespace=namespace,
                spec=RuntimeSpec.model_validate(spec),
                uid=uid,
                resource_version=resource_version,
                generation=_generation(metadata),
                inherit_from=read.get(INHERIT_FROM_ANNOTATION),
                runtime_profile=read.get(RUNTIME_PROFILE_ANNOTATION),
            )
        _check_component_annotations(spec, _ISVC_COMPONENTS)
        if from_file:
            _as_the_crd_defaults(spec)
        isvc_spec = InferenceServiceSpec.model_validate(spec)
    except ValidationError as error:
        raise _from_validation_error("spec", error) from None
    return InferenceService(
        name=name,
        namespace=sys.intern(namespace or ""),  # a few namespaces, thousands of InferenceServices
        spec=_shared(isvc_spec),
        annotations=_annotations(metadata),
        deletion_timestamp=_string(metadata, "deletionTimestamp"),
        uid=uid,
        resource_version=resource_version,
        generation=_generation(metadata),
    )


# ------------------------------------------------------------------------------------------------------------
# Objects defined more than once (SPEC §6 "Loading from files")

_Item = TypeVar("_Item")
#: How many earlier definitions a warning names before "…" (the last one is always named).
_PLACES_SHOWN = 4


@dataclass(frozen=True, slots=True)
class Redefinition:
    """An object defined more than once in what was read: ``places`` names every definition in reading order;
    the last one is the one kept, as ``kubectl apply`` leaves it."""

    key: ObjectKey
    places: tuple[str, ...]

    @property
    def warning(self) -> str:
        """The one warning for this object (SPEC §6), without the ``Warning: `` prefix."""
        count = len(self.places)
        times = "twice" if count == 2 else f"{count} times"
        earlier = [f"in {place}" for place in self.places[:-1]]
        if len(earlier) > _PLACES_SHOWN:  # bounded, whatever the number of copies
            earlier = [*earlier[: _PLACES_SHOWN - 1], "…"]
        where = f"{', '.join(earlier)} and in {self.places[-1]}"
        return f"{self.key} is defined {times}: {where}; the last one is used, as kubectl apply leaves it"


def keep_last_definitions(
    definitions: Iterable[tuple[ObjectKey, str, _Item]],
) -> tuple[list[_Item], list[Redefinition]]:
    """Of ``(key, place, item)`` triples in reading order, the items to keep (the last of each key, at the
    position of the key's first definition) and one :class:`Redefinition` per key defined more than once, in
    the order of the keys' first definitions.

    ``kubectl apply`` applies every object in file order, so of two with one key the later one is what the
    cluster holds (SPEC §6).
    """
    kept: dict[ObjectKey, _Item] = {}
    places: dict[ObjectKey, list[str]] = {}
    for key, place, item in definitions:
        kept[key] = item
        places.setdefault(key, []).append(place)
    redefined = [Redefinition(key, tuple(where)) for key, where in places.items() if len(where) > 1]
    return list(kept.values()), redefined
