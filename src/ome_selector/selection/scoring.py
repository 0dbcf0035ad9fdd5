"""The score of a matching entry (SPEC §4).

The score of a runtime is that of its matching entry: ``weight(modelFormat) × priority`` plus
``weight(modelFramework) × priority`` when both sides name a framework, where a weight of 0 counts as 10
(format) and 5 (framework). The ranking built on it is :mod:`.ranking`'s.
"""

from __future__ import annotations

from ome_selector.api.resources import ModelSpec, SupportedModelFormat

__all__ = ["DEFAULT_FORMAT_WEIGHT", "DEFAULT_FRAMEWORK_WEIGHT", "entry_score", "entry_weight"]

#: What a weight of 0 counts as (upstream's configured defaults).
DEFAULT_FORMAT_WEIGHT = 10
DEFAULT_FRAMEWORK_WEIGHT = 5


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


def entry_weight(entry: SupportedModelFormat) -> int:
    """OME's explain ``WEIGHT`` of a matching entry (SPEC §6 v4): its ``modelFormat.weight`` if above 0 plus
    its ``modelFramework.weight`` if above 0, times its priority — no 10/5 fallback, so not the score."""
    weight = 0
    if entry.model_format is not None and entry.model_format.weight > 0:
        weight += entry.model_format.weight
    if entry.model_framework is not None and entry.model_framework.weight > 0:
        weight += entry.model_framework.weight
    return weight * entry.priority
