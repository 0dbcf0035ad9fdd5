"""The ambiguity part of the review of a catalog change (SPEC §12, OME's request "Add Validation to Prevent
Overlapping Runtime"): the SIZE003 and RANK001 findings (SPEC §11) a runtime change adds to the catalog.

:class:`AmbiguityRun` decides with lint's own rules (:func:`~.lint.overlaps_with`, :func:`~.lint.rank_tie`),
on the catalog before and after the change as the impact reads them
(:class:`~ome_selector.catalog.overlay.CatalogBefore`, :class:`~ome_selector.catalog.overlay.CatalogAfter`),
a ranking at most per step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

from ome_selector.api.resources import NO_MODES, Model, ObjectKey
from ome_selector.catalog.overlay import CatalogAfter, CatalogBefore, before_selection, has_before_selection
from ome_selector.review.impact import SpecTokens
from ome_selector.review.lint import Code, Finding, object_order, overlaps_with, rank_tie
from ome_selector.selection.matcher import check
from ome_selector.selection.memo import AutoSelection
from ome_selector.selection.outcome import auto_selection
from ome_selector.selection.profiles import MatchKey, RuntimeProfile
from ome_selector.selection.ranking import rank_key

__all__ = ["AmbiguityRun"]

#: Runtimes compared per step (SIZE003).
_CHUNK = 100


class AmbiguityRun:
    """The SIZE003 and RANK001 findings (SPEC §11) involving one changed runtime that the catalog after the
    change has and the catalog before it does not (a finding of the same code and objects before counts as
    had): :attr:`new`, the first :attr:`limit` of them as lint sorts findings, found by :meth:`steps`. Lint's
    own rules decide (:func:`~.lint.overlaps_with`, :func:`~.lint.rank_tie`); only the findings shown are
    written out. A step ranks at most once (one view of one model, before or after the change), so the
    caller can stop between any two rankings (SPEC §12: the loop is never held long)."""

    def __init__(self, after: CatalogAfter, key: ObjectKey, limit: int = 3) -> None:
        self.after = after
        self.before = after.before
        self.before_view = after.before_view
        self.key = key
        self.limit = limit
        self.new: list[Finding] = []
        self._ties: dict[tuple[object, ...], tuple[ObjectKey, ObjectKey] | None] = {}
        self._spec_token = SpecTokens()
        self._keyed_namespaces: dict[MatchKey, list[str]] = {}

    def steps(self) -> Iterator[None]:
        key, before = self.key, self.before
        new_profile = self.after.runtime_changes.get(key)
        if new_profile is None:
            return  # a deletion adds no finding
        old_profile = before.runtime_profile(key.kind, key.namespace, key.name)
        # Each candidate: its sort order (code, objects) and how to write it.
        candidates: list[
            tuple[tuple[str, tuple[tuple[str, str, str], ...]], Callable[[], Finding | None]]
        ] = []
        # RANK001: the models the runtime can rank for, in each view that sees it, judged once per spec.
        models: dict[ObjectKey, Model] = {}
        for match_key in new_profile.entries_by_key:
            for model in before.models_with_match_key(match_key):
                if model.spec.has_format and (
                    key.namespace is None or model.namespace in (None, key.namespace)
                ):
                    models[model.key] = model
        yield
        for model in models.values():
            for view in self._views(model):
                profile = self.before_view.model_profile(model)
                scope = self._before_scope(view)
                if not has_before_selection(self.before_view, scope, profile):
                    before_selection(self.before_view, scope, profile)
                    yield  # the view's ranking before the change: a step of its own
                pair = self._tie(self.after, model, view)
                yield
                if pair is not None:
                    had_pair = self._tie(self.before_view, model, view)
                    yield
                    if had_pair != pair:
                        objects = tuple(sorted((model.key, *pair), key=object_order))
                        order = (Code.RANK001.value, tuple(object_order(k) for k in objects))
                        candidates.append((order, functools.partial(self._rank_finding, model, view)))
        # SIZE003: the runtime against the others of its scope that share a match key with it, in the order
        # the findings sort (the pair's objects), until enough new ones are found: only the first are shown.
        ranked = len({order for order, _ in candidates})
        others: dict[ObjectKey, RuntimeProfile] = {}
        for match_key in new_profile.entries_by_key:
            for other in before.runtime_profiles_of_scope_for_match_key(key.namespace, match_key):
                if other.runtime.key != key:
                    others[other.runtime.key] = other

        def pair_order(other_key: ObjectKey) -> tuple[str, tuple[tuple[str, str, str], ...]]:
            objects = tuple(sorted((key, other_key), key=object_order))
            return (Code.SIZE003.value, tuple(object_order(k) for k in objects))

        ordered = sorted(others.values(), key=lambda other: pair_order(other.runtime.key))
        wanted = self.limit - ranked if ranked < self.limit else 0
        yield
        for start in range(0, len(ordered), _CHUNK):  # a step at most _CHUNK runtimes long
            if wanted <= 0:
                break
            chunk = ordered[start : start + _CHUNK]
            found = overlaps_with(new_profile, chunk)
            had = (
                overlaps_with(old_profile, [o for o in chunk if o.runtime.key in found])
                if old_profile
                else {}
            )
            for other in chunk:
                other_key = other.runtime.key
                if other_key in found and other_key not in had and wanted > 0:
                    candidates.append((pair_order(other_key), found[other_key]))
                    wanted -= 1
            yield
        # A finding several views share (a ClusterBaseModel seen from many namespaces) is one, as in lint.
        unique = dict(sorted(candidates, key=lambda candidate: candidate[0], reverse=True))
        for _, write in sorted(unique.items())[: self.limit]:
            finding = write()  # a RANK001 finding's text ranks its view once more: a step each
            if finding is not None:
                self.new.append(finding)
            yield

    def _before_scope(self, view: str | None) -> str | None:
        """The memo scope of ``view`` before the change (a namespace without ServingRuntimes: None)."""
        return view if view is not None and self.before.runtime_counts(view)[0] else None

    def _rank_finding(self, model: Model, view: str | None) -> Finding | None:
        found = self._selection(self.after, model, view)
        top_two = found.top_two if found is not None else None
        return rank_tie(model, *top_two) if top_two is not None else None

    def _views(self, model: Model) -> list[str | None]:
        """The scopes whose InferenceServices see both the model and the runtime: the runtime's namespace, or
        for a ClusterServingRuntime the namespaces without ServingRuntimes (None) — a BaseModel's own
        namespace, or for a ClusterBaseModel also each namespace with a ServingRuntime of the model's match
        key that no BaseModel of the name shadows. A namespace whose ServingRuntimes have no entry of that
        key ranks the ClusterServingRuntimes alone, as None does: it shares that view."""
        if self.key.namespace is not None:
            return [self.key.namespace]
        if model.namespace is not None:
            return [model.namespace]
        views: list[str | None] = [None]
        match_key = self.before_view.model_profile(model).match_key
        keyed = self._keyed_namespaces.get(match_key)
        if keyed is None:
            keyed = self._keyed_namespaces[match_key] = [
                namespace
                for namespace in self.before.namespaces_with_runtimes()
                if self.after.has_namespaced_for_key(namespace, match_key)
                or self.before_view.has_namespaced_for_key(namespace, match_key)
            ]
        for namespace in keyed:
            if self.before.resolve_model(namespace, model.name) is model:
                views.append(namespace)
        return views

    def _selection(
        self, catalog: CatalogBefore | CatalogAfter, model: Model, view: str | None
    ) -> AutoSelection | None:
        """Auto-selection for ``model`` in ``view`` of ``catalog`` (before or after the change), with rank 2
        known (ranked again only when the memo does not know it)."""
        profile = catalog.model_profile(model)
        if catalog is self.before_view:
            found: AutoSelection | None = before_selection(
                self.before_view, self._before_scope(view), profile
            )
        else:
            found = catalog.auto_selections.get(view, profile, (), NO_MODES)
        if found is not None and (found.selected is None or found.top_two is not None):
            return found
        if found is not None and found.selected is not None:
            # Rank 2 unknown. A tie involving the runtime has it first, or second on the winner's score,
            # scope and distance: otherwise there is nothing to rank.
            selected = found.selected
            mine = self.after.runtime_changes.get(self.key) if catalog is self.after else None
            if catalog is self.before_view:
                mine = self.before.runtime_profile(self.key.kind, self.key.namespace, self.key.name)
            if selected.profile.runtime.key != self.key:
                if mine is None:
                    return found
                challenger = check(mine, profile, (), NO_MODES)
                if challenger.failed is not None or rank_key(challenger)[:3] != rank_key(selected)[:3]:
                    return found
        return auto_selection(catalog, profile, view or "")

    def _tie(
        self, catalog: CatalogBefore | CatalogAfter, model: Model, view: str | None
    ) -> tuple[ObjectKey, ObjectKey] | None:
        """The two runtimes of a RANK001 tie involving the runtime for ``model`` in ``view`` of ``catalog``,
        None when there is none. Whether rank 1 and 2 tie depends on the model's spec only: judged once per
        spec and view."""
        alike = (catalog is self.after, view, self._spec_token(model))
        if alike in self._ties:
            return self._ties[alike]
        pair: tuple[ObjectKey, ObjectKey] | None = None
        found = self._selection(catalog, model, view)
        top_two = found.top_two if found is not None else None
        second = top_two[1] if top_two is not None else None
        if top_two is not None and second is not None:
            first = top_two[0]
            keys = (first.profile.runtime.key, second.profile.runtime.key)
            if self.key in keys and rank_key(first)[:3] == rank_key(second)[:3]:
                pair = keys
        self._ties[alike] = pair
        return pair
