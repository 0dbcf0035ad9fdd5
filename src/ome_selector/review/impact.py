"""What a catalog change does to the InferenceServices (SPEC §11 what-if, SPEC §12 at admission): one
implementation for both.

A change is a set of objects stored or removed (:data:`Changes`: key → the object after the change, None
when it is deleted). :class:`CatalogAfter` is the catalog after it without a copy: the live catalog with those
objects laid over it, and an auto-selection memo that starts from the live one's results and replays the
runtime changes (:func:`~ome_selector.selection.memo.replay`), so a model costs one check, not a ranking.

:class:`ImpactRun` finds what the change can move from the catalog's indexes — the InferenceServices that name
a changed runtime or one of its descendants (SPEC §5), those that auto-select among the runtimes of a changed
runtime's match keys, those of a changed model — grouped by their decision inputs
(:class:`~ome_selector.selection.outcome.DecisionInputs`), and decides each group once before and once after
with :func:`~ome_selector.selection.outcome.evaluate`, the operator's own decision. Its work is a generator of
steps (one group, one model): what-if runs it to the end, the webhook between turns of its event loop and
under a deadline. :class:`AmbiguityRun` is the SIZE003/RANK001 part of SPEC §12, with lint's own rules
(:func:`~.lint.overlaps_with`, :func:`~.lint.rank_tie`).
"""

from __future__ import annotations

import functools
import heapq
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ome_selector.api.resources import (
    NO_MODES,
    DeploymentModes,
    InferenceService,
    Kind,
    Model,
    ModelSpec,
    ObjectKey,
    Resource,
    Runtime,
)
from ome_selector.catalog.catalog import Catalog, DefinitionChange
from ome_selector.catalog.overlay import RuntimeOverlay
from ome_selector.review.lint import Code, Finding, object_order, overlaps_with, rank_tie
from ome_selector.selection import messages
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.matcher import check
from ome_selector.selection.memo import AutoSelection, AutoSelectionMemo, RuntimeChange, replay
from ome_selector.selection.outcome import DecisionInputs, Outcome, auto_selection, evaluate
from ome_selector.selection.profiles import MatchKey, ModelProfile, RuntimeProfile
from ome_selector.selection.ranking import rank_key
from ome_selector.selection.view import CatalogView

__all__ = [
    "AmbiguityRun",
    "CatalogAfter",
    "CatalogBefore",
    "Changes",
    "ImpactRun",
    "Moved",
    "Verdict",
    "run_to_end",
]

#: A change: each key with the object after it (None: deleted).
Changes = Mapping[ObjectKey, Resource | None]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What SPEC §11 compares: the condition's status and reason and ``<Kind>/<name>`` of the selected or
    named runtime — the one the lookup finds, also when it is disabled or its chain is broken (None when it is
    missing or nothing is selected)."""

    status: str
    reason: str
    runtime: str | None

    @classmethod
    def of(cls, outcome: Outcome) -> Verdict:
        runtime = outcome.runtime
        return cls(
            status=outcome.status,
            reason=outcome.reason,
            runtime=f"{runtime.kind.value}/{runtime.name}" if runtime is not None else None,
        )

    def document(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "runtime": self.runtime}


def verdict(catalog: CatalogView, isvc: InferenceService | None, lookup: RuntimeLookup) -> Verdict | None:
    """The verdict of ``isvc`` in ``catalog``; None when it does not exist or is left alone."""
    outcome = evaluate(catalog, isvc, lookup) if isvc is not None else None
    return Verdict.of(outcome) if outcome is not None else None


@dataclass(frozen=True, slots=True)
class Moved:
    """InferenceServices whose verdict the change moves, all alike (``keys``, unsorted)."""

    before: Verdict | None
    after: Verdict | None
    keys: tuple[ObjectKey, ...]


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

    def resolve_runtime_profile(self, namespace: str, name: str) -> RuntimeProfile | None:
        return self.live.resolve_runtime_profile(namespace, name)

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

    def resolve_runtime_profile(self, namespace: str, name: str) -> RuntimeProfile | None:
        return self.runtime_profile(Kind.SERVING_RUNTIME, namespace, name) or self.runtime_profile(
            Kind.CLUSTER_SERVING_RUNTIME, None, name
        )

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


def _in_scope(inputs: DecisionInputs, namespace: str | None) -> bool:
    return namespace is None or inputs.namespace == namespace


class _SpecTokens:
    """A number per distinct model spec, each model object's spec hashed once: models of one spec share every
    verdict and finding that reads only the spec (SPEC §3, §4)."""

    def __init__(self) -> None:
        self._specs: dict[ModelSpec, int] = {}
        self._models: dict[ObjectKey, tuple[Model, int]] = {}

    def __call__(self, model: Model | None) -> int:
        """``model``'s number (0: no model)."""
        if model is None:
            return 0
        kept = self._models.get(model.key)
        if kept is not None and kept[0] is model:
            return kept[1]
        token = self._specs.setdefault(model.spec, len(self._specs) + 1)
        self._models[model.key] = (model, token)
        return token


