"""What-if (SPEC §11): applying and deleting objects, and which InferenceServices change verdict."""

from __future__ import annotations

import pytest
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import Kind, ObjectKey, Resource
from ome_selector.review.whatif import (
    CatalogChange,
    Change,
    ChangeError,
    Verdict,
    WhatIf,
    what_if,
    what_if_document,
)
from ome_selector.selection.inheritance import RuntimeLookup


def compare(before: list[Resource], change: CatalogChange, namespaces: set[str] | None = None) -> WhatIf:
    return what_if(catalog(*before), change, namespaces)


def key(kind: Kind, name: str, namespace: str | None = None) -> ObjectKey:
    return ObjectKey(kind, namespace, name)


SELECTED_A = Verdict("True", "RuntimeSelected", "ClusterServingRuntime/a")
NOT_FOUND = Verdict("False", "RuntimeNotFound", None)


def test_apply_replaces_adds_and_deletes() -> None:
    a, b, m = runtime("a", entry()), runtime("b", entry()), model()
    a2 = runtime("a", entry(), max="8B")
    c = runtime("c", entry())
    change = CatalogChange(applied=(a2, c), deleted=(b.key,))
    assert change.apply_to([a, b, m]) == [m, a2, c]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            CatalogChange(deleted=(key(Kind.CLUSTER_SERVING_RUNTIME, "gone"),)),
            "cannot delete ClusterServingRuntime gone: it does not exist",
        ),
        (
            CatalogChange(deleted=(key(Kind.SERVING_RUNTIME, "a", NS),)),
            "cannot delete ServingRuntime ns/a: it does not exist",
        ),
        (
            CatalogChange(
                applied=(runtime("a", entry()),), deleted=(key(Kind.CLUSTER_SERVING_RUNTIME, "a"),)
            ),
            "ClusterServingRuntime a is both applied (-f) and deleted (--delete)",
        ),
    ],
    ids=["missing", "namespaced-missing", "applied-and-deleted"],
)
def test_a_change_that_cannot_apply(change: CatalogChange, message: str) -> None:
    with pytest.raises(ChangeError) as raised:
        change.apply_to([runtime("a", entry())])
    assert str(raised.value) == message


def test_a_closer_range_switches_the_model_it_fits() -> None:
    before: list[Resource] = [
        model("small", size="1.24B"),
        model("big", size="7B"),
        runtime("a", entry(), min="1B", max="8B"),
        isvc("on-small", model_name="small"),
        isvc("on-big", model_name="big"),
    ]
    result = compare(before, CatalogChange(applied=(runtime("close", entry(), min="1B", max="2B"),)))
    assert result == WhatIf(
        changes=(
            Change(
                NS, "on-small", SELECTED_A, Verdict("True", "RuntimeSelected", "ClusterServingRuntime/close")
            ),
        ),
        unchanged=1,
    )


def test_deleting_the_only_runtime() -> None:
    before: list[Resource] = [model(), runtime("a", entry()), isvc("one"), isvc("two")]
    result = compare(before, CatalogChange(deleted=(key(Kind.CLUSTER_SERVING_RUNTIME, "a"),)))
    assert result.changes == (
        Change(NS, "one", SELECTED_A, NOT_FOUND),
        Change(NS, "two", SELECTED_A, NOT_FOUND),
    )
    assert result.unchanged == 0


def test_named_runtimes_and_models() -> None:
    before: list[Resource] = [
        model(),
        runtime("a", entry()),
        runtime("local", entry(), namespace=NS),
        isvc("named", runtime_name="a"),
        isvc("auto"),
        isvc("pending", model_name="later"),
    ]
    change = CatalogChange(
        applied=(model("later", fmt=None), runtime("a", entry(), disabled=True)),
        deleted=(key(Kind.SERVING_RUNTIME, "local", NS),),
    )
    result = compare(before, change)
    assert result.changes == (
        Change(NS, "auto", Verdict("True", "RuntimeSelected", "ServingRuntime/local"), NOT_FOUND),
        Change(
            NS,
            "named",
            Verdict("True", "RuntimeSpecified", "ClusterServingRuntime/a"),
            Verdict("False", "RuntimeDisabled", "ClusterServingRuntime/a"),
        ),
        Change(
            NS,
            "pending",
            Verdict("False", "ModelNotFound", None),
            Verdict("Unknown", "ModelMetadataPending", None),
        ),
    )


