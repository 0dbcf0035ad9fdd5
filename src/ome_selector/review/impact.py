"""What a catalog change does to the InferenceServices (SPEC §11 what-if, SPEC §12 at admission): one
implementation for both.

A change is a set of objects stored or removed (:data:`~ome_selector.catalog.overlay.Changes`), laid over the
live catalog without a copy (:class:`~ome_selector.catalog.overlay.CatalogAfter`).

:class:`ImpactRun` finds what the change can move from the catalog's indexes — the InferenceServices that name
a changed runtime or one of its descendants (SPEC §5), those that auto-select among the runtimes of a changed
runtime's match keys, those of a changed model — grouped by their decision inputs
(:class:`~ome_selector.selection.outcome.DecisionInputs`), and decides each group once before and once after
with :func:`~ome_selector.selection.outcome.evaluate`, the operator's own decision. Its work is a generator of
steps (one group, one model): what-if runs it to the end, the webhook between turns of its event loop and
under a deadline (:mod:`.catalog_review`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ome_selector.api.resources import InferenceService, Kind, Model, ModelSpec, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.catalog.overlay import CatalogAfter, CatalogBefore, Changes
from ome_selector.review.lint import object_order
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import DecisionInputs, Outcome, evaluate
from ome_selector.selection.profiles import MatchKey
from ome_selector.selection.view import CatalogView

__all__ = [
    "ImpactRun",
    "Moved",
    "SpecTokens",
    "Verdict",
    "run_to_end",
    "verdict",
]


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


def _in_scope(inputs: DecisionInputs, namespace: str | None) -> bool:
    return namespace is None or inputs.namespace == namespace


class SpecTokens:
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
        self._spec_token = SpecTokens()
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
        for key in self.changes:
            if key.kind in (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL):
                self._by_model(key.name, key.namespace, auto_only=False)
                continue
            if key.kind is Kind.INFERENCE_SERVICE:
                continue
            # A runtime: those that name it or a descendant (by name, as their lookup may find them)...
            for named in (key, *before.runtime_descendants(key)):
                self._by_runtime(named.name, named.namespace)
            # ... and those that auto-select among the runtimes of its match keys, before or after.
            old = before.runtime_profile(key.kind, key.namespace, key.name)
            new = self.after.runtime_changes.get(key)
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