class ImpactRun:
    """The verdicts a change moves (:attr:`moved`), found by :meth:`steps`.

    ``namespaces`` limits the InferenceServices judged (None: all). InferenceServices among the changed
    objects (what-if's ``-f``) are judged one by one; the others by group. A step computes at most one
    ranking (one verdict, before or after). InferenceServices stored or removed while the run lets its
    caller go (:meth:`touched`) send their groups back to be judged again (:meth:`pending`): the verdicts
    read only models and runtimes, so the rest of the work stands.
    """

    def __init__(
        self,
        before: Catalog,
        changes: Changes,
        *,
        namespaces: Collection[str] | None = None,
        lookup: RuntimeLookup = RuntimeLookup.V1_3,
    ) -> None:
        self.before = before
        self.before_view = CatalogBefore(before)
        self.after = CatalogAfter(before, changes, self.before_view)
        self.changes = changes
        self.namespaces = namespaces
        self.lookup = lookup
        self._moved: dict[DecisionInputs | ObjectKey, Moved] = {}
        self._judged: dict[DecisionInputs | ObjectKey, int] = {}
        self._groups: dict[DecisionInputs, None] = {}
        self._queue: deque[DecisionInputs] = deque()
        self._queued: set[DecisionInputs] = set()
        # What the run collects groups by (SPEC §5 "who to re-evaluate"): model name → (namespace, auto
        # only); runtime name → namespace. A group created later that matches is judged too.
        self._by_model_name: dict[str, list[tuple[str | None, bool]]] = {}
        self._by_runtime_name: dict[str, list[str | None]] = {}
        self._verdicts: dict[tuple[object, ...], Verdict | None] = {}
        self._spec_token = _SpecTokens()
        self._changed_isvcs = {key for key in changes if key.kind is Kind.INFERENCE_SERVICE}

    @property
    def moved(self) -> list[Moved]:
        """The InferenceServices the change moves, group by group."""
        return list(self._moved.values())

    @property
    def judged(self) -> int:
        """How many InferenceServices were judged (each group counts its members)."""
        return sum(self._judged.values())

    @property
    def has_pending(self) -> bool:
        """Whether groups wait to be judged (again)."""
        return bool(self._queue)

    def _wanted(self, inputs: DecisionInputs) -> bool:
        return self.namespaces is None or inputs.namespace in self.namespaces

    def steps(self) -> Iterator[None]:
        """Do the work, a model, a group's verdict before or after, or an InferenceService per step (the
        caller may stop between two)."""
        yield from self._collect()
        yield from self.pending()
        for key in sorted(self._changed_isvcs, key=object_order):
            if self.namespaces is not None and key.namespace not in self.namespaces:
                continue
            old_isvc = self.before.inference_service(key)
            new_isvc = self.changes[key]
            new_verdict = verdict(
                self.after, new_isvc if isinstance(new_isvc, InferenceService) else None, self.lookup
            )
            old_verdict = verdict(self.before_view, old_isvc, self.lookup)
            if old_verdict is None and new_verdict is None:
                continue
            self._judged[key] = 1
            if old_verdict != new_verdict:
                self._moved[key] = Moved(old_verdict, new_verdict, (key,))
            yield

    def pending(self) -> Iterator[None]:
        """Judge the groups collected or touched and not judged since."""
        while self._queue:
            inputs = self._queue.popleft()
            self._queued.discard(inputs)
            yield from self._judge(inputs)

    def touched(self, changed: Iterable[DecisionInputs]) -> None:
        """InferenceServices joined or left the groups ``changed``: those the run judges (or would have
        collected) are judged again by :meth:`pending`."""
        for inputs in changed:
            if inputs in self._groups or self._collects(inputs):
                self._groups[inputs] = None
                self._moved.pop(inputs, None)
                self._judged.pop(inputs, None)
                if inputs not in self._queued:
                    self._queued.add(inputs)
                    self._queue.append(inputs)

    def _judge(self, inputs: DecisionInputs) -> Iterator[None]:
        self._moved.pop(inputs, None)
        self._judged.pop(inputs, None)
        changed_isvcs = self._changed_isvcs
        members = self.before.decision_group(inputs)
        keys = [key for key in members if key not in changed_isvcs] if changed_isvcs else list(members)
        if not keys:
            return
        isvc = self.before.inference_service(keys[0])
        old = self._verdict(self.before_view, inputs, isvc)
        yield
        new = self._verdict(self.after, inputs, isvc)
        if old is None and new is None:
            return
        self._judged[inputs] = len(keys)
        if old != new:
            self._moved[inputs] = Moved(old, new, tuple(keys))
        yield

    def _verdict(
        self, catalog: CatalogBefore | CatalogAfter, inputs: DecisionInputs, isvc: InferenceService | None
    ) -> Verdict | None:
        """The verdict of the group ``inputs`` (``isvc`` one of it) in ``catalog``. Auto-selection reads only
        the model's spec, the runtimes ranked (the namespace's own of the model's match key, if any, and the
        ClusterServingRuntimes), the accelerator classes and the modes (SPEC §4; the name only goes into the
        no-runtime message): groups alike in those, in many namespaces or of many models of one spec, share
        one evaluation."""
        if inputs.has_replica_refs:
            return None  # left alone (SPEC §5): never moved
        if inputs.runtime_name is not None or inputs.model_name is None:
            return verdict(catalog, isvc, self.lookup)
        model = catalog.resolve_model(inputs.namespace, inputs.model_name)
        scope: str | None = None
        if catalog.runtime_counts(inputs.namespace)[0] and (
            model is None
            or catalog.has_namespaced_for_key(inputs.namespace, catalog.model_profile(model).match_key)
        ):
            scope = inputs.namespace
        alike = (
            catalog is self.after,
            self._spec_token(model),
            scope,
            inputs.accelerator_classes,
            inputs.deployment_modes,
        )
        if alike in self._verdicts:
            return self._verdicts[alike]
        found = self._verdicts[alike] = verdict(catalog, isvc, self.lookup)
        return found

    def _collects(self, inputs: DecisionInputs) -> bool:
        """Whether :meth:`_collect` collects the group ``inputs`` (when it exists)."""
        if not self._wanted(inputs):
            return False
        if inputs.model_name is not None:
            for namespace, auto_only in self._by_model_name.get(inputs.model_name, ()):
                if (not auto_only or inputs.runtime_name is None) and _in_scope(inputs, namespace):
                    return True
        if inputs.runtime_name is not None:
            for namespace in self._by_runtime_name.get(inputs.runtime_name, ()):
                if _in_scope(inputs, namespace):
                    return True
        return False

    def _add(self, groups: Collection[DecisionInputs], namespace: str | None, auto_only: bool) -> None:
        for inputs in groups:
            if auto_only and inputs.runtime_name is not None:
                continue
            if _in_scope(inputs, namespace) and self._wanted(inputs) and inputs not in self._groups:
                self._groups[inputs] = None
                self._queued.add(inputs)
                self._queue.append(inputs)

    def _by_model(self, name: str, namespace: str | None, auto_only: bool) -> None:
        self._by_model_name.setdefault(name, []).append((namespace, auto_only))
        self._add(self.before.decision_groups_for_model_name(name), namespace, auto_only)

    def _by_runtime(self, name: str, namespace: str | None) -> None:
        self._by_runtime_name.setdefault(name, []).append(namespace)
        self._add(self.before.decision_groups_naming(name), namespace, auto_only=False)

    def _collect(self) -> Iterator[None]:
        """The groups the change can move (SPEC §5 "who to re-evaluate", per group)."""
        before = self.before
        for key, resource in self.changes.items():
            if key.kind in (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL):
                self._by_model(key.name, key.namespace, auto_only=False)
                continue
            if key.kind is Kind.INFERENCE_SERVICE:
                continue
            # A runtime: those that name it or a descendant (by name, as their lookup may find them)...
            for named in (key, *before.runtime_descendants(key)):
                self._by_runtime(named.name, named.namespace)
            # ... and those that auto-select among the runtimes of its match keys, before or after.
            old, new = before.runtime_profile(key.kind, key.namespace, key.name), _runtime_profile(resource)
            match_keys = {*(old.entries_by_key if old else ()), *(new.entries_by_key if new else ())}
            for match_key in match_keys:
                for model in self._models_with(match_key):
                    # A BaseModel serves its namespace only; a ServingRuntime is seen from its own only.
                    where = model.namespace if model.namespace is not None else key.namespace
                    if key.namespace is not None and where not in (None, key.namespace):
                        continue
                    self._by_model(model.name, where, auto_only=True)
                    yield
        yield

    def _models_with(self, match_key: MatchKey) -> list[Model]:
        found = {
            model.key: model
            for model in self.before.models_with_match_key(match_key)
            if model.key not in self.after.model_changes
        }
        for key, model in self.after.model_changes.items():
            if model is not None and self.after.model_profile(model).match_key == match_key:
                found[key] = model
        return list(found.values())


