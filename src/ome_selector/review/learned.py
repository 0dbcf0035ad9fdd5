"""The verdicts a model's learned values would give, before they are written (SPEC §10 "Before it is
written").

A model lacks some learnable fields; its files give them (the ``spec`` merge patch of
:func:`ome_selector.modelfiles.fill_patch`). :func:`learned_model` is the model as it would be once the patch
is written; :func:`compare` judges every runtime visible from the model's namespace for the model today
and once learned (SPEC §3, §6, on each runtime's own spec as explain does), and evaluates the
InferenceServices the change moves (SPEC §11's what-if, the operator's own decision). :func:`stranded`
keeps the InferenceServices that have a runtime today and would lose it; :func:`strands_message` is the
learner's Warning event.
Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Kind, Model
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.impact import ImpactRun
from ome_selector.review.whatif import Change
from ome_selector.selection.explain import RuntimeVerdict, explain
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.matcher import check
from ome_selector.selection.messages import truncate

__all__ = [
    "MAX_LISTED",
    "STRANDS",
    "LearnedVerdicts",
    "RuntimeRow",
    "Stranded",
    "compare",
    "learned_model",
    "moved_steps",
    "stranded",
    "strands_message",
    "verdict_word",
]

#: The learner's Warning event reason (SPEC §10).
STRANDS = "ModelMetadataStrandsInferenceServices"
#: InferenceServices a message names; the rest are counted (SPEC §10).
MAX_LISTED = 5
#: The status of an InferenceService that has a runtime (SPEC §5).
_HAS_RUNTIME = "True"


def learned_model(body: Mapping[str, Any], fields: Mapping[str, Any], *, from_file: bool = False) -> Model:
    """The model ``body`` describes with the learned ``fields`` (a ``spec`` merge patch that only adds:
    a nested object is merged one level, as RFC 7386 does) written; ValueError when it is not a model."""
    learned = copy.deepcopy(dict(body))
    spec = learned.get("spec")
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    for field, value in fields.items():
        current = spec.get(field)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            spec[field] = {**current, **value}
        else:
            spec[field] = value
    learned["spec"] = spec
    resource = load_resource(learned, from_file=from_file)
    if not isinstance(resource, Model):
        raise ValueError("not a BaseModel or ClusterBaseModel")
    return resource


def verdict_word(verdict: RuntimeVerdict, selected: bool) -> str:
    """One runtime's verdict in a word: ``selected`` (rank 1), ``rank <n>``, ``supports`` (passes SPEC §3 but
    is not auto-selectable) or ``rejected``."""
    if verdict.rank is not None:
        return "selected" if selected and verdict.rank == 1 else f"rank {verdict.rank}"
    return "supports" if verdict.supports_model else "rejected"


@dataclass(frozen=True, slots=True)
class RuntimeRow:
    """One runtime's verdict today and once learned, with the reasons (``""`` when compatible)."""

    kind: str
    namespace: str | None
    name: str
    today: str
    today_reason: str
    learned: str
    learned_reason: str

    def document(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "today": {"verdict": self.today, "reason": self.today_reason},
            "learned": {"verdict": self.learned, "reason": self.learned_reason},
        }


@dataclass(frozen=True, slots=True)
class Stranded:
    """An InferenceService that has a runtime today and none once the model is learned."""

    namespace: str
    name: str
    #: ``<Kind>/<name>`` of the runtime it has today.
    runtime: str
    #: Its condition reason once learned, and why the runtime it has today would no longer serve it.
    reason: str


@dataclass(frozen=True, slots=True)
class LearnedVerdicts:
    """:func:`compare`'s answer for one model."""

    model: Model
    learned: Model
    #: The ``spec`` merge patch that would be written (empty: the model lacks nothing the files give).
    fields: Mapping[str, Any]
    rows: tuple[RuntimeRow, ...]
    #: ``<Kind>/<name>`` of the auto-selected runtime today and once learned (None: none).
    selected_today: str | None
    selected_learned: str | None
    #: The InferenceServices whose verdict the learned values move, and those of them that lose their runtime.
    changes: tuple[Change, ...]
    lost: tuple[Stranded, ...]


