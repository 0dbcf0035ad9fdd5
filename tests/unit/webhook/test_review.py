"""Reading an AdmissionReview body (SPEC §7 robustness): every malformed body is one 400 (or 413) with a
one-line reason, anything else is a review of one of the five kinds; the work is bounded by the body, never
by what it asks for."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ome_selector.webhook.review import (
    MAX_BODY_BYTES,
    MAX_DEPTH,
    MAX_VALUES,
    MalformedReviewError,
    count_values_bound,
    for_kopf,
    metric_kind,
    nesting_depth,
    read_review,
)

REQUEST: dict[str, Any] = {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "ome.io", "version": "v1beta1", "kind": "ClusterBaseModel"},
    "resource": {"group": "ome.io", "version": "v1beta1", "resource": "clusterbasemodels"},
    "name": "m",
    "operation": "CREATE",
    "userInfo": {"username": "admin", "groups": ["system:masters"]},
    "object": {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": "m"}},
    "oldObject": None,
    "dryRun": False,
    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
}
REVIEW: dict[str, Any] = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": REQUEST}


def _with(path: str, value: Any) -> bytes:
    """REVIEW with the dotted ``path`` set to ``value`` (``...`` removes it), as JSON bytes."""
    document = copy.deepcopy(REVIEW)
    *parents, last = path.split(".")
    node = document
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return json.dumps(document).encode()


def test_a_review_from_the_apiserver_is_read() -> None:
    review = read_review(json.dumps(REVIEW).encode())
    assert (review.uid, review.kind.value, review.resource) == (
        REQUEST["uid"],
        "ClusterBaseModel",
        "clusterbasemodels",
    )


MALFORMED = [
    (b"\xff\xfe{}", "request body is not valid UTF-8"),
    (b"", "request body is not JSON: Expecting value"),
    (b'{"a": ', "request body is not JSON: Expecting value"),
    (b"[]", "request body is not a JSON object"),
    (b'"AdmissionReview"', "request body is not a JSON object"),
    (b"null", "request body is not a JSON object"),
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"request body nests deeper than {MAX_DEPTH} levels"),
    (b'{"a":' * 5000 + b"1" + b"}" * 5000, f"request body nests deeper than {MAX_DEPTH} levels"),
    (b"[" + b"0," * MAX_VALUES + b"0]", f"request body has more than {MAX_VALUES} JSON values"),
    (_with("apiVersion", "admission.k8s.io/v1beta1"), "apiVersion is not admission.k8s.io/v1"),
    (_with("kind", "Review"), "kind is not AdmissionReview"),
    (_with("request", ...), "request is missing or not an object"),
    (_with("request", []), "request is missing or not an object"),
    (_with("request.uid", ...), "request.uid is missing or not a non-empty string"),
    (_with("request.uid", ""), "request.uid is missing or not a non-empty string"),
    (_with("request.uid", 7), "request.uid is missing or not a non-empty string"),
    (
        _with("request.kind", "ClusterBaseModel"),
        "request.kind is not an object of strings group, version, kind",
    ),
    (_with("request.kind.kind", None), "request.kind is not an object of strings group, version, kind"),
    (_with("request.resource", ...), "request.resource is not an object of strings group, version, resource"),
    (_with("request.operation", "PATCH"), "request.operation is not CREATE, UPDATE, DELETE or CONNECT"),
    (_with("request.operation", ["CREATE"]), "request.operation is not CREATE, UPDATE, DELETE or CONNECT"),
    (_with("request.name", 1), "request.name is not a string"),
    (_with("request.namespace", {}), "request.namespace is not a string"),
    (_with("request.subResource", True), "request.subResource is not a string"),
    (_with("request.dryRun", "false"), "request.dryRun is not a boolean"),
    (_with("request.userInfo", ...), "request.userInfo is missing"),
    (_with("request.userInfo", "admin"), "request.userInfo is not an object"),
    (_with("request.options", []), "request.options is not an object"),
    (_with("request.object", ...), "request has neither object nor oldObject"),
    (_with("request.object", "m"), "request.object is not an object"),
    (_with("request.oldObject", 3), "request.oldObject is not an object"),
    (_with("request.object.metadata", ["m"]), "request.object.metadata is not an object"),
    (_with("request.resource.resource", "pods"), "request.resource is not a resource of ome.io/v1beta1"),
    (_with("request.resource.group", "apps"), "request.resource is not a resource of ome.io/v1beta1"),
    (_with("request.kind.kind", "BaseModel"), "request.kind does not match request.resource"),
]


@pytest.mark.parametrize(("body", "reason"), MALFORMED, ids=[reason for _, reason in MALFORMED])
def test_a_malformed_body_gets_400_with_a_one_line_reason(body: bytes, reason: str) -> None:
    with pytest.raises(MalformedReviewError) as raised:
        read_review(body)
    assert raised.value.status == 400
    assert raised.value.reason.startswith(reason)
    assert "\n" not in raised.value.reason


def test_a_body_over_one_mib_gets_413() -> None:
    body = _with("request.object.spec", {"x": "y" * MAX_BODY_BYTES})
    with pytest.raises(MalformedReviewError) as raised:
        read_review(body)
    assert (raised.value.status, raised.value.reason) == (413, "request body is larger than 1048576 bytes")


def test_reasons_never_echo_the_request() -> None:
    secret = "token-\x1b[31m-SECRET"
    for path in ("request.uid", "request.operation", "request.kind.kind", "request.resource.resource"):
        with pytest.raises(MalformedReviewError) as raised:
            read_review(_with(path, [secret]))
        assert "SECRET" not in raised.value.reason


def test_the_metric_kind_is_one_of_the_five_or_other() -> None:
    assert metric_kind("InferenceService") == "InferenceService"
    assert metric_kind("ClusterServingRuntime") == "ClusterServingRuntime"
    for hostile in ("Pod", "x" * 100_000, "", None, 7, ["InferenceService"]):
        assert metric_kind(hostile) == "other"


def test_kopf_gets_the_objects_without_their_uids_and_everything_else_as_sent() -> None:
    document = copy.deepcopy(REVIEW)
    document["request"]["operation"] = "UPDATE"
    document["request"]["object"]["metadata"] |= {"uid": "u", "labels": {"a": "b"}}
    document["request"]["oldObject"] = {"metadata": {"name": "m", "uid": "u"}}
    review = read_review(json.dumps(document).encode())
    handed = for_kopf(review)
    assert handed["request"]["object"]["metadata"] == {"name": "m", "labels": {"a": "b"}}
    assert handed["request"]["oldObject"]["metadata"] == {"name": "m"}
    handed["request"]["object"]["metadata"]["uid"] = "u"
    handed["request"]["oldObject"]["metadata"]["uid"] = "u"
    assert handed == document
    assert review.request["object"]["metadata"]["uid"] == "u"  # the review itself is not changed


# --- properties: hostile bodies, bounded work ------------------------------------------------------------


def _refusal(body: bytes) -> MalformedReviewError | None:
    try:
        read_review(body)
    except MalformedReviewError as error:
        return error
    return None


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=60,
)


def _values(document: Any) -> int:
    if isinstance(document, dict):
        return 1 + sum(_values(value) for value in document.values())
    if isinstance(document, list):
        return 1 + sum(_values(value) for value in document)
    return 1


def _containers(document: Any) -> int:
    if isinstance(document, dict):
        return 1 + sum(_containers(value) for value in document.values())
    if isinstance(document, list):
        return 1 + sum(_containers(value) for value in document)
    return 0


def _depth(document: Any) -> int:
    if isinstance(document, dict):
        return 1 + max((_depth(value) for value in document.values()), default=0)
    if isinstance(document, list):
        return 1 + max((_depth(value) for value in document), default=0)
    return 0


@given(JSON_VALUES)
def test_the_value_count_bound_is_never_below_the_real_count(document: Any) -> None:
    assert count_values_bound(json.dumps(document).encode()) >= _values(document)


@given(JSON_VALUES, st.integers(min_value=1, max_value=8))
def test_nesting_depth_is_exact_below_the_stop_and_visits_each_container_at_most_once(
    document: Any, stop_at: int
) -> None:
    depth = nesting_depth(document, stop_at)
    assert depth.depth == min(_depth(document), stop_at)
    assert depth.steps <= _containers(document)


def test_a_deep_document_costs_only_the_levels_down_to_the_stop() -> None:
    deep: Any = []
    for _ in range(50_000):
        deep = [deep, 1, {"a": 2}]
    depth = nesting_depth(deep, MAX_DEPTH + 1)
    assert depth.depth == MAX_DEPTH + 1
    assert depth.steps <= 2 * (MAX_DEPTH + 1)  # each level down: its list and its dict, nothing below


@settings(max_examples=300)
@given(st.binary(max_size=300) | JSON_VALUES.map(lambda value: json.dumps(value).encode()))
def test_any_body_is_a_review_or_a_malformed_review_error(body: bytes) -> None:
    refusal = _refusal(body)
    assert refusal is None or (refusal.status == 400 and "\n" not in refusal.reason)


ENVELOPE_FIELDS = ["apiVersion", "kind", "request"] + [f"request.{name}" for name in REQUEST]


@settings(max_examples=300)
@given(st.sampled_from(ENVELOPE_FIELDS), JSON_VALUES | st.just(...))
def test_any_envelope_field_of_any_type_is_a_review_or_a_malformed_review_error(
    path: str, value: Any
) -> None:
    body = _with(path, value)
    refusal = _refusal(body)
    if refusal is not None:
        assert refusal.status == 400
        return
    review = read_review(body)
    assert isinstance(review.request["userInfo"], dict)
    assert any(isinstance(review.request.get(name), dict) for name in ("object", "oldObject"))