def test_only_status_reason_and_runtime_count() -> None:
    # A runtime of another format changes the no-runtime message's counts, not the verdict.
    before: list[Resource] = [model(size="70B"), runtime("a", entry(), max="8B"), isvc()]
    result = compare(before, CatalogChange(applied=(runtime("onnx", entry("onnx")),)))
    assert result == WhatIf(changes=(), unchanged=1)


def test_new_and_removed_inference_services_and_those_left_alone() -> None:
    before: list[Resource] = [model(), runtime("a", entry()), isvc("old"), isvc("no-model", model_name=None)]
    change = CatalogChange(
        applied=(isvc("new"), isvc("no-model-either", model_name=None)),
        deleted=(key(Kind.INFERENCE_SERVICE, "old", NS),),
    )
    result = compare(before, change)
    assert result == WhatIf(
        changes=(Change(NS, "new", None, SELECTED_A), Change(NS, "old", SELECTED_A, None)), unchanged=0
    )


def test_namespaces_limit_the_inference_services() -> None:
    before: list[Resource] = [
        model(),
        runtime("a", entry()),
        isvc("here"),
        isvc("there", namespace="other"),
    ]
    change = CatalogChange(deleted=(key(Kind.CLUSTER_SERVING_RUNTIME, "a"),))
    assert [(c.namespace, c.name) for c in compare(before, change).changes] == [
        (NS, "here"),
        ("other", "there"),
    ]
    only_other = compare(before, change, {"other"})
    assert [(c.namespace, c.name) for c in only_other.changes] == [("other", "there")]
    assert only_other.unchanged == 0
    assert compare(before, change, {"empty"}) == WhatIf(changes=(), unchanged=0)


def test_document() -> None:
    result = WhatIf(changes=(Change(NS, "new", None, SELECTED_A),), unchanged=2)
    assert what_if_document(result) == {
        "changes": [
            {
                "namespace": NS,
                "name": "new",
                "before": None,
                "after": {
                    "status": "True",
                    "reason": "RuntimeSelected",
                    "runtime": "ClusterServingRuntime/a",
                },
            }
        ],
        "unchanged": 2,
    }


# --- SPEC §11 v4: the operator's rules for named runtimes, chains, modes and distance -----------------------


def compare_with(
    before: list[Resource], change: CatalogChange, lookup: RuntimeLookup = RuntimeLookup.V1_3
) -> WhatIf:
    return what_if(catalog(*before), change, None, lookup)


def test_a_change_to_a_parent_moves_the_inference_services_of_its_descendants() -> None:
    before: list[Resource] = [
        model(size="3B"),
        runtime("base", entry(), min="1B", max="8B"),
        runtime("mid", inherit_from="base"),
        runtime("leaf", namespace=NS, inherit_from="mid"),
        isvc("on-leaf", runtime_name="leaf", runtime_kind="ServingRuntime"),
        isvc("on-base", runtime_name="base"),
    ]
    # Narrowing the parent's range keeps status and reason (RuntimeSpecified, now with an advisory).
    narrowed = runtime("base", entry(), min="1B", max="2B")
    assert compare_with(before, CatalogChange(applied=(narrowed,))) == WhatIf(changes=(), unchanged=2)
    # Disabling it disables its descendants when named (SPEC §1: the nearest runtime that sets disabled).
    specified = "RuntimeSpecified"
    disabled = runtime("base", entry(), min="1B", max="8B", disabled=True)
    result = compare_with(before, CatalogChange(applied=(disabled,)))
    specified_leaf = Verdict("True", specified, "ServingRuntime/leaf")
    assert result == WhatIf(
        changes=(
            Change(NS, "on-base", Verdict("True", specified, "ClusterServingRuntime/base"),
                   Verdict("False", "RuntimeDisabled", "ClusterServingRuntime/base")),
            Change(NS, "on-leaf", specified_leaf, Verdict("False", "RuntimeDisabled", "ServingRuntime/leaf")),
        ),
        unchanged=0,
    )  # fmt: skip