def _selected(verdicts: Sequence[RuntimeVerdict]) -> RuntimeVerdict | None:
    return next((verdict for verdict in verdicts if verdict.rank == 1), None)


def _label(verdict: RuntimeVerdict | None) -> str | None:
    return None if verdict is None else f"{verdict.runtime.kind.value}/{verdict.name}"


def moved_steps(
    catalog: Catalog, learned: Model, lookup: RuntimeLookup, into: list[Change]
) -> Iterator[None]:
    """The what-if of writing ``learned`` over the stored model, a step at a time (so that the operator can
    yield between steps); the moved InferenceServices are appended to ``into``, sorted at the end."""
    run = ImpactRun(catalog, {learned.key: learned}, lookup=lookup)
    yield from run.steps()
    rows = [
        Change(key.namespace or "", key.name, moved.before, moved.after)
        for moved in run.moved
        for key in moved.keys
    ]
    into.extend(sorted(rows, key=lambda row: (row.namespace, row.name)))


def compare(
    catalog: Catalog,
    model: Model,
    learned: Model,
    fields: Mapping[str, Any],
    namespace: str,
    *,
    lookup: RuntimeLookup = RuntimeLookup.V1_3,
) -> LearnedVerdicts:
    """Every runtime visible from ``namespace`` judged for ``model`` and for ``learned``, and the
    InferenceServices the change moves."""
    today = explain(catalog, model, namespace)
    once = explain(catalog, learned, namespace)
    learned_by_key = {verdict.runtime.key: verdict for verdict in once.verdicts}
    rows = []
    for verdict in today.verdicts:
        after = learned_by_key[verdict.runtime.key]
        rows.append(
            RuntimeRow(
                kind=verdict.runtime.kind.value,
                namespace=verdict.runtime.namespace,
                name=verdict.name,
                today=verdict_word(verdict, True),
                today_reason=verdict.reason,
                learned=verdict_word(after, True),
                learned_reason=after.reason,
            )
        )
    rows.sort(key=lambda row: (row.namespace is None, row.name))
    changes: list[Change] = []
    for _ in moved_steps(catalog, learned, lookup, changes):
        pass
    return LearnedVerdicts(
        model=model,
        learned=learned,
        fields=fields,
        rows=tuple(rows),
        selected_today=_label(_selected(today.verdicts)),
        selected_learned=_label(_selected(once.verdicts)),
        changes=tuple(changes),
        lost=tuple(stranded(catalog, learned, changes)),
    )


def stranded(catalog: Catalog, learned: Model, changes: Sequence[Change]) -> list[Stranded]:
    """The InferenceServices of ``changes`` that have a runtime today and none once ``learned`` is written,
    each with its reason: its condition reason once learned, then why the runtime it has today rejects the
    learned model (SPEC §3's reason)."""
    lost = []
    profile = catalog.model_profile(learned)
    for change in changes:
        before, after = change.before, change.after
        if before is None or before.status != _HAS_RUNTIME or before.runtime is None:
            continue
        if after is not None and after.status == _HAS_RUNTIME and after.runtime is not None:
            continue
        reason = after.reason if after is not None else "no verdict"
        kind_text, _, name = before.runtime.partition("/")
        kind = Kind(kind_text)
        runtime = catalog.runtime_profile(kind, change.namespace if kind.namespaced else None, name)
        if runtime is not None and (why := check(runtime, profile).reason):
            reason = f"{reason}: {why}"
        lost.append(Stranded(change.namespace, change.name, before.runtime, reason))
    return lost


def strands_message(lost: Sequence[Stranded], learned_text: str) -> str:
    """The Warning event's message (SPEC §10): what would be learned, then at most :data:`MAX_LISTED`
    InferenceServices with their runtime and reason, the rest counted; cut to 1,024 characters."""
    listed = "; ".join(
        f"{item.namespace}/{item.name} (today {item.runtime}; {item.reason})" for item in lost[:MAX_LISTED]
    )
    more = f"; and {len(lost) - MAX_LISTED} more" if len(lost) > MAX_LISTED else ""
    noun = "InferenceService" if len(lost) == 1 else "InferenceServices"
    return truncate(f"Learning {learned_text} leaves {len(lost)} {noun} without a runtime: {listed}{more}")
