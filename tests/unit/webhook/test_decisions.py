"""SPEC §7 admission decisions, rule by rule, with the exact texts (pure: no apiserver, no Kopf)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from selection_builders import NS, entry, model_doc, runtime_doc

from ome_selector.api.bounds import MAX_FORMAT_ENTRIES
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Kind
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection import messages
from ome_selector.selection.outcome import OutcomeKind
from ome_selector.webhook.decisions import (
    ALLOWED,
    MAX_SIZE_WARNINGS,
    Decision,
    Lookup,
    decide_inference_service,
    decide_sizes,
    size_problems,
    suggestion_for,
)

GV = "ome.io/v1beta1"
ENGINE: dict[str, Any] = {"minReplicas": 1}


def isvc_doc(
    name: str = "svc",
    *,
    model_name: str | None = "m",
    runtime_name: str | None = None,
    auto_sync: bool | None = None,
    engine: dict[str, Any] | None = ENGINE,
    labels: dict[str, str] | None = None,
    deletion_timestamp: str | None = None,
    namespace: str | None = NS,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if model_name is not None:
        spec["model"] = {"name": model_name}
    if runtime_name is not None or auto_sync is not None:
        spec["runtime"] = {
            k: v for k, v in (("name", runtime_name), ("autoSync", auto_sync)) if v is not None
        }
    if engine is not None:
        spec["engine"] = copy.deepcopy(engine)
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    if deletion_timestamp:
        metadata["deletionTimestamp"] = deletion_timestamp
    return {"apiVersion": GV, "kind": "InferenceService", "metadata": metadata, "spec": spec}


def catalog_of(*docs: dict[str, Any]) -> Catalog:
    resources = [load_resource(doc) for doc in docs]
    return Catalog.from_resources(r for r in resources if r is not None)


def create(catalog: Catalog, doc: dict[str, Any], **kwargs: Any) -> Decision:
    return decide_inference_service(catalog, doc, None, "CREATE", **kwargs)


def update(catalog: Catalog, old: dict[str, Any], new: dict[str, Any]) -> Decision:
    return decide_inference_service(catalog, new, old, "UPDATE")


MODEL = model_doc("m", size="3B")
RUNTIME = runtime_doc("rt", entry())
SERVED = catalog_of(MODEL, RUNTIME)


# --- InferenceService: scope --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "operation"),
    [
        pytest.param(isvc_doc(model_name="missing", engine=None), "CREATE", id="no-engine"),
        pytest.param(
            isvc_doc(model_name="missing", deletion_timestamp="2026-01-01T00:00:00Z"), "UPDATE", id="deleting"
        ),
        pytest.param(isvc_doc(model_name="missing"), "DELETE", id="delete-operation"),
        pytest.param(isvc_doc(model_name="missing"), "CONNECT", id="connect-operation"),
        pytest.param(isvc_doc(model_name=None), "CREATE", id="no-spec-model"),
        pytest.param({**isvc_doc(), "spec": {"model": {"name": 7}, "engine": {}}}, "CREATE", id="unreadable"),
        pytest.param({**isvc_doc(), "kind": "Pod"}, "CREATE", id="other-kind"),
    ],
)
def test_left_alone(doc: dict[str, Any], operation: str) -> None:
    assert decide_inference_service(Catalog(), doc, doc, operation) == ALLOWED


def test_namespace_comes_from_the_request_when_the_object_has_none() -> None:
    decision = create(Catalog(), isvc_doc(namespace=None), namespace="other")
    assert decision.message == "model m not found: no BaseModel in namespace other and no ClusterBaseModel"


# --- InferenceService: the SPEC §5 situations ---------------------------------------------------------------


def test_model_missing_is_denied_and_asks_for_confirmation() -> None:
    decision = create(catalog_of(RUNTIME), isvc_doc())
    assert decision == Decision(
        allowed=False,
        message="model m not found: no BaseModel in namespace ns and no ClusterBaseModel",
        confirm=Lookup(NS, "m", None),
        outcome=OutcomeKind.MODEL_NOT_FOUND,
    )


def test_confirmed_decision_asks_for_nothing_more() -> None:
    decision = create(catalog_of(RUNTIME), isvc_doc(runtime_name="rt"), confirmed=True)
    assert not decision.allowed
    assert decision.confirm is None


def test_model_disabled_is_denied_without_confirmation() -> None:
    decision = create(catalog_of(model_doc("m", disabled=True), RUNTIME), isvc_doc())
    assert (decision.allowed, decision.message, decision.confirm) == (False, "model m is disabled", None)


def test_model_without_format_is_allowed_with_the_pending_warning() -> None:
    decision = create(catalog_of(model_doc("m", fmt=None), RUNTIME), isvc_doc())
    assert decision.allowed
    assert decision.warnings == ("model m has no modelFormat yet; runtime selection waits for it",)


def test_named_runtime_missing_is_denied_and_asks_for_confirmation() -> None:
    decision = create(catalog_of(MODEL), isvc_doc(runtime_name="nope"))
    assert decision == Decision(
        allowed=False,
        message="runtime nope not found in namespace ns or at cluster scope",
        confirm=Lookup(NS, "m", "nope"),
        outcome=OutcomeKind.RUNTIME_NOT_FOUND,
    )


@pytest.mark.parametrize(
    ("runtime", "message"),
    [
        (runtime_doc("rt", entry(), disabled=True), "cluster-scoped runtime rt is disabled"),
        (runtime_doc("rt", entry(), disabled=True, namespace=NS), "namespace-scoped runtime rt is disabled"),
    ],
)
def test_named_runtime_disabled_is_denied(runtime: dict[str, Any], message: str) -> None:
    decision = create(catalog_of(MODEL, runtime), isvc_doc(runtime_name="rt"))
    assert (decision.allowed, decision.message, decision.confirm) == (False, message, None)


def test_named_runtime_that_supports_the_model_is_allowed_silently() -> None:
    decision = create(SERVED, isvc_doc(runtime_name="rt"))
    assert (decision.allowed, decision.warnings, decision.outcome) == (
        True,
        (),
        OutcomeKind.RUNTIME_SPECIFIED,
    )


def test_product_page_named_runtime_outside_its_range_is_allowed_with_the_advisory() -> None:
    catalog = catalog_of(
        runtime_doc("srt-llama-3-2-1b-instruct", entry(auto_select=False), min="500M", max="2B"),
        runtime_doc("srt-llama-3-2-3b-instruct", entry(), min="2B", max="4B"),
        model_doc("llama-3-2-3b-instruct", size="3.21B"),
    )
    doc = isvc_doc(model_name="llama-3-2-3b-instruct", runtime_name="srt-llama-3-2-1b-instruct")
    decision = create(catalog, doc)
    assert decision.allowed
    assert decision.warnings == (
        "runtime srt-llama-3-2-1b-instruct does not declare support for model llama-3-2-3b-instruct: "
        "model size 3.21B is outside supported range [500M, 2B]",
    )


def test_advisory_warning_is_cut_to_256_characters_ending_in_an_ellipsis() -> None:
    long_name = "x" * 120
    catalog = catalog_of(model_doc("m", size="3B"), runtime_doc(long_name, entry("onnx")))
    decision = create(catalog, isvc_doc(runtime_name=long_name))
    (warning,) = decision.warnings
    full = f"runtime {long_name} does not declare support for model m: model format 'mt:safetensors' not in"
    assert len(warning) == 256
    assert warning.endswith("…")
    assert warning.startswith(full)


def test_auto_selection_picks_a_runtime() -> None:
    # SPEC §7 v4: with the success warning, OME v1.3's wording with a lower-case first word.
    decision = create(SERVED, isvc_doc())
    assert (decision.allowed, decision.warnings, decision.outcome) == (
        True,
        ("runtime rt will be auto-selected for model m",),
        OutcomeKind.RUNTIME_SELECTED,
    )
    quiet = decide_inference_service(SERVED, isvc_doc(), None, "CREATE", report_only=True)
    assert (quiet.allowed, quiet.warnings) == (True, ())  # OME's own webhook says it beside --report-only


def test_auto_selection_impossible_is_denied_with_the_no_runtime_message() -> None:
    catalog = catalog_of(
        MODEL,
        runtime_doc("small", entry(), max="1B"),
        runtime_doc("local", entry(auto_select=False), namespace=NS),
        runtime_doc("onnx", entry("onnx")),
    )
    decision = create(catalog, isvc_doc())
    assert decision == Decision(
        allowed=False,
        message=(
            "no runtime supports model m (checked 3 runtimes: 1 namespace-scoped, 2 cluster-scoped): "
            "ns/local (autoSelect is not enabled for the matching format safetensors); "
            "small (model size 3B is outside supported range (-inf, 1B]); 1 runtime serves other formats"
        ),
        confirm=Lookup(NS, "m", None),
        outcome=OutcomeKind.NO_RUNTIME,
    )


def test_no_runtime_installed() -> None:
    decision = create(catalog_of(MODEL), isvc_doc())
    assert decision.message == (
        "no runtime supports model m (checked 0 runtimes: 0 namespace-scoped, 0 cluster-scoped): "
        "no runtimes are installed"
    )


def test_no_runtime_denial_is_capped_at_1024_characters() -> None:
    runtimes = [runtime_doc(f"runtime-{i:03d}-{'r' * 40}", entry(), max="1B") for i in range(40)]
    decision = create(catalog_of(MODEL, *runtimes), isvc_doc(name="big"))
    assert not decision.allowed
    assert len(decision.message) <= 1024
    assert decision.message.endswith("more (kubectl ome-selector runtime explain --isvc big -n ns)")


# --- InferenceService: deferral -----------------------------------------------------------------------------

NO_RUNTIME = catalog_of(MODEL)


@pytest.mark.parametrize(
    ("engine", "allowed"),
    [
        pytest.param({"runner": {"image": "img"}}, True, id="runner-image"),
        pytest.param(
            {"leader": {"runner": {"image": "a"}}, "worker": {"runner": {"image": "b"}}},
            True,
            id="leader-and-worker",
        ),
        pytest.param({"leader": {"runner": {"image": "a"}}}, False, id="leader-only"),
        pytest.param({"worker": {"runner": {"image": "b"}}}, False, id="worker-only"),
        pytest.param({"runner": {"image": ""}}, False, id="empty-image"),
        pytest.param({"runner": {"name": "main"}}, False, id="runner-without-image"),
    ],
)
def test_engine_image_defers_auto_selection(engine: dict[str, Any], allowed: bool) -> None:
    decision = create(NO_RUNTIME, isvc_doc(engine=engine))
    assert decision.allowed is allowed
    assert decision.warnings == ()


def test_deferral_does_not_skip_the_model_checks() -> None:
    decision = create(catalog_of(RUNTIME), isvc_doc(engine={"runner": {"image": "img"}}))
    assert decision.message == "model m not found: no BaseModel in namespace ns and no ClusterBaseModel"


def test_deferral_does_not_skip_a_named_runtime() -> None:
    decision = create(catalog_of(MODEL), isvc_doc(runtime_name="nope", engine={"runner": {"image": "img"}}))
    assert decision.message == "runtime nope not found in namespace ns or at cluster scope"


# --- InferenceService: UPDATE -------------------------------------------------------------------------------


def test_update_without_matcher_change_is_allowed_with_the_denial_as_a_warning() -> None:
    old = isvc_doc()
    new = isvc_doc(labels={"team": "a"})
    decision = update(catalog_of(RUNTIME), old, new)
    assert decision.allowed
    assert decision.warnings == ("model m not found: no BaseModel in namespace ns and no ClusterBaseModel",)
    assert decision.confirm == Lookup(NS, "m", None)


def test_update_without_matcher_change_cuts_a_long_verdict_to_256() -> None:
    runtimes = [runtime_doc(f"runtime-{i:03d}", entry(), max="1B") for i in range(20)]
    decision = update(catalog_of(MODEL, *runtimes), isvc_doc(), isvc_doc(labels={"a": "b"}))
    (warning,) = decision.warnings
    assert decision.allowed
    assert len(warning) == 256
    assert warning.startswith("no runtime supports model m (checked 20 runtimes")
    assert warning.endswith("…")


def test_update_without_matcher_change_repeats_no_allowed_warning() -> None:
    catalog = catalog_of(MODEL, runtime_doc("rt", entry(), max="1B"))
    old = isvc_doc(runtime_name="rt")
    decision = update(catalog, old, isvc_doc(runtime_name="rt", labels={"a": "b"}))
    assert (decision.allowed, decision.warnings) == (True, ())


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"model_name": "other"}, id="model"),
        pytest.param({"runtime_name": "rt"}, id="runtime"),
        pytest.param({"auto_sync": False}, id="autoSync"),
        pytest.param({"engine": {"acceleratorOverride": {"acceleratorClass": "a100"}}}, id="accelerator"),
        pytest.param({"engine": {"runner": {"image": "x"}}}, id="image"),
    ],
)
def test_update_with_a_matcher_change_is_judged(change: dict[str, Any]) -> None:
    catalog = catalog_of(RUNTIME)  # the model is missing: every judged update is denied
    decision = update(catalog, isvc_doc(engine={"runner": {"image": "y"}}), isvc_doc(**change))
    assert not decision.allowed


def test_update_adding_the_engine_is_judged() -> None:
    decision = update(catalog_of(RUNTIME), isvc_doc(engine=None), isvc_doc())
    assert not decision.allowed


def test_update_of_an_object_being_deleted_is_allowed() -> None:
    new = isvc_doc(model_name="gone", deletion_timestamp="2026-01-01T00:00:00Z")
    assert update(Catalog(), isvc_doc(model_name="gone"), new) == ALLOWED


# --- size values and operators ------------------------------------------------------------------------------


def _not_a_count(path: str, value: str, suggestion: str) -> str:
    return (
        f'{path} "{value}" is not a parameter count and reads as 0; '
        f"write a number with an optional M, B or T suffix, such as {suggestion}"
    )


@pytest.mark.parametrize(
    ("value", "suggestion"),
    [
        ("4b", "4B"),
        ("1.5b", "1.5B"),
        ("7m", "7M"),
        ("2t", "2T"),
        ("7 B", "4B"),
        ("1e9", "4B"),
        ("", "4B"),
        ("-1B", "4B"),
        ("4K", "4B"),
        ("inf", "4B"),
        ("3.21B ", "4B"),
    ],
)
def test_suggestion(value: str, suggestion: str) -> None:
    assert suggestion_for(value) == suggestion


@pytest.mark.parametrize("kind", [Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL])
@pytest.mark.parametrize(
    ("size", "warnings"),
    [
        ("3.21B", ()),
        ("0", ()),
        ("500M", ()),
        ("", ()),  # an empty size is "no size" (SPEC §2)
        (None, ()),
        ("4b", (_not_a_count("spec.modelParameterSize", "4b", "4B"),)),
        ("3.21 B", (_not_a_count("spec.modelParameterSize", "3.21 B", "4B"),)),
        ("1e9", (_not_a_count("spec.modelParameterSize", "1e9", "4B"),)),
    ],
)
def test_model_size_warnings(kind: Kind, size: str | None, warnings: tuple[str, ...]) -> None:
    doc = model_doc("m", size=size, namespace=NS if kind is Kind.BASE_MODEL else None)
    assert decide_sizes(kind, doc, None, "CREATE") == Decision(allowed=True, warnings=warnings)


@pytest.mark.parametrize("kind", [Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME])
@pytest.mark.parametrize(
    ("size_range", "warnings"),
    [
        ({"min": "1B", "max": "4B"}, ()),
        ({"min": "2B"}, ()),
        ({"max": "1.5B"}, ()),
        ({}, ()),
        ({"min": None, "max": "4B"}, ()),
        ({"min": "2B", "max": "2B"}, ()),
        ({"min": "2b", "max": "4B"}, (_not_a_count("spec.modelSizeRange.min", "2b", "2B"),)),
        ({"min": "", "max": "4B"}, (_not_a_count("spec.modelSizeRange.min", "", "4B"),)),
        (
            {"min": "2 B", "max": "4b"},
            (
                _not_a_count("spec.modelSizeRange.min", "2 B", "4B"),
                _not_a_count("spec.modelSizeRange.max", "4b", "4B"),
            ),
        ),
        (
            {"min": "4B", "max": "2000M"},
            ('spec.modelSizeRange.min "4B" is above max "2000M", so every model with a size is rejected',),
        ),
        # a bound that does not parse gets its own warning, not also "min above max"
        ({"min": "4B", "max": "2b"}, (_not_a_count("spec.modelSizeRange.max", "2b", "2B"),)),
    ],
)
def test_size_range_warnings(kind: Kind, size_range: dict[str, Any], warnings: tuple[str, ...]) -> None:
    doc = runtime_doc(
        "rt", entry(), size_range=size_range, namespace=NS if kind is Kind.SERVING_RUNTIME else None
    )
    assert decide_sizes(kind, doc, None, "CREATE") == Decision(allowed=True, warnings=warnings)


def test_unknown_operators_are_named_by_field_path() -> None:
    doc = runtime_doc(
        "rt",
        entry(operator="Equal", fw_operator="GreaterThan", framework="transformers"),
        entry(operator="GreaterThanOrEqual", framework="transformers", fw_operator="Greater"),
        entry(operator="equal"),
        entry(operator=""),
    )
    decision = decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, doc, None, "CREATE")
    assert decision.warnings == (
        'spec.supportedModelFormats[1].modelFramework.operator "Greater" is not a known operator, '
        "so this entry matches no versioned model",
        'spec.supportedModelFormats[2].modelFormat.operator "equal" is not a known operator, '
        "so this entry matches no versioned model",
        'spec.supportedModelFormats[3].modelFormat.operator "" is not a known operator, '
        "so this entry matches no versioned model",
    )


def test_warnings_come_in_field_order() -> None:
    doc = runtime_doc("rt", entry(operator="Bigger"), min="4b", max="1b")
    messages = [p.message for p in size_problems(Kind.CLUSTER_SERVING_RUNTIME, doc)]
    assert [m.split(" ", 1)[0] for m in messages] == [
        "spec.modelSizeRange.min",
        "spec.modelSizeRange.max",
        "spec.supportedModelFormats[0].modelFormat.operator",
    ]


def test_size_warnings_are_cut_to_256_characters() -> None:
    value = "9" * 400 + "b"
    decision = decide_sizes(Kind.CLUSTER_BASE_MODEL, model_doc("m", size=value), None, "CREATE")
    (warning,) = decision.warnings
    assert len(warning) == 256
    assert warning.startswith('spec.modelParameterSize "999')
    assert warning.endswith("…")


def test_size_checks_ignore_other_operations_and_unrelated_kinds() -> None:
    doc = model_doc("m", size="4b")
    assert decide_sizes(Kind.CLUSTER_BASE_MODEL, doc, None, "DELETE") == ALLOWED
    assert decide_sizes(Kind.INFERENCE_SERVICE, doc, None, "CREATE") == ALLOWED


# --- --strict-sizes -----------------------------------------------------------------------------------------


def test_strict_sizes_deny_new_problems() -> None:
    doc = runtime_doc("rt", entry(operator="Bigger"), min="4b")
    decision = decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, doc, None, "CREATE", strict=True)
    assert decision == Decision(
        allowed=False,
        message=_not_a_count("spec.modelSizeRange.min", "4b", "4B")
        + '; spec.supportedModelFormats[0].modelFormat.operator "Bigger" is not a known operator, '
        "so this entry matches no versioned model",
    )


def test_strict_sizes_keep_unchanged_values_as_warnings() -> None:
    old = runtime_doc("rt", entry(operator="Bigger"), min="4b", max="8B")
    new = runtime_doc("rt", entry(operator="Bigger"), min="4b", max="9B")
    decision = decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, new, old, "UPDATE", strict=True)
    assert decision.allowed
    assert len(decision.warnings) == 2


def test_strict_sizes_deny_a_changed_value() -> None:
    old = model_doc("m", size="4b")
    new = model_doc("m", size="5b")
    decision = decide_sizes(Kind.CLUSTER_BASE_MODEL, new, old, "UPDATE", strict=True)
    assert decision == Decision(allowed=False, message=_not_a_count("spec.modelParameterSize", "5b", "5B"))


def test_strict_min_above_max_is_unchanged_only_when_both_bounds_are() -> None:
    old = runtime_doc("rt", entry(), min="4B", max="2B")
    same = decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, copy.deepcopy(old), old, "UPDATE", strict=True)
    assert same.allowed
    assert len(same.warnings) == 1
    moved = runtime_doc("rt", entry(), min="3B", max="2B")
    assert not decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, moved, old, "UPDATE", strict=True).allowed


def test_strict_sizes_on_create_ignore_the_old_object() -> None:
    doc = model_doc("m", size="4b")
    assert not decide_sizes(Kind.CLUSTER_BASE_MODEL, doc, doc, "CREATE", strict=True).allowed


def test_strict_sizes_never_deny_an_object_being_deleted() -> None:
    doc = model_doc("m", size="4b")
    doc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    decision = decide_sizes(Kind.CLUSTER_BASE_MODEL, doc, model_doc("m", size="3b"), "UPDATE", strict=True)
    assert decision.allowed
    assert decision.warnings == (_not_a_count("spec.modelParameterSize", "4b", "4B"),)


# --- bounded work (SPEC §8) ------------------------------------------------------------------------------


def test_more_than_ten_problems_are_counted_not_written_out() -> None:
    doc = runtime_doc("rt", *[entry(operator=f"Op{index}") for index in range(900)])
    decision = decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, doc, None, "CREATE")
    assert len(decision.warnings) == MAX_SIZE_WARNINGS + 1
    assert decision.warnings[0].startswith('spec.supportedModelFormats[0].modelFormat.operator "Op0"')
    assert decision.warnings[-1] == (
        "… 890 more size or operator problems; `kubectl ome-selector runtime lint -f <file>` lists them all"
    )


def test_only_the_problems_shown_are_written_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # A step counter, not a clock: how many warning texts a 900-problem object costs.
    written: list[str] = []
    original = messages.unknown_operator_warning

    def counting(path: str, value: str) -> str:
        written.append(path)
        return original(path, value)

    monkeypatch.setattr(messages, "unknown_operator_warning", counting)
    doc = runtime_doc("rt", *[entry(operator=f"Op{index}") for index in range(900)])
    decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, doc, None, "CREATE")
    assert len(written) == MAX_SIZE_WARNINGS


def test_strict_denials_hold_no_more_problems_than_fit() -> None:
    doc = runtime_doc("rt", *[entry(operator=f"Op{index}") for index in range(300)])
    decision = decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, doc, None, "CREATE", strict=True)
    assert not decision.allowed
    assert len(decision.message) == 1024
    assert decision.message.endswith("…")


def test_an_object_too_large_to_read_is_allowed_with_one_warning_and_not_judged() -> None:
    doc = runtime_doc("rt", *[entry(operator="Bigger") for _ in range(MAX_FORMAT_ENTRIES + 1)], min="4b")
    decision = decide_sizes(Kind.CLUSTER_SERVING_RUNTIME, doc, None, "CREATE", strict=True)
    assert decision == Decision(
        allowed=True,
        warnings=(
            "ome-selector does not read this ClusterServingRuntime: spec.supportedModelFormats has 1001 "
            "entries, more than the 1000 ome-selector reads; it treats it as absent",
        ),
    )