def test_deleting_a_parent_breaks_the_chain_of_its_descendants() -> None:
    before: list[Resource] = [
        model(),
        runtime("base", entry()),
        runtime("child", inherit_from="base"),
        isvc("named", runtime_name="child"),
        isvc("pinned", runtime_name="child", auto_sync=False),
        isvc("auto"),
    ]
    result = compare_with(before, CatalogChange(deleted=(key(Kind.CLUSTER_SERVING_RUNTIME, "base"),)))
    child = "ClusterServingRuntime/child"
    assert result == WhatIf(
        changes=(
            Change(NS, "auto", SELECTED_BASE, NOT_FOUND),
            Change(NS, "named", Verdict("True", "RuntimeSpecified", child),
                   Verdict("False", "RuntimeInheritanceError", child)),
        ),
        unchanged=1,  # pinned: RuntimeSpecified before and after (its live runtime cannot be resolved)
    )  # fmt: skip


SELECTED_BASE = Verdict("True", "RuntimeSelected", "ClusterServingRuntime/base")


def test_inference_services_without_a_model_are_compared() -> None:
    before: list[Resource] = [runtime("rt"), isvc("bare", model_name=None, runtime_name="rt")]
    result = compare_with(before, CatalogChange(deleted=(key(Kind.CLUSTER_SERVING_RUNTIME, "rt"),)))
    assert result == WhatIf(
        changes=(
            Change(NS, "bare", Verdict("True", "RuntimeSpecified", "ClusterServingRuntime/rt"), NOT_FOUND),
        ),
        unchanged=0,
    )
    # Neither a model nor a runtime: left alone on both sides.
    assert compare_with([isvc("nothing", model_name=None)], CatalogChange(applied=(runtime("x"),))) == WhatIf(
        changes=(), unchanged=0
    )


def test_a_deployment_mode_change_is_seen() -> None:
    before: list[Resource] = [
        model(),
        runtime("rt", entry(), engine_mode="RawDeployment"),
        isvc("raw", deployment_mode="RawDeployment"),
        isvc("native", deployment_mode="OMENative"),
    ]
    result = compare_with(before, CatalogChange(applied=(runtime("rt", entry(), engine_mode="OMENative"),)))
    selected = Verdict("True", "RuntimeSelected", "ClusterServingRuntime/rt")
    assert result == WhatIf(
        changes=(
            Change(NS, "native", NOT_FOUND, selected),
            Change(NS, "raw", selected, NOT_FOUND),
        ),
        unchanged=0,
    )


def test_one_sided_ranges_and_the_new_distance() -> None:
    """SPEC §4 v4: for 7B, min 1B alone is 6B away and beats [1B, 13B] (12B); before v4 it was infinitely
    far."""
    before: list[Resource] = [model(size="7B"), runtime("wide", entry(), min="1B", max="13B"), isvc("svc")]
    result = compare_with(before, CatalogChange(applied=(runtime("open", entry(), min="1B"),)))
    assert result.changes == (
        Change(
            NS,
            "svc",
            Verdict("True", "RuntimeSelected", "ClusterServingRuntime/wide"),
            Verdict("True", "RuntimeSelected", "ClusterServingRuntime/open"),
        ),
    )


@pytest.mark.parametrize(
    ("lookup", "changed"),
    [(RuntimeLookup.V1_3, False), (RuntimeLookup.LEGACY, True)],
    ids=["v1.3-names-the-cluster-runtime", "legacy-names-the-namespace-runtime"],
)
def test_runtime_lookup(lookup: RuntimeLookup, changed: bool) -> None:
    """Deleting the ServingRuntime moves the InferenceService only where the lookup named it."""
    before: list[Resource] = [
        model(),
        runtime("rt", entry()),
        runtime("rt", entry(), namespace=NS),
        isvc("svc", runtime_name="rt", runtime_kind="ClusterServingRuntime"),
    ]
    result = compare_with(before, CatalogChange(deleted=(key(Kind.SERVING_RUNTIME, "rt", NS),)), lookup)
    assert bool(result.changes) is changed
    if changed:
        assert result.changes[0].before == Verdict("True", "RuntimeSpecified", "ServingRuntime/rt")
        assert result.changes[0].after == Verdict("True", "RuntimeSpecified", "ClusterServingRuntime/rt")