def run_to_end(steps: Iterator[None]) -> None:
    """Run every step (what-if, tests)."""
    for _ in steps:
        pass


# --- the SPEC §12 texts
# --------------------------------------------------------------------------------------------


#: The namespaces whose objects an answer may name (SPEC §12: to a caller not verified as the apiserver, only
#: the request's own); None: every namespace. Cluster-scoped objects are always named.
Shown = frozenset[str] | None


@dataclass(slots=True)
class Tally:
    """The moved InferenceServices of SPEC §12 by category, with the first of each (by namespace and name)
    and, for "lose", the first ones with their reason after the change."""

    moved: int = 0
    lose: int = 0
    switch: int = 0
    gain: int = 0
    first: dict[str, tuple[tuple[str, str], Verdict | None, Verdict | None]] = field(default_factory=dict)
    stranded: list[tuple[tuple[str, str], str]] = field(default_factory=list)
    #: Moved (and of them "lose") InferenceServices in namespaces whose names the answer may not carry:
    #: counted above, never among ``first`` or ``stranded``.
    withheld: int = 0
    withheld_lose: int = 0


def category(before: Verdict | None, after: Verdict | None) -> str | None:
    """``lose`` (True before, not after), ``switch`` (True both times, another runtime), ``gain`` (not True
    before, True after), or None (another change of status, reason or runtime)."""
    was = before is not None and before.status == "True"
    now = after is not None and after.status == "True"
    if was and not now:
        return "lose"
    if was and now and before is not None and after is not None and before.runtime != after.runtime:
        return "switch"
    if now and not was:
        return "gain"
    return None


