"""The deployment-mode check (SPEC §3 check 3): where each side declares a mode, engine before decoder, the
reason texts, its place before the format check and in the nearest-miss order (SPEC §5)."""

from __future__ import annotations

from typing import Any

import pytest
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import NO_MODES, DeploymentModes
from ome_selector.selection.matcher import Step, check
from ome_selector.selection.outcome import evaluate
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile


def annotated(mode: str) -> dict[str, Any]:
    return {"annotations": {"ome.io/deploymentMode": mode, "other": "x"}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, NO_MODES),
        ({"deployment_mode": "RawDeployment"}, ("RawDeployment", None)),  # also without spec.engine
        ({"engine": annotated("OMENative"), "deployment_mode": "RawDeployment"}, ("OMENative", None)),
        ({"engine": annotated("bogus"), "deployment_mode": "RawDeployment"}, ("RawDeployment", None)),
        ({"engine": annotated(""), "deployment_mode": "RawDeployment"}, ("RawDeployment", None)),
        ({"engine": annotated("MultiNode")}, ("MultiNode", None)),
        ({"engine": annotated("VirtualDeployment")}, ("VirtualDeployment", None)),
        ({"engine": annotated("rawdeployment")}, NO_MODES),  # compared exactly
        ({"decoder": {}, "deployment_mode": "OMENative"}, ("OMENative", "OMENative")),
        (
            {"decoder": annotated("RawDeployment"), "deployment_mode": "OMENative"},
            ("OMENative", "RawDeployment"),
        ),
        ({"decoder": annotated("MultiNode")}, (None, "MultiNode")),
        (
            {"deployment_mode": "bogus"},
            NO_MODES,
        ),  # outside the enum, read like an annotation (from a cluster)
        (
            {"annotations": {"ome.io/deploymentMode": "RawDeployment"}},
            NO_MODES,
        ),  # metadata never declares one
    ],
)
def test_the_modes_an_inference_service_declares(spec: dict[str, Any], expected: tuple[Any, Any]) -> None:
    assert isvc(**spec).deployment_modes == expected


def profile(**kwargs: Any) -> RuntimeProfile:
    return RuntimeProfile.of(runtime("rt", entry(), **kwargs))


@pytest.mark.parametrize(
    ("runtime_modes", "modes", "reason"),
    [
        ({}, ("RawDeployment", "OMENative"), None),
        ({"engine_mode": "RawDeployment"}, ("RawDeployment", None), None),
        ({"engine_mode": "RawDeployment"}, (None, "OMENative"), None),  # a side that declares nothing passes
        (
            {"engine_mode": "RawDeployment"},
            ("OMENative", None),
            "runtime engine deployment mode RawDeployment does not match requested engine deployment mode "
            "OMENative",
        ),
        (
            {"decoder_mode": "MultiNode"},
            ("OMENative", "OMENative"),
            "runtime decoder deployment mode MultiNode does not match requested decoder deployment mode "
            "OMENative",
        ),
        (  # the engine is compared first
            {"engine_mode": "MultiNode", "decoder_mode": "MultiNode"},
            ("OMENative", "RawDeployment"),
            "runtime engine deployment mode MultiNode does not match requested engine deployment mode "
            "OMENative",
        ),
        ({"engine_mode": "bogus"}, ("OMENative", None), None),  # an invalid runtime mode declares nothing
        ({"engine_mode": "OMENative"}, NO_MODES, None),  # no InferenceService: nothing declared
    ],
)
def test_the_mode_check(
    runtime_modes: dict[str, str], modes: tuple[str | None, str | None], reason: str | None
) -> None:
    result = check(profile(**runtime_modes), ModelProfile.of(model()), (), DeploymentModes(*modes))
    if reason is None:
        assert result.failed is None
    else:
        assert (result.failed, result.reason) == (Step.MODE, reason)
        assert result.score == 1  # the matching entry still gives the score (SPEC §4)


