"""The live catalog with some objects replaced or removed, nothing copied.

Two readers decide on a catalog that differs from the live one in a few objects: the webhook's
confirming read (the runtimes as read again from the API, SPEC §7) and the impact of a catalog change (the
models and runtimes as the change would leave them, SPEC §11 what-if, SPEC §12). Both lay their runtimes over
the live catalog's with :class:`RuntimeOverlay`, which answers the runtime half of a
:class:`~ome_selector.selection.view.CatalogView`; the model half and the memo are theirs.

For a change (:data:`Changes`: key → the object after it, None when it is deleted), :class:`CatalogAfter`
is the catalog after it: the live catalog with those objects laid over it, and an auto-selection memo that
starts from the live one's results and replays the runtime changes
(:func:`~ome_selector.selection.memo.replay`), so a model costs one check, not a ranking.
:class:`CatalogBefore` is the live catalog as a review reads it, with a memo of its own: the one the operator
and the webhook share is never written or evicted by a review (SPEC §12).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ome_selector.api.resources import (
    NO_MODES,
    DeploymentModes,
    Kind,
    Model,
    ObjectKey,
    Resource,
    Runtime,
)
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.memo import AutoSelection, AutoSelectionMemo, RuntimeChange, replay
from ome_selector.selection.outcome import auto_selection
from ome_selector.selection.profiles import MatchKey, ModelProfile, RuntimeProfile

__all__ = [
    "CatalogAfter",
    "CatalogBefore",
    "Changes",
    "RuntimeOverlay",
    "before_selection",
    "has_before_selection",
]

#: A change: each key with the object after it (None: deleted).
Changes = Mapping[ObjectKey, Resource | None]


def _order(profile: RuntimeProfile) -> tuple[bool, str]:
    return profile.is_cluster, profile.name  # a catalog's order: namespaced first, each by name


class RuntimeOverlay:
    """The runtimes of ``live`` with ``amended`` laid over them: key → the runtime as it is to be read, None
    when it is absent."""

    def __init__(self, live: Catalog, amended: Mapping[ObjectKey, RuntimeProfile | None]) -> None:
        self._live = live
        self._amended = amended

    def runtime_profile(self, kind: Kind, namespace: str | None, name: str) -> RuntimeProfile | None:
        key = ObjectKey(kind, namespace if kind.namespaced else None, name)
        if key in self._amended:
            return self._amended[key]
        return self._live.runtime_profile(kind, namespace, name)

    def runtime_profiles_visible_from(self, namespace: str) -> list[RuntimeProfile]:
        return self._amend(self._live.runtime_profiles_visible_from(namespace), namespace, lambda _: True)

    def runtime_profiles_for_format(self, namespace: str, format_name: str) -> list[RuntimeProfile]:
        live = self._live.runtime_profiles_for_format(namespace, format_name)
        return self._amend(live, namespace, lambda profile: format_name in profile.format_names)

    def runtime_profiles_for_match_key(self, namespace: str, key: MatchKey) -> list[RuntimeProfile]:
        live = self._live.runtime_profiles_for_match_key(namespace, key)
        return self._amend(live, namespace, lambda profile: key in profile.entries_by_key)

    def runtime_counts(self, namespace: str) -> tuple[int, int]:
        namespaced, cluster = self._live.runtime_counts(namespace)
        for key, profile in self._amended.items():
            if key.namespace not in (namespace, None):
                continue
            change = (profile is not None) - isinstance(self._live.get(key), Runtime)
            if key.namespace is None:
                cluster += change
            else:
                namespaced += change
        return namespaced, cluster

    def _amend(
        self, live: Sequence[RuntimeProfile], namespace: str, wanted: Callable[[RuntimeProfile], bool]
    ) -> list[RuntimeProfile]:
        amended = self._amended
        if not amended:
            return list(live)
        kept = [profile for profile in live if profile.runtime.key not in amended]
        added = [
            profile
            for key, profile in amended.items()
            if profile is not None and key.namespace in (namespace, None) and wanted(profile)
        ]
        return sorted([*kept, *added], key=_order) if added else kept


def _runtime_profile(resource: Resource | None) -> RuntimeProfile | None:
    return RuntimeProfile.of(resource) if isinstance(resource, Runtime) else None


class _ReviewMemo(AutoSelectionMemo):
    """A review's own auto-selection results for the live catalog: those it computed, else the live memo's
    (read with :meth:`~AutoSelectionMemo.peek`: never written, never evicted — SPEC §12, the memo the
    controller and the webhook share stays as warm as the review found it)."""

    def __init__(self, live: AutoSelectionMemo) -> None:
        super().__init__()
        self._live = live

    def get(
        self,
        scope: str | None,
        model: ModelProfile,
        accelerator_classes: tuple[str, ...],
        modes: DeploymentModes = NO_MODES,
    ) -> AutoSelection | None:
        kept = super().get(scope, model, accelerator_classes, modes)
        if kept is None:
            kept = self._live.peek(scope, model, accelerator_classes, modes)
            if kept is not None:
                self.put(scope, accelerator_classes, kept, modes)
        return kept


def _has_namespaced_for_key(
    live: Catalog,
    changed: Mapping[ObjectKey, RuntimeProfile | None],
    namespace: str,
    match_key: MatchKey,
) -> bool:
    """Whether ``namespace`` has a ServingRuntime with an entry of ``match_key`` once ``changed`` is laid over
    ``live``: without one, the namespace ranks the ClusterServingRuntimes alone, as the namespaces without
    ServingRuntimes do (SPEC §4), so it shares their view."""
    for key, profile in changed.items():
        if key.namespace == namespace and profile is not None and match_key in profile.entries_by_key:
            return True
    if not live.has_runtimes_of_scope_for_match_key(namespace, match_key):
        return False
    if not changed:
        return True
    return any(
        profile.runtime.key not in changed
        for profile in live.runtime_profiles_of_scope_for_match_key(namespace, match_key)
    )


class CatalogBefore:
    """The live catalog as a :class:`CatalogView` whose auto-selection memo is the review's own
    (:class:`_ReviewMemo`): a review reads what the live memo knows and keeps what it computes to itself."""

    def __init__(self, live: Catalog) -> None:
        self.live = live
        self._memo = _ReviewMemo(live.auto_selections)

    def runtime_profile(self, kind: Kind, namespace: str | None, name: str) -> RuntimeProfile | None:
        return self.live.runtime_profile(kind, namespace, name)

    def resolve_model(self, namespace: str, name: str) -> Model | None:
        return self.live.resolve_model(namespace, name)

    def model_profile(self, model: Model) -> ModelProfile:
        return self.live.model_profile(model)

    def runtime_profiles_visible_from(self, namespace: str) -> list[RuntimeProfile]:
        return self.live.runtime_profiles_visible_from(namespace)

    def runtime_profiles_for_format(self, namespace: str, format_name: str) -> list[RuntimeProfile]:
        return self.live.runtime_profiles_for_format(namespace, format_name)

    def runtime_profiles_for_match_key(self, namespace: str, key: MatchKey) -> list[RuntimeProfile]:
        return self.live.runtime_profiles_for_match_key(namespace, key)

    def runtime_counts(self, namespace: str) -> tuple[int, int]:
        return self.live.runtime_counts(namespace)

    def has_namespaced_for_key(self, namespace: str, match_key: MatchKey) -> bool:
        """Whether ``namespace`` has a ServingRuntime with an entry of ``match_key``."""
        return _has_namespaced_for_key(self.live, {}, namespace, match_key)

    @property
    def auto_selections(self) -> AutoSelectionMemo:
        return self._memo


class CatalogAfter(RuntimeOverlay):
    """The catalog ``before`` with ``changes`` laid over it, as a :class:`CatalogView` (nothing is copied).
    ``before_view`` is the live catalog as the review reads it (its own memo; a new one when not given)."""

    def __init__(self, before: Catalog, changes: Changes, before_view: CatalogBefore | None = None) -> None:
        self.before = before
        self.before_view = before_view if before_view is not None else CatalogBefore(before)
        self.changes = changes
        self._runtimes: dict[ObjectKey, RuntimeProfile | None] = {}
        super().__init__(before, self._runtimes)
        self._models: dict[ObjectKey, Model | None] = {}
        self._model_profiles: dict[ObjectKey, ModelProfile] = {}
        runtime_changes: list[RuntimeChange] = []
        for key, resource in changes.items():
            if key.kind in (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME):
                profile = _runtime_profile(resource)
                self._runtimes[key] = profile
                runtime_changes.append((key.namespace, key, profile))
            elif key.kind in (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL):
                model = resource if isinstance(resource, Model) else None
                self._models[key] = model
                if model is not None:
                    self._model_profiles[key] = ModelProfile.of(model)
        self._memo = _MemoAfter(self, runtime_changes)

    @property
    def runtime_changes(self) -> Mapping[ObjectKey, RuntimeProfile | None]:
        return self._runtimes

    @property
    def model_changes(self) -> Mapping[ObjectKey, Model | None]:
        return self._models

    def get(self, key: ObjectKey) -> Resource | None:
        if key in self.changes:
            return self.changes[key]
        return self.before.get(key)

    def resolve_model(self, namespace: str, name: str) -> Model | None:
        if self._models:
            for kind, where in ((Kind.BASE_MODEL, namespace), (Kind.CLUSTER_BASE_MODEL, None)):
                key = ObjectKey(kind, where, name)
                if key in self._models:
                    changed = self._models[key]
                    if changed is not None:
                        return changed
                    continue
                found = self.before.get(key)
                if isinstance(found, Model):
                    return found
            return None
        return self.before.resolve_model(namespace, name)

    def model_profile(self, model: Model) -> ModelProfile:
        profile = self._model_profiles.get(model.key)
        if profile is not None and profile.model is model:
            return profile
        return self.before.model_profile(model)

    def has_namespaced_for_key(self, namespace: str, match_key: MatchKey) -> bool:
        """Whether ``namespace`` has a ServingRuntime with an entry of ``match_key`` after the change."""
        return _has_namespaced_for_key(self.before, self._runtimes, namespace, match_key)

    @property
    def auto_selections(self) -> AutoSelectionMemo:
        return self._memo


class _MemoAfter(AutoSelectionMemo):
    """Auto-selection results after the change: the live catalog's result for the same model, accelerator
    classes and modes, with the change's runtime changes replayed (SPEC §4: one check per changed runtime,
    two candidates when the selected runtime changed); computed in the view after the change only when the
    replay cannot decide."""

    def __init__(self, after: CatalogAfter, changes: list[RuntimeChange]) -> None:
        super().__init__()
        self._after = after
        self._changes = changes

    def get(
        self,
        scope: str | None,
        model: ModelProfile,
        accelerator_classes: tuple[str, ...],
        modes: DeploymentModes = NO_MODES,
    ) -> AutoSelection | None:
        kept = super().get(scope, model, accelerator_classes, modes)
        if kept is not None:
            return kept
        if model.model.key in self._after.model_changes:
            return None  # a changed model: no result of the live catalog is for its spec
        before = self._after.before
        # The namespace's view before the change: its own when it had ServingRuntimes, else the shared one
        # (a namespace that loses its last ServingRuntime sees the cluster's runtimes, like every such one).
        before_scope = scope if scope is not None and before.runtime_counts(scope)[0] else None
        found = before_selection(self._after.before_view, before_scope, model, accelerator_classes, modes)
        replayed = replay(scope, found, accelerator_classes, modes, self._changes)
        if replayed is not None:
            self.put(scope, accelerator_classes, replayed, modes)
        return replayed


def before_selection(
    view: CatalogBefore,
    scope: str | None,
    model: ModelProfile,
    accelerator_classes: tuple[str, ...] = (),
    modes: DeploymentModes = NO_MODES,
) -> AutoSelection:
    """The live catalog's auto-selection for ``model`` in ``scope`` (None: every namespace without
    ServingRuntimes), from the review's memo (or the live one's), else computed and kept in the review's."""
    memo = view.auto_selections
    found = memo.get(scope, model, accelerator_classes, modes)
    if found is None:
        # "" is no namespace: it has no ServingRuntimes, so it sees what every such namespace sees.
        found = auto_selection(view.live, model, scope or "", accelerator_classes, modes)
        memo.put(scope, accelerator_classes, found, modes)
    return found


def has_before_selection(
    view: CatalogBefore, scope: str | None, model: ModelProfile, accelerator_classes: tuple[str, ...] = ()
) -> bool:
    """Whether :func:`before_selection` would find its answer without ranking."""
    return view.auto_selections.get(scope, model, accelerator_classes, NO_MODES) is not None