#: How many stranded InferenceServices a denial can name at most (each takes more than 10 characters of the
#: 1,024).
STRANDED_LISTED = 100


def tally(moved: Sequence[Moved], *, stranded: bool = False, shown: Shown = None) -> Iterator[Tally | None]:
    """Count ``moved`` by category and find the first of each (by namespace, then name: only the groups of
    the first namespace are searched), one group per step; the last step yields the :class:`Tally`. With
    ``stranded``, also the first :data:`STRANDED_LISTED` "lose" InferenceServices. Only those of ``shown``
    namespaces are ever named; the others are counted as withheld."""
    result = Tally()
    lost: list[tuple[tuple[str, str], str]] = []
    firsts: dict[str, list[Moved]] = {}
    for item in moved:
        count = len(item.keys)
        result.moved += count
        kind = category(item.before, item.after)
        if kind is not None:
            setattr(result, kind, getattr(result, kind) + count)
        namespace = item.keys[0].namespace or ""
        if shown is not None and namespace not in shown:
            result.withheld += count
            result.withheld_lose += count if kind == "lose" else 0
            yield None
            continue
        for where in {kind or "other", "other"}:
            known = firsts.get(where)
            if known is None or namespace < (known[0].keys[0].namespace or ""):
                firsts[where] = [item]
            elif namespace == (known[0].keys[0].namespace or ""):
                known.append(item)
        if kind == "lose" and stranded:
            reason = item.after.reason if item.after is not None else ""
            least_ones = heapq.nsmallest(STRANDED_LISTED, item.keys)
            names = [((k.namespace or "", k.name), reason) for k in least_ones]
            lost = heapq.nsmallest(STRANDED_LISTED, [*lost, *names])
        yield None
    for where, items in firsts.items():
        best: tuple[tuple[str, str], Moved] | None = None
        for item in items:
            least = min(item.keys)  # one kind and one namespace per group: by name
            first = (least.namespace or "", least.name)
            if best is None or first < best[0]:
                best = (first, item)
        if best is not None:
            result.first[where] = (best[0], best[1].before, best[1].after)
        yield None
    result.stranded = lost
    yield result


#: Runtimes compared per step (SIZE003).
_CHUNK = 100


