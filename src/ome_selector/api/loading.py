"""Loading the five kinds from dicts (API watch bodies, parsed files) and from YAML text, as the CRDs would.

:func:`load_resource` applies the CRD defaults (``weight: 1``, ``operator: Equal``, ``priority: 1``, ...) and
the CRD validation (``supportedModelFormats[].modelFormat.name`` and ``spec.model.name`` required,
``priority`` >= 1, strings, booleans and integers where the schema has them; ``null`` counts as absent) and
raises only :class:`LoadError`, whose ``path`` names the field. Documents of other apiVersions or kinds give
None. Reading files is the caller's business; :func:`load_yaml` parses text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import yaml
from pydantic import ValidationError

from ome_selector.api.resources import (
    API_GROUP_VERSION,
    InferenceService,
    InferenceServiceSpec,
    Kind,
    Model,
    ModelSpec,
    Resource,
    Runtime,
    RuntimeSpec,
)

__all__ = ["LoadError", "iter_objects", "load_resource", "load_yaml", "parse_yaml"]

_KINDS = {kind.value: kind for kind in Kind}


class LoadError(ValueError):
    """A document the API server would reject; ``path`` is the field path, e.g.
    ``spec.supportedModelFormats[0].priority`` (``""`` for the document itself)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)

    def within(self, prefix: str) -> LoadError:
        """The same error with ``prefix`` put before its path (e.g. ``items[3]`` in a List)."""
        path = f"{prefix}.{self.path}" if self.path else prefix
        return LoadError(path, self.message)


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


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _path(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _from_validation_error(prefix: str, error: ValidationError) -> LoadError:
    first = error.errors(include_url=False)[0]
    kind = first["type"]
    path = _path(prefix, tuple(first["loc"]))
    if kind == "missing":
        return LoadError(path, "required value")
    if kind in _TYPE_NAMES:
        return LoadError(path, f"must be {_TYPE_NAMES[kind]}, not {_describe(first.get('input'))}")
    if kind == "greater_than_equal":
        limit = (first.get("ctx") or {}).get("ge")
        return LoadError(
            path, f"must be greater than or equal to {limit}, not {_describe(first.get('input'))}"
        )
    return LoadError(path, str(first.get("msg", "invalid value")))


def _string(metadata: Mapping[str, Any], field: str, *, required: bool = False) -> str | None:
    value = metadata.get(field)
    if value is None:
        if required:
            raise LoadError(f"metadata.{field}", "required value")
        return None
    if not isinstance(value, str):
        raise LoadError(f"metadata.{field}", f"must be a string, not {_describe(value)}")
    if required and not value:
        raise LoadError(f"metadata.{field}", "required value")
    return value


def _annotations(metadata: Mapping[str, Any]) -> dict[str, str]:
    raw = metadata.get("annotations")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise LoadError("metadata.annotations", f"must be an object, not {_describe(raw)}")
    annotations: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(value, str) or not isinstance(key, str):
            raise LoadError(f"metadata.annotations.{key}", f"must be a string, not {_describe(value)}")
        annotations[key] = value
    return annotations


def _generation(metadata: Mapping[str, Any]) -> int | None:
    value = metadata.get("generation")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise LoadError("metadata.generation", f"must be an integer, not {_describe(value)}")
    return value


def load_resource(doc: Mapping[str, Any], *, default_namespace: str | None = None) -> Resource | None:
    """The resource ``doc`` describes, None when it is not one of the five ``ome.io/v1beta1`` kinds.

    A namespaced object without ``metadata.namespace`` is put in ``default_namespace`` (an error without one);
    cluster-scoped objects get no namespace. Raises :class:`LoadError` (and nothing else) for an invalid
    document.
    """
    if not isinstance(doc, Mapping):
        raise LoadError("", f"a resource must be an object, not {_describe(doc)}")
    try:
        return _load(doc, default_namespace)
    except LoadError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as error:
        # Not expected (validation errors are converted where they arise), but the contract is "only
        # LoadError".
        raise LoadError("", f"invalid document: {error}") from None


def _load(doc: Mapping[str, Any], default_namespace: str | None) -> Resource | None:
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
        raise LoadError("metadata", f"must be an object, not {_describe(metadata)}")
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
        raise LoadError("spec", f"must be an object, not {_describe(spec)}")
    spec = dict(spec)

    try:
        if kind.is_model:
            return Model(
                kind=kind,
                name=name,
                namespace=namespace,
                spec=ModelSpec.model_validate(spec),
                uid=uid,
                resource_version=resource_version,
            )
        if kind.is_runtime:
            return Runtime(
                kind=kind,
                name=name,
                namespace=namespace,
                spec=RuntimeSpec.model_validate(spec),
                uid=uid,
                resource_version=resource_version,
            )
        isvc_spec = InferenceServiceSpec.model_validate(spec)
    except ValidationError as error:
        raise _from_validation_error("spec", error) from None
    return InferenceService(
        name=name,
        namespace=namespace or "",
        spec=isvc_spec,
        annotations=_annotations(metadata),
        deletion_timestamp=_string(metadata, "deletionTimestamp"),
        uid=uid,
        resource_version=resource_version,
        generation=_generation(metadata),
    )


try:  # libyaml when present: several times faster on big files
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]


class _Loader(_BaseLoader):
    """The safe loader without the timestamp type: timestamps stay strings, as the API server keeps them."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_yaml(text: str) -> list[Any]:
    """The documents of a YAML (or JSON) stream, empty documents dropped; LoadError when it does not parse."""
    try:
        return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as error:
        raise LoadError("", f"invalid YAML: {error}") from None


def iter_objects(documents: list[Any]) -> Iterator[tuple[str, Any]]:
    """Each object with its path prefix: ``kind: List`` documents are expanded into ``[i].items[j]``."""
    for index, doc in enumerate(documents):
        prefix = f"[{index}]" if len(documents) > 1 else ""
        if isinstance(doc, Mapping) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            for position, item in enumerate(doc["items"]):
                yield f"{prefix}items[{position}]" if not prefix else f"{prefix}.items[{position}]", item
        else:
            yield prefix, doc


def load_yaml(text: str, *, default_namespace: str | None = None) -> list[Resource]:
    """The resources of a YAML stream (``kind: List`` expanded, other kinds skipped), in document order.

    Errors name the document (``[1].spec.model.name``) when the stream holds several.
    """
    resources: list[Resource] = []
    for prefix, doc in iter_objects(parse_yaml(text)):
        try:
            resource = load_resource(doc, default_namespace=default_namespace)
        except LoadError as error:
            raise error.within(prefix) if prefix else error from None
        if resource is not None:
            resources.append(resource)
    return resources
