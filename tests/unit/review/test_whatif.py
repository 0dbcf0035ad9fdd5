"""What-if (SPEC §11): applying and deleting objects, and which InferenceServices change verdict."""

from __future__ import annotations

import pytest
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import Kind, ObjectKey, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.whatif import (
    CatalogChange,
    Change,
    ChangeError,
    Verdict,
    WhatIf,
    what_if,
    what_if_document,
)


def compare(before: list[Resource], change: CatalogChange, namespaces: set[str] | None = None) -> WhatIf:
    return what_if(catalog(*before), Catalog.from_resources(change.apply_to(before)), namespaces)


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
