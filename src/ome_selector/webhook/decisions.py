"""The admission decisions of SPEC §7, as pure functions of the catalog and the request (no Kopf, no I/O).

:func:`decide_inference_service` judges an InferenceService CREATE or UPDATE from a catalog;
:func:`decide_sizes` judges the size values and operators of the four other kinds. Both return a
:class:`Decision`. Every text is the selection core's (:mod:`ome_selector.selection.messages`): a denial
carries the SPEC §5 message, warnings are cut to 256 characters.

A negative InferenceService answer that rests on something *missing* from the catalog (the model, the named
runtime, any candidate runtime) comes back with :attr:`Decision.confirm` set: the caller reads what the
:class:`Lookup` names directly from the API, builds a catalog view of what is stored now and decides again
with ``confirmed=True`` (see :mod:`.confirming`). That is how an object applied in the same
request as the InferenceService, and not yet seen by the watch, is not missed.

Choices where SPEC §7 is silent (also in docs): deferral (``runner.image``) only skips auto-selection — the
model checks still apply, as upstream OME checks the model first; an empty ``modelParameterSize`` means "no
size" (SPEC §2) and gets no warning, while an empty ``min``/``max`` is a present bound that reads as 0 and
does; ``min`` above ``max`` is reported only when both parse (a bound that does not parse has its own
warning); the size webhooks never deny an object that is being deleted. Bounded work (SPEC §8): at most
:data:`MAX_SIZE_WARNINGS` size and operator problems are written out, the rest counted in one more warning;
an object too large to read (:func:`~ome_selector.api.bounds.oversized`) is not judged, only warned about.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ome_selector.api.bounds import oversized
from ome_selector.api.loading import LoadError, load_resource
from ome_selector.api.resources import InferenceService, Kind
from ome_selector.selection import messages
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import Outcome, OutcomeKind, evaluate
from ome_selector.selection.values import (
    DEFAULT_SUGGESTION,
    OperatorField,
    ValueProblem,
    model_value_problems,
    runtime_value_problems,
    suggestion_for,
)
from ome_selector.selection.view import CatalogView

__all__ = [
    "ALLOWED",
    "DEFAULT_SUGGESTION",
    "MAX_SIZE_WARNINGS",
    "Decision",
    "Lookup",
    "Operation",
    "SizeProblem",
    "decide_inference_service",
    "decide_sizes",
    "size_problems",
    "suggestion_for",
]

#: Most size and operator problems written out for one object; the others are counted in one more warning.
MAX_SIZE_WARNINGS = 10


class Operation(StrEnum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"


@dataclass(frozen=True, slots=True)
class Lookup:
    """What a direct read must fetch to confirm a negative answer for an InferenceService in ``namespace``.

    The model ``model_name`` (BaseModel there, else ClusterBaseModel; None without ``spec.model``) and the
    runtimes named ``runtime_name`` (the ServingRuntime and the ClusterServingRuntime: SPEC §1's lookup by
    ``runtime_kind`` and ``runtime_lookup`` picks one) with the parents of the chain of the one it picks — or,
    when ``runtime_name`` is None, every runtime visible from the namespace (auto-selection).
    """

    namespace: str
    model_name: str | None
    runtime_name: str | None
    runtime_kind: str | None = None
    runtime_lookup: RuntimeLookup = RuntimeLookup.V1_3


@dataclass(frozen=True, slots=True)
class Decision:
    """Allowed or denied (with ``message``), the warnings to return either way, and what to confirm.

    ``outcome`` is the SPEC §5 situation the decision rests on (None when the object was not judged), for logs
    and metrics.
    """

    allowed: bool
    message: str = ""
    warnings: tuple[str, ...] = ()
    confirm: Lookup | None = None
    outcome: OutcomeKind | None = None

    @property
    def judged(self) -> bool:
        return self.outcome is not None


ALLOWED = Decision(allowed=True)

#: The situations whose denial rests on something absent from the catalog (SPEC §7: confirmed by one read).
#: A broken chain is confirmed only when a parent was looked up and is missing.
_CONFIRMED = frozenset({OutcomeKind.MODEL_NOT_FOUND, OutcomeKind.RUNTIME_NOT_FOUND, OutcomeKind.NO_RUNTIME})


# --- InferenceService ---------------------------------------------------------------------------------------


def decide_inference_service(
    catalog: CatalogView,
    new: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    operation: str,
    *,
    namespace: str | None = None,
    confirmed: bool = False,
    lookup: RuntimeLookup = RuntimeLookup.V1_3,
    report_only: bool = False,
) -> Decision:
    """SPEC §7 for an InferenceService CREATE or UPDATE (``new`` is the object, ``old`` the stored one).

    - other operations, objects that are not InferenceServices, and InferenceServices without ``spec.engine``,
      with ``metadata.deletionTimestamp`` or with ``spec.replicaRefs`` are allowed without a look;
    - an UPDATE that changes no field the matcher reads is allowed, with the verdict as a warning when the
      object would have been denied;
    - otherwise the SPEC §5 outcome decides: model missing or disabled, named runtime missing, with a broken
      chain or disabled, and (unless the engine names its own image) no auto-selectable runtime are denied
      with the §5 message; a model without format is allowed with the pending message as a warning; a named
      runtime that does not declare support is allowed with the advisory as a warning, a broken chain with
      ``autoSync: false`` with the chain's text; an auto-selection is allowed with the success warning (not
      in ``report_only``: OME's own webhook says it); without ``spec.model`` a missing runtime is allowed;
    - the mode warning comes with any answer (:func:`mode_warning`).

    ``confirmed``: ``catalog`` was read directly for this request, so no further confirmation is asked for.
    ``lookup``: SPEC §1's named-runtime lookup (``--runtime-lookup``).
    """
    if operation not in (Operation.CREATE, Operation.UPDATE) or new is None:
        return ALLOWED
    isvc = _load_inference_service(new, namespace)
    if isvc is None or not isvc.has_engine or isvc.deletion_timestamp is not None:
        return ALLOWED
    if isvc.has_replica_refs:
        return ALLOWED  # it fronts standalone replicas: untouched, without even the mode warning (SPEC §7)
    verdict = _verdict(catalog, isvc, confirmed=confirmed, lookup=lookup, report_only=report_only)
    mode = mode_warning(isvc)
    if operation == Operation.UPDATE and old is not None:
        previous = _load_inference_service(old, namespace)
        if previous is not None and previous.matcher_inputs == isvc.matcher_inputs:
            # Nothing read changed: the verdict's warnings are not repeated; the mode warning always comes.
            if verdict.allowed:
                return Decision(allowed=True, warnings=_also(mode), outcome=verdict.outcome)
            return Decision(
                allowed=True,
                warnings=(messages.admission_warning(verdict.message), *_also(mode)),
                confirm=verdict.confirm,
                outcome=verdict.outcome,
            )
    if mode is None:
        return verdict
    return Decision(
        allowed=verdict.allowed,
        message=verdict.message,
        warnings=(*verdict.warnings, mode),
        confirm=verdict.confirm,
        outcome=verdict.outcome,
    )


def _also(warning: str | None) -> tuple[str, ...]:
    return (warning,) if warning is not None else ()


def mode_warning(isvc: InferenceService) -> str | None:
    """SPEC §7's mode warning: with ``spec.engine`` and ``spec.decoder`` both present, the raw modes
    (:attr:`~ome_selector.api.resources.InferenceService.raw_deployment_modes`: an empty or invalid value
    counts as written) differ and one of them is ``OMENative`` — OME denies such an InferenceService
    (``InvalidDeploymentModeCombination``); the product only warns."""
    if isvc.spec.engine is None or isvc.spec.decoder is None:
        return None
    engine, decoder = isvc.raw_deployment_modes
    if engine == decoder or "OMENative" not in (engine, decoder):
        return None
    return messages.admission_warning(messages.mode_conflict_warning(engine, decoder))


def _load_inference_service(body: Mapping[str, Any], namespace: str | None) -> InferenceService | None:
    try:
        resource = load_resource(body, default_namespace=namespace)
    except LoadError:
        # The apiserver validated it against whatever CRD is installed; what our model cannot read, the
        # controller ignores too, so admission does not judge it either.
        return None
    return resource if isinstance(resource, InferenceService) else None


def _verdict(
    catalog: CatalogView,
    isvc: InferenceService,
    *,
    confirmed: bool,
    lookup: RuntimeLookup,
    report_only: bool,
) -> Decision:
    outcome = evaluate(catalog, isvc, lookup)
    if outcome is None:  # neither spec.model nor a named runtime: left alone (SPEC §5)
        return ALLOWED
    kind = outcome.kind
    if kind is OutcomeKind.RUNTIME_NOT_FOUND and isvc.model_name is None:
        return Decision(
            allowed=True, outcome=kind
        )  # as OME v1.3: a runtime created later serves it (SPEC §7)
    warning = _warning(outcome, isvc, report_only)
    if warning is not None:
        return Decision(allowed=True, warnings=(messages.admission_warning(warning),), outcome=kind)
    if kind is OutcomeKind.NO_RUNTIME and isvc.defers_auto_selection:
        return Decision(allowed=True, outcome=kind)
    if not outcome.denies_admission:
        return Decision(allowed=True, outcome=kind)
    confirm = None
    if not confirmed and _rests_on_something_missing(outcome):
        confirm = Lookup(
            isvc.namespace, isvc.model_name, isvc.runtime_name, isvc.runtime_kind, runtime_lookup=lookup
        )
    return Decision(allowed=False, message=outcome.message, confirm=confirm, outcome=kind)


def _warning(outcome: Outcome, isvc: InferenceService, report_only: bool) -> str | None:
    """The warning of an allowed answer (SPEC §7), None when the situation has none (or is denied)."""
    kind = outcome.kind
    if kind is OutcomeKind.MODEL_METADATA_PENDING:
        return outcome.message
    if kind is OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED:
        return outcome.advisory or outcome.message
    runtime, model = outcome.runtime, outcome.model
    if kind is OutcomeKind.RUNTIME_SPECIFIED_UNRESOLVED and outcome.chain_error is not None:
        named = runtime.name if runtime is not None else isvc.runtime_name or ""
        return messages.runtime_unresolved(named, outcome.chain_error.message)
    # Not in report-only mode, where OME's own webhook says it; not when selection waits (SPEC §7).
    waits = report_only or isvc.defers_auto_selection
    if kind is OutcomeKind.RUNTIME_SELECTED and runtime is not None and model is not None and not waits:
        return messages.auto_selected_warning(runtime.name, model.name)
    return None


def _rests_on_something_missing(outcome: Outcome) -> bool:
    if outcome.kind in _CONFIRMED:
        return True
    error = outcome.chain_error
    return (
        outcome.kind is OutcomeKind.RUNTIME_INHERITANCE_ERROR
        and error is not None
        and (error.missing_parent is not None)
    )


# --- size values and operators on models and runtimes -----------------------------------------------------

_Path = tuple[str | int, ...]


@dataclass(frozen=True)
class SizeProblem:
    """One SPEC §7 size or operator warning (the rule: :mod:`ome_selector.selection.values`). The text is
    written only when asked for (:attr:`message`): an object can have thousands of problems."""

    problem: ValueProblem

    @property
    def fields(self) -> tuple[_Path, ...]:
        return self.problem.fields

    @property
    def message(self) -> str:
        return messages.value_warning(self.problem)

    def unchanged_in(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
        """Whether every field it is about is the same in ``old`` (then ``--strict-sizes`` only warns)."""
        if old is None:
            return False
        return all(_get(old, path) == _get(new, path) for path in self.fields)


def size_problems(kind: Kind, body: Mapping[str, Any]) -> list[SizeProblem]:
    """Every SPEC §7 warning for a model or runtime ``body``, in field order."""
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        return []
    if kind.is_model:
        size = spec.get("modelParameterSize")
        return [SizeProblem(p) for p in model_value_problems(size if isinstance(size, str) else None)]
    if kind.is_runtime:
        return [SizeProblem(p) for p in _runtime_problems(spec)]
    return []


def _runtime_problems(spec: Mapping[str, Any]) -> Iterator[ValueProblem]:
    size_range = spec.get("modelSizeRange")
    bounds = size_range if isinstance(size_range, Mapping) else {}
    # Only strings are bounds as written: absent or null is no bound.
    minimum, maximum = (
        value if isinstance(value, str) else None for value in (bounds.get("min"), bounds.get("max"))
    )
    return runtime_value_problems(minimum, maximum, _operators(spec.get("supportedModelFormats")))


def _operators(entries: Any) -> Iterator[OperatorField]:
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        return
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            continue
        for part in ("modelFormat", "modelFramework"):
            selector = entry.get(part)
            if isinstance(selector, Mapping) and isinstance(operator := selector.get("operator"), str):
                yield index, part, operator


def _warnings(problems: Sequence[SizeProblem]) -> tuple[str, ...]:
    """The first :data:`MAX_SIZE_WARNINGS` problems written out, and a count of the rest."""
    shown = [messages.admission_warning(p.message) for p in problems[:MAX_SIZE_WARNINGS]]
    hidden = len(problems) - len(shown)
    if hidden:
        shown.append(
            f"… {hidden} more size or operator problems; "
            "`kubectl ome-selector runtime lint -f <file>` lists them all"
        )
    return tuple(shown)


def decide_sizes(
    kind: Kind,
    new: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    operation: str,
    *,
    strict: bool = False,
) -> Decision:
    """SPEC §7 for a model or runtime CREATE/UPDATE: allowed with a warning per problem; with ``strict``,
    denied for the problems whose values the request sets or changes (the rest stay warnings)."""
    if operation not in (Operation.CREATE, Operation.UPDATE) or new is None:
        return ALLOWED
    too_large = oversized(new)
    if too_large is not None:
        return Decision(allowed=True, warnings=(messages.admission_warning(_not_read(kind, too_large)),))
    problems = size_problems(kind, new)
    if not problems:
        return ALLOWED
    deleting = (new.get("metadata") or {}).get("deletionTimestamp") is not None
    if not strict or deleting:
        return Decision(allowed=True, warnings=_warnings(problems))
    previous = old if operation == Operation.UPDATE else None
    kept = [p for p in problems if p.unchanged_in(previous, new)]
    denied = [p for p in problems if p not in kept]
    warnings = _warnings(kept)
    if not denied:
        return Decision(allowed=True, warnings=warnings)
    # The denial holds at most 1,024 characters: no more problems are written out than could be shown.
    message = messages.truncate("; ".join(p.message for p in denied[:MAX_SIZE_WARNINGS]))
    return Decision(allowed=False, message=message, warnings=warnings)


def _not_read(kind: Kind, reason: str) -> str:
    return f"ome-selector does not read this {kind.value}: {reason}; it treats it as absent"


# --- field paths -------------------------------------------------------------------------------------------


_MISSING = object()


def _get(body: Mapping[str, Any], path: _Path) -> Any:
    value: Any = body
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, Sequence) or isinstance(value, str) or part >= len(value):
                return _MISSING
            value = value[part]
        else:
            if not isinstance(value, Mapping):
                return _MISSING
            value = value.get(part, _MISSING)
            if value is None:
                return _MISSING
    return value
