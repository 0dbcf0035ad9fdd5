"""What-if (SPEC §11): how the verdicts of InferenceServices would change if some objects were applied or
deleted.

A :class:`CatalogChange` (objects to apply, keys to delete) is laid over the catalog; :func:`what_if` asks
:class:`~.impact.ImpactRun` — the implementation the webhook's review of a catalog change uses too (SPEC
§12) — which InferenceServices the change moves: it evaluates them with
:func:`~ome_selector.selection.outcome.evaluate`, the operator's own decision, by the same rules (the SPEC §1
lookup, a named runtime on its effective spec with its chain resolved before and after, the deployment-mode
check, InferenceServices that name a runtime without a model), and keeps the ones whose status, reason or
selected runtime differ. :meth:`CatalogChange.apply_to` gives the objects after the change (for callers that
want them). :func:`what_if_document` is the ``-o json`` object.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from ome_selector.api.resources import InferenceService, Kind, ObjectKey, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.impact import ImpactRun, Verdict, run_to_end
from ome_selector.selection.inheritance import RuntimeLookup

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

    def changes_to(self, catalog: Catalog) -> dict[ObjectKey, Resource | None]:
        """The change as key → object after it (None: deleted), checked against ``catalog`` as
        :meth:`apply_to` checks it (the later of two applied objects with one key wins)."""
        applied = {resource.key for resource in self.applied}
        for key in self.deleted:
            if key in applied:
                raise ChangeError(f"{key} is both applied (-f) and deleted (--delete)")
            if key not in catalog:
                raise ChangeError(f"cannot delete {key}: it does not exist")
        changes: dict[ObjectKey, Resource | None] = dict.fromkeys(self.deleted)
        for resource in self.applied:
            changes[resource.key] = resource
        return changes


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


def what_if(
    before: Catalog,
    change: CatalogChange,
    namespaces: Collection[str] | None = None,
    lookup: RuntimeLookup = RuntimeLookup.V1_3,
) -> WhatIf:
    """Compare the verdict of every InferenceService (of ``namespaces``, or all when None) in ``before`` and
    after ``change``, named runtimes found by ``lookup`` (SPEC §1). InferenceServices that selection leaves
    alone on both sides (neither ``spec.model`` nor a named runtime, or ``spec.replicaRefs`` set: SPEC §5,
    §11) are left out.

    Raises :class:`ChangeError` when the change cannot be applied."""
    changes = change.changes_to(before)
    run = ImpactRun(before, changes, namespaces=namespaces, lookup=lookup)
    run_to_end(run.steps())
    rows = [
        Change(key.namespace or "", key.name, moved.before, moved.after)
        for moved in run.moved
        for key in moved.keys
    ]
    rows.sort(key=lambda row: (row.namespace, row.name))
    # Every InferenceService judged on some side, minus the ones that moved: the others keep their verdict.
    judged = sum(
        len(before.decision_group(inputs))
        for inputs in before.decision_groups()
        if (inputs.model_name is not None or inputs.runtime_name is not None)
        and not inputs.has_replica_refs
        and (namespaces is None or inputs.namespace in namespaces)
    )
    for key, resource in changes.items():
        if key.kind is not Kind.INFERENCE_SERVICE or (
            namespaces is not None and key.namespace not in namespaces
        ):
            continue
        old = before.inference_service(key)
        judged -= _judged(old)
        judged += _judged(old) or _judged(resource if isinstance(resource, InferenceService) else None)
    return WhatIf(tuple(rows), judged - len(rows))


def _judged(isvc: InferenceService | None) -> bool:
    """Whether selection judges ``isvc`` (SPEC §5): it names a model or a runtime and no replicas."""
    return (
        isvc is not None
        and not isvc.has_replica_refs
        and (isvc.model_name is not None or isvc.runtime_name is not None)
    )


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
