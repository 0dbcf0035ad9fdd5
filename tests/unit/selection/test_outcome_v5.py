"""The selection core's v5 rules: InferenceServices with ``spec.replicaRefs`` are left alone (SPEC §5), and
the §12 switch event is decided from the stored condition and the new outcome."""

from __future__ import annotations

from typing import Any

import pytest
from catalog_strategies import models, runtimes
from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import NS, entry, model_doc, runtime_doc

from ome_selector.api.loading import load_resource
from ome_selector.api.resources import InferenceService, Model, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection import messages
from ome_selector.selection.outcome import EventSpec, evaluate, selection_change

GV = "ome.io/v1beta1"


def isvc(**spec: Any) -> InferenceService:
    resource = load_resource(
        {
            "apiVersion": GV,
            "kind": "InferenceService",
            "metadata": {"name": "svc", "namespace": NS},
            "spec": spec,
        }
    )
    assert isinstance(resource, InferenceService)
    return resource


def catalog_of(*docs: dict[str, Any]) -> Catalog:
    return Catalog.from_resources(r for r in map(load_resource, docs) if r is not None)


CATALOG = catalog_of(model_doc("m", size="3B"), runtime_doc("rt", entry()))


@pytest.mark.parametrize(
    ("refs", "left_alone"),
    [
        ([{"name": "a"}], True),
        ([{}], True),
        ("anything", True),  # our CRD keeps unknown fields: only the presence is read
        ({"a": 1}, True),
        ([], False),  # an empty list sets nothing, as null does
        (False, False),
        (None, False),
    ],
)
def test_replica_refs_leave_the_inference_service_alone(refs: Any, left_alone: bool) -> None:
    spec: dict[str, Any] = {"model": {"name": "m"}, "engine": {}}
    if refs is not None:
        spec["replicaRefs"] = refs
    outcome = evaluate(CATALOG, isvc(**spec))
    assert (outcome is None) is left_alone
    assert isvc(**spec).has_replica_refs is left_alone


@settings(max_examples=60, deadline=None)
@given(
    st.lists(models(), max_size=3),
    st.lists(runtimes(), max_size=4),
    st.sampled_from(["m", "n", "missing"]),
    st.sampled_from([None, "a", "b", "missing"]),
    st.booleans(),
)
def test_with_replica_refs_nothing_is_evaluated_whatever_else_it_sets(
    model_list: list[Model], runtime_list: list[Runtime], model: str, runtime: str | None, auto_sync: bool
) -> None:
    catalog = Catalog.from_resources([*model_list, *runtime_list])
    spec: dict[str, Any] = {"model": {"name": model}, "engine": {}, "replicaRefs": [{"name": "r"}]}
    if runtime is not None:
        spec["runtime"] = {"name": runtime, "autoSync": auto_sync}
    assert evaluate(catalog, isvc(**spec)) is None
    del spec["replicaRefs"]
    assert evaluate(catalog, isvc(**spec)) is not None


def test_replica_refs_are_a_read_input() -> None:
    """Adding or removing them is a change the operator re-evaluates and the webhook judges (SPEC §1)."""
    plain = isvc(model={"name": "m"})
    fronting = isvc(model={"name": "m"}, replicaRefs=[{"name": "r"}])
    assert plain.matcher_inputs != fronting.matcher_inputs


# --- SPEC §12 switch events ---------------------------------------------------------------------------------


def stored(status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": "RuntimeReady", "status": status, "reason": reason, "message": message}


SELECTED_RT = evaluate(CATALOG, isvc(model={"name": "m"}, engine={}))


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        (
            stored("True", "RuntimeSelected", "selected ClusterServingRuntime other (score 7)"),
            "selected runtime changed from ClusterServingRuntime other to ClusterServingRuntime rt (score 1)",
        ),
        (
            stored("True", "RuntimeSelected", "selected ServingRuntime rt (score 1)"),
            "selected runtime changed from ServingRuntime rt to ClusterServingRuntime rt (score 1)",
        ),
        (
            stored("True", "RuntimeSelected", "selected ClusterServingRuntime rt (score 9)"),
            None,
        ),  # score only
        (stored("False", "RuntimeNotFound", "selected ClusterServingRuntime other (score 7)"), None),
        (stored("True", "RuntimeSpecified", "using specified ClusterServingRuntime other"), None),
        (stored("True", "RuntimeSelected", ""), None),  # another writer's text: the runtime is unknown
        (stored("True", "RuntimeResolved", ""), None),
        (None, None),
    ],
)
def test_selection_change(before: dict[str, str] | None, expected: str | None) -> None:
    assert SELECTED_RT is not None
    assert SELECTED_RT.message == "selected ClusterServingRuntime rt (score 1)"
    event = selection_change(before, SELECTED_RT)
    if expected is None:
        assert event is None
    else:
        assert event == EventSpec(type="Normal", reason="RuntimeSelectionChanged", message=expected)


def test_no_switch_without_a_selection() -> None:
    named = evaluate(CATALOG, isvc(model={"name": "m"}, runtime={"name": "rt"}))
    assert named is not None
    before = stored("True", "RuntimeSelected", "selected ClusterServingRuntime other (score 7)")
    assert selection_change(before, named) is None


TAIL = "beside OME v1.3 or later run ome-selector with --report-only"


@pytest.mark.parametrize(
    ("manager", "text"),
    [
        (
            "ome-controller",
            "RuntimeReady is also written by ome-controller; " + TAIL,
        ),
        (
            messages.ANOTHER_WRITER,
            "RuntimeReady is also written by another writer; " + TAIL,
        ),
        (
            "a\nb",
            'RuntimeReady is also written by "a\\nb"; ' + TAIL,
        ),
    ],
)
def test_the_conflict_text(manager: str, text: str) -> None:
    assert messages.condition_conflict(manager) == text
