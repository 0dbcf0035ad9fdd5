"""Outcomes for an InferenceService (SPEC §5): the nine rows, events, the advisory, the no-runtime message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import NS, catalog, entry, isvc, model, no_runtime_message_from, runtime

from ome_selector.api.resources import Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.explain import explain
from ome_selector.selection.messages import MESSAGE_LIMIT
from ome_selector.selection.outcome import EventSpec, Outcome, OutcomeKind, evaluate


def outcome_of(c: Catalog, **kwargs: object) -> Outcome:
    result = evaluate(c, isvc(**kwargs))  # type: ignore[arg-type]
    assert result is not None
    return result


def test_without_spec_model_it_is_left_alone() -> None:
    assert evaluate(catalog(), isvc(model_name=None)) is None


def test_row_runtime_selected() -> None:
    c = catalog(model(), runtime("rt", entry(priority=2)))
    result = outcome_of(c)
    assert (result.kind, result.status, result.reason) == (
        OutcomeKind.RUNTIME_SELECTED,
        "True",
        "RuntimeSelected",
    )
    assert result.message == "selected ClusterServingRuntime rt (score 2)"
    assert result.event is None
    assert result.runtime is not None
    assert result.runtime.name == "rt"


def test_row_runtime_specified() -> None:
    c = catalog(model(), runtime("rt", entry(auto_select=False), namespace=NS))
    result = outcome_of(c, runtime_name="rt")
    assert (result.kind, result.status, result.reason) == (
        OutcomeKind.RUNTIME_SPECIFIED,
        "True",
        "RuntimeSpecified",
    )
    assert result.message == "using specified ServingRuntime rt"
    assert (result.event, result.advisory) == (None, None)


def test_row_runtime_specified_unsupported_with_advisory() -> None:
    c = catalog(model(size="3.21B"), runtime("srt-small", entry(auto_select=False), min="500M", max="2B"))
    result = outcome_of(c, runtime_name="srt-small")
    reason = "model size 3.21B is outside supported range [500M, 2B]"
    assert (result.kind, result.status, result.reason) == (
        OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED,
        "True",
        "RuntimeSpecified",
    )
    assert result.message == (
        f"using specified ClusterServingRuntime srt-small; it does not declare support for model m: {reason}"
    )
    advisory = f"runtime srt-small does not declare support for model m: {reason}"
    assert result.advisory == advisory
    assert result.event == EventSpec("Warning", "RuntimeCompatibilityAdvisory", advisory)


@pytest.mark.parametrize(("auto_sync", "has_event"), [(None, True), (True, True), (False, False)])
def test_advisory_event_is_not_repeated_for_pinned_runtimes(auto_sync: bool | None, has_event: bool) -> None:
    c = catalog(model(), runtime("rt", entry("onnx")))
    result = outcome_of(c, runtime_name="rt", auto_sync=auto_sync)
    assert result.kind is OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED
    assert (result.event is not None) is has_event
    assert result.advisory is not None  # the webhook warns either way


def test_named_runtime_accelerator_mismatch_is_an_advisory() -> None:
    c = catalog(model(), runtime("rt", entry(), classes=["a100"]))
    result = outcome_of(c, runtime_name="rt", selector_class="h100")
    assert result.advisory == (
        "runtime rt does not declare support for model m: "
        "runtime does not support the required accelerator class"
    )


@pytest.mark.parametrize(("namespace", "scope"), [(NS, "namespace-scoped"), (None, "cluster-scoped")])
def test_row_runtime_disabled(namespace: str | None, scope: str) -> None:
    c = catalog(model(), runtime("rt", entry(), namespace=namespace, disabled=True))
    result = outcome_of(c, runtime_name="rt")
    message = f"{scope} runtime rt is disabled"
    assert (result.kind, result.status, result.reason, result.message) == (
        OutcomeKind.RUNTIME_DISABLED,
        "False",
        "RuntimeDisabled",
        message,
    )
    assert result.event == EventSpec("Warning", "RuntimeDisabled", message)


def test_row_named_runtime_missing() -> None:
    c = catalog(model(), runtime("rt", entry(), namespace="elsewhere"))
    result = outcome_of(c, runtime_name="rt")
    message = "runtime rt not found in namespace ns or at cluster scope"
    assert (result.kind, result.status, result.reason, result.message) == (
        OutcomeKind.RUNTIME_NOT_FOUND,
        "False",
        "RuntimeNotFound",
        message,
    )
    assert result.event == EventSpec("Warning", "RuntimeNotFound", message)
    assert result.runtime is None


def test_row_model_missing() -> None:
    result = outcome_of(catalog(model("m", namespace="elsewhere")), runtime_name="rt")
    assert (result.kind, result.status, result.reason, result.event) == (
        OutcomeKind.MODEL_NOT_FOUND,
        "False",
        "ModelNotFound",
        None,
    )
    assert result.message == "model m not found: no BaseModel in namespace ns and no ClusterBaseModel"


def test_row_model_disabled() -> None:
    result = outcome_of(catalog(model(disabled=True), runtime("rt", entry())))
    assert (result.kind, result.status, result.reason, result.message, result.event) == (
        OutcomeKind.MODEL_DISABLED,
        "False",
        "ModelDisabled",
        "model m is disabled",
        None,
    )


def test_row_model_metadata_pending() -> None:
    result = outcome_of(catalog(model(fmt=None), runtime("rt", entry())), runtime_name="missing")
    assert (result.kind, result.status, result.reason, result.message, result.event) == (
        OutcomeKind.MODEL_METADATA_PENDING,
        "Unknown",
        "ModelMetadataPending",
        "model m has no modelFormat yet; runtime selection waits for it",
        None,
    )


def test_row_no_runtime() -> None:
    c = catalog(
        model(size="3.21B"),
        runtime("small", entry(), min="500M", max="2B"),
        runtime("manual", entry(auto_select=False)),
        runtime("local", entry(), namespace=NS, disabled=True),
        runtime("onnx-a", entry("onnx")),
        runtime("onnx-b", entry("onnx"), namespace=NS),
        runtime("hidden", entry(), namespace="elsewhere"),
    )
    result = outcome_of(c)
    message = (
        "no runtime supports model m (checked 5 runtimes: 2 namespace-scoped, 3 cluster-scoped): "
        "manual (autoSelect is not enabled for the matching format safetensors); "
        "small (model size 3.21B is outside supported range [500M, 2B]); "
        "ns/local (runtime is disabled); "
        "2 runtimes serve other formats"
    )
    assert (result.kind, result.status, result.reason, result.message) == (
        OutcomeKind.NO_RUNTIME,
        "False",
        "RuntimeNotFound",
        message,
    )
    assert result.event == EventSpec("Warning", "RuntimeNotFound", message)
    assert result.runtime is None


def test_models_of_one_spec_share_a_ranking_but_each_outcome_names_its_own_model() -> None:
    c = catalog(
        model("base", size="3B"),
        model("tuned", size="3B"),
        runtime("small", entry(), min="500M", max="2B"),
    )
    first = outcome_of(c, model_name="base")
    assert len(c.auto_selections) == 1
    second = outcome_of(c, model_name="tuned")
    assert len(c.auto_selections) == 1  # the second model read the first one's result
    assert first.message.startswith("no runtime supports model base ")
    assert second.message == first.message.replace("model base ", "model tuned ", 1)
    assert second.model is not None
    assert second.model.name == "tuned"
    c.upsert(runtime("wide", entry(), min="1B", max="8B"))
    assert outcome_of(c, model_name="tuned").message == "selected ClusterServingRuntime wide (score 1)"
    assert outcome_of(c, model_name="base").message == "selected ClusterServingRuntime wide (score 1)"


def test_no_runtime_with_no_runtimes_installed() -> None:
    result = outcome_of(catalog(model()))
    assert result.message == (
        "no runtime supports model m (checked 0 runtimes: 0 namespace-scoped, 0 cluster-scoped): "
        "no runtimes are installed"
    )


def test_no_runtime_when_only_other_formats_exist() -> None:
    result = outcome_of(catalog(model(), runtime("a", entry("onnx"))))
    assert result.message == (
        "no runtime supports model m (checked 1 runtime: 0 namespace-scoped, 1 cluster-scoped): "
        "1 runtime serves other formats"
    )
    two = outcome_of(catalog(model(), runtime("a", entry("onnx")), runtime("b", entry("onnx"))))
    assert two.message == (
        "no runtime supports model m (checked 2 runtimes: 0 namespace-scoped, 2 cluster-scoped): "
        "2 runtimes serve other formats"
    )


def test_nearest_misses_come_first_by_the_step_that_failed() -> None:
    # One runtime failing at each step, named so that name order would be the reverse of step order.
    h100 = ["h100"]  # the class the InferenceService asks for
    c = catalog(
        model(size="3B", arch="A"),
        runtime("a-disabled", entry(arch="A"), disabled=True, classes=h100),
        runtime("b-accelerator", entry(arch="A"), classes=["a100"]),
        runtime("c-format", entry(arch="B"), classes=h100),
        runtime("d-size", entry(arch="A"), max="1B", classes=h100),
        runtime("e-manual", entry(arch="A", auto_select=False), classes=h100),
        runtime("f-score", entry(arch="A", weight=-1), classes=h100),
        runtime("z-local-format", entry(arch="B"), namespace=NS, classes=h100),
        runtime("y-local-size", entry(arch="A"), namespace=NS, min="5B", classes=h100),
    )
    message = outcome_of(c, selector_class="h100").message
    listed = [part.split(" (")[0] for part in message.split("cluster-scoped): ", 1)[1].split("; ")]
    assert listed == [
        "e-manual",
        "f-score",
        "ns/y-local-size",
        "d-size",
        "ns/z-local-format",
        "c-format",
        "b-accelerator",
        "a-disabled",
    ]


def test_no_runtime_lists_a_runtime_whose_format_entry_does_not_match() -> None:
    result = outcome_of(catalog(model(version="1"), runtime("a", entry(version="2"))))
    assert result.message.endswith(
        "a (model format 'mt:safetensors:1' not in supported formats: "
        "format version mismatch (model=1, runtime=2))"
    )


def _many(count: int, reason_padding: int = 0) -> Catalog:
    arch = "A" * reason_padding if reason_padding else "Arch"  # the model has none: every entry fails
    runtimes = [runtime(f"rt-{i:03d}", entry(arch=arch)) for i in range(count)]
    others = [runtime(f"other-{i}", entry("onnx")) for i in range(3)]
    return catalog(model(), *runtimes, *others)


def test_no_runtime_message_is_capped_with_a_pointer_to_explain() -> None:
    result = outcome_of(_many(40), name="my-svc")
    message = result.message
    assert len(message) <= MESSAGE_LIMIT
    assert message.startswith(
        "no runtime supports model m (checked 43 runtimes: 0 namespace-scoped, 43 cluster-scoped): "
    )
    tail = "(kubectl ome-selector runtime explain --isvc my-svc -n ns)"
    assert message.endswith(tail)
    listed = message.count("rt-")
    assert listed >= 1
    assert f"; … {43 - listed} more {tail}" in message
    assert "serve other formats" not in message
    # whole entries only, in order
    head, body = message.split("cluster-scoped): ", 1)
    parts = body.split("; ")
    shown = [part.split(" ")[0] for part in parts[:-1]]
    assert shown == [f"rt-{i:03d}" for i in range(listed)]
    # and it is as full as it can be: one more entry would not fit
    next_entry = parts[0].replace("rt-000", f"rt-{listed:03d}")
    marker = f"… {43 - listed - 1} more {tail}"
    assert len(head + "cluster-scoped): " + "; ".join([*parts[:-1], next_entry, marker])) > MESSAGE_LIMIT
    assert result.event is not None
    assert result.event.message == message


def test_no_runtime_message_just_under_the_cap_is_not_cut() -> None:
    for count in range(1, 40):
        message = outcome_of(_many(count)).message
        if "more (kubectl" in message:
            assert len(message) <= MESSAGE_LIMIT
        else:
            assert message.endswith("3 runtimes serve other formats")
            assert message.count("rt-") == count


def test_no_runtime_message_when_not_even_one_entry_fits() -> None:
    result = outcome_of(_many(3, reason_padding=1200))
    assert len(result.message) <= MESSAGE_LIMIT
    assert result.message.endswith(": … 6 more (kubectl ome-selector runtime explain --isvc svc -n ns)")


# --- lookups ------------------------------------------------------------------------------------------------


def test_base_model_in_the_namespace_shadows_the_cluster_model() -> None:
    c = catalog(
        model("m", fmt="onnx"),
        model("m", namespace=NS),
        runtime("st", entry()),
        runtime("ox", entry("onnx")),
    )
    result = outcome_of(c)
    assert result.model is not None
    assert result.model.namespace == NS
    assert result.message == "selected ClusterServingRuntime st (score 1)"
    elsewhere = outcome_of(c, namespace="other")
    assert elsewhere.message == "selected ClusterServingRuntime ox (score 1)"


def test_serving_runtime_in_the_namespace_shadows_the_cluster_runtime() -> None:
    c = catalog(model(), runtime("rt", entry(), disabled=True), runtime("rt", entry(), namespace=NS))
    assert outcome_of(c, runtime_name="rt").message == "using specified ServingRuntime rt"
    assert outcome_of(c, runtime_name="rt", namespace="other").kind is OutcomeKind.RUNTIME_DISABLED


def test_denials() -> None:
    assert not outcome_of(catalog(model(), runtime("rt", entry()))).denies_admission
    assert outcome_of(catalog(model())).denies_admission
    assert outcome_of(catalog()).denies_admission
    assert not outcome_of(catalog(model(fmt=None))).denies_admission


# --- property: the indexed evaluation agrees with the full explanation --------------------------------------


@st.composite
def runtime_lists(draw: st.DrawFn) -> list[Runtime]:
    runtimes: dict[tuple[str, str | None], Runtime] = {}
    for _ in range(draw(st.integers(0, 8))):
        name = draw(st.sampled_from("abcdef"))
        namespace = draw(st.sampled_from([NS, None]))
        runtimes[(name, namespace)] = runtime(
            name,
            *[
                entry(
                    draw(st.sampled_from(["safetensors", "onnx"])),
                    priority=draw(st.integers(1, 3)),
                    auto_select=draw(st.booleans()),
                    arch=draw(st.none() | st.just("A")),
                )
                for _ in range(draw(st.integers(0, 2)))
            ],
            namespace=namespace,
            max=draw(st.none() | st.sampled_from(["1B", "9B"])),
            disabled=draw(st.booleans()),
        )
    return list(runtimes.values())


@settings(max_examples=200)
@given(runtime_lists(), st.none() | st.just("A"))
def test_evaluate_selects_what_explain_ranks_first(runtimes: list[Runtime], arch: str | None) -> None:
    m = model(size="3B", arch=arch)
    c = catalog(m, *runtimes)
    result = outcome_of(c)
    explanation = explain(c, m, NS)
    if explanation.selected is None:
        assert result.kind is OutcomeKind.NO_RUNTIME
        assert result.message == no_runtime_message_from(explanation, isvc())
    else:
        assert result.kind is OutcomeKind.RUNTIME_SELECTED
        assert result.runtime == explanation.selected.runtime
        assert result.message == explanation.selected_message
        assert result.message.startswith(
            f"selected {explanation.selected.runtime.kind.value} {explanation.selected.name} "
            f"(score {explanation.selected.score}"
        )
