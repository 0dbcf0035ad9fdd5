"""The one rule set for values OME reads as something else (SPEC §7 warnings, §11 SIZE001/SIZE002/OPER001)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.api.resources import Kind
from ome_selector.selection import messages
from ome_selector.selection.values import (
    ValueProblem,
    ValueRule,
    model_value_problems,
    runtime_value_problems,
    suggestion_for,
)
from ome_selector.webhook.decisions import size_problems

NOT_A_COUNT, MIN_ABOVE_MAX, UNKNOWN_OPERATOR = (
    ValueRule.NOT_A_COUNT,
    ValueRule.MIN_ABOVE_MAX,
    ValueRule.UNKNOWN_OPERATOR,
)
SIZE = ("spec", "modelParameterSize")
MIN, MAX = ("spec", "modelSizeRange", "min"), ("spec", "modelSizeRange", "max")


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (None, []),
        ("", []),  # no size (SPEC §2), not a value that reads as 0
        ("3.21B", []),
        ("4b", [ValueProblem(NOT_A_COUNT, (SIZE,), ("4b",))]),
        ("7 B", [ValueProblem(NOT_A_COUNT, (SIZE,), ("7 B",))]),
    ],
)
def test_model_sizes(size: str | None, expected: list[ValueProblem]) -> None:
    assert list(model_value_problems(size)) == expected


@pytest.mark.parametrize(
    ("minimum", "maximum", "operators", "expected"),
    [
        (None, None, [], []),
        ("1B", "8B", [(0, "modelFormat", "Equal")], []),
        (
            "",
            None,
            [],
            [ValueProblem(NOT_A_COUNT, (MIN,), ("",))],
        ),  # an empty bound is present and reads as 0
        ("8B", "1B", [], [ValueProblem(MIN_ABOVE_MAX, (MIN, MAX), ("8B", "1B"))]),
        # min above max needs two counts
        ("8b", "1B", [], [ValueProblem(NOT_A_COUNT, (MIN,), ("8b",))]),
        (
            None,
            "2x",
            [(0, "modelFormat", "Equal"), (1, "modelFramework", "Eq")],
            [
                ValueProblem(NOT_A_COUNT, (MAX,), ("2x",)),
                ValueProblem(
                    UNKNOWN_OPERATOR,
                    (("spec", "supportedModelFormats", 1, "modelFramework", "operator"),),
                    ("Eq",),
                ),
            ],
        ),
    ],
)
def test_runtime_values(
    minimum: str | None,
    maximum: str | None,
    operators: list[tuple[int, str, str]],
    expected: list[ValueProblem],
) -> None:
    assert list(runtime_value_problems(minimum, maximum, operators)) == expected


@pytest.mark.parametrize(
    ("value", "suggestion"), [("4b", "4B"), ("1.5t", "1.5T"), ("four", "4B"), ("", "4B")]
)
def test_suggestions(value: str, suggestion: str) -> None:
    assert suggestion_for(value) == suggestion


def test_one_problem_two_texts() -> None:
    """Admission and lint say the same thing of one problem; lint names the object and says what to do."""
    problem = ValueProblem(MIN_ABOVE_MAX, (MIN, MAX), ("8B", "1B"))
    warning = messages.value_warning(problem)
    assert warning == 'spec.modelSizeRange.min "8B" is above max "1B", so every model with a size is rejected'
    assert messages.value_finding("ClusterServingRuntime r", problem) == (
        f"ClusterServingRuntime r: {warning}; swap the bounds or correct one of them"
    )


_VALUES = st.one_of(st.none(), st.sampled_from(["", "1B", "8B", "4b", "500M", "x", "2T"]))


@given(minimum=_VALUES, maximum=_VALUES, operator=st.sampled_from(["Equal", "GreaterThan", "Eq", ""]))
def test_the_webhook_reads_a_raw_body_as_the_rule_set_reads_its_values(
    minimum: str | None, maximum: str | None, operator: str
) -> None:
    size_range = {bound: value for bound, value in (("min", minimum), ("max", maximum)) if value is not None}
    body = {
        "spec": {
            "modelSizeRange": size_range,
            "supportedModelFormats": [{"modelFormat": {"name": "safetensors", "operator": operator}}],
        }
    }
    from_body = [p.problem for p in size_problems(Kind.CLUSTER_SERVING_RUNTIME, body)]
    assert from_body == list(runtime_value_problems(minimum, maximum, [(0, "modelFormat", operator)]))