class AmbiguityRun:
    """The SIZE003 and RANK001 findings (SPEC §11) involving one changed runtime that the catalog after the
    change has and the catalog before it does not (a finding of the same code and objects before counts as
    had): :attr:`new`, the first :attr:`limit` of them as lint sorts findings, found by :meth:`steps`. Lint's
    own rules decide (:func:`~.lint.overlaps_with`, :func:`~.lint.rank_tie`); only the findings shown are
    written out. A step ranks at most once (one view of one model, before or after the change), so the
    caller can stop between any two rankings (SPEC §12: the loop is never held long)."""

    def __init__(self, after: CatalogAfter, key: ObjectKey, limit: int = 3) -> None:
        self.after = after
        self.before = after.before
        self.before_view = after.before_view
        self.key = key
        self.limit = limit
        self.new: list[Finding] = []
        self._ties: dict[tuple[object, ...], tuple[ObjectKey, ObjectKey] | None] = {}
        self._spec_token = _SpecTokens()
        self._keyed_namespaces: dict[MatchKey, list[str]] = {}

    def steps(self) -> Iterator[None]:
        key, before = self.key, self.before
        new_profile = self.after.runtime_changes.get(key)
        if new_profile is None:
            return  # a deletion adds no finding
        old_profile = before.runtime_profile(key.kind, key.namespace, key.name)
        # Each candidate: its sort order (code, objects) and how to write it.
        candidates: list[
            tuple[tuple[str, tuple[tuple[str, str, str], ...]], Callable[[], Finding | None]]
        ] = []
        # RANK001: the models the runtime can rank for, in each view that sees it, judged once per spec.
        models: dict[ObjectKey, Model] = {}
        for match_key in new_profile.entries_by_key:
            for model in before.models_with_match_key(match_key):
                if model.spec.has_format and (
                    key.namespace is None or model.namespace in (None, key.namespace)
                ):
                    models[model.key] = model
        yield
        for model in models.values():
            for view in self._views(model):
                profile = self.before_view.model_profile(model)
                scope = self._before_scope(view)
                if not has_before_selection(self.before_view, scope, profile):
                    before_selection(self.before_view, scope, profile)
                    yield  # the view's ranking before the change: a step of its own
                pair = self._tie(self.after, model, view)
                yield
                if pair is not None:
                    had_pair = self._tie(self.before_view, model, view)
                    yield
                    if had_pair != pair:
                        objects = tuple(sorted((model.key, *pair), key=object_order))
                        order = (Code.RANK001.value, tuple(object_order(k) for k in objects))
                        candidates.append((order, functools.partial(self._rank_finding, model, view)))
        # SIZE003: the runtime against the others of its scope that share a match key with it, in the order
        # the findings sort (the pair's objects), until enough new ones are found: only the first are shown.
        ranked = len({order for order, _ in candidates})
        others: dict[ObjectKey, RuntimeProfile] = {}
        for match_key in new_profile.entries_by_key:
            for other in before.runtime_profiles_of_scope_for_match_key(key.namespace, match_key):
                if other.runtime.key != key:
                    others[other.runtime.key] = other

        def pair_order(other_key: ObjectKey) -> tuple[str, tuple[tuple[str, str, str], ...]]:
            objects = tuple(sorted((key, other_key), key=object_order))
            return (Code.SIZE003.value, tuple(object_order(k) for k in objects))

        ordered = sorted(others.values(), key=lambda other: pair_order(other.runtime.key))
        wanted = self.limit - ranked if ranked < self.limit else 0
        yield
        for start in range(0, len(ordered), _CHUNK):  # a step at most _CHUNK runtimes long
            if wanted <= 0:
                break
            chunk = ordered[start : start + _CHUNK]
            found = overlaps_with(new_profile, chunk)
            had = (
                overlaps_with(old_profile, [o for o in chunk if o.runtime.key in found])
                if old_profile
                else {}
            )
            for other in chunk:
                other_key = other.runtime.key
                if other_key in found and other_key not in had and wanted > 0:
                    candidates.append((pair_order(other_key), found[other_key]))
                    wanted -= 1
            yield
        # A finding several views share (a ClusterBaseModel seen from many namespaces) is one, as in lint.
        unique = dict(sorted(candidates, key=lambda candidate: candidate[0], reverse=True))
        for _, write in sorted(unique.items())[: self.limit]:
            finding = write()  # a RANK001 finding's text ranks its view once more: a step each
            if finding is not None:
                self.new.append(finding)
            yield

    def _before_scope(self, view: str | None) -> str | None:
        """The memo scope of ``view`` before the change (a namespace without ServingRuntimes: None)."""
        return view if view is not None and self.before.runtime_counts(view)[0] else None

    def _rank_finding(self, model: Model, view: str | None) -> Finding | None:
        found = self._selection(self.after, model, view)
        top_two = found.top_two if found is not None else None
        return rank_tie(model, *top_two) if top_two is not None else None

    def _views(self, model: Model) -> list[str | None]:
        """The scopes whose InferenceServices see both the model and the runtime: the runtime's namespace, or
        for a ClusterServingRuntime the namespaces without ServingRuntimes (None) — a BaseModel's own
        namespace, or for a ClusterBaseModel also each namespace with a ServingRuntime of the model's match
        key that no BaseModel of the name shadows. A namespace whose ServingRuntimes have no entry of that
        key ranks the ClusterServingRuntimes alone, as None does: it shares that view."""
        if self.key.namespace is not None:
            return [self.key.namespace]
        if model.namespace is not None:
            return [model.namespace]
        views: list[str | None] = [None]
        match_key = self.before_view.model_profile(model).match_key
        keyed = self._keyed_namespaces.get(match_key)
        if keyed is None:
            keyed = self._keyed_namespaces[match_key] = [
                namespace
                for namespace in self.before.namespaces_with_runtimes()
                if self.after.has_namespaced_for_key(namespace, match_key)
                or self.before_view.has_namespaced_for_key(namespace, match_key)
            ]
        for namespace in keyed:
            if self.before.resolve_model(namespace, model.name) is model:
                views.append(namespace)
        return views

    def _selection(
        self, catalog: CatalogBefore | CatalogAfter, model: Model, view: str | None
    ) -> AutoSelection | None:
        """Auto-selection for ``model`` in ``view`` of ``catalog`` (before or after the change), with rank 2
        known (ranked again only when the memo does not know it)."""
        profile = catalog.model_profile(model)
        if catalog is self.before_view:
            found: AutoSelection | None = before_selection(
                self.before_view, self._before_scope(view), profile
            )
        else:
            found = catalog.auto_selections.get(view, profile, (), NO_MODES)
        if found is not None and (found.selected is None or found.top_two is not None):
            return found
        if found is not None and found.selected is not None:
            # Rank 2 unknown. A tie involving the runtime has it first, or second on the winner's score,
            # scope and distance: otherwise there is nothing to rank.
            selected = found.selected
            mine = self.after.runtime_changes.get(self.key) if catalog is self.after else None
            if catalog is self.before_view:
                mine = self.before.runtime_profile(self.key.kind, self.key.namespace, self.key.name)
            if selected.profile.runtime.key != self.key:
                if mine is None:
                    return found
                challenger = check(mine, profile, (), NO_MODES)
                if challenger.failed is not None or rank_key(challenger)[:3] != rank_key(selected)[:3]:
                    return found
        return auto_selection(catalog, profile, view or "")

    def _tie(
        self, catalog: CatalogBefore | CatalogAfter, model: Model, view: str | None
    ) -> tuple[ObjectKey, ObjectKey] | None:
        """The two runtimes of a RANK001 tie involving the runtime for ``model`` in ``view`` of ``catalog``,
        None when there is none. Whether rank 1 and 2 tie depends on the model's spec only: judged once per
        spec and view."""
        alike = (catalog is self.after, view, self._spec_token(model))
        if alike in self._ties:
            return self._ties[alike]
        pair: tuple[ObjectKey, ObjectKey] | None = None
        found = self._selection(catalog, model, view)
        top_two = found.top_two if found is not None else None
        second = top_two[1] if top_two is not None else None
        if top_two is not None and second is not None:
            first = top_two[0]
            keys = (first.profile.runtime.key, second.profile.runtime.key)
            if self.key in keys and rank_key(first)[:3] == rank_key(second)[:3]:
                pair = keys
        self._ties[alike] = pair
        return pair


