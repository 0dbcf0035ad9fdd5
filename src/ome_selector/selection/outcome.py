"""The outcome of runtime selection for one InferenceService: the nine situations of SPEC §5.

:func:`evaluate` decides, in this order: model missing, model disabled, model without ``modelFormat.name``
(pending), then for a named runtime missing / disabled / used with or without an advisory, and otherwise
auto-selection (selected, or the capped no-runtime message). Each :class:`Outcome` carries the
``RuntimeReady`` condition fields, the event to record when the condition changes (None when the table gives
none) and, for a named runtime that does not declare support, the advisory text the webhook shows as a
warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from operator import itemgetter
from typing import Literal

from ome_selector.api.resources import InferenceService, Model, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection import messages
from ome_selector.selection.explain import RuntimeVerdict
from ome_selector.selection.matcher import check
from ome_selector.selection.scoring import rank_key

__all__ = [
    "CONDITION_TYPE",
    "EventSpec",
    "Outcome",
    "OutcomeKind",
    "evaluate",
    "no_runtime_entry",
    "runtime_entry",
]

CONDITION_TYPE = "RuntimeReady"

ConditionStatus = Literal["True", "False", "Unknown"]
EventType = Literal["Normal", "Warning"]


class OutcomeKind(StrEnum):
    """The rows of the SPEC §5 table."""

    RUNTIME_SELECTED = "RuntimeSelected"
    RUNTIME_SPECIFIED = "RuntimeSpecified"
    RUNTIME_SPECIFIED_UNSUPPORTED = "RuntimeSpecifiedUnsupported"
    RUNTIME_DISABLED = "RuntimeDisabled"
    RUNTIME_NOT_FOUND = "RuntimeNotFound"
    NO_RUNTIME = "NoRuntime"
    MODEL_NOT_FOUND = "ModelNotFound"
    MODEL_DISABLED = "ModelDisabled"
    MODEL_METADATA_PENDING = "ModelMetadataPending"


@dataclass(frozen=True, slots=True)
class EventSpec:
    """An event to record on the InferenceService after a condition change."""

    type: EventType
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """The ``RuntimeReady`` condition for one InferenceService and what goes with it.

    ``reason`` is the condition reason (``RuntimeSpecified`` for both named-runtime rows, ``RuntimeNotFound``
    for both not-found rows); ``kind`` tells the rows apart. ``runtime`` is the selected or named runtime
    (None when missing or when nothing was selected), ``model`` the resolved model. ``advisory`` is set for a
    named runtime that does not declare support (even with ``autoSync: false``, when ``event`` is None).
    """

    kind: OutcomeKind
    status: ConditionStatus
    reason: str
    message: str
    event: EventSpec | None
    runtime: Runtime | None
    model: Model | None
    advisory: str | None = None
    score: int | None = None

    @property
    def denies_admission(self) -> bool:
        """Whether the webhook denies an InferenceService in this situation (SPEC §7), before the re-check."""
        return self.kind in _DENIED

    @property
    def condition_type(self) -> str:
        return CONDITION_TYPE


_DENIED = frozenset(
    {
        OutcomeKind.MODEL_NOT_FOUND,
        OutcomeKind.MODEL_DISABLED,
        OutcomeKind.RUNTIME_NOT_FOUND,
        OutcomeKind.RUNTIME_DISABLED,
        OutcomeKind.NO_RUNTIME,
    }
)


def _warning(reason: str, message: str) -> EventSpec:
    return EventSpec(type="Warning", reason=reason, message=message)


def runtime_entry(runtime: Runtime, reason: str) -> str:
    """One runtime as the no-runtime message lists it: ``<namespace>/<name> (<reason>)`` for a
    ServingRuntime, ``<name> (<reason>)`` for a ClusterServingRuntime."""
    where = f"{runtime.namespace}/" if runtime.namespace is not None and not runtime.is_cluster else ""
    return f"{where}{runtime.name} ({reason})"


def no_runtime_entry(verdict: RuntimeVerdict) -> str:
    """A verdict as the no-runtime message lists it (see :func:`runtime_entry`)."""
    return runtime_entry(verdict.runtime, verdict.reason)


def evaluate(catalog: Catalog, isvc: InferenceService) -> Outcome | None:
    """The SPEC §5 outcome for ``isvc``; None when it has no ``spec.model`` (it is left alone)."""
    model_name = isvc.model_name
    if model_name is None:
        return None
    namespace = isvc.namespace
    model = catalog.resolve_model(namespace, model_name)
    if model is None:
        message = messages.model_not_found(model_name, namespace)
        return Outcome(OutcomeKind.MODEL_NOT_FOUND, "False", "ModelNotFound", message, None, None, None)
    if model.spec.disabled:
        message = messages.model_disabled(model_name)
        return Outcome(OutcomeKind.MODEL_DISABLED, "False", "ModelDisabled", message, None, None, model)
    if not model.spec.has_format:
        message = messages.model_pending(model_name)
        return Outcome(
            OutcomeKind.MODEL_METADATA_PENDING, "Unknown", "ModelMetadataPending", message, None, None, model
        )
    runtime_name = isvc.runtime_name
    if runtime_name is not None:
        return _named_runtime(catalog, isvc, model, runtime_name)
    return _auto_select(catalog, isvc, model)


def _named_runtime(catalog: Catalog, isvc: InferenceService, model: Model, runtime_name: str) -> Outcome:
    profile = catalog.resolve_runtime_profile(isvc.namespace, runtime_name)
    if profile is None:
        message = messages.runtime_not_found(runtime_name, isvc.namespace)
        event = _warning("RuntimeNotFound", message)
        return Outcome(OutcomeKind.RUNTIME_NOT_FOUND, "False", "RuntimeNotFound", message, event, None, model)
    runtime = profile.runtime
    if runtime.spec.disabled:
        message = messages.runtime_disabled(runtime.is_cluster, runtime.name)
        event = _warning("RuntimeDisabled", message)
        return Outcome(
            OutcomeKind.RUNTIME_DISABLED, "False", "RuntimeDisabled", message, event, runtime, model
        )
    result = check(profile, catalog.model_profile(model), isvc.accelerator_classes)
    kind = runtime.kind.value
    if result.supports_model:
        message = messages.runtime_specified(kind, runtime.name)
        return Outcome(
            OutcomeKind.RUNTIME_SPECIFIED,
            "True",
            "RuntimeSpecified",
            message,
            None,
            runtime,
            model,
            score=result.score,
        )
    message = messages.runtime_specified_unsupported(kind, runtime.name, model.name, result.reason)
    advisory = messages.advisory(runtime.name, model.name, result.reason)
    advisory_event = _warning("RuntimeCompatibilityAdvisory", advisory) if isvc.auto_sync else None
    return Outcome(
        OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED,
        "True",
        "RuntimeSpecified",
        message,
        advisory_event,
        runtime,
        model,
        advisory=advisory,
        score=result.score,
    )


def _auto_select(catalog: Catalog, isvc: InferenceService, model: Model) -> Outcome:
    namespace = isvc.namespace
    # Only runtimes with an entry naming the model's format can match it; the index hands exactly those over,
    # namespaced first, then by name (the order of the no-runtime message).
    candidates = catalog.runtime_profiles_for_format(namespace, model.spec.format_name)
    profile = catalog.model_profile(model)
    classes = isvc.accelerator_classes
    # Ranking needs no reasons; the message below asks for the few it can hold.
    results = [(candidate, check(candidate, profile, classes, reasons=False)) for candidate in candidates]
    best = min(
        (
            (rank_key(candidate, result.score, profile.size), candidate, result)
            for candidate, result in results
            if result.auto_selectable
        ),
        key=itemgetter(0),
        default=None,
    )
    if best is not None:
        _, winner, result = best
        message = messages.runtime_selected(winner.runtime.kind.value, winner.name, result.score)
        return Outcome(
            OutcomeKind.RUNTIME_SELECTED,
            "True",
            "RuntimeSelected",
            message,
            None,
            winner.runtime,
            model,
            score=result.score,
        )

    def entries() -> Iterator[str]:
        for candidate, result in results:
            reason = result.reason or check(candidate, profile, classes).reason
            yield runtime_entry(candidate.runtime, reason)

    namespaced, cluster = catalog.runtime_counts(namespace)
    message = messages.no_runtime_message(
        model=model.name,
        namespaced_count=namespaced,
        cluster_count=cluster,
        entries=entries(),
        other_formats=namespaced + cluster - len(results),
        isvc=isvc.name,
        namespace=namespace,
    )
    return Outcome(
        OutcomeKind.NO_RUNTIME,
        "False",
        "RuntimeNotFound",
        message,
        _warning("RuntimeNotFound", message),
        None,
        model,
    )
