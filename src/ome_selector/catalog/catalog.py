"""The in-memory catalog of models, runtimes and InferenceServices that every decision reads.

It is fed object by object (``upsert``/``remove``, as watch events arrive, or ``from_resources`` for files)
and keeps indexes so that a decision touches only what it needs:

- each runtime is compiled once into a :class:`~ome_selector.selection.profiles.RuntimeProfile` (sizes and
  versions parsed, interval written, entries indexed) when it is stored, each model into a
  :class:`~ome_selector.selection.profiles.ModelProfile`;
- runtimes are indexed by scope and by the format names of their entries, so auto-selection for a model looks
  only at the runtimes that name the model's format (no other runtime can match it);
- models are indexed for the SPEC §1 lookups (BaseModel in the namespace, else ClusterBaseModel);
- InferenceServices are indexed by namespace and by ``spec.model.name``, so a model or runtime event finds the
  InferenceServices to re-evaluate.

Storing an object with the key of a stored one replaces it ("later wins"). The catalog is not thread-safe: one
event loop (or one lock) owns it. It is the :class:`~ome_selector.selection.view.CatalogView` that selection
reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from ome_selector.api.resources import InferenceService, Kind, Model, ObjectKey, Resource, Runtime
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile

__all__ = ["Catalog"]

_K = TypeVar("_K")
_V = TypeVar("_V")
_W = TypeVar("_W")


def _by_name(keys: Iterable[ObjectKey]) -> list[ObjectKey]:
    return sorted(keys, key=lambda key: key.name)


class Catalog:
    """Indexed, incrementally updated store of the five kinds."""

    def __init__(self) -> None:
        self._objects: dict[ObjectKey, Resource] = {}
        self._profiles: dict[ObjectKey, RuntimeProfile] = {}
        self._model_profiles: dict[ObjectKey, ModelProfile] = {}
        # runtimes: scope (namespace, None for cluster) → name → key; (scope, format name) → keys
        self._runtimes: dict[str | None, dict[str, ObjectKey]] = {}
        self._runtimes_by_format: dict[tuple[str | None, str], dict[ObjectKey, None]] = {}
        # models: scope → name → key
        self._models: dict[str | None, dict[str, ObjectKey]] = {}
        # inference services: namespace → keys; model name → keys
        self._isvcs_by_namespace: dict[str, dict[ObjectKey, None]] = {}
        self._isvcs_by_model_name: dict[str, dict[ObjectKey, None]] = {}

    # --- construction and updates ---------------------------------------------------------------------------

    @classmethod
    def from_resources(cls, resources: Iterable[Resource]) -> Catalog:
        """A catalog holding ``resources``; of two objects with one key, the later one wins."""
        catalog = cls()
        for resource in resources:
            catalog.upsert(resource)
        return catalog

    def upsert(self, resource: Resource) -> None:
        """Add ``resource`` or replace the stored object with its key."""
        key = resource.key
        if key in self._objects:
            self.remove(key)
        self._objects[key] = resource
        scope = key.namespace
        if isinstance(resource, Runtime):
            profile = RuntimeProfile.of(resource)
            self._profiles[key] = profile
            self._runtimes.setdefault(scope, {})[key.name] = key
            for format_name in profile.format_names:
                self._runtimes_by_format.setdefault((scope, format_name), {})[key] = None
        elif isinstance(resource, Model):
            self._model_profiles[key] = ModelProfile.of(resource)
            self._models.setdefault(scope, {})[key.name] = key
        else:
            self._isvcs_by_namespace.setdefault(resource.namespace, {})[key] = None
            model_name = resource.model_name
            if model_name is not None:
                self._isvcs_by_model_name.setdefault(model_name, {})[key] = None

    def remove(self, key: ObjectKey) -> Resource | None:
        """Forget the object with ``key``; returns it, or None when it was not stored."""
        resource = self._objects.pop(key, None)
        if resource is None:
            return None
        scope = key.namespace
        if isinstance(resource, Runtime):
            profile = self._profiles.pop(key)
            _discard(self._runtimes, scope, key.name)
            for format_name in profile.format_names:
                _discard(self._runtimes_by_format, (scope, format_name), key)
        elif isinstance(resource, Model):
            self._model_profiles.pop(key, None)
            _discard(self._models, scope, key.name)
        else:
            _discard(self._isvcs_by_namespace, resource.namespace, key)
            if resource.model_name is not None:
                _discard(self._isvcs_by_model_name, resource.model_name, key)
        return resource

    # --- reads ----------------------------------------------------------------------------------------------

    def get(self, key: ObjectKey) -> Resource | None:
        return self._objects.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[Resource]:
        return iter(list(self._objects.values()))

    def keys(self, kind: Kind | None = None) -> list[ObjectKey]:
        """The stored keys (of one kind, if given)."""
        return [key for key in self._objects if kind is None or key.kind is kind]

    def resolve_model(self, namespace: str, name: str) -> Model | None:
        """The BaseModel ``name`` in ``namespace`` if there is one, else the ClusterBaseModel ``name`` (SPEC
        §1)."""
        key = self._models.get(namespace, {}).get(name) or self._models.get(None, {}).get(name)
        resource = self._objects.get(key) if key is not None else None
        return resource if isinstance(resource, Model) else None

    def resolve_runtime_profile(self, namespace: str, name: str) -> RuntimeProfile | None:
        """The ServingRuntime ``name`` in ``namespace`` if there is one, else the ClusterServingRuntime
        ``name``."""
        key = self._runtimes.get(namespace, {}).get(name) or self._runtimes.get(None, {}).get(name)
        return self._profiles.get(key) if key is not None else None

    def model_profile(self, model: Model) -> ModelProfile:
        """The compiled form of ``model`` (cached when it is the stored object)."""
        profile = self._model_profiles.get(model.key)
        if profile is not None and profile.model is model:
            return profile
        return ModelProfile.of(model)

    def runtime_profiles_visible_from(self, namespace: str) -> list[RuntimeProfile]:
        """The ServingRuntimes of ``namespace`` then all ClusterServingRuntimes, each by name."""
        keys = _by_name(self._runtimes.get(namespace, {}).values()) + _by_name(
            self._runtimes.get(None, {}).values()
        )
        return [self._profiles[key] for key in keys]

    def runtime_profiles_for_format(self, namespace: str, format_name: str) -> list[RuntimeProfile]:
        """The runtimes visible from ``namespace`` with an entry naming ``format_name`` (namespaced first)."""
        keys = _by_name(self._runtimes_by_format.get((namespace, format_name), {})) + _by_name(
            self._runtimes_by_format.get((None, format_name), {})
        )
        return [self._profiles[key] for key in keys]

    def runtime_counts(self, namespace: str) -> tuple[int, int]:
        """(ServingRuntimes in ``namespace``, ClusterServingRuntimes)."""
        return len(self._runtimes.get(namespace, {})), len(self._runtimes.get(None, {}))

    def models(self) -> list[Model]:
        return [r for r in self._objects.values() if isinstance(r, Model)]

    def runtimes(self) -> list[Runtime]:
        return [r for r in self._objects.values() if isinstance(r, Runtime)]

    def inference_services(self) -> list[InferenceService]:
        return [r for r in self._objects.values() if isinstance(r, InferenceService)]

    # --- who to re-evaluate
    # -----------------------------------------------------------------------------------

    def inference_services_referencing_model(self, model: ObjectKey) -> list[ObjectKey]:
        """InferenceServices whose ``spec.model.name`` resolves, or could resolve, to ``model``.

        For a BaseModel: those of its namespace with that model name. For a ClusterBaseModel: those of every
        namespace with that name — also where a BaseModel of the name shadows it (an over-approximation).
        """
        candidates = self._isvcs_by_model_name.get(model.name, {})
        if model.kind is Kind.BASE_MODEL:
            return sorted(key for key in candidates if key.namespace == model.namespace)
        return sorted(candidates)

    def inference_services_affected_by_runtime(self, runtime: ObjectKey) -> list[ObjectKey]:
        """InferenceServices a change of ``runtime`` can affect: its namespace's, or all for a cluster
        runtime.

        Every InferenceService in scope, not only those of the runtime's formats: the no-runtime message
        counts every runtime checked.
        """
        if runtime.kind is Kind.SERVING_RUNTIME and runtime.namespace is not None:
            return sorted(self._isvcs_by_namespace.get(runtime.namespace, {}))
        return sorted(key for keys in self._isvcs_by_namespace.values() for key in keys)


def _discard(index: dict[_K, dict[_V, _W]], outer: _K, inner: _V) -> None:
    bucket = index.get(outer)
    if bucket is None:
        return
    bucket.pop(inner, None)
    if not bucket:
        del index[outer]