# --- the admission review (SPEC §12)
# -------------------------------------------------------------------------------

#: The annotation that lets a change through protection (SPEC §12).
ALLOW_DISRUPTION_ANNOTATION = "ome-selector.ome.io/allow-disruption"
#: The warning of a review that did not finish within the admission budget (SPEC §12).
NOT_COMPUTED = (
    "the impact of this change was not computed within the admission budget; "
    "see kubectl ome-selector runtime what-if"
)
#: Ambiguity warnings at most per review (SPEC §12).
MAX_AMBIGUITY_WARNINGS = 3
#: What stands for the names an unverified caller is not told (SPEC §12).
WITHHELD = "names withheld from an unverified caller"
#: An ambiguity finding that involves another namespace's objects, as an unverified caller reads it.
WITHHELD_FINDING = f"a new finding involving another namespace's objects ({WITHHELD})"
_CATEGORIES = ("lose", "switch", "gain")


def _runtime_text(found: Verdict | None) -> str:
    return found.runtime if found is not None and found.runtime is not None else "none"


def impact_warning(counted: Tally) -> str:
    """`this change moves <n> InferenceService(s): <l> lose their runtime, <k> switch runtime, <g> gain one
    (e.g. <ns>/<name>: <before> → <after>); see kubectl ome-selector runtime what-if`, categories with 0 left
    out, cut to 256 characters (SPEC §12). A change that moves InferenceServices in none of the three
    categories (a reason that changes, status and runtime kept) has no list, and its example is the first
    moved."""
    parts = [
        text
        for count, text in (
            (counted.lose, f"{counted.lose} lose their runtime"),
            (counted.switch, f"{counted.switch} switch runtime"),
            (counted.gain, f"{counted.gain} gain one"),
        )
        if count
    ]
    kind = next((kind for kind in (*_CATEGORIES, "other") if kind in counted.first), None)
    example = f" ({WITHHELD})" if counted.withheld else ""
    if kind is not None:
        (namespace, name), before, after = counted.first[kind]
        example = f" (e.g. {namespace}/{name}: {_runtime_text(before)} → {_runtime_text(after)})"
    listed = f": {', '.join(parts)}" if parts else ""
    moves = f"this change moves {counted.moved} InferenceService(s)"
    text = f"{moves}{listed}{example}; see kubectl ome-selector runtime what-if"
    return messages.admission_warning(messages.escape_controls(text))


