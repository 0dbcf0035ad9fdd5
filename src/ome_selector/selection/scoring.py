"""Scores and the ranking of auto-selectable runtimes (SPEC §4).

The score of a runtime is that of its matching entry: ``weight(modelFormat) × priority`` plus
``weight(modelFramework) × priority`` when both sides name a framework, where a weight of 0 counts as 10
(format) and 5 (framework). The ranking puts ServingRuntimes before ClusterServingRuntimes, then higher score,
then the closer size range (only when the model has a size), then the name.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from ome_selector.api.resources import ModelSpec, SupportedModelFormat

if TYPE_CHECKING:
    from ome_selector.selection.matcher import RuntimeProfile

__all__ = [
    "DEFAULT_FORMAT_WEIGHT",
    "DEFAULT_FRAMEWORK_WEIGHT",
    "RankKey",
    "entry_score",
    "rank_key",
]

#: What a weight of 0 counts as (upstream's configured defaults).
DEFAULT_FORMAT_WEIGHT = 10
DEFAULT_FRAMEWORK_WEIGHT = 5

#: (cluster-scoped?, -score, (infinitely far?, distance), name): smaller ranks first.
RankKey = tuple[bool, int, tuple[bool, Fraction], str]


def entry_score(entry: SupportedModelFormat, model: ModelSpec) -> int:
    """The score of a matching entry for the model (SPEC §4)."""
    priority = entry.priority
    score = 0
    if entry.model_format is not None:
        weight = entry.model_format.weight
        score += (weight or DEFAULT_FORMAT_WEIGHT) * priority
    if entry.model_framework is not None and model.model_framework is not None:
        weight = entry.model_framework.weight
        score += (weight or DEFAULT_FRAMEWORK_WEIGHT) * priority
    return score


_ZERO = Fraction(0)


def rank_key(profile: RuntimeProfile, score: int, model_size: Fraction | None) -> RankKey:
    """The sort key of an auto-selectable runtime; sorting ascending gives the SPEC §4 ranking.

    The distance is ``|size - lower| + |upper - size|`` as an exact number, a missing bound making it infinite
    (two infinite distances tie), a runtime without a range at 0; it counts only when the model has a size.
    Within one namespace view (kind, name) is unique, so the key orders the runtimes totally.
    """
    if model_size is None:
        distance: tuple[bool, Fraction] = (False, _ZERO)
    else:
        value = profile.size_distance(model_size)
        distance = (True, _ZERO) if value is None else (False, value)
    return (profile.is_cluster, -score, distance, profile.name)
