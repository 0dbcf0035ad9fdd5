"""Auto-selection results kept between decisions, so the thousand InferenceServices of one model cost one
ranking.

What auto-selection finds (:class:`AutoSelection`) depends only on the model, the runtimes visible from the
namespace, the accelerator classes and the deployment modes asked for; the InferenceService adds only its name
and namespace to the no-runtime message. A namespace without ServingRuntimes sees the ClusterServingRuntimes
only, the same as every other such namespace: their results are kept once, under the scope None, not once per
namespace (a cluster of many namespaces and cluster runtimes only would otherwise keep, and rank, each model
once per namespace). Nor does the model's name count: every check of SPEC §3 and §4 reads the model's spec
only, so the models of one spec (the fine-tunes of one base, a model under several names) share one result,
and a changed model, with its new spec, finds none kept for the old one. The catalog keeps an
:class:`AutoSelectionMemo` and tells it which scope a stored or removed runtime belongs to
(:meth:`AutoSelectionMemo.runtime_changed`). Auto-selection judges each runtime on its own spec (SPEC §1), so
inheritance never reaches these results.

A runtime change does not throw the results away: the memo logs it, and a result read later replays the
changes visible from its scope that it has not seen (:func:`replay`). A selected runtime stays selected unless
it is the one that changed, or the changed runtime, checked against the model, now ranks before it (SPEC §4:
the ranking is a total order, so one comparison decides). A result also keeps the runtime ranked second while
it is known, so a change of the selected runtime is decided by two candidates (the runner-up and the changed
runtime as it is now) instead of a new ranking; a result that selected nothing (its message counts and lists
the runtimes), or whose selected runtime changed while the runner-up is not known, is computed again. One
runtime change at 1,000 runtimes so costs each kept result one check, not a ranking of all 1,000 — also when
the changed runtime is the one most models select (SPEC §12 reviews such changes at admission).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ome_selector.api.resources import NO_MODES, DeploymentModes, ModelSpec, ObjectKey
from ome_selector.selection.matcher import RuntimeCheck, check
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile
from ome_selector.selection.ranking import rank_key

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_LOG_LIMIT",
    "AutoSelection",
    "AutoSelectionMemo",
    "RuntimeChange",
    "replay",
]

#: Results kept at most; past it the memo starts over (each result is small: a reference, or at most about a
#: kilobyte of message entries).
DEFAULT_CAPACITY = 4096
#: Runtime changes logged at most; past it the memo starts over (a longer burst: one ranking per result).
DEFAULT_LOG_LIMIT = 256


@dataclass(frozen=True, slots=True)
class AutoSelection:
    """Auto-selection for one model in one namespace, with some accelerator classes asked for (SPEC §4, §5).

    ``model`` is the profile it was computed for: another model of the same spec may read it, so nothing here
    names the model. ``selected`` is the runtime ranked first (None when no runtime is auto-selectable).
    Otherwise the rest is what the no-runtime message says: ``listed`` the entries of the runtimes of the
    model's format, nearest miss first, as far as a message can hold them
    (:func:`~.messages.no_runtime_entries_held`), the runtime counts, and how many runtimes serve other
    formats.
    """

    model: ModelProfile
    selected: RuntimeCheck | None
    listed: tuple[str, ...] = ()
    namespaced_count: int = 0
    cluster_count: int = 0
    other_formats: int = 0
    #: The runtime ranked second (None: none is), when ``runner_up_known``; what the SPEC §11 RANK001 rule
    #: compares with the selected one.
    runner_up: RuntimeCheck | None = None
    runner_up_known: bool = False

    @property
    def top_two(self) -> tuple[RuntimeCheck, RuntimeCheck | None] | None:
        """(rank 1, rank 2) when both are known (rank 2 None: only one runtime is auto-selectable)."""
        if self.selected is None or not self.runner_up_known:
            return None
        return self.selected, self.runner_up


_Key = tuple[ModelSpec, tuple[str, ...], DeploymentModes]
#: A runtime stored (its profile) or removed (None), in its scope (None: a ClusterServingRuntime).
RuntimeChange = tuple[str | None, ObjectKey, RuntimeProfile | None]
_Change = RuntimeChange


class AutoSelectionMemo:
    """:class:`AutoSelection` results by scope (a namespace with ServingRuntimes, or None for every namespace
    without), model spec, accelerator classes and deployment modes, each brought up to date with the runtime
    changes visible from its scope when it is read."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, log_limit: int = DEFAULT_LOG_LIMIT) -> None:
        self._capacity = capacity
        self._log_limit = log_limit
        self._size = 0
        # Each result with the length of the change log when it was last brought up to date.
        self._by_namespace: dict[str | None, dict[_Key, tuple[AutoSelection, int]]] = {}
        self._log: list[_Change] = []

    def get(
        self,
        scope: str | None,
        model: ModelProfile,
        accelerator_classes: tuple[str, ...],
        modes: DeploymentModes = NO_MODES,
    ) -> AutoSelection | None:
        """The result kept for ``model``'s spec in ``scope``, None when there is none."""
        bucket = self._by_namespace.get(scope)
        if bucket is None:
            return None
        key = (model.spec, accelerator_classes, modes)
        kept = bucket.get(key)
        if kept is None:
            return None
        found, seen = kept
        if seen < len(self._log):
            replayed = replay(scope, found, accelerator_classes, modes, self._log[seen:])
            if replayed is None:
                del bucket[key]
                self._size -= 1
                return None
            bucket[key] = (replayed, len(self._log))
            return replayed
        return found

    def peek(
        self,
        scope: str | None,
        model: ModelProfile,
        accelerator_classes: tuple[str, ...],
        modes: DeploymentModes = NO_MODES,
    ) -> AutoSelection | None:
        """What :meth:`get` answers, without writing anything: a reader that keeps its own results (the
        SPEC §12 review) reads the memo the controller and the webhook share without evicting or rewriting
        any of it."""
        bucket = self._by_namespace.get(scope)
        kept = bucket.get((model.spec, accelerator_classes, modes)) if bucket is not None else None
        if kept is None:
            return None
        found, seen = kept
        if seen < len(self._log):
            return replay(scope, found, accelerator_classes, modes, self._log[seen:])
        return found

    def put(
        self,
        scope: str | None,
        accelerator_classes: tuple[str, ...],
        selection: AutoSelection,
        modes: DeploymentModes = NO_MODES,
    ) -> None:
        """Keep ``selection`` for its model's spec (a result kept for an older spec stays until the memo
        starts over: no model reads it any more)."""
        if self._size >= self._capacity:
            self.clear()
        bucket = self._by_namespace.setdefault(scope, {})
        key = (selection.model.spec, accelerator_classes, modes)
        if key not in bucket:
            self._size += 1
        bucket[key] = (selection, len(self._log))

    def runtime_changed(self, scope: str | None, runtime: ObjectKey, profile: RuntimeProfile | None) -> None:
        """``runtime`` of ``scope`` (None: a ClusterServingRuntime) was stored (``profile``) or removed
        (None): each result visible from it replays the change when it is next read."""
        if not self._size:
            self._log.clear()  # nothing kept: nothing will replay
            return
        if len(self._log) >= self._log_limit:
            self.clear()
            return
        self._log.append((scope, runtime, profile))

    def runtimes_changed(self, scope: str | None) -> None:
        """Forget every result a runtime stored in or removed from ``scope`` can change: the results of that
        namespace for a ServingRuntime, every result for a ClusterServingRuntime (``scope`` None)."""
        if scope is None:
            self.clear()
        else:
            self._size -= len(self._by_namespace.pop(scope, {}))

    def clear(self) -> None:
        self._by_namespace.clear()
        self._log.clear()
        self._size = 0

    def __len__(self) -> int:
        return self._size


