"""Named runtimes in SPEC §5 since v4: found by §1's lookup, judged on the effective spec, broken chains
(``RuntimeInheritanceError`` and the ``autoSync: false`` row), and InferenceServices without a model."""

from __future__ import annotations

from typing import Any

import pytest
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import ROWS, EventSpec, Outcome, OutcomeKind, evaluate


def outcome_of(c: Catalog, lookup: RuntimeLookup = RuntimeLookup.V1_3, **kwargs: Any) -> Outcome:
    result = evaluate(c, isvc(**kwargs), lookup)
    assert result is not None
    return result


def row(result: Outcome) -> tuple[str, str, str, EventSpec | None]:
    return result.status, result.reason, result.message, result.event


BROKEN = 'inherit-from parent "gone" not found (chain so far: [child])'


def broken() -> Catalog:
    return catalog(model(), runtime("child", entry(), namespace=NS, inherit_from="gone"))


def test_a_broken_chain_is_runtime_inheritance_error_with_its_event() -> None:
    result = outcome_of(broken(), runtime_name="child")
    message = f"runtime child cannot be resolved: {BROKEN}"
    assert result.kind is OutcomeKind.RUNTIME_INHERITANCE_ERROR
    assert row(result) == (
        "False",
        "RuntimeInheritanceError",
        message,
        EventSpec("Warning", "RuntimeInheritanceError", message),
    )
    assert result.runtime is not None
    assert result.runtime.name == "child"  # the runtime the lookup found
    assert result.chain_error is not None
    assert result.chain_error.missing_parent == "gone"
    assert ROWS[result.kind].denies_admission


def test_a_broken_chain_with_auto_sync_false_uses_the_pinned_runtime() -> None:
    result = outcome_of(broken(), runtime_name="child", auto_sync=False)
    assert result.kind is OutcomeKind.RUNTIME_SPECIFIED_UNRESOLVED
    assert row(result) == (
        "True",
        "RuntimeSpecified",
        f"using specified ServingRuntime child; live runtime cannot be resolved: {BROKEN}",
        None,
    )
    assert not ROWS[result.kind].denies_admission


def test_a_broken_chain_comes_before_disabled_and_support() -> None:
    c = catalog(model(fmt="onnx"), runtime("child", entry(), disabled=True, inherit_from="child"))
    result = outcome_of(c, runtime_name="child")
    assert result.message == "runtime child cannot be resolved: inheritance cycle detected: [child child]"


def test_a_named_runtime_disabled_by_an_ancestor_keeps_its_own_scope() -> None:
    c = catalog(
        model(), runtime("child", entry(), namespace=NS, inherit_from="base"), runtime("base", disabled=True)
    )
    result = outcome_of(c, runtime_name="child")
    assert row(result)[:3] == ("False", "RuntimeDisabled", "namespace-scoped runtime child is disabled")
    # disabled: false on the child overrides the parent.
    c = catalog(
        model(),
        runtime("child", entry(), disabled=False, inherit_from="base"),
        runtime("base", disabled=True),
    )
    assert outcome_of(c, runtime_name="child").message == "using specified ClusterServingRuntime child"


def test_a_named_runtime_is_judged_with_the_inherited_range_as_its_setter_wrote_it() -> None:
    c = catalog(
        model(size="20B"),
        runtime("child", max="13B", inherit_from="base"),
        runtime("base", entry(auto_select=False), min="1B"),
    )
    result = outcome_of(c, runtime_name="child")
    assert result.kind is OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED
    assert result.advisory == (
        "runtime child does not declare support for model m: "
        "model size 20B is outside supported range [1B, 13B]"
    )


def test_a_mode_mismatch_of_a_named_runtime_is_an_advisory() -> None:
    c = catalog(
        model(), runtime("child", inherit_from="base"), runtime("base", entry(), engine_mode="RawDeployment")
    )
    result = outcome_of(c, runtime_name="child", deployment_mode="OMENative")
    assert result.kind is OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED
    assert result.message == (
        "using specified ClusterServingRuntime child; it does not declare support for model m: "
        "runtime engine deployment mode RawDeployment does not match requested engine deployment mode "
        "OMENative"
    )


