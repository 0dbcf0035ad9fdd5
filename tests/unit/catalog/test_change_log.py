"""The catalog's record of what changed (SPEC §12: a review that let the event loop run asks what changed
since its last turn): models and runtimes with their match keys and names, InferenceServices by the decision
groups they joined or left, bounded."""

from __future__ import annotations

from selection_builders import catalog, entry, isvc, model, runtime

from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.catalog.catalog import CHANGE_LOG_LIMIT
from ome_selector.selection.outcome import decision_inputs


def test_models_and_runtimes_are_logged_with_their_match_keys_and_names() -> None:
    live = catalog(model("m"))
    mark = live.definition_changes
    child = runtime("r", entry("onnx"), namespace="t", inherit_from="base")
    live.upsert(child)
    live.remove(ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "m"))
    changes = live.definition_changes_since(mark)
    assert changes is not None
    assert [(c.key, c.names) for c in changes] == [
        (child.key, frozenset({"r", "base"})),
        (ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "m"), frozenset({"m"})),
    ]
    profile = live.runtime_profile(*child.key)
    assert profile is not None
    assert changes[0].match_keys == frozenset(profile.entries_by_key)
    assert live.definition_changes_since(live.definition_changes) == []


def test_inference_services_are_logged_by_the_groups_they_join_and_leave() -> None:
    first = isvc("a", model_name="m")
    live = catalog(first)
    mark = live.inference_service_changes
    live.upsert(first)  # stored again alike (a status write): no group changed
    assert live.inference_service_changes_since(mark) == []
    moved = isvc("a", model_name="n")
    live.upsert(moved)
    live.remove(moved.key)
    assert live.inference_service_changes_since(mark) == [
        decision_inputs(first),
        decision_inputs(moved),
        decision_inputs(moved),
    ]


def test_a_reader_too_far_behind_is_told_it_cannot_know() -> None:
    live = catalog()
    mark = live.inference_service_changes
    for i in range(CHANGE_LOG_LIMIT + 1):
        live.upsert(isvc(f"s{i}"))
    assert live.inference_service_changes_since(mark) is None
    assert live.inference_service_changes_since(mark + 1) is not None
