"""SPEC §7 since v4: kind-aware lookup, broken chains, InferenceServices without a model, the success warning
and the mode warning — every text character for character."""

from __future__ import annotations

from typing import Any

import pytest
from selection_builders import NS, entry, model_doc, runtime_doc

from ome_selector.api.loading import load_resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import OutcomeKind
from ome_selector.webhook.decisions import Decision, Lookup, decide_inference_service

GV = "ome.io/v1beta1"
MODE_WARNING = (
    "spec.engine and spec.decoder ask for different deployment modes ({}, {}); "
    "OME denies this: InvalidDeploymentModeCombination"
)


def isvc_doc(
    *, model: str | None = "m", runtime: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"engine": {}, **spec}
    if model is not None:
        body["model"] = {"name": model}
    if runtime is not None:
        body["runtime"] = runtime
    return {
        "apiVersion": GV,
        "kind": "InferenceService",
        "metadata": {"name": "svc", "namespace": NS},
        "spec": body,
    }


def catalog_of(*docs: dict[str, Any]) -> Catalog:
    return Catalog.from_resources(r for r in map(load_resource, docs) if r is not None)


def create(catalog: Catalog, doc: dict[str, Any], **kwargs: Any) -> Decision:
    return decide_inference_service(catalog, doc, None, "CREATE", **kwargs)


MODEL = model_doc("m", size="3B")
BROKEN_TEXT = 'runtime child cannot be resolved: inherit-from parent "gone" not found (chain so far: [child])'


def broken() -> Catalog:
    return catalog_of(MODEL, runtime_doc("child", entry(), inherit_from="gone"))


def test_a_broken_chain_is_denied_and_confirmed_by_reading_the_missing_parent() -> None:
    decision = create(broken(), isvc_doc(runtime={"name": "child"}))
    assert (decision.allowed, decision.message, decision.outcome) == (
        False,
        BROKEN_TEXT,
        OutcomeKind.RUNTIME_INHERITANCE_ERROR,
    )
    assert decision.confirm == Lookup(NS, "m", "child", None)
    confirmed = create(broken(), isvc_doc(runtime={"name": "child"}), confirmed=True)
    assert (confirmed.allowed, confirmed.message, confirmed.confirm) == (False, BROKEN_TEXT, None)


def test_a_cycle_is_denied_without_a_confirming_read() -> None:
    catalog = catalog_of(MODEL, runtime_doc("child", entry(), inherit_from="child"))
    decision = create(catalog, isvc_doc(runtime={"name": "child"}))
    assert (decision.allowed, decision.message, decision.confirm) == (
        False,
        "runtime child cannot be resolved: inheritance cycle detected: [child child]",
        None,
    )


def test_a_broken_chain_with_auto_sync_false_is_allowed_with_the_chain_text() -> None:
    decision = create(broken(), isvc_doc(runtime={"name": "child", "autoSync": False}))
    assert (decision.allowed, decision.warnings) == (True, (BROKEN_TEXT,))