def test_the_mode_is_checked_after_the_accelerator_and_before_the_formats() -> None:
    m = ModelProfile.of(model(fmt="onnx"))
    modes = DeploymentModes("OMENative", None)
    wrong_format = profile(engine_mode="RawDeployment")
    assert check(wrong_format, m, (), modes).failed is Step.MODE
    assert check(profile(engine_mode="RawDeployment", classes=["h100"]), m, ("a100",), modes).failed is (
        Step.ACCELERATOR
    )


def test_nearest_miss_order_with_the_mode_step() -> None:
    h100 = ["h100"]
    c = catalog(
        model(size="3B"),
        runtime("a-format", entry(arch="X"), classes=h100),
        runtime("b-mode", entry(), engine_mode="RawDeployment", classes=h100),
        runtime("c-accelerator", entry(), classes=["a100"]),
        runtime("d-disabled", entry(), disabled=True),
        runtime("e-auto", entry(auto_select=False), classes=h100, engine_mode="OMENative"),
        runtime("f-size", entry(), max="1M", classes=h100),
    )
    service = isvc(deployment_mode="OMENative", engine={"acceleratorOverride": {"acceleratorClass": "h100"}})
    outcome = evaluate(c, service)
    assert outcome is not None
    # Latest step first: auto-select, size (5), formats (4), mode (3), accelerator (2), disabled (1).
    assert outcome.message == (
        "no runtime supports model m (checked 6 runtimes: 0 namespace-scoped, 6 cluster-scoped): "
        "e-auto (autoSelect is not enabled for the matching format safetensors); "
        "f-size (model size 3B is outside supported range (-inf, 1M]); "
        "a-format (model format 'mt:safetensors' not in supported formats: "
        "model has no architecture but runtime requires X); "
        "b-mode (runtime engine deployment mode RawDeployment does not match requested engine "
        "deployment mode OMENative); "
        "c-accelerator (runtime does not support the required accelerator class); "
        "d-disabled (runtime is disabled)"
    )


def test_the_mode_never_counts_in_the_score_and_only_filters() -> None:
    c = catalog(
        model(),
        runtime("a", entry(), engine_mode="OMENative"),
        runtime("b", entry(priority=5), engine_mode="RawDeployment"),
        runtime("c", entry(priority=3), namespace=NS),
    )
    raw = evaluate(c, isvc(name="raw", deployment_mode="RawDeployment"))
    assert raw is not None
    # c declares no mode: it passes, and ranks first by its scope alone (SPEC §4 step 1, §5).
    assert (
        raw.message
        == "selected ServingRuntime c (score 3; namespace-scoped before ClusterServingRuntime b at score 5)"
    )
    c2 = catalog(
        model(),
        runtime("a", entry(), engine_mode="OMENative"),
        runtime("b", entry(priority=5), engine_mode="RawDeployment"),
    )
    for mode, expected in (
        ("OMENative", "selected ClusterServingRuntime a (score 1)"),  # b, higher score, is filtered out
        ("RawDeployment", "selected ClusterServingRuntime b (score 5)"),
        (None, "selected ClusterServingRuntime b (score 5)"),
    ):
        outcome = evaluate(c2, isvc(deployment_mode=mode))
        assert outcome is not None
        assert outcome.message == expected


def test_the_memo_keeps_one_result_per_mode() -> None:
    c = catalog(
        model(),
        runtime("a", entry(), engine_mode="OMENative"),
        runtime("b", entry(), engine_mode="RawDeployment"),
    )
    first = evaluate(c, isvc(deployment_mode="RawDeployment"))
    second = evaluate(c, isvc(deployment_mode="OMENative"))
    assert first is not None
    assert second is not None
    assert (first.message, second.message) == (
        "selected ClusterServingRuntime b (score 1)",
        "selected ClusterServingRuntime a (score 1)",
    )
