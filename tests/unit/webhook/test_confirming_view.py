"""The view a confirming read decides from (SPEC §7): the live catalog amended with what was read.

A confirming read does not rebuild a catalog of every runtime: it keeps the live catalog and amends it with
the model it read and the runtimes that differ (new, changed, gone or unreadable). Whatever the live catalog
holds and whatever was read, every decision from that view must be the one a catalog rebuilt from the same
final objects gives — and the live catalog's memo, filled first, must not leak into it.
"""

from __future__ import annotations

from catalog_strategies import OTHER, models, runtimes
from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import NS, isvc

from ome_selector.api.resources import InferenceService, Kind, Model, ObjectKey, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.outcome import Outcome, evaluate
from ome_selector.selection.profiles import RuntimeProfile
from ome_selector.selection.view import CatalogView
from ome_selector.webhook.confirming import _Amended

removals = st.builds(
    ObjectKey,
    st.sampled_from([Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME]),
    st.just(NS),
    st.sampled_from("abcdef"),
).map(lambda key: key if key.kind.namespaced else ObjectKey(key.kind, None, key.name))

PROBES: list[InferenceService] = [
    isvc("auto", selector_class=None),
    isvc("auto-a100", selector_class="a100"),
    *(isvc(f"named-{name}", runtime_name=name) for name in "abf"),
]


def _decided(view: CatalogView, service: InferenceService) -> Outcome | None:
    return evaluate(view, service)


@settings(max_examples=150, deadline=None)
@given(
    live_runtimes=st.lists(runtimes("abcde", min_entries=1), max_size=8),
    changes=st.lists(runtimes("abcde", min_entries=1) | removals, max_size=5),
    read=models("m"),
    live_model=st.none() | st.just("the model read") | models("m"),
)
def test_the_amended_live_catalog_decides_as_a_catalog_rebuilt_from_the_same_objects(
    live_runtimes: list[Runtime],
    changes: list[Runtime | ObjectKey],
    read: Model,
    live_model: Model | str | None,
) -> None:
    held: list[Runtime | Model] = [*live_runtimes]
    if live_model == "the model read":
        held.append(read)  # the live catalog holds the model as read (its memo knows its profile)
    elif isinstance(live_model, Model) and live_model.key == read.key:
        held.append(live_model)  # the watch delivered another version of the model
    live = Catalog.from_resources(held)
    for service in PROBES:
        evaluate(live, service)  # fills the live memo with results for the live objects
    final = {resource.key: resource for resource in live_runtimes}
    amended: dict[ObjectKey, RuntimeProfile | None] = {}
    for change in changes:
        if isinstance(change, Runtime):
            if change.namespace == OTHER:
                continue  # a confirming read lists only the runtimes visible from the namespace
            final[change.key] = change
            amended[change.key] = RuntimeProfile.of(change)
        else:
            final.pop(change, None)
            amended[change] = None
    view = _Amended(live, read, amended)
    rebuilt = Catalog.from_resources([*final.values(), read])
    for service in PROBES:
        assert _decided(view, service) == _decided(rebuilt, service), service.name
        assert view.runtime_counts(NS) == rebuilt.runtime_counts(NS)
