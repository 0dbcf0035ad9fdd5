"""The outcome of runtime selection for one InferenceService: the situations of SPEC §5, with and without a
model.

:func:`evaluate` decides, in this order: model missing, model disabled, model without ``modelFormat.name``
(pending), then for a named runtime (found by SPEC §1's lookup, judged on its effective spec) missing / chain
broken / disabled / used with or without an advisory, and otherwise auto-selection (selected, or the capped
no-runtime message; :func:`auto_selection` ranks only the runtimes that can match, on their own specs, and
the catalog keeps its result for the next InferenceService of the model). An InferenceService without
``spec.model`` that names a runtime gets the rows of the second table (no support check). Each
:class:`Outcome` carries the ``RuntimeReady`` condition fields, the event to record when the condition
changes (None when the table gives none) and, for a named runtime that does not declare support, the advisory
text the webhook shows as a warning. The condition status, reason and event of each situation come from one
table, :data:`ROWS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, NamedTuple

from ome_selector.api.resources import NO_MODES, DeploymentModes, InferenceService, Model, Runtime
from ome_selector.selection import messages
from ome_selector.selection.inheritance import (
    ChainError,
    RuntimeLookup,
    find_named_runtime,
    named_runtime_not_found,
    resolve_effective,
)
from ome_selector.selection.matcher import FormatReasons, check
from ome_selector.selection.memo import AutoSelection
from ome_selector.selection.profiles import ModelProfile
from ome_selector.selection.ranking import misses_of_format, rank, selected_message
from ome_selector.selection.view import CatalogView

__all__ = [
    "CONDITION_TYPE",
    "ROWS",
    "SELECTION_CHANGED_REASON",
    "DecisionInputs",
    "EventSpec",
    "Outcome",
    "OutcomeKind",
    "Row",
    "auto_selection",
    "decision_inputs",
    "evaluate",
    "selection_change",
]

#: The one condition the product keeps on an InferenceService (SPEC §5).
CONDITION_TYPE = "RuntimeReady"

#: The Normal event recorded when auto-selection moves an InferenceService to another runtime (SPEC §12).
SELECTION_CHANGED_REASON = "RuntimeSelectionChanged"

ConditionStatus = Literal["True", "False", "Unknown"]
EventType = Literal["Normal", "Warning"]


class OutcomeKind(StrEnum):
    """The rows of the SPEC §5 table."""

    RUNTIME_SELECTED = "RuntimeSelected"
    RUNTIME_SPECIFIED = "RuntimeSpecified"
    RUNTIME_SPECIFIED_UNSUPPORTED = "RuntimeSpecifiedUnsupported"
    RUNTIME_DISABLED = "RuntimeDisabled"
    RUNTIME_NOT_FOUND = "RuntimeNotFound"
    #: The named runtime's chain is broken (SPEC §1, §5 v4).
    RUNTIME_INHERITANCE_ERROR = "RuntimeInheritanceError"
    #: The same with ``spec.runtime.autoSync: false``: the pinned runtime is used.
    RUNTIME_SPECIFIED_UNRESOLVED = "RuntimeSpecifiedUnresolved"
    NO_RUNTIME = "NoRuntime"
    MODEL_NOT_FOUND = "ModelNotFound"
    MODEL_DISABLED = "ModelDisabled"
    MODEL_METADATA_PENDING = "ModelMetadataPending"


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the SPEC §5 table: the condition's status and reason, the Warning event's reason (None: no
    event), and whether the webhook denies in this situation (SPEC §7)."""

    status: ConditionStatus
    reason: str
    event_reason: str | None
    denies_admission: bool


