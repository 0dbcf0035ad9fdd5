"""Explain runtime selection for one model: every runtime's verdict, the ranking and the selection (SPEC
§3–§6).

:func:`explain` judges every runtime visible from a namespace and ranks the auto-selectable ones with
:func:`~.ranking.rank`, the ranking :func:`~.outcome.evaluate` uses too (evaluate looks only at the runtimes
that name the model's format, and writes reasons only for the runtimes its message lists). The CLI prints an
:class:`Explanation` as a table; :func:`explanation_document` is exactly the ``-o json`` object of SPEC §6.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ome_selector.api.resources import NO_MODES, InferenceService, Model, Runtime
from ome_selector.selection.matcher import TUPLE_NEW, FormatReasons, RuntimeCheck, Step
from ome_selector.selection.ranking import rank
from ome_selector.selection.view import CatalogView

__all__ = ["Explanation", "RuntimeVerdict", "explain", "explanation_document"]


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

    @property
    def ranked(self) -> tuple[RuntimeVerdict, ...]:
        """The auto-selectable runtimes in rank order."""
        return tuple(v for v in self.verdicts if v.rank is not None)

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
    ranking = rank(catalog.runtime_profiles_visible_from(namespace), profile, classes, modes)
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
        model=model, namespace=namespace, verdicts=verdicts, selected=ranked[0] if ranked else None
    )


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
            _ref(selected.runtime.kind.value, selected.name, selected.runtime.namespace)
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
            }
            for v in explanation.verdicts
        ],
    }