@pytest.mark.parametrize(
    ("runtimes", "runtime", "expected"),
    [
        ([], {"name": "rt"}, (True, (), OutcomeKind.RUNTIME_NOT_FOUND)),  # a runtime created later serves it
        (
            [runtime_doc("rt", inherit_from="gone")],
            {"name": "rt"},
            (False, (), OutcomeKind.RUNTIME_INHERITANCE_ERROR),
        ),
        (
            [runtime_doc("rt", namespace=NS, inherit_from="base"), runtime_doc("base", disabled=True)],
            {"name": "rt"},
            (False, (), OutcomeKind.RUNTIME_DISABLED),
        ),
        ([runtime_doc("rt", classes=["h100"])], {"name": "rt"}, (True, (), OutcomeKind.RUNTIME_SPECIFIED)),
    ],
)
def test_without_a_model(
    runtimes: list[dict[str, Any]], runtime: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    decision = create(catalog_of(*runtimes), isvc_doc(model=None, runtime=runtime))
    assert (decision.allowed, decision.warnings, decision.outcome) == expected
    if not decision.allowed:
        assert decision.message in (
            'runtime rt cannot be resolved: inherit-from parent "gone" not found (chain so far: [rt])',
            "namespace-scoped runtime rt is disabled",
        )


def test_with_neither_a_model_nor_a_runtime_it_is_allowed_untouched() -> None:
    decision = create(catalog_of(), isvc_doc(model=None))
    assert (decision.allowed, decision.warnings, decision.outcome) == (True, (), None)


@pytest.mark.parametrize(
    ("kind", "lookup", "allowed", "message"),
    [
        ("ServingRuntime", RuntimeLookup.V1_3, False, "ServingRuntime rt not found in namespace ns"),
        ("ServingRuntime", RuntimeLookup.LEGACY, True, ""),  # the ClusterServingRuntime, whatever the kind
        ("ClusterServingRuntime", RuntimeLookup.V1_3, True, ""),
    ],
)
def test_the_named_runtime_is_found_by_kind(
    kind: str, lookup: RuntimeLookup, allowed: bool, message: str
) -> None:
    catalog = catalog_of(MODEL, runtime_doc("rt", entry()))
    decision = create(catalog, isvc_doc(runtime={"name": "rt", "kind": kind}), lookup=lookup)
    assert (decision.allowed, decision.message) == (allowed, message)
    if not allowed:
        assert decision.confirm == Lookup(NS, "m", "rt", "ServingRuntime", RuntimeLookup.V1_3)


def test_success_warning_and_report_only() -> None:
    catalog = catalog_of(MODEL, runtime_doc("rt", entry()))
    assert create(catalog, isvc_doc()).warnings == ("runtime rt will be auto-selected for model m",)
    assert create(catalog, isvc_doc(), report_only=True).warnings == ()
    # Not when auto-selection is left until after admission.
    assert create(catalog, isvc_doc(engine={"runner": {"image": "x"}})).warnings == ()


@pytest.mark.parametrize(
    ("spec", "warning"),
    [
        (
            {
                "deploymentMode": "OMENative",
                "decoder": {"annotations": {"ome.io/deploymentMode": "RawDeployment"}},
            },
            ("OMENative", "RawDeployment"),
        ),
        (
            {
                "engine": {"annotations": {"ome.io/deploymentMode": "MultiNode"}},
                "decoder": {"annotations": {"ome.io/deploymentMode": "OMENative"}},
            },
            ("MultiNode", "OMENative"),
        ),
        (
            {
                "engine": {"annotations": {"ome.io/deploymentMode": "MultiNode"}},
                "decoder": {"annotations": {"ome.io/deploymentMode": "RawDeployment"}},
            },
            None,
        ),  # neither is OMENative
        ({"deploymentMode": "OMENative", "decoder": {}}, None),  # the same mode
        (
            {
                "engine": {"annotations": {"ome.io/deploymentMode": "RawDeployment"}},
                "deploymentMode": "OMENative",
            },
            None,
        ),  # no decoder
        (
            {"engine": {"annotations": {"ome.io/deploymentMode": "RawDeployment"}}, "decoder": {}},
            None,
        ),  # the decoder's raw mode is "": neither is OMENative
    ],
)
def test_the_mode_warning(spec: dict[str, Any], warning: tuple[str, str] | None) -> None:
    catalog = catalog_of(MODEL, runtime_doc("rt", entry()))
    expected = () if warning is None else (MODE_WARNING.format(*warning),)
    decision = create(catalog, isvc_doc(**spec), report_only=True)
    assert decision.allowed
    assert decision.warnings == expected


def test_the_mode_warning_comes_with_any_verdict() -> None:
    spec: dict[str, Any] = {
        "deploymentMode": "RawDeployment",
        "decoder": {"annotations": {"ome.io/deploymentMode": "OMENative"}},
    }
    warning = MODE_WARNING.format("RawDeployment", "OMENative")
    denied = create(catalog_of(), isvc_doc(**spec))  # model missing
    assert (denied.allowed, denied.warnings) == (False, (warning,))
    deferred = create(catalog_of(MODEL), isvc_doc(engine={"runner": {"image": "x"}}, **spec))
    assert (deferred.allowed, deferred.warnings) == (True, (warning,))
    old = isvc_doc(**spec)
    unchanged = decide_inference_service(catalog_of(MODEL, runtime_doc("rt", entry())), old, old, "UPDATE")
    assert (unchanged.allowed, unchanged.warnings) == (True, (warning,))


def test_a_mode_mismatch_of_a_named_runtime_is_an_advisory_warning() -> None:
    catalog = catalog_of(MODEL, runtime_doc("rt", entry(), engine_mode="RawDeployment"))
    decision = create(catalog, isvc_doc(runtime={"name": "rt"}, deploymentMode="OMENative"))
    assert (decision.allowed, decision.warnings) == (
        True,
        (
            "runtime rt does not declare support for model m: runtime engine deployment mode RawDeployment "
            "does not match requested engine deployment mode OMENative",
        ),
    )


@pytest.mark.parametrize(
    "change",
    [
        {"runtime": {"name": "rt", "kind": "ServingRuntime"}},
        {"deploymentMode": "OMENative"},
        {"decoder": {}},
        {"engine": {"annotations": {"ome.io/deploymentMode": "OMENative"}}},
    ],
)
def test_an_update_of_a_v4_field_is_judged(change: dict[str, Any]) -> None:
    catalog = catalog_of(MODEL)  # no runtime: every judged UPDATE is denied
    old = isvc_doc(runtime={"name": "rt"})
    new = isvc_doc(**{"runtime": {"name": "rt"}, **change})
    assert not decide_inference_service(catalog, new, old, "UPDATE").allowed