#: The SPEC §5 table. The advisory row's event carries the advisory text, the other events the message.
ROWS: Mapping[OutcomeKind, Row] = {
    OutcomeKind.RUNTIME_SELECTED: Row("True", "RuntimeSelected", None, False),
    OutcomeKind.RUNTIME_SPECIFIED: Row("True", "RuntimeSpecified", None, False),
    OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED: Row(
        "True", "RuntimeSpecified", "RuntimeCompatibilityAdvisory", False
    ),
    OutcomeKind.RUNTIME_DISABLED: Row("False", "RuntimeDisabled", "RuntimeDisabled", True),
    OutcomeKind.RUNTIME_NOT_FOUND: Row("False", "RuntimeNotFound", "RuntimeNotFound", True),
    OutcomeKind.RUNTIME_INHERITANCE_ERROR: Row(
        "False", "RuntimeInheritanceError", "RuntimeInheritanceError", True
    ),
    OutcomeKind.RUNTIME_SPECIFIED_UNRESOLVED: Row("True", "RuntimeSpecified", None, False),
    OutcomeKind.NO_RUNTIME: Row("False", "RuntimeNotFound", "RuntimeNotFound", True),
    OutcomeKind.MODEL_NOT_FOUND: Row("False", "ModelNotFound", None, True),
    OutcomeKind.MODEL_DISABLED: Row("False", "ModelDisabled", None, True),
    OutcomeKind.MODEL_METADATA_PENDING: Row("Unknown", "ModelMetadataPending", None, False),
}


@dataclass(frozen=True, slots=True)
class EventSpec:
    """An event to record on the InferenceService after a condition change."""

    type: EventType
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """The ``RuntimeReady`` condition for one InferenceService and what goes with it.

    ``kind`` is the SPEC §5 row; ``status`` and ``reason`` are the condition's (``RuntimeSpecified`` for the
    named-runtime rows, ``RuntimeNotFound`` for both not-found rows). ``runtime`` is the selected runtime, or
    the named one as the lookup found it (also when disabled or its chain is broken; None when missing or
    when nothing was selected), ``model`` the resolved model (None without ``spec.model``). ``advisory`` is
    set for a named runtime that does not declare support (even with ``autoSync: false``, when ``event`` is
    None); ``chain_error`` for a named runtime whose chain is broken.
    """

    kind: OutcomeKind
    message: str
    event: EventSpec | None = None
    runtime: Runtime | None = None
    model: Model | None = None
    advisory: str | None = None
    score: int | None = None
    chain_error: ChainError | None = None

    @classmethod
    def of(
        cls,
        kind: OutcomeKind,
        message: str,
        *,
        model: Model | None = None,
        runtime: Runtime | None = None,
        score: int | None = None,
        advisory: str | None = None,
        record_event: bool = True,
        chain_error: ChainError | None = None,
    ) -> Outcome:
        """The outcome of row ``kind``, with the event the table gives it (unless ``record_event`` is
        false)."""
        event_reason = ROWS[kind].event_reason
        event = None
        if event_reason is not None and record_event:
            event = EventSpec(type="Warning", reason=event_reason, message=advisory or message)
        return cls(kind, message, event, runtime, model, advisory, score, chain_error)

    @property
    def status(self) -> ConditionStatus:
        return ROWS[self.kind].status

    @property
    def reason(self) -> str:
        return ROWS[self.kind].reason

    @property
    def denies_admission(self) -> bool:
        """Whether the webhook denies an InferenceService in this situation (SPEC §7), before the re-check."""
        return ROWS[self.kind].denies_admission


class DecisionInputs(NamedTuple):
    """Everything :func:`evaluate` reads from an InferenceService: two InferenceServices with equal inputs get
    the same status, reason and runtime in any catalog (only the no-runtime message names the InferenceService
    itself). The catalog groups InferenceServices by them, so a catalog change is judged once per group
    (SPEC §12), not once per InferenceService. Whatever :func:`evaluate` comes to read must be added here."""

    namespace: str
    model_name: str | None
    runtime_name: str | None
    runtime_kind: str | None
    auto_sync: bool
    accelerator_classes: tuple[str, ...]
    deployment_modes: DeploymentModes
    has_replica_refs: bool


def decision_inputs(isvc: InferenceService) -> DecisionInputs:
    """The :class:`DecisionInputs` of ``isvc``."""
    return DecisionInputs(
        isvc.namespace,
        isvc.model_name,
        isvc.runtime_name,
        isvc.runtime_kind,
        isvc.auto_sync,
        isvc.accelerator_classes,
        isvc.deployment_modes,
        isvc.has_replica_refs,
    )


