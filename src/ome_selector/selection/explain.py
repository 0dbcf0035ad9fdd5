"""Explain runtime selection for one model: every runtime's verdict, the ranking and the selection (SPEC
§3–§6).

:func:`explain` is the one place where the verdicts of a namespace's runtimes are computed; the CLI prints it,
the operator and the webhook reach it through :func:`ome_selector.selection.outcome.evaluate`, and
:func:`explanation_document` is exactly the ``-o json`` object of SPEC §6.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ome_selector.api.resources import InferenceService, Model, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.matcher import ModelProfile, RuntimeCheck, RuntimeProfile, check
from ome_selector.selection.scoring import RankKey, rank_key

__all__ = ["Explanation", "RuntimeVerdict", "explain", "explanation_document", "verdicts_for"]


@dataclass(frozen=True, slots=True)
class RuntimeVerdict:
    """One runtime's verdict for one model.

    ``supports_model``: passes SPEC §3 checks 1–4; ``compatible``: auto-selectable; ``reason``: the §3 reason,
    ``""`` when compatible; ``score``/``priority``: of the matching entry (0/None without one); ``rank``:
    1-based among the compatible runtimes, else None; ``range_text``: the runtime's interval as §3 writes it,
    None without a bound; ``serves_format``: some entry names the model's format (listed in the no-runtime
    message).
    """

    runtime: Runtime
    supports_model: bool
    compatible: bool
    reason: str
    score: int
    priority: int | None
    rank: int | None
    range_text: str | None
    serves_format: bool = False

    @property
    def is_cluster(self) -> bool:
        return self.runtime.is_cluster

    @property
    def name(self) -> str:
        return self.runtime.name

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


def verdicts_for(
    profiles: Iterable[RuntimeProfile],
    model: ModelProfile,
    accelerator_classes: Sequence[str] = (),
    *,
    reasons: bool = True,
) -> tuple[RuntimeVerdict, ...]:
    """Verdicts for ``profiles`` in table order: ranked first in rank order, then namespaced first, then by
    name. ``reasons=False`` leaves format-mismatch reasons empty (see :func:`~.matcher.check`)."""
    format_name = model.format_name
    ranked: list[tuple[RankKey, RuntimeProfile, RuntimeCheck]] = []
    rest: list[tuple[bool, str, RuntimeProfile, RuntimeCheck]] = []
    for profile in profiles:
        result = check(profile, model, accelerator_classes, reasons=reasons)
        if result.auto_selectable:
            ranked.append((rank_key(profile, result.score, model.size), profile, result))
        else:
            rest.append((profile.is_cluster, profile.name, profile, result))
    ranked.sort(key=lambda item: item[0])
    rest.sort(key=lambda item: item[:2])
    others = tuple(
        RuntimeVerdict(
            runtime=profile.runtime,
            supports_model=result.supports_model,
            compatible=False,
            reason=result.reason,
            score=result.score,
            priority=result.priority,
            rank=None,
            range_text=profile.range_text,
            serves_format=profile.serves_format(format_name),
        )
        for _, _, profile, result in rest
    )
    winners = tuple(
        RuntimeVerdict(
            runtime=profile.runtime,
            supports_model=True,
            compatible=True,
            reason="",
            score=result.score,
            priority=result.priority,
            rank=position,
            range_text=profile.range_text,
            serves_format=True,
        )
        for position, (_, profile, result) in enumerate(ranked, start=1)
    )
    return winners + others


def explain(
    catalog: Catalog, model: Model, namespace: str, isvc: InferenceService | None = None
) -> Explanation:
    """Every runtime visible from ``namespace`` judged for ``model`` (and the InferenceService's accelerator
    classes, when given), ranked as SPEC §4, in SPEC §6 table order."""
    classes = isvc.accelerator_classes if isvc is not None else ()
    verdicts = verdicts_for(
        catalog.runtime_profiles_visible_from(namespace), catalog.model_profile(model), classes
    )
    selected = verdicts[0] if verdicts and verdicts[0].rank == 1 else None
    return Explanation(model=model, namespace=namespace, verdicts=verdicts, selected=selected)


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
