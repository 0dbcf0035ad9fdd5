"""The in-memory catalog of models, runtimes and InferenceServices that every decision reads.

It is fed object by object (``upsert``/``remove``, as watch events arrive, or ``from_resources`` for files)
and keeps indexes so that a decision touches only what it needs:

- each runtime is compiled once into a :class:`~ome_selector.selection.profiles.RuntimeProfile` (sizes and
  versions parsed, interval written, entries indexed) when it is stored, each model into a
  :class:`~ome_selector.selection.profiles.ModelProfile`;
- runtimes are indexed by scope, by the format names of their entries and by the match keys of their entries
  (SPEC §9 "strict presence": format, architecture, quantization, framework), so auto-selection for a model
  ranks only the runtimes with an entry of the model's match key (no other runtime can match it) and lists
  only those that name its format; each index keeps its runtimes sorted by name until one of them changes;
- auto-selection results are kept (:class:`~ome_selector.selection.memo.AutoSelectionMemo`), and told of
  every runtime stored or removed;
- models are indexed for the SPEC §1 lookups (BaseModel in the namespace, else ClusterBaseModel);
- InferenceServices are indexed by namespace, by ``spec.model.name`` and by ``spec.runtime.name``, and
  runtimes by the parent their ``ome.io/inherit-from`` names, so a model or runtime event finds the
  InferenceServices to re-evaluate — for a runtime also those that name one of its descendants (SPEC §5);
- ``runtimes_stamp`` changes whenever a runtime is stored or removed, and no two catalogs share one, so a
  reader can tell that the runtimes are the ones it compared before.
- InferenceServices are also grouped by what a decision reads of them
  (:class:`~ome_selector.selection.outcome.DecisionInputs`), the groups indexed by model name and runtime
  name, and models by match key: the impact of a catalog change (SPEC §12) is judged once per group of the
  models and runtimes it touches, not once per InferenceService.

Storing an object with the key of a stored one replaces it ("later wins"). The catalog is not thread-safe: one
event loop (or one lock) owns it. It is the :class:`~ome_selector.selection.view.CatalogView` that selection
reads.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections import deque
from collections.abc import Collection, Hashable, Iterable, Iterator
from typing import NamedTuple, TypeVar

from ome_selector.api.resources import InferenceService, Kind, Model, ObjectKey, Resource, Runtime
from ome_selector.selection.memo import AutoSelectionMemo
from ome_selector.selection.outcome import DecisionInputs, decision_inputs
from ome_selector.selection.profiles import MatchKey, ModelProfile, RuntimeProfile

__all__ = ["Catalog", "DefinitionChange"]

_K = TypeVar("_K")
_V = TypeVar("_V")
_W = TypeVar("_W")

#: Where every catalog's runtimes stamp comes from (unique in the process).
_STAMPS = itertools.count(1)
#: Changes remembered (:meth:`Catalog.inference_service_changes_since`,
#: :meth:`Catalog.definition_changes_since`); a reader further behind is told it cannot know what changed.
CHANGE_LOG_LIMIT = 4096


class DefinitionChange(NamedTuple):
    """A model or runtime stored or removed (an update is both): its key, the match keys of its entries (a
    model's own), and the names a lookup finds it by — its name, and a runtime's ``ome.io/inherit-from``
    parent."""

    key: ObjectKey
    match_keys: frozenset[MatchKey]
    names: frozenset[str]


class _Shelf:
    """The runtimes of one scope that share something (a format name, a match key), kept sorted by name.

    A change moves the others along (a memory move, not a sort); readers get a tuple, built once per change.
    """

    __slots__ = ("_names", "_profiles", "_snapshot")

    def __init__(self) -> None:
        self._names: list[str] = []
        self._profiles: list[RuntimeProfile] = []
        self._snapshot: tuple[RuntimeProfile, ...] | None = None

    def put(self, profile: RuntimeProfile) -> None:
        """Add ``profile``, or replace the one of its name."""
        names, name = self._names, profile.name
        index = bisect_left(names, name)
        if index < len(names) and names[index] == name:
            self._profiles[index] = profile
        else:
            names.insert(index, name)
            self._profiles.insert(index, profile)
        self._snapshot = None

    def discard(self, name: str) -> None:
        names = self._names
        index = bisect_left(names, name)
        if index < len(names) and names[index] == name:
            del names[index]
            del self._profiles[index]
            self._snapshot = None

    def __len__(self) -> int:
        return len(self._names)

    def by_name(self) -> tuple[RuntimeProfile, ...]:
        if self._snapshot is None:
            self._snapshot = tuple(self._profiles)
        return self._snapshot


_S = TypeVar("_S", bound=Hashable)
_EMPTY: tuple[RuntimeProfile, ...] = ()


def _shelve(shelves: dict[_S, _Shelf], where: _S, profile: RuntimeProfile) -> None:
    shelf = shelves.get(where)
    if shelf is None:
        shelf = shelves[where] = _Shelf()
    shelf.put(profile)


def _unshelve(shelves: dict[_S, _Shelf], where: _S, name: str) -> None:
    shelf = shelves.get(where)
    if shelf is not None:
        shelf.discard(name)
        if not shelf:
            del shelves[where]


def _visible(shelves: dict[_S, _Shelf], namespaced: _S, cluster: _S) -> list[RuntimeProfile]:
    """The runtimes on the namespace's shelf, then those on the cluster's, each by name."""
    local, everywhere = shelves.get(namespaced), shelves.get(cluster)
    return [
        *(local.by_name() if local is not None else _EMPTY),
        *(everywhere.by_name() if everywhere is not None else _EMPTY),
    ]


class Catalog:
    """Indexed, incrementally updated store of the five kinds."""

    def __init__(self) -> None:
        self._objects: dict[ObjectKey, Resource] = {}
        self._counts: dict[Kind, int] = dict.fromkeys(Kind, 0)  # read at every scrape: never a scan
        self._profiles: dict[ObjectKey, RuntimeProfile] = {}
        self._model_profiles: dict[ObjectKey, ModelProfile] = {}
        # runtimes: scope (namespace, None for cluster) → name → key; shelves by scope, by (scope, format
        # name) and by (scope, match key); the auto-selection results read from them
        self._runtimes: dict[str | None, dict[str, ObjectKey]] = {}
        self._runtimes_by_scope: dict[str | None, _Shelf] = {}
        self._runtimes_by_format: dict[tuple[str | None, str], _Shelf] = {}
        self._runtimes_by_match_key: dict[tuple[str | None, MatchKey], _Shelf] = {}
        self._auto_selections = AutoSelectionMemo()
        self._runtimes_stamp = next(_STAMPS)
        # models: scope → name → key
        self._models: dict[str | None, dict[str, ObjectKey]] = {}
        # inference services: namespace → keys; model name → keys
        self._isvcs_by_namespace: dict[str, dict[ObjectKey, None]] = {}
        self._isvcs_by_model_name: dict[str, dict[ObjectKey, None]] = {}
        # inheritance (SPEC §5): parent name → the runtimes whose ome.io/inherit-from holds it; runtime name →
        # the InferenceServices that name it
        self._children: dict[str, dict[ObjectKey, None]] = {}
        self._isvcs_by_runtime_name: dict[str, dict[ObjectKey, None]] = {}
        # SPEC §12: InferenceServices by decision inputs; the groups by model name and by runtime name; models
        # by match key (None: no format)
        self._groups: dict[DecisionInputs, dict[ObjectKey, None]] = {}
        self._groups_by_model_name: dict[str, dict[DecisionInputs, None]] = {}
        self._groups_by_runtime_name: dict[str, dict[DecisionInputs, None]] = {}
        self._models_by_match_key: dict[MatchKey, dict[ObjectKey, None]] = {}
        self._version = 0  # every store and removal: a reader that yielded can tell nothing changed
        # The last models and runtimes stored or removed, and the decision inputs of the last
        # InferenceServices stored or removed (their groups changed), each with how many changes in all.
        self._definition_log: deque[DefinitionChange] = deque(maxlen=CHANGE_LOG_LIMIT)
        self._definition_changes = 0
        self._isvc_log: deque[DecisionInputs] = deque(maxlen=CHANGE_LOG_LIMIT)
        self._isvc_changes = 0

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
        version = self._version
        previous = self._objects.get(key)
        old_inputs = decision_inputs(previous) if isinstance(previous, InferenceService) else None
        if previous is not None:
            self._remove(key, old_inputs)
        self._version += 1
        inputs = decision_inputs(resource) if isinstance(resource, InferenceService) else None
        if inputs is not None and inputs == old_inputs:
            self._version = version  # its status or labels: nothing a decision reads changed
        elif inputs is not None:
            if old_inputs is not None:
                self._isvc_changed(old_inputs)
            self._isvc_changed(inputs)
        self._objects[key] = resource
        self._counts[key.kind] += 1
        scope = key.namespace
        if isinstance(resource, Runtime):
            profile = RuntimeProfile.of(resource)
            self._definition_changed(key, profile.entries_by_key, (key.name, resource.parent_name))
            self._profiles[key] = profile
            self._runtimes.setdefault(scope, {})[key.name] = key
            _shelve(self._runtimes_by_scope, scope, profile)
            for format_name in profile.format_names:
                _shelve(self._runtimes_by_format, (scope, format_name), profile)
            for match_key in profile.entries_by_key:
                _shelve(self._runtimes_by_match_key, (scope, match_key), profile)
            self._auto_selections.runtime_changed(scope, key, profile)
            self._runtimes_stamp = next(_STAMPS)
            if resource.parent_name is not None:
                self._children.setdefault(resource.parent_name, {})[key] = None
        elif isinstance(resource, Model):
            model_profile = self._model_profiles[key] = ModelProfile.of(resource)
            self._definition_changed(key, (model_profile.match_key,), (key.name,))
            self._models.setdefault(scope, {})[key.name] = key
            self._models_by_match_key.setdefault(model_profile.match_key, {})[key] = None
        else:
            assert inputs is not None
            group = self._groups.get(inputs)
            if group is None:
                group = self._groups[inputs] = {}
                if inputs.model_name is not None:
                    self._groups_by_model_name.setdefault(inputs.model_name, {})[inputs] = None
                if inputs.runtime_name is not None:
                    self._groups_by_runtime_name.setdefault(inputs.runtime_name, {})[inputs] = None
            group[key] = None
            self._isvcs_by_namespace.setdefault(resource.namespace, {})[key] = None
            model_name = resource.model_name
            if model_name is not None:
                self._isvcs_by_model_name.setdefault(model_name, {})[key] = None
            runtime_name = resource.runtime_name
            if runtime_name is not None:
                self._isvcs_by_runtime_name.setdefault(runtime_name, {})[key] = None

    def remove(self, key: ObjectKey) -> Resource | None:
        """Forget the object with ``key``; returns it, or None when it was not stored."""
        return self._remove(key, None)

    def _remove(self, key: ObjectKey, inputs: DecisionInputs | None) -> Resource | None:
        """:meth:`remove`; ``inputs``, when given, the stored InferenceService's decision inputs."""
        resource = self._objects.pop(key, None)
        if resource is None:
            return None
        self._version += 1
        self._counts[key.kind] -= 1
        scope = key.namespace
        if isinstance(resource, Runtime):
            profile = self._profiles.pop(key)
            self._definition_changed(key, profile.entries_by_key, (key.name, resource.parent_name))
            _discard(self._runtimes, scope, key.name)
            _unshelve(self._runtimes_by_scope, scope, key.name)
            for format_name in profile.format_names:
                _unshelve(self._runtimes_by_format, (scope, format_name), key.name)
            for match_key in profile.entries_by_key:
                _unshelve(self._runtimes_by_match_key, (scope, match_key), key.name)
            self._auto_selections.runtime_changed(scope, key, None)
            self._runtimes_stamp = next(_STAMPS)
            if resource.parent_name is not None:
                _discard(self._children, resource.parent_name, key)
        elif isinstance(resource, Model):
            model_profile = self._model_profiles.pop(key, None)
            match_keys = (model_profile.match_key,) if model_profile is not None else ()
            self._definition_changed(key, match_keys, (key.name,))
            _discard(self._models, scope, key.name)
            if model_profile is not None:
                _discard(self._models_by_match_key, model_profile.match_key, key)
        else:
            if inputs is None:
                inputs = decision_inputs(resource)  # the stored object's: the inputs it was grouped by
                self._isvc_changed(inputs)  # a removal (a store logs its own change)
            _discard(self._groups, inputs, key)
            if inputs not in self._groups:
                if inputs.model_name is not None:
                    _discard(self._groups_by_model_name, inputs.model_name, inputs)
                if inputs.runtime_name is not None:
                    _discard(self._groups_by_runtime_name, inputs.runtime_name, inputs)
            _discard(self._isvcs_by_namespace, resource.namespace, key)
            if resource.model_name is not None:
                _discard(self._isvcs_by_model_name, resource.model_name, key)
            if resource.runtime_name is not None:
                _discard(self._isvcs_by_runtime_name, resource.runtime_name, key)
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

    def counts(self) -> dict[Kind, int]:
        """How many objects of each kind are stored (without going through them)."""
        return dict(self._counts)

    def keys(self, kind: Kind | None = None) -> list[ObjectKey]:
        """The stored keys (of one kind, if given)."""
        return [key for key in self._objects if kind is None or key.kind is kind]

    def resolve_model(self, namespace: str, name: str) -> Model | None:
        """The BaseModel ``name`` in ``namespace`` if there is one, else the ClusterBaseModel ``name`` (SPEC
        §1)."""
        key = self._models.get(namespace, {}).get(name) or self._models.get(None, {}).get(name)
        resource = self._objects.get(key) if key is not None else None
        return resource if isinstance(resource, Model) else None

    def runtime_profile(self, kind: Kind, namespace: str | None, name: str) -> RuntimeProfile | None:
        """The ServingRuntime ``namespace``/``name`` or the ClusterServingRuntime ``name`` (SPEC §1)."""
        return self._profiles.get(ObjectKey(kind, namespace if kind.namespaced else None, name))

    def model_profile(self, model: Model) -> ModelProfile:
        """The compiled form of ``model`` (cached when it is the stored object)."""
        profile = self._model_profiles.get(model.key)
        if profile is not None and profile.model is model:
            return profile
        return ModelProfile.of(model)

    def runtime_profiles_visible_from(self, namespace: str) -> list[RuntimeProfile]:
        """The ServingRuntimes of ``namespace`` then all ClusterServingRuntimes, each by name."""
        return _visible(self._runtimes_by_scope, namespace, None)

    def runtime_profiles_for_format(self, namespace: str, format_name: str) -> list[RuntimeProfile]:
        """The runtimes visible from ``namespace`` with an entry naming ``format_name`` (namespaced first)."""
        return _visible(self._runtimes_by_format, (namespace, format_name), (None, format_name))

    def runtime_profiles_for_match_key(self, namespace: str, key: MatchKey) -> list[RuntimeProfile]:
        """The runtimes visible from ``namespace`` with an entry of match key ``key`` (namespaced first)."""
        return _visible(self._runtimes_by_match_key, (namespace, key), (None, key))

    @property
    def auto_selections(self) -> AutoSelectionMemo:
        """Auto-selection results, each brought up to date with the runtimes stored or removed since it was
        computed when it is read."""
        return self._auto_selections

    def runtime_counts(self, namespace: str) -> tuple[int, int]:
        """(ServingRuntimes in ``namespace``, ClusterServingRuntimes)."""
        return len(self._runtimes.get(namespace, {})), len(self._runtimes.get(None, {}))

    def namespaces_with_runtimes(self) -> list[str]:
        """The namespaces that have ServingRuntimes."""
        return [scope for scope in self._runtimes if scope is not None]

    @property
    def version(self) -> int:
        """A number that grows with every object stored or removed, except an InferenceService stored again
        with the same decision inputs (its status written, say)."""
        return self._version

    @property
    def definition_changes(self) -> int:
        """How many models and runtimes were stored or removed so far (an update counts twice): a mark for
        :meth:`definition_changes_since`."""
        return self._definition_changes

    def definition_changes_since(self, mark: int) -> list[DefinitionChange] | None:
        """The models and runtimes stored or removed since ``mark`` (an earlier :attr:`definition_changes`);
        None when more changed than the catalog remembers (:data:`CHANGE_LOG_LIMIT`)."""
        missed = self._definition_changes - mark
        if missed > len(self._definition_log):
            return None
        return list(itertools.islice(self._definition_log, len(self._definition_log) - missed, None))

    def _definition_changed(
        self, key: ObjectKey, match_keys: Iterable[MatchKey], names: Iterable[str | None]
    ) -> None:
        change = DefinitionChange(key, frozenset(match_keys), frozenset(n for n in names if n is not None))
        self._definition_log.append(change)
        self._definition_changes += 1

    @property
    def inference_service_changes(self) -> int:
        """How many InferenceService changes that move a decision group there were so far: a mark for
        :meth:`inference_service_changes_since`."""
        return self._isvc_changes

    def inference_service_changes_since(self, mark: int) -> list[DecisionInputs] | None:
        """The decision inputs whose groups InferenceServices joined or left since ``mark`` (an earlier
        :attr:`inference_service_changes`), both the old and the new inputs of a changed one; None when more
        changed than the catalog remembers (:data:`CHANGE_LOG_LIMIT`)."""
        missed = self._isvc_changes - mark
        if missed > len(self._isvc_log):
            return None
        return list(itertools.islice(self._isvc_log, len(self._isvc_log) - missed, None))

    def _isvc_changed(self, inputs: DecisionInputs) -> None:
        self._isvc_log.append(inputs)
        self._isvc_changes += 1

    @property
    def runtimes_stamp(self) -> int:
        """A number that changes whenever a runtime is stored or removed, unique to this catalog's state."""
        return self._runtimes_stamp

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
        runtime, and those that name it or a descendant (:meth:`inference_services_naming_lineage`).

        Every InferenceService in scope, not only those of the runtime's formats: the no-runtime message
        counts every runtime checked. A namespace's are sorted; all of them come namespace by namespace,
        each in the order stored (sorting 100,000 keys would hold the caller's event loop).
        """
        if runtime.kind is Kind.SERVING_RUNTIME and runtime.namespace is not None:
            in_scope = self._isvcs_by_namespace.get(runtime.namespace, {})
            if runtime.name in self._children:  # a chain may reach outside the namespace (SPEC §5)
                return sorted(in_scope.keys() | self.inference_services_naming_lineage(runtime))
            return sorted(in_scope)
        # Every InferenceService: those that name the runtime or a descendant are among them.
        return [key for keys in self._isvcs_by_namespace.values() for key in keys]

    # --- decision groups (SPEC §12) ---------------------------------------------------------------

    def decision_group(self, inputs: DecisionInputs) -> Collection[ObjectKey]:
        """The InferenceServices with these decision inputs (a live view: read it before the next change)."""
        return self._groups.get(inputs, {}).keys()

    def decision_groups(self) -> list[DecisionInputs]:
        """Every group of InferenceServices with equal decision inputs."""
        return list(self._groups)

    def decision_groups_for_model_name(self, name: str) -> list[DecisionInputs]:
        """The groups whose ``spec.model.name`` is ``name``."""
        return list(self._groups_by_model_name.get(name, ()))

    def decision_groups_naming(self, runtime_name: str) -> list[DecisionInputs]:
        """The groups whose ``spec.runtime.name`` is ``runtime_name``."""
        return list(self._groups_by_runtime_name.get(runtime_name, ()))

    def models_with_match_key(self, key: MatchKey) -> list[Model]:
        """The models of match key ``key`` (the runtimes that can match them have an entry of that key)."""
        found = (self._objects.get(model) for model in self._models_by_match_key.get(key, ()))
        return [model for model in found if isinstance(model, Model)]

    def runtime_profiles_of_scope_for_match_key(
        self, scope: str | None, key: MatchKey
    ) -> list[RuntimeProfile]:
        """The runtimes of exactly ``scope`` (a namespace's ServingRuntimes, or None: the
        ClusterServingRuntimes) with an entry of match key ``key``, by name."""
        shelf = self._runtimes_by_match_key.get((scope, key))
        return list(shelf.by_name()) if shelf is not None else []

    def has_runtimes_of_scope_for_match_key(self, scope: str | None, key: MatchKey) -> bool:
        """Whether :meth:`runtime_profiles_of_scope_for_match_key` finds any (without listing them)."""
        shelf = self._runtimes_by_match_key.get((scope, key))
        return shelf is not None and len(shelf) > 0

    def inference_service(self, key: ObjectKey) -> InferenceService | None:
        resource = self._objects.get(key)
        return resource if isinstance(resource, InferenceService) else None

    # --- inheritance (SPEC §5 v4) ---------------------------------------------------------------------------

    def runtime_descendants(self, runtime: ObjectKey) -> set[ObjectKey]:
        """The runtimes below ``runtime`` in a chain, found by name only (SPEC §5): a runtime whose
        ``ome.io/inherit-from`` holds a name is its child, whichever runtime its own lookup would find, so the
        set can only be too large. From a ServingRuntime the walk stays in its namespace (its
        ServingRuntimes, and the ClusterServingRuntimes a chain of that namespace can pass through); from a
        ClusterServingRuntime it reaches ClusterServingRuntimes and the ServingRuntimes of every namespace,
        and once at a ServingRuntime it stays in that one's namespace. Each runtime is visited once."""
        children = self._children
        if runtime.name not in children:
            return set()  # the common case: nothing inherits from this name
        found: set[ObjectKey] = set()
        scope = runtime.namespace if runtime.kind is Kind.SERVING_RUNTIME else None
        waiting: list[tuple[str, str | None]] = [(runtime.name, scope)]
        while waiting:
            name, scope = waiting.pop()
            for child in children.get(name, ()):
                if child in found or child == runtime:
                    continue
                if scope is not None and child.namespace not in (scope, None):
                    continue  # a ServingRuntime of another namespace never has this parent
                found.add(child)
                waiting.append((child.name, child.namespace if child.namespace is not None else scope))
        return found

    def inference_services_naming_lineage(self, runtime: ObjectKey) -> set[ObjectKey]:
        """The InferenceServices that name ``runtime`` or one of its :meth:`runtime_descendants` (by name, as
        their own lookup might find them; a ServingRuntime only from its namespace)."""
        named: set[ObjectKey] = set()
        for runtime_key in (runtime, *self.runtime_descendants(runtime)):
            for key in self._isvcs_by_runtime_name.get(runtime_key.name, ()):
                if runtime_key.namespace is None or key.namespace == runtime_key.namespace:
                    named.add(key)
        return named


def _discard(index: dict[_K, dict[_V, _W]], outer: _K, inner: _V) -> None:
    bucket = index.get(outer)
    if bucket is None:
        return
    bucket.pop(inner, None)
    if not bucket:
        del index[outer]
