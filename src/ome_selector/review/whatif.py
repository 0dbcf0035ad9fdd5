"""What-if (SPEC §11): how the verdicts of InferenceServices would change if some objects were applied or
deleted.

A :class:`CatalogChange` (objects to apply, keys to delete) turns the objects of a catalog into the objects
after the change (:meth:`CatalogChange.apply_to`); :func:`what_if` evaluates every InferenceService in both
catalogs with :func:`~ome_selector.selection.outcome.evaluate` — the operator's own decision, by the same
rules (the SPEC §1 lookup, a named runtime on its effective spec with its chain resolved in that catalog, the
deployment-mode check, InferenceServices that name a runtime without a model) — and keeps the ones whose
status, reason or selected runtime differ. :func:`what_if_document` is the ``-o json`` object.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from ome_selector.api.resources import InferenceService, ObjectKey, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import Outcome, evaluate
from ome_selector.selection.view import CatalogView

__all__ = ["CatalogChange", "Change", "ChangeError", "Verdict", "WhatIf", "what_if", "what_if_document"]


class ChangeError(ValueError):
    """A change that cannot be applied (deleting an object that does not exist, ...); ``str()`` says why."""


@dataclass(frozen=True, slots=True)
class CatalogChange:
    """Objects to apply (create, or replace the object with their key) and keys of objects to delete."""

    applied: tuple[Resource, ...] = ()
    deleted: tuple[ObjectKey, ...] = ()

    def apply_to(self, resources: Iterable[Resource]) -> list[Resource]:
        """The objects after the change, in their order with the applied ones last.

        Raises :class:`ChangeError` when a key to delete is not among ``resources`` or is also applied.
        """
        before = list(resources)
        present = {resource.key for resource in before}
        applied = {resource.key for resource in self.applied}
        for key in self.deleted:
            if key in applied:
                raise ChangeError(f"{key} is both applied (-f) and deleted (--delete)")
            if key not in present:
                raise ChangeError(f"cannot delete {key}: it does not exist")
        gone = applied | set(self.deleted)
        return [resource for resource in before if resource.key not in gone] + list(self.applied)


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


@dataclass(frozen=True, slots=True)
class Change:
    """One InferenceService whose verdict changes; ``before``/``after`` is None when it does not exist (or
    selection leaves it alone) on that side."""

    namespace: str
    name: str
    before: Verdict | None
    after: Verdict | None


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The changed InferenceServices by namespace and name, and how many kept their verdict."""

    changes: tuple[Change, ...]
    unchanged: int


def _verdict(catalog: CatalogView, isvc: InferenceService | None, lookup: RuntimeLookup) -> Verdict | None:
    outcome = evaluate(catalog, isvc, lookup) if isvc is not None else None
    return Verdict.of(outcome) if outcome is not None else None


def what_if(
    before: Catalog,
    after: Catalog,
    namespaces: Collection[str] | None = None,
    lookup: RuntimeLookup = RuntimeLookup.V1_3,
) -> WhatIf:
    """Compare the verdict of every InferenceService (of ``namespaces``, or all when None) in ``before`` and
    in ``after``, named runtimes found by ``lookup`` (SPEC §1). InferenceServices that selection leaves alone
    on both sides (neither ``spec.model`` nor a named runtime, or ``spec.replicaRefs`` set: SPEC §5, §11) are
    left out."""
    isvcs: dict[ObjectKey, list[InferenceService | None]] = {}
    for side, catalog in enumerate((before, after)):
        for isvc in catalog.inference_services():
            if namespaces is None or isvc.namespace in namespaces:
                isvcs.setdefault(isvc.key, [None, None])[side] = isvc
    changes: list[Change] = []
    unchanged = 0
    for key in sorted(isvcs, key=lambda k: (k.namespace or "", k.name)):
        old, new = isvcs[key]
        verdicts = (_verdict(before, old, lookup), _verdict(after, new, lookup))
        if verdicts == (None, None):
            continue
        if verdicts[0] == verdicts[1]:
            unchanged += 1
        else:
            changes.append(Change(key.namespace or "", key.name, *verdicts))
    return WhatIf(tuple(changes), unchanged)


def what_if_document(result: WhatIf) -> dict[str, Any]:
    """The SPEC §11 ``-o json`` object; ``before``/``after`` is null for an InferenceService that only one
    side has."""
    return {
        "changes": [
            {
                "namespace": change.namespace,
                "name": change.name,
                "before": change.before.document() if change.before is not None else None,
                "after": change.after.document() if change.after is not None else None,
            }
            for change in result.changes
        ],
        "unchanged": result.unchanged,
    }
