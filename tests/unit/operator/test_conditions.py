"""The RuntimeReady condition: change detection, transition time and preservation of other conditions."""

from __future__ import annotations

from typing import Any

import pytest

from ome_selector.operator.conditions import (
    build_condition,
    condition_writers,
    current_condition,
    differs,
    only_counts_differ,
    with_condition,
    without_condition,
)

STORED = {
    "type": "RuntimeReady",
    "status": "True",
    "reason": "RuntimeSelected",
    "message": "selected ClusterServingRuntime rt (score 2)",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}
OTHER = {"type": "Ready", "status": "False", "reason": "Deploying"}


@pytest.mark.parametrize(
    ("status", "reason", "message", "changed"),
    [
        ("True", "RuntimeSelected", "selected ClusterServingRuntime rt (score 2)", False),
        ("False", "RuntimeSelected", "selected ClusterServingRuntime rt (score 2)", True),
        ("True", "RuntimeSpecified", "selected ClusterServingRuntime rt (score 2)", True),
        ("True", "RuntimeSelected", "selected ClusterServingRuntime other (score 2)", True),
    ],
    ids=["same", "status", "reason", "message"],
)
def test_the_condition_changes_when_status_reason_or_message_does(
    status: str, reason: str, message: str, changed: bool
) -> None:
    assert differs(STORED, status, reason, message) is changed


def test_a_missing_condition_always_differs() -> None:
    assert differs(None, "True", "RuntimeSelected", "x")


