"""Auto-selection results kept between decisions, so the thousand InferenceServices of one model cost one
ranking.

What auto-selection finds (:class:`AutoSelection`) depends only on the model, the runtimes visible from the
namespace and the accelerator classes asked for; the InferenceService adds only its name and namespace to the
no-runtime message. A namespace without ServingRuntimes sees the ClusterServingRuntimes only, the same as
every other such namespace: their results are kept once, under the scope None, not once per namespace (a
cluster of many namespaces and cluster runtimes only would otherwise keep, and rank, each model once per
namespace). The catalog keeps an :class:`AutoSelectionMemo` and tells it which scope a stored or removed
runtime belongs to (:meth:`AutoSelectionMemo.runtimes_changed`); a changed model has a new profile, which the
memo does not take for the old one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ome_selector.api.resources import ObjectKey
from ome_selector.selection.matcher import RuntimeCheck
from ome_selector.selection.profiles import ModelProfile

__all__ = ["DEFAULT_CAPACITY", "AutoSelection", "AutoSelectionMemo"]

#: Results kept at most; past it the memo starts over (each result is small: a reference, or at most about a
#: kilobyte of message entries).
DEFAULT_CAPACITY = 4096


@dataclass(frozen=True, slots=True)
class AutoSelection:
    """Auto-selection for one model in one namespace, with some accelerator classes asked for (SPEC §4, §5).

    ``selected`` is the runtime ranked first (None when no runtime is auto-selectable). Otherwise the rest is
    what the no-runtime message says: ``listed`` the entries of the runtimes of the model's format, nearest
    miss first, as far as a message can hold them (:func:`~.messages.no_runtime_entries_held`), the runtime
    counts, and how many runtimes serve other formats.
    """

    model: ModelProfile
    selected: RuntimeCheck | None
    listed: tuple[str, ...] = ()
    namespaced_count: int = 0
    cluster_count: int = 0
    other_formats: int = 0


_Key = tuple[ObjectKey, tuple[str, ...]]


class AutoSelectionMemo:
    """:class:`AutoSelection` results by namespace, model and accelerator classes, each kept until a runtime
    visible from its namespace changes."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._size = 0
        self._by_namespace: dict[str | None, dict[_Key, AutoSelection]] = {}

    def get(
        self, scope: str | None, model: ModelProfile, accelerator_classes: tuple[str, ...]
    ) -> AutoSelection | None:
        """The result kept for ``model`` (this very profile) in ``scope``, None when there is none."""
        bucket = self._by_namespace.get(scope)
        if bucket is None:
            return None
        found = bucket.get((model.key, accelerator_classes))
        # A model stored since has a new profile: what was found for the old one does not count.
        return found if found is not None and found.model is model else None

    def put(self, scope: str | None, accelerator_classes: tuple[str, ...], selection: AutoSelection) -> None:
        """Keep ``selection`` (it replaces the one kept for an older version of its model)."""
        if self._size >= self._capacity:
            self.clear()
        bucket = self._by_namespace.setdefault(scope, {})
        key = (selection.model.key, accelerator_classes)
        if key not in bucket:
            self._size += 1
        bucket[key] = selection

    def runtimes_changed(self, scope: str | None) -> None:
        """Forget what a runtime stored in or removed from ``scope`` can change: the results of that namespace
        for a ServingRuntime (a namespace that had none kept nothing of its own: it read the scope None, and
        reads its own from now on), every result for a ClusterServingRuntime (``scope`` None)."""
        if scope is None:
            self.clear()
        else:
            self._size -= len(self._by_namespace.pop(scope, {}))

    def clear(self) -> None:
        self._by_namespace.clear()
        self._size = 0

    def __len__(self) -> int:
        return self._size