def protection_denial(counted: Tally, kind: Kind) -> str:
    """`this change leaves <l> InferenceService(s) without a runtime: <ns>/<name> (<after reason>); …;
    annotate the <Kind> with ome-selector.ome.io/allow-disruption: "true" to apply it anyway`, entries by
    namespace and name: as many as 1,024 characters hold with the end kept, then `…`; those whose names are
    withheld last, as `<m> (names withheld from an unverified caller)` (SPEC §12)."""
    head = f"this change leaves {counted.lose} InferenceService(s) without a runtime: "
    tail = f'; annotate the {kind.value} with {ALLOW_DISRUPTION_ANNOTATION}: "true" to apply it anyway'
    withheld = f"{counted.withheld_lose} ({WITHHELD})" if counted.withheld_lose else ""
    named = counted.lose - counted.withheld_lose
    room = messages.MESSAGE_LIMIT - len(head) - len(tail) - (len(withheld) + 2 if withheld else 0)
    entries: list[str] = []
    for (namespace, name), reason in counted.stranded:
        entry = messages.escape_controls(f"{namespace}/{name} ({reason})")
        last = len(entries) + 1 == named
        # Room for this entry, and for "; …" after it unless it is the last.
        if len("; ".join([*entries, entry])) + (0 if last else 3) > room:
            break
        entries.append(entry)
    if len(entries) < named:
        entries.append(messages.ELLIPSIS)
    if withheld:
        entries.append(withheld)
    return messages.truncate(head + "; ".join(entries) + tail)


def ambiguity_warning(finding: Finding, shown: Shown = None) -> str:
    """`<code>: <finding message>`, cut to 256 characters (SPEC §12); a finding involving an object of a
    namespace not ``shown``: `<code>: a new finding involving another namespace's objects (names withheld
    from an unverified caller)`."""
    foreign = (k for k in finding.objects if k.namespace is not None)
    if shown is not None and any(key.namespace not in shown for key in foreign):
        return f"{finding.code.value}: {WITHHELD_FINDING}"
    return messages.admission_warning(messages.escape_controls(f"{finding.code.value}: {finding.message}"))


def _reads_alike(a: Resource, b: Resource) -> bool:
    """Whether selection reads ``a`` and ``b`` alike: a runtime's spec and its two annotations, a model's spec
    (as the operator decides whether an event changes anything)."""
    if isinstance(a, Runtime) and isinstance(b, Runtime):
        return a.read_inputs == b.read_inputs
    return isinstance(a, Model) and isinstance(b, Model) and a.spec == b.spec


@dataclass(frozen=True, slots=True)
class ReviewResult:
    """What a review answers: its warnings, the denial's message (None: allowed), and its outcome for the
    metrics (one of :data:`REVIEW_OUTCOMES`)."""

    warnings: tuple[str, ...] = ()
    denial: str | None = None
    outcome: str = "unchanged"


#: Review outcomes (a metric label: a fixed set).
REVIEW_OUTCOMES = (
    "unchanged",
    "moved",
    "not_computed",
    "denied_protection",
    "denied_ambiguity",
    "allowed_disruption",
)
NOT_COMPUTED_RESULT = ReviewResult(warnings=(NOT_COMPUTED,), outcome="not_computed")
#: Why a review was not computed, the warning after :data:`NOT_COMPUTED` when the budget alone does not say it
#: (SPEC §12): the catalog reviews already waiting for the loop, the wait for a turn, the restarts.
NOT_COMPUTED_QUEUED = "not computed because {count} other catalog reviews were already waiting for their turn"
NOT_COMPUTED_WAITED = (
    "not computed because the review waited its whole budget for a turn behind other catalog reviews"
)
NOT_COMPUTED_CHANGED = (
    "not computed because the models and runtimes it reads changed {count} times while it ran"
)


def not_computed(reason: str) -> ReviewResult:
    """The "not computed" answer with its reason (:data:`NOT_COMPUTED_QUEUED`, …)."""
    return ReviewResult(warnings=(NOT_COMPUTED, reason), outcome="not_computed")