@pytest.mark.parametrize(
    ("kind", "lookup", "present", "message"),
    [
        ("ServingRuntime", RuntimeLookup.V1_3, "cluster", "ServingRuntime rt not found in namespace ns"),
        ("ServingRuntime", RuntimeLookup.LEGACY, "cluster", "using specified ClusterServingRuntime rt"),
        ("ClusterServingRuntime", RuntimeLookup.V1_3, "both", "using specified ClusterServingRuntime rt"),
        ("ClusterServingRuntime", RuntimeLookup.LEGACY, "both", "using specified ServingRuntime rt"),
        (None, RuntimeLookup.V1_3, "both", "using specified ServingRuntime rt"),
        (
            "ClusterServingRuntime",
            RuntimeLookup.V1_3,
            "none",
            "runtime rt not found in namespace ns or at cluster scope",
        ),
    ],
)
def test_the_named_runtime_is_found_by_kind(
    kind: str | None, lookup: RuntimeLookup, present: str, message: str
) -> None:
    resources: list[Any] = [model()]
    if present == "both":
        resources.append(runtime("rt", entry(), namespace=NS))
    if present in ("both", "cluster"):
        resources.append(runtime("rt", entry()))
    result = outcome_of(catalog(*resources), lookup, runtime_name="rt", runtime_kind=kind)
    assert result.message == message
    if result.kind is OutcomeKind.RUNTIME_NOT_FOUND:
        assert result.event == EventSpec("Warning", "RuntimeNotFound", message)


# --- without a model ---------------------------------------------------------------------------------------


def test_with_neither_a_model_nor_a_runtime_it_is_left_alone() -> None:
    assert evaluate(catalog(model()), isvc(model_name=None)) is None


@pytest.mark.parametrize(
    ("resources", "kwargs", "expected"),
    [
        (
            [],
            {},
            (
                "False",
                "RuntimeNotFound",
                "runtime rt not found in namespace ns or at cluster scope",
                "RuntimeNotFound",
            ),
        ),
        (
            [runtime("rt", inherit_from="gone")],
            {},
            (
                "False",
                "RuntimeInheritanceError",
                'runtime rt cannot be resolved: inherit-from parent "gone" not found (chain so far: [rt])',
                "RuntimeInheritanceError",
            ),
        ),
        (
            [runtime("rt", inherit_from="gone")],
            {"auto_sync": False},
            (
                "True",
                "RuntimeSpecified",
                "using specified ClusterServingRuntime rt; live runtime cannot be resolved: "
                'inherit-from parent "gone" not found (chain so far: [rt])',
                None,
            ),
        ),
        (
            [runtime("rt", namespace=NS, inherit_from="base"), runtime("base", disabled=True)],
            {},
            ("False", "RuntimeDisabled", "namespace-scoped runtime rt is disabled", "RuntimeDisabled"),
        ),
        # No support, accelerator or mode check: a runtime with no entries, other classes and modes is used.
        (
            [runtime("rt", classes=["h100"], engine_mode="RawDeployment")],
            {"selector_class": "a100", "deployment_mode": "OMENative"},
            ("True", "RuntimeSpecified", "using specified ClusterServingRuntime rt", None),
        ),
    ],
)
def test_without_a_model(resources: list[Any], kwargs: dict[str, Any], expected: tuple[Any, ...]) -> None:
    result = outcome_of(catalog(*resources), model_name=None, runtime_name="rt", **kwargs)
    status, reason, message, event_reason = expected
    assert (result.status, result.reason, result.message) == (status, reason, message)
    assert result.model is None
    if event_reason is None:
        assert result.event is None
    else:
        assert result.event == EventSpec("Warning", event_reason, message)
