"""The live catalog's runtimes with some of them replaced or removed, nothing copied.

Two readers decide on a catalog that differs from the live one in a few runtimes: the webhook's
confirming read (the runtimes as read again from the API, SPEC §7) and the impact of a catalog change (the
runtimes as the change would leave them, SPEC §12). Both lay their runtimes over the live catalog's with
:class:`RuntimeOverlay`, which answers the runtime half of a
:class:`~ome_selector.selection.view.CatalogView`; the model half and the memo are theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ome_selector.api.resources import Kind, ObjectKey, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.profiles import MatchKey, RuntimeProfile

__all__ = ["RuntimeOverlay"]


def _order(profile: RuntimeProfile) -> tuple[bool, str]:
    return profile.is_cluster, profile.name  # a catalog's order: namespaced first, each by name


class RuntimeOverlay:
    """The runtimes of ``live`` with ``amended`` laid over them: key → the runtime as it is to be read, None
    when it is absent."""

    def __init__(self, live: Catalog, amended: Mapping[ObjectKey, RuntimeProfile | None]) -> None:
        self._live = live
        self._amended = amended

    def runtime_profile(self, kind: Kind, namespace: str | None, name: str) -> RuntimeProfile | None:
        key = ObjectKey(kind, namespace if kind.namespaced else None, name)
        if key in self._amended:
            return self._amended[key]
        return self._live.runtime_profile(kind, namespace, name)

    def runtime_profiles_visible_from(self, namespace: str) -> list[RuntimeProfile]:
        return self._amend(self._live.runtime_profiles_visible_from(namespace), namespace, lambda _: True)

    def runtime_profiles_for_format(self, namespace: str, format_name: str) -> list[RuntimeProfile]:
        live = self._live.runtime_profiles_for_format(namespace, format_name)
        return self._amend(live, namespace, lambda profile: format_name in profile.format_names)

    def runtime_profiles_for_match_key(self, namespace: str, key: MatchKey) -> list[RuntimeProfile]:
        live = self._live.runtime_profiles_for_match_key(namespace, key)
        return self._amend(live, namespace, lambda profile: key in profile.entries_by_key)

    def runtime_counts(self, namespace: str) -> tuple[int, int]:
        namespaced, cluster = self._live.runtime_counts(namespace)
        for key, profile in self._amended.items():
            if key.namespace not in (namespace, None):
                continue
            change = (profile is not None) - isinstance(self._live.get(key), Runtime)
            if key.namespace is None:
                cluster += change
            else:
                namespaced += change
        return namespaced, cluster

    def _amend(
        self, live: Sequence[RuntimeProfile], namespace: str, wanted: Callable[[RuntimeProfile], bool]
    ) -> list[RuntimeProfile]:
        amended = self._amended
        if not amended:
            return list(live)
        kept = [profile for profile in live if profile.runtime.key not in amended]
        added = [
            profile
            for key, profile in amended.items()
            if profile is not None and key.namespace in (namespace, None) and wanted(profile)
        ]
        return sorted([*kept, *added], key=_order) if added else kept
