"""Explain runtime selection for one model: every runtime's verdict, the ranking and the selection (SPEC
§3–§6).

:func:`explain` judges every runtime visible from a namespace and ranks the auto-selectable ones with
:func:`~.ranking.rank`, the ranking :func:`~.outcome.evaluate` uses too (evaluate looks only at the runtimes
that name the model's format, and writes reasons only for the runtimes its message lists). The CLI prints an
:class:`Explanation` as a table; :func:`explanation_document` is exactly the ``-o json`` object of SPEC §6.
Every row judges its runtime on its own spec; the inheritance chain of a runtime that names a parent is
resolved for the document only. :func:`effective_runtime` is ``--with-effective``: what an InferenceService
would run and the chain its effective spec is merged from (SPEC §1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from ome_selector.api.resources import (
    NO_MODES,
    InferenceService,
    Model,
    ObjectKey,
    Runtime,
)
from ome_selector.selection.inheritance import (
    Chain,
    ChainError,
    RuntimeLookup,
    find_named_runtime,
    resolve_chain,
)
from ome_selector.selection.matcher import TUPLE_NEW, FormatReasons, RuntimeCheck, Step
from ome_selector.selection.profiles import RuntimeProfile
from ome_selector.selection.ranking import Decider, decided_by, rank, selected_message
from ome_selector.selection.scoring import entry_weight
from ome_selector.selection.view import CatalogView

__all__ = [
    "NO_SOURCE_REASON",
    "EffectiveRuntime",
    "Explanation",
    "RuntimeVerdict",
    "Selection",
    "effective_document",
    "effective_runtime",
    "explain",
    "explanation_document",
]


class RuntimeVerdict(NamedTuple):
    """One runtime's verdict for one model: its check, its rank and its reason, and what they tell (a named
    tuple, like the check: explain builds one per runtime).

    ``supports_model``: passes SPEC §3 checks 1–5; ``compatible``: auto-selectable; ``reason``: the §3 reason,
    ``""`` when compatible; ``failed``: the step whose check failed (None when compatible);
    ``score``/``priority``: of the matching entry (0/None without one); ``rank``: 1-based among the compatible
    runtimes, else None; ``range_text``: the runtime's interval as §3 writes it, None without a bound;
    ``serves_format``: some entry names the model's format (listed in the no-runtime message).
    """

    check: RuntimeCheck
    rank: int | None
    reason: str

    @property
    def runtime(self) -> Runtime:
        return self.check.profile.runtime

    @property
    def supports_model(self) -> bool:
        return self.check.supports_model

    @property
    def compatible(self) -> bool:
        return self.check.auto_selectable

    @property
    def score(self) -> int:
        return self.check.score

    @property
    def priority(self) -> int | None:
        return self.check.priority

    @property
    def failed(self) -> Step | None:
        return self.check.failed

    @property
    def weight(self) -> int | None:
        """The ``WEIGHT`` column of SPEC §6 (OME's explain column): the matching entry's weights above 0 times
        its priority, None without a matching entry."""
        index = self.check.entry
        if index is None:
            return None
        return entry_weight(self.check.profile.entries[index].entry)

    @property
    def range_text(self) -> str | None:
        return self.check.profile.range_text

    @property
    def serves_format(self) -> bool:
        return self.check.profile.serves_format(self.check.model.format_name)

    @property
    def is_cluster(self) -> bool:
        return self.check.profile.is_cluster

    @property
    def name(self) -> str:
        return self.check.profile.name

    @property
    def scope(self) -> str:
        return self.runtime.scope


@dataclass(frozen=True, slots=True)
class Explanation:
    """Verdicts for every runtime visible from ``namespace``, in SPEC §6 table order, and the selection."""

    model: Model
    namespace: str
    verdicts: tuple[RuntimeVerdict, ...]
    selected: RuntimeVerdict | None
    #: The inheritance chain of each runtime that names a parent (SPEC §1), resolved or broken; the rows
    #: judge every runtime on its own spec, the chain is shown for information (``inheritanceChain``).
    chains: Mapping[ObjectKey, Chain | ChainError] = field(default_factory=dict)

    @property
    def ranked(self) -> tuple[RuntimeVerdict, ...]:
        """The auto-selectable runtimes in rank order."""
        return tuple(v for v in self.verdicts if v.rank is not None)

    @property
    def runner_up(self) -> RuntimeVerdict | None:
        """Rank 2, None when fewer than two runtimes are auto-selectable."""
        ranked = self.ranked
        return ranked[1] if len(ranked) > 1 else None

    @property
    def decided_by(self) -> Decider | None:
        """The SPEC §4 step that put the selected runtime before rank 2; None when nothing is selected."""
        if self.selected is None:
            return None
        runner_up = self.runner_up
        return decided_by(self.selected.check, runner_up.check if runner_up is not None else None)

    @property
    def selected_message(self) -> str | None:
        """The ``RuntimeSelected`` message of SPEC §5 for the selected runtime; None when nothing is."""
        if self.selected is None:
            return None
        runner_up = self.runner_up
        return selected_message(self.selected.check, runner_up.check if runner_up is not None else None)

    @property
    def namespaced_count(self) -> int:
        return sum(1 for v in self.verdicts if not v.is_cluster)

    @property
    def cluster_count(self) -> int:
        return sum(1 for v in self.verdicts if v.is_cluster)


def explain(
    catalog: CatalogView, model: Model, namespace: str, isvc: InferenceService | None = None
) -> Explanation:
    """Every runtime visible from ``namespace`` judged on its own spec for ``model`` (and the
    InferenceService's accelerator classes and deployment modes, when given), ranked as SPEC §4, in SPEC §6
    table order: ranked first in rank order, then the others namespaced first, then by name."""
    classes = isvc.accelerator_classes if isvc is not None else ()
    modes = isvc.deployment_modes if isvc is not None else NO_MODES
    profile = catalog.model_profile(model)
    runtimes = catalog.runtime_profiles_visible_from(namespace)
    ranking = rank(runtimes, profile, classes, modes)
    writer = FormatReasons(profile.spec)  # runtimes share most of their reasons: each is written once
    ranked = tuple(
        RuntimeVerdict(result, position, result.reason_within(None, writer))
        for position, result in enumerate(ranking.ranked, 1)
    )
    # The runtimes come namespaced first, each by name: the others keep that order. Nearly all of them failed
    # the format check, whose reason the writer gives straight away.
    label, format_failed = profile.label, Step.FORMAT
    verdicts = ranked + tuple(
        TUPLE_NEW(
            RuntimeVerdict,
            (
                result,
                None,
                writer.runtime(result.profile, label)
                if result.failed is format_failed
                else result.reason_within(None, writer),
            ),
        )
        for result in ranking.others
    )
    return Explanation(
        model=model,
        namespace=namespace,
        verdicts=verdicts,
        selected=ranked[0] if ranked else None,
        chains=_chains(catalog, runtimes),
    )


def _chains(catalog: CatalogView, runtimes: Iterable[RuntimeProfile]) -> dict[ObjectKey, Chain | ChainError]:
    """The chains of the runtimes that name a parent (an absent or empty annotation names none, SPEC §1)."""
    return {
        profile.runtime.key: resolve_chain(catalog, profile)
        for profile in runtimes
        if profile.runtime.inherit_from
    }


def _chain_document(chain: Chain | ChainError | None) -> list[str] | dict[str, str] | None:
    """``inheritanceChain`` (SPEC §6): null without a parent, the names root-first, or the chain error."""
    if chain is None:
        return None
    if isinstance(chain, ChainError):
        return {"error": chain.message}
    return [link.name for link in chain.root_first]


def effective_runtime(
    catalog: CatalogView,
    explanation: Explanation,
    isvc: InferenceService,
    lookup: RuntimeLookup = RuntimeLookup.V1_3,
) -> EffectiveRuntime:
    """What ``isvc`` would run (``--with-effective``, SPEC §6): the runtime it names as the SPEC §1 lookup
    finds it, else the one auto-selection selects, with its inheritance chain resolved as §1 says."""
    name = isvc.runtime_name
    profile: RuntimeProfile | None
    if name is not None:
        selection = Selection.EXPLICIT
        profile = find_named_runtime(catalog, isvc.namespace, name, isvc.runtime_kind, lookup)
    else:
        selection = Selection.SELECTED
        selected = explanation.selected
        profile = selected.check.profile if selected is not None else None
    if profile is None:
        return EffectiveRuntime(selection, None, reason=NO_SOURCE_REASON)
    source = profile.runtime.key
    chain = resolve_chain(catalog, profile)
    if isinstance(chain, ChainError):
        return EffectiveRuntime(selection, source, reason=chain.reason.value, error=chain.message)
    return EffectiveRuntime(selection, source, chain=tuple(link.runtime.key for link in chain.root_first))


class Selection(StrEnum):
    """Where ``--with-effective``'s source comes from (SPEC §6)."""

    EXPLICIT = "Explicit"
    SELECTED = "Selected"


#: ``REASON`` of ``--with-effective`` without a source (SPEC §6).
NO_SOURCE_REASON = "RuntimeNotFound"


@dataclass(frozen=True, slots=True)
class EffectiveRuntime:
    """What an InferenceService would run, as ``explain --with-effective`` shows it (SPEC §6).

    ``source`` is the named runtime as the SPEC §1 lookup finds it (``Explicit``), else the runtime
    auto-selection selects (``Selected``); None when there is none. ``chain`` is its resolved inheritance
    chain, root first and the source last (empty unless resolved); ``reason`` is the §1 reason of a broken
    chain (or ``RuntimeNotFound`` without a source), None when resolved, and ``error`` the chain error.
    """

    selection: Selection
    source: ObjectKey | None
    chain: tuple[ObjectKey, ...] = ()
    reason: str | None = None
    error: str | None = None

    @property
    def observed(self) -> bool:
        return self.reason is None

    @property
    def inheritance(self) -> str:
        return "Observed" if self.observed else "Unavailable"


def _key_document(key: ObjectKey) -> dict[str, Any]:
    return _ref(key.kind.value, key.name, key.namespace)


def effective_document(effective: EffectiveRuntime) -> dict[str, Any]:
    """The SPEC §6 ``effective`` object of ``--with-effective``."""
    return {
        "selection": effective.selection.value,
        "source": _key_document(effective.source) if effective.source is not None else None,
        "inheritance": effective.inheritance,
        "reason": effective.reason,
        "chain": [_key_document(key) for key in effective.chain],
        "error": effective.error,
    }


def _ref(kind: str, name: str, namespace: str | None) -> dict[str, Any]:
    return {"kind": kind, "name": name, "namespace": namespace}


def explanation_document(explanation: Explanation) -> dict[str, Any]:
    """The SPEC §6 ``-o json`` object (also the ``-o yaml`` one)."""
    model = explanation.model
    selected = explanation.selected
    return {
        "model": {
            **_ref(model.kind.value, model.name, model.namespace),
            "modelParameterSize": model.spec.model_parameter_size or None,
        },
        "selected": (
            {
                **_ref(selected.runtime.kind.value, selected.name, selected.runtime.namespace),
                "decidedBy": str(explanation.decided_by),
                "message": explanation.selected_message,
            }
            if selected is not None
            else None
        ),
        "runtimes": [
            {
                **_ref(v.runtime.kind.value, v.name, v.runtime.namespace),
                "supportsModel": v.supports_model,
                "compatible": v.compatible,
                "rank": v.rank,
                "score": v.score,
                "priority": v.priority,
                "reason": v.reason,
                "weight": v.weight,
                "inheritanceChain": _chain_document(explanation.chains.get(v.runtime.key)),
            }
            for v in explanation.verdicts
        ],
    }
