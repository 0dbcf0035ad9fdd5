"""The one ranking engine (SPEC §4) and the order of near misses (SPEC §5).

:func:`rank` checks runtimes against a model and ranks the auto-selectable ones: ServingRuntimes before
ClusterServingRuntimes, then higher score, then the closer size range (only when the model has a size), then
the name. Both :func:`~.outcome.evaluate` (the operator and the webhook) and :func:`~.explain.explain` (the
CLI) rank through it, so the runtime selected and the runtime explain shows first cannot differ.

:func:`nearest_misses` orders the runtimes that are not auto-selectable as the no-runtime message lists them;
:func:`misses_of_format` gives the same order for every runtime of a format while checking only as many of
them as are pulled.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from ome_selector.api.resources import NO_MODES, DeploymentModes
from ome_selector.selection import messages
from ome_selector.selection.matcher import RuntimeCheck, Step, check
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile

__all__ = [
    "Decider",
    "RankKey",
    "Ranking",
    "decided_by",
    "misses_of_format",
    "nearest_misses",
    "rank",
    "rank_key",
    "selected_message",
]

#: (cluster-scoped?, -score, (False, distance), name): smaller ranks first. The distance keeps the pair shape
#: of the rule before v4 (a missing bound counted as infinitely far); it is never infinite now (SPEC §4).
RankKey = tuple[bool, int, tuple[bool, Fraction], str]

_ZERO = Fraction(0)


def rank_key(result: RuntimeCheck) -> RankKey:
    """The sort key of an auto-selectable runtime; sorting ascending gives the SPEC §4 ranking.

    The distance sums |bound - size| over the bounds that are present, as an exact number (a runtime without
    a range at 0); it counts only when the model has a size. Within one namespace view (kind, name) is
    unique, so the key orders the runtimes totally.
    """
    profile, size = result.profile, result.model.size
    distance = _ZERO if size is None else profile.size_distance(size)
    return (profile.is_cluster, -result.score, (False, distance), profile.name)


class Decider(StrEnum):
    """The SPEC §4 step that put rank 1 before rank 2 (``decidedBy`` of explain's document, SPEC §6)."""

    #: Only one runtime is auto-selectable.
    ONLY = "only"
    #: Rank 1 is namespace-scoped, rank 2 cluster-scoped with a score at least as high (step 1).
    SCOPE = "scope"
    #: A higher score (step 2; also a cluster-scoped rank 2 with a lower score).
    SCORE = "score"
    #: The same scope and score, a closer size range (step 3).
    SIZE_RANGE = "sizeRange"
    #: The same scope, score and size distance: the name (step 4).
    NAME = "name"


def decided_by(first: RuntimeCheck, second: RuntimeCheck | None) -> Decider:
    """Which step of the SPEC §4 ranking put ``first`` (rank 1) before ``second`` (rank 2, None: none)."""
    if second is None:
        return Decider.ONLY
    own, other = rank_key(first), rank_key(second)
    if own[0] != other[0]:
        return Decider.SCOPE if second.score >= first.score else Decider.SCORE
    if own[1] != other[1]:
        return Decider.SCORE
    if own[2] != other[2]:
        return Decider.SIZE_RANGE
    return Decider.NAME


def selected_message(first: RuntimeCheck, second: RuntimeCheck | None) -> str:
    """The SPEC §5 ``RuntimeSelected`` message of rank 1, saying which step decided when it was not the
    score: it depends on ranks 1 and 2 alone, so a kept result that knows both can give it."""
    winner = first.profile
    decider = decided_by(first, second)
    tie = ""
    if second is not None:
        runner_up = second.profile
        if decider is Decider.SCOPE:
            tie = messages.scope_tie(runner_up.runtime.kind.value, runner_up.name, second.score)
        elif decider is Decider.SIZE_RANGE:
            tie = messages.size_range_tie(
                runner_up.name, first.score, winner.range_text, runner_up.range_text
            )
        elif decider is Decider.NAME:
            tie = messages.name_tie(runner_up.name, sized=first.model.size is not None)
    return messages.runtime_selected(winner.runtime.kind.value, winner.name, first.score, tie)


@dataclass(frozen=True, slots=True)
class Ranking:
    """Every runtime checked: the auto-selectable ones in rank order, the others in the order given."""

    ranked: tuple[RuntimeCheck, ...]
    others: tuple[RuntimeCheck, ...]

    @property
    def selected(self) -> RuntimeCheck | None:
        """The runtime auto-selection picks (rank 1), None when no runtime is auto-selectable."""
        return self.ranked[0] if self.ranked else None


def rank(
    profiles: Iterable[RuntimeProfile],
    model: ModelProfile,
    accelerator_classes: Sequence[str] = (),
    modes: DeploymentModes = NO_MODES,
) -> Ranking:
    """Check every runtime of ``profiles`` against ``model`` (and the accelerator classes and deployment
    modes asked for) and rank the auto-selectable ones (SPEC §4)."""
    ranked: list[RuntimeCheck] = []
    others: list[RuntimeCheck] = []
    for profile in profiles:
        result = check(profile, model, accelerator_classes, modes)
        if result.failed is None:
            ranked.append(result)
        else:
            others.append(result)
    ranked.sort(key=rank_key)
    return Ranking(ranked=tuple(ranked), others=tuple(others))


def nearest_misses(results: Iterable[RuntimeCheck]) -> list[RuntimeCheck]:
    """Runtimes that are not auto-selectable, nearest miss first (SPEC §5 v3): by the step at which each
    failed, the latest step first, then ServingRuntimes before ClusterServingRuntimes, then by name."""
    return sorted(results, key=_miss_key)


def _miss_key(result: RuntimeCheck) -> tuple[int, bool, str]:
    failed = result.failed
    step = -failed if failed is not None else 0
    return (step, result.profile.is_cluster, result.profile.name)


def misses_of_format(
    formats: Iterable[RuntimeProfile],
    candidates: Ranking,
    model: ModelProfile,
    accelerator_classes: Sequence[str] = (),
    modes: DeploymentModes = NO_MODES,
) -> Iterator[RuntimeCheck]:
    """The runtimes of ``formats`` that are not auto-selectable, in :func:`nearest_misses` order, each checked
    only when the one before it has been pulled; for a model with a format (SPEC §3: a pending model is not
    checked).

    ``formats`` are the runtimes with an entry naming the model's format, namespaced first, each by name;
    ``candidates`` ranks those of them with an entry of the model's match key. Only those can pass the format
    check, so only they can fail later (size, auto-select): they come first, from ``candidates``. Every other
    miss failed at the format check or before it (accelerator, disabled); one pass over ``formats`` yields the
    format misses in their order and keeps the others for after them (deployment mode, accelerator,
    disabled: SPEC §5's nearest-miss order).
    """
    yield from nearest_misses(
        result for result in candidates.others if result.failed is not None and result.failed > Step.FORMAT
    )
    mode: list[RuntimeCheck] = []
    accelerator: list[RuntimeCheck] = []
    disabled: list[RuntimeCheck] = []
    for profile in formats:
        result = check(profile, model, accelerator_classes, modes)
        failed = result.failed
        if failed is Step.FORMAT:
            yield result
        elif failed is Step.MODE:
            mode.append(result)
        elif failed is Step.ACCELERATOR:
            accelerator.append(result)
        elif failed is Step.DISABLED:
            disabled.append(result)
    yield from mode
    yield from accelerator
    yield from disabled