def test_transition_time_moves_only_when_the_status_flips() -> None:
    same_status = build_condition(
        STORED, "True", "RuntimeSpecified", "using specified X", now="2026-02-02T00:00:00Z"
    )
    flipped = build_condition(STORED, "False", "RuntimeNotFound", "none", now="2026-02-02T00:00:00Z")
    first = build_condition(None, "Unknown", "ModelMetadataPending", "wait", now="2026-02-02T00:00:00Z")
    assert same_status["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert flipped["lastTransitionTime"] == "2026-02-02T00:00:00Z"
    assert first["lastTransitionTime"] == "2026-02-02T00:00:00Z"
    assert set(first) == {"type", "status", "reason", "message", "lastTransitionTime"}


@pytest.mark.parametrize(
    ("existing", "expected_types"),
    [
        (None, ["RuntimeReady"]),
        ([], ["RuntimeReady"]),
        ([OTHER], ["Ready", "RuntimeReady"]),
        ([STORED, OTHER], ["RuntimeReady", "Ready"]),
        ([OTHER, STORED, STORED], ["Ready", "RuntimeReady"]),
        (["garbage", OTHER], ["garbage", "Ready", "RuntimeReady"]),
    ],
    ids=["none", "empty", "append", "replace-in-place", "duplicates-collapse", "malformed-kept"],
)
def test_with_condition_replaces_ours_and_keeps_the_rest(
    existing: list[Any] | None, expected_types: list[str]
) -> None:
    new = build_condition(None, "False", "RuntimeNotFound", "none")
    result = with_condition(existing, new)
    assert [c["type"] if isinstance(c, dict) else c for c in result] == expected_types
    assert OTHER in result or OTHER not in (existing or [])
    assert [c for c in result if isinstance(c, dict) and c["type"] == "RuntimeReady"] == [new]


def test_without_condition_and_current_condition() -> None:
    status = {"conditions": [OTHER, STORED], "url": "http://x"}
    assert current_condition(status) == STORED
    assert current_condition({"conditions": "not-a-list"}) is None
    assert current_condition(None) is None
    assert without_condition(status["conditions"]) == [OTHER]


NO_RUNTIME = (
    "no runtime supports model m (checked {n} runtime{s}: {a} namespace-scoped, {b} cluster-scoped): "
    "ns/rt (model size 70B is outside supported range [1B, 8B]){tail}"
)


def _no_runtime(a: int, b: int, tail: str = "") -> str:
    return NO_RUNTIME.format(n=a + b, s="" if a + b == 1 else "s", a=a, b=b, tail=tail)


@pytest.mark.parametrize(
    ("before", "after", "counts_only"),
    [
        (_no_runtime(1, 0), _no_runtime(2, 0, "; 1 runtime serves other formats"), True),
        (
            _no_runtime(2, 0, "; 1 runtime serves other formats"),
            _no_runtime(2, 1, "; 2 runtimes serve other formats"),
            True,
        ),
        (_no_runtime(3, 0, "; 2 runtimes serve other formats"), _no_runtime(1, 0), True),
        (
            _no_runtime(9, 0, "; … 3 more (kubectl ome-selector runtime explain --isvc s -n ns)"),
            _no_runtime(12, 0, "; … 6 more (kubectl ome-selector runtime explain --isvc s -n ns)"),
            True,
        ),
        (_no_runtime(1, 0), _no_runtime(1, 0).replace("70B", "80B"), False),
        (_no_runtime(1, 0), _no_runtime(1, 0) + "; ns/rt2 (runtime is disabled)", False),
        (_no_runtime(1, 0), _no_runtime(1, 0), False),  # no change at all: nothing to write
    ],
    ids=[
        "other format added",
        "cluster runtime added",
        "runtimes removed",
        "more marker",
        "reason",
        "entry",
        "same",
    ],
)
def test_a_change_only_in_the_runtime_counts_is_recognised(
    before: str, after: str, counts_only: bool
) -> None:
    stored = {"status": "False", "reason": "RuntimeNotFound", "message": before}
    assert only_counts_differ(stored, "False", "RuntimeNotFound", after) is counts_only


def test_a_counts_only_message_with_another_status_or_reason_is_a_real_change() -> None:
    stored = {"status": "False", "reason": "RuntimeNotFound", "message": _no_runtime(1, 0)}
    recounted = _no_runtime(2, 0, "; 1 runtime serves other formats")
    assert not only_counts_differ(stored, "True", "RuntimeNotFound", recounted)
    assert not only_counts_differ(stored, "False", "ModelNotFound", recounted)
    assert not only_counts_differ(None, "False", "RuntimeNotFound", recounted)  # restored: its event again


def _managed(manager: str, fields: Any, subresource: str = "status") -> dict[str, Any]:
    return {"manager": manager, "operation": "Update", "subresource": subresource, "fieldsV1": fields}


ATOMIC: dict[str, Any] = {"f:status": {"f:conditions": {}, ".": {}}}


@pytest.mark.parametrize(
    ("managed_fields", "writers"),
    [
        # atomic list (OME's CRDs and ours): the last writer of the list owns every entry
        ([_managed("ome-selector", ATOMIC)], ("ome-selector",)),
        ([_managed("manager", ATOMIC), _managed("ome-selector", {"f:status": {"f:url": {}}})], ("manager",)),
        ([_managed("kubectl", {"f:spec": {"f:model": {}}}, subresource="")], ()),
        # a list-map keyed by type: only the owner of the RuntimeReady entry
        (
            [
                _managed("ome-selector", {"f:status": {"f:conditions": {'k:{"type":"RuntimeReady"}': {}}}}),
                _managed("manager", {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {}}}}),
            ],
            ("ome-selector",),
        ),
        ([_managed("b", ATOMIC), _managed("a", ATOMIC), _managed("a", ATOMIC)], ("a", "b")),
        # malformed entries are ignored
        ([{"fieldsV1": ATOMIC}, "x", _managed("m", {"f:status": "x"}), _managed("n", None)], ()),
        (None, ()),
        ("managedFields", ()),
    ],
)
def test_condition_writers_come_from_the_managed_fields(
    managed_fields: Any, writers: tuple[str, ...]
) -> None:
    assert condition_writers({"managedFields": managed_fields}) == writers