def replay(
    scope: str | None,
    found: AutoSelection,
    accelerator_classes: tuple[str, ...],
    modes: DeploymentModes,
    changes: Iterable[RuntimeChange],
) -> AutoSelection | None:
    """``found`` (a result of ``scope``) after the runtime ``changes``, None when it must be computed again.

    Each change is judged against rank 1 and, while it is known, rank 2 (SPEC §4's ranking is a total order):
    a changed runtime that now ranks first takes over (the old rank 1 is second); one that was rank 1 is
    replaced by the better of its new self and the runner-up; one that ranks between them becomes the
    runner-up. When a step leaves rank 2 unknown (the runner-up changed for the worse, or took over), the next
    change of rank 1 computes the result again.
    """
    for where, runtime, profile in changes:
        if where is not None and where != scope:
            continue  # not visible from the scope (a namespace's own bucket, or the shared one)
        selected = found.selected
        if selected is None:
            return None
        challenger = check(profile, found.model, accelerator_classes, modes) if profile is not None else None
        if challenger is not None and challenger.failed is not None:
            challenger = None
        known, second = found.runner_up_known, found.runner_up
        if selected.profile.runtime.key == runtime:
            if not known:
                return None
            contenders = [c for c in (challenger, second) if c is not None]
            if not contenders:
                return None  # nothing auto-selectable: the no-runtime message is computed
            contenders.sort(key=rank_key)
            # The old runner-up beat every other runtime: behind a challenger that beats it, it stays second.
            after_first = contenders[0] is challenger
            found = _ranked(found, contenders[0], second if after_first else None, after_first)
        elif known and second is not None and second.profile.runtime.key == runtime:
            if challenger is not None and rank_key(challenger) < rank_key(selected):
                found = _ranked(found, challenger, selected, True)
            elif challenger is not None and _ranks_before(challenger, second):
                found = _ranked(found, selected, challenger, True)
            else:
                found = _ranked(found, selected, None, False)  # the third is not known
        elif challenger is not None:
            if rank_key(challenger) < rank_key(selected):
                found = _ranked(found, challenger, selected, True)
            elif known and (second is None or _ranks_before(challenger, second)):
                found = _ranked(found, selected, challenger, True)
    return found


def _ranks_before(a: RuntimeCheck, b: RuntimeCheck) -> bool:
    return rank_key(a) < rank_key(b)


def _ranked(
    found: AutoSelection, first: RuntimeCheck, second: RuntimeCheck | None, known: bool
) -> AutoSelection:
    return AutoSelection(found.model, first, runner_up=second if known else None, runner_up_known=known)