def evaluate(
    catalog: CatalogView, isvc: InferenceService, lookup: RuntimeLookup = RuntimeLookup.V1_3
) -> Outcome | None:
    """The SPEC §5 outcome for ``isvc``; None when it is left alone: it has neither ``spec.model`` nor a named
    runtime, or it sets ``spec.replicaRefs`` (OME serves it from standalone replicas and resolves no model or
    runtime for it). ``lookup`` is the named-runtime lookup rule (SPEC §1, ``--runtime-lookup``)."""
    if isvc.has_replica_refs:
        return None
    model_name, runtime_name = isvc.model_name, isvc.runtime_name
    if model_name is None:
        if runtime_name is None:
            return None
        return _named_runtime(catalog, isvc, None, runtime_name, lookup)
    namespace = isvc.namespace
    model = catalog.resolve_model(namespace, model_name)
    if model is None:
        return Outcome.of(OutcomeKind.MODEL_NOT_FOUND, messages.model_not_found(model_name, namespace))
    if model.spec.disabled:
        return Outcome.of(OutcomeKind.MODEL_DISABLED, messages.model_disabled(model_name), model=model)
    if not model.spec.has_format:
        return Outcome.of(OutcomeKind.MODEL_METADATA_PENDING, messages.model_pending(model_name), model=model)
    if runtime_name is not None:
        return _named_runtime(catalog, isvc, model, runtime_name, lookup)
    return _auto_select(catalog, isvc, model)


def _named_runtime(
    catalog: CatalogView,
    isvc: InferenceService,
    model: Model | None,
    runtime_name: str,
    lookup: RuntimeLookup,
) -> Outcome:
    """A named runtime (SPEC §5): missing, chain broken, disabled (all on its effective spec), then — with a
    model — whether it supports it. Without a model there is no support, accelerator or mode check."""
    namespace = isvc.namespace
    profile = find_named_runtime(catalog, namespace, runtime_name, isvc.runtime_kind, lookup)
    if profile is None:
        message = named_runtime_not_found(runtime_name, namespace, isvc.runtime_kind, lookup)
        return Outcome.of(OutcomeKind.RUNTIME_NOT_FOUND, message, model=model)
    runtime = profile.runtime
    kind = runtime.kind.value
    effective = resolve_effective(catalog, profile)
    if isinstance(effective, ChainError):
        if not isvc.auto_sync:
            # OME renders a pinned InferenceService from its pinned revision: no other check runs (SPEC §5).
            message = messages.runtime_specified_unresolved(kind, runtime.name, effective.message)
            outcome_kind = OutcomeKind.RUNTIME_SPECIFIED_UNRESOLVED
        else:
            message = messages.runtime_unresolved(runtime.name, effective.message)
            outcome_kind = OutcomeKind.RUNTIME_INHERITANCE_ERROR
        return Outcome.of(outcome_kind, message, model=model, runtime=runtime, chain_error=effective)
    if effective.disabled:
        message = messages.runtime_disabled(runtime.is_cluster, runtime.name)
        return Outcome.of(OutcomeKind.RUNTIME_DISABLED, message, model=model, runtime=runtime)
    if model is None:
        message = messages.runtime_specified(kind, runtime.name)
        return Outcome.of(OutcomeKind.RUNTIME_SPECIFIED, message, runtime=runtime)
    result = check(effective, catalog.model_profile(model), isvc.accelerator_classes, isvc.deployment_modes)
    if result.supports_model:
        message = messages.runtime_specified(kind, runtime.name)
        return Outcome.of(
            OutcomeKind.RUNTIME_SPECIFIED, message, model=model, runtime=runtime, score=result.score
        )
    # Both texts are cut to MESSAGE_LIMIT characters: the reason is not built beyond them.
    reason = result.reason_within(messages.MESSAGE_LIMIT)
    return Outcome.of(
        OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED,
        messages.runtime_specified_unsupported(kind, runtime.name, model.name, reason),
        model=model,
        runtime=runtime,
        score=result.score,
        advisory=messages.advisory(runtime.name, model.name, reason),
        # autoSync: false pins the runtime: the advisory is not repeated for it (SPEC §5).
        record_event=isvc.auto_sync,
    )