class CatalogReview:
    """The SPEC §12 review of one catalog object stored (``resource``) or deleted (None) under ``key``,
    against ``before`` (the live catalog). ``warn``: the impact and ambiguity warnings; ``protect``: deny a
    change that strands InferenceServices that are ``True`` now, unless ``allow_disruption``;
    ``deny_ambiguous``: deny a runtime change that adds a SIZE003 or RANK001 finding involving it;
    ``shown``: the namespaces whose objects the answer may name (None: every one; SPEC §12)."""

    def __init__(
        self,
        before: Catalog,
        key: ObjectKey,
        resource: Resource | None,
        *,
        warn: bool = True,
        protect: bool = False,
        allow_disruption: bool = False,
        deny_ambiguous: bool = False,
        lookup: RuntimeLookup = RuntimeLookup.V1_3,
        shown: Shown = None,
    ) -> None:
        self.key = key
        self.shown = shown
        self.warn, self.protect, self.allow_disruption = warn, protect, allow_disruption
        self.deny_ambiguous = deny_ambiguous
        self.impact = ImpactRun(before, {key: resource}, lookup=lookup)
        self.result = ReviewResult()
        self._read_names: tuple[frozenset[str], frozenset[str]] | None = None
        # The match keys of the object reviewed, before and after the change.
        match_keys: set[MatchKey] = set()
        if key.kind in (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME):
            for profile in (
                before.runtime_profile(key.kind, key.namespace, key.name),
                self.impact.after.runtime_changes.get(key),
            ):
                match_keys.update(profile.entries_by_key if profile is not None else ())
        else:
            for model in (before.get(key), resource):
                if isinstance(model, Model):
                    match_keys.add(self.impact.after.model_profile(model).match_key)
        self._match_keys = frozenset(match_keys)

    def reads(self, change: DefinitionChange) -> bool:
        """Whether the model or runtime ``change`` (stored or removed in the live catalog while the review let
        the loop run) can move what the review computes — then it must start over: a cluster-scoped object
        (every namespace sees it), one of the reviewed object's namespace, one with an entry of the reviewed
        object's match keys, or one found by a name the review looks up (the models of those keys, the
        reviewed runtime's lineage). A BaseModel or ServingRuntime of another namespace, of other formats and
        names, moves no verdict and no finding the review reads (SPEC §4: only runtimes with an entry of a
        model's match key are ranked for it)."""
        key = change.key
        if key.namespace is None or key.namespace == self.key.namespace:
            return True
        if change.match_keys & self._match_keys:
            return True
        model_names, runtime_names = self._names()
        return bool(change.names & (model_names if key.kind is Kind.BASE_MODEL else runtime_names))

    def _names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The model names and the runtime names the review looks up (computed once)."""
        if self._read_names is None:
            before, key = self.impact.before, self.key
            models = {key.name} if key.kind in (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL) else set()
            for match_key in self._match_keys:
                models.update(model.name for model in before.models_with_match_key(match_key))
            runtimes: set[str] = set()
            if key.kind in (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME):
                runtimes = {key.name, *(named.name for named in before.runtime_descendants(key))}
            self._read_names = frozenset(models), frozenset(runtimes)
        return self._read_names

    def touched(self, changed: Iterable[DecisionInputs]) -> None:
        """InferenceServices joined or left the groups ``changed`` since the last step: the groups the review
        judges among them are judged again before it answers (:meth:`ImpactRun.touched`)."""
        self.impact.touched(changed)

    def steps(self) -> Iterator[None]:
        """The work, a little per step; :attr:`result` is set after the last."""
        key = self.key
        changed, stored = self.impact.changes.get(key), self.impact.before.get(key)
        if changed is not None and stored is not None and _reads_alike(stored, changed):
            return  # labels, other annotations, status: nothing selection reads changed (SPEC §5)
        impact = self.warn or self.protect
        if impact:
            yield from self.impact.steps()
        found: list[str] = []
        runtime = key.kind in (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME)
        if runtime and (self.warn or self.deny_ambiguous) and changed is not None:
            ambiguity = AmbiguityRun(self.impact.after, key, MAX_AMBIGUITY_WARNINGS)
            yield from ambiguity.steps()
            found = [ambiguity_warning(finding, self.shown) for finding in ambiguity.new]
        # The InferenceServices last: groups they joined or left meanwhile are judged again, and counted as
        # they are when the review answers.
        counted = Tally()
        while impact:
            yield from self.impact.pending()
            for step in tally(self.impact.moved, stranded=self.protect, shown=self.shown):
                if step is not None:
                    counted = step
                yield
            if not self.impact.has_pending:
                break
        warnings: list[str] = []
        denial: str | None = None
        outcome = "unchanged"
        if counted.moved:
            outcome = "moved"
            if self.warn:
                warnings.append(impact_warning(counted))
            if self.protect and counted.lose:
                if self.allow_disruption:
                    outcome = "allowed_disruption"
                else:
                    denial, outcome = protection_denial(counted, key.kind), "denied_protection"
        if found:
            warnings.extend(found)
            if self.deny_ambiguous and denial is None:
                denial, outcome = messages.truncate("; ".join(found)), "denied_ambiguity"
        self.result = ReviewResult(tuple(warnings), denial, outcome)
