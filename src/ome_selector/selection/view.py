"""What selection reads from a catalog: the lookups of SPEC §1 (runtimes by kind and name too), the runtimes
visible from a namespace (all of them, those naming a format, those with an entry of a match key) and the memo
of auto-selection results.

:func:`~.outcome.evaluate` and :func:`~.explain.explain` take any :class:`CatalogView`;
:class:`ome_selector.catalog.Catalog` is the one the product uses. The protocol keeps the selection core below
the catalog: it names what it needs and never imports the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ome_selector.api.resources import Kind, Model
from ome_selector.selection.memo import AutoSelectionMemo
from ome_selector.selection.profiles import MatchKey, ModelProfile, RuntimeProfile

__all__ = ["CatalogView", "RuntimeIndex"]


class RuntimeIndex(Protocol):
    """Runtimes by kind, namespace and name: what the chain walk and the named-runtime lookup read (SPEC
    §1)."""

    def runtime_profile(self, kind: Kind, namespace: str | None, name: str) -> RuntimeProfile | None:
        """The ServingRuntime ``namespace``/``name`` (``kind`` ServingRuntime), or the ClusterServingRuntime
        ``name`` (``namespace`` None); None when there is none."""
        ...


class CatalogView(RuntimeIndex, Protocol):
    """Read access to compiled models and runtimes, as of one moment."""

    def resolve_model(self, namespace: str, name: str) -> Model | None:
        """The BaseModel ``name`` in ``namespace`` if there is one, else the ClusterBaseModel ``name``."""
        ...

    def model_profile(self, model: Model) -> ModelProfile:
        """The compiled form of ``model``."""
        ...

    def runtime_profiles_visible_from(self, namespace: str) -> Sequence[RuntimeProfile]:
        """The ServingRuntimes of ``namespace``, then every ClusterServingRuntime, each by name."""
        ...

    def runtime_profiles_for_format(self, namespace: str, format_name: str) -> Sequence[RuntimeProfile]:
        """The runtimes visible from ``namespace`` with an entry naming ``format_name``, in the same order."""
        ...

    def runtime_profiles_for_match_key(self, namespace: str, key: MatchKey) -> Sequence[RuntimeProfile]:
        """The runtimes visible from ``namespace`` with an entry of match key ``key`` (only they can match a
        model of that key), in the same order."""
        ...

    def runtime_counts(self, namespace: str) -> tuple[int, int]:
        """(ServingRuntimes in ``namespace``, ClusterServingRuntimes)."""
        ...

    @property
    def auto_selections(self) -> AutoSelectionMemo:
        """Auto-selection results, each kept until a runtime visible from its namespace changes."""
        ...