def _auto_select(catalog: CatalogView, isvc: InferenceService, model: Model) -> Outcome:
    namespace, classes, modes = isvc.namespace, isvc.accelerator_classes, isvc.deployment_modes
    profile = catalog.model_profile(model)
    memo = catalog.auto_selections
    # A namespace without ServingRuntimes sees what every such namespace sees (SPEC §4): one result for all.
    scope = namespace if catalog.runtime_counts(namespace)[0] else None
    selection = memo.get(scope, profile, classes, modes)
    # The message names the step that decided between ranks 1 and 2 (SPEC §5): a kept result that no longer
    # knows rank 2 is ranked again.
    if selection is None or (selection.selected is not None and not selection.runner_up_known):
        selection = auto_selection(catalog, profile, namespace, classes, modes)
        memo.put(scope, classes, selection, modes)
    selected = selection.selected
    if selected is not None:
        winner = selected.profile.runtime
        message = selected_message(selected, selection.runner_up)
        return Outcome.of(
            OutcomeKind.RUNTIME_SELECTED, message, model=model, runtime=winner, score=selected.score
        )
    message = messages.no_runtime_message(
        model=model.name,
        namespaced_count=selection.namespaced_count,
        cluster_count=selection.cluster_count,
        entries=selection.listed,
        other_formats=selection.other_formats,
        isvc=isvc.name,
        namespace=namespace,
    )
    return Outcome.of(OutcomeKind.NO_RUNTIME, message, model=model)


def auto_selection(
    catalog: CatalogView,
    model: ModelProfile,
    namespace: str,
    accelerator_classes: tuple[str, ...] = (),
    modes: DeploymentModes = NO_MODES,
) -> AutoSelection:
    """Auto-selection for ``model`` (with a format) in ``namespace``, computed (:func:`evaluate` keeps it in
    the catalog's memo). Every runtime is judged on its own spec, whatever it inherits (SPEC §1).

    Only runtimes with an entry of the model's match key can match it: those are ranked. When none is
    auto-selectable, the runtimes of the model's format are listed nearest miss first, each checked and its
    reason written only as far as a message can hold them.
    """
    candidates = catalog.runtime_profiles_for_match_key(namespace, model.match_key)
    ranking = rank(candidates, model, accelerator_classes, modes)
    if ranking.selected is not None:
        runner_up = ranking.ranked[1] if len(ranking.ranked) > 1 else None
        return AutoSelection(model, ranking.selected, runner_up=runner_up, runner_up_known=True)
    formats = catalog.runtime_profiles_for_format(namespace, model.format_name)
    writer = FormatReasons(model.spec, messages.MESSAGE_LIMIT)
    entries = (
        # Each reason is built only as far as the message can show it, too.
        messages.runtime_entry(
            result.profile.namespace,
            result.profile.name,
            result.reason_within(messages.MESSAGE_LIMIT, writer),
        )
        for result in misses_of_format(formats, ranking, model, accelerator_classes, modes)
    )
    namespaced, cluster = catalog.runtime_counts(namespace)
    return AutoSelection(
        model,
        None,
        listed=messages.no_runtime_entries_held(entries),
        namespaced_count=namespaced,
        cluster_count=cluster,
        other_formats=namespaced + cluster - len(formats),
    )


def selection_change(stored: Mapping[str, object] | None, outcome: Outcome) -> EventSpec | None:
    """SPEC §12 "Switch events": the Normal ``RuntimeSelectionChanged`` event when the stored condition is
    ``True``/``RuntimeSelected`` naming one runtime and ``outcome`` selects another (by kind and name), with
    the new runtime's score; None otherwise — also when the stored message is not one the product writes
    (another writer's), so the runtime it named is unknown."""
    runtime, score = outcome.runtime, outcome.score
    if outcome.kind is not OutcomeKind.RUNTIME_SELECTED or runtime is None or score is None:
        return None
    if stored is None or (stored.get("status"), stored.get("reason")) != ("True", "RuntimeSelected"):
        return None
    message = stored.get("message")
    before = messages.selected_runtime(message) if isinstance(message, str) else None
    after = (runtime.kind.value, runtime.name)
    if before is None or before == after:
        return None
    text = messages.runtime_selection_changed(*before, *after, score)
    return EventSpec(type="Normal", reason=SELECTION_CHANGED_REASON, message=text)
