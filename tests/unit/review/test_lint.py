"""Catalog lint (SPEC §11): each finding code on crafted catalogs, with exact objects and messages; the
namespaces judged; order, severities and the JSON document; properties on random catalogs."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lint_expectations import ties
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.lint import Code, Severity, has_errors, lint, lint_document
from ome_selector.selection.explain import explain

Expected = list[tuple[list[str], str]]


def found(resources: list[Resource], code: Code, namespaces: tuple[str, ...] = (NS,)) -> Expected:
    """The findings of ``code``, as (objects, message)."""
    return [
        ([str(key) for key in f.objects], f.message)
        for f in lint(catalog(*resources), namespaces)
        if f.code is code
    ]


def not_a_count(subject: str, path: str, value: str, suggestion: str) -> str:
    return (
        f'{subject}: {path} "{value}" is not a parameter count and reads as 0; '
        f"write a number with an optional M, B or T suffix, such as {suggestion}"
    )


# --- SIZE001 ------------------------------------------------------------------------------------------------

SIZE001_CASES = [
    pytest.param(
        [model(size="4b")],
        [
            (
                ["ClusterBaseModel m"],
                not_a_count("ClusterBaseModel m", "spec.modelParameterSize", "4b", "4B"),
            )
        ],
        id="lower-case-suffix-on-a-model",
    ),
    pytest.param(
        [model(size="7 B", namespace=NS)],
        [
            (
                ["BaseModel ns/m"],
                not_a_count("BaseModel ns/m", "spec.modelParameterSize", "7 B", "4B"),
            )
        ],
        id="space-on-a-base-model",
    ),
    pytest.param([model(size="")], [], id="empty-model-size-is-no-size"),
    pytest.param([model(size="0"), runtime("rt", entry(), min="0", max="0.5B")], [], id="valid-zero"),
    pytest.param(
        [runtime("rt", entry(), min="", max="1e9")],
        [
            (
                ["ClusterServingRuntime rt"],
                not_a_count("ClusterServingRuntime rt", "spec.modelSizeRange.max", "1e9", "4B"),
            ),
            (
                ["ClusterServingRuntime rt"],
                not_a_count("ClusterServingRuntime rt", "spec.modelSizeRange.min", "", "4B"),
            ),
        ],
        id="empty-min-and-exponent-max",
    ),
    pytest.param(
        [runtime("rt", entry(), namespace=NS, max="4B\n")],
        [
            (
                ["ServingRuntime ns/rt"],
                not_a_count("ServingRuntime ns/rt", "spec.modelSizeRange.max", "4B\\n", "4B"),
            )
        ],
        id="control-character-escaped",
    ),
    pytest.param(
        [runtime("rt", entry(), max="x" * 70)],
        [
            (
                ["ClusterServingRuntime rt"],
                not_a_count("ClusterServingRuntime rt", "spec.modelSizeRange.max", "x" * 64 + "…", "4B"),
            )
        ],
        id="long-value-cut",
    ),
]


@pytest.mark.parametrize(("resources", "expected"), SIZE001_CASES)
def test_size001(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.SIZE001) == expected


def test_size001_in_a_namespace_outside_the_views_is_not_judged() -> None:
    resources: list[Resource] = [runtime("rt", entry(), max="4b", namespace="other")]
    assert found(resources, Code.SIZE001) == []
    assert len(found(resources, Code.SIZE001, (NS, "other"))) == 1


# --- SIZE002 ------------------------------------------------------------------------------------------------


def above(subject: str, minimum: str, maximum: str) -> str:
    return (
        f'{subject}: spec.modelSizeRange.min "{minimum}" is above max "{maximum}", so every model with a '
        "size is rejected; swap the bounds or correct one of them"
    )


SIZE002_CASES = [
    pytest.param(
        runtime("rt", entry(), min="8B", max="2B"),
        [(["ClusterServingRuntime rt"], above("ClusterServingRuntime rt", "8B", "2B"))],
        id="min-above-max",
    ),
    pytest.param(
        runtime("rt", entry(), min="1500M", max="1B"),
        [(["ClusterServingRuntime rt"], above("ClusterServingRuntime rt", "1500M", "1B"))],
        id="compared-as-values",
    ),
    pytest.param(runtime("rt", entry(), min="500M", max="0.5B"), [], id="equal-values"),
    pytest.param(runtime("rt", entry(), min="8b", max="2B"), [], id="unparsed-bound-is-size001-only"),
    pytest.param(runtime("rt", entry(), min="8B"), [], id="one-bound"),
]


@pytest.mark.parametrize(("resource", "expected"), SIZE002_CASES)
def test_size002(resource: Resource, expected: Expected) -> None:
    assert found([resource], Code.SIZE002) == expected


# --- OPER001 ------------------------------------------------------------------------------------------------


def unknown_operator(subject: str, path: str, value: str) -> str:
    return (
        f'{subject}: {path} "{value}" is not a known operator, so the entry matches no versioned model; '
        "use Equal, GreaterThan or GreaterThanOrEqual"
    )


OPER001_CASES = [
    pytest.param(
        runtime("rt", entry(version="1.0.0", operator="GreaterOrEqual")),
        [
            (
                ["ClusterServingRuntime rt"],
                unknown_operator(
                    "ClusterServingRuntime rt",
                    "spec.supportedModelFormats[0].modelFormat.operator",
                    "GreaterOrEqual",
                ),
            )
        ],
        id="format-operator",
    ),
    pytest.param(
        runtime(
            "rt",
            entry(),
            entry(framework="transformers", fw_version="4.51.0", fw_operator="equal"),
            namespace=NS,
        ),
        [
            (
                ["ServingRuntime ns/rt"],
                unknown_operator(
                    "ServingRuntime ns/rt", "spec.supportedModelFormats[1].modelFramework.operator", "equal"
                ),
            )
        ],
        id="framework-operator-of-the-second-entry",
    ),
    pytest.param(
        runtime(
            "rt",
            entry(version="1", operator="GreaterThan"),
            entry(framework="transformers", fw_version="4", fw_operator="GreaterThanOrEqual"),
            entry(operator="Equal"),
        ),
        [],
        id="known-operators",
    ),
]


@pytest.mark.parametrize(("resource", "expected"), OPER001_CASES)
def test_oper001(resource: Resource, expected: Expected) -> None:
    assert found([resource], Code.OPER001) == expected


# --- SIZE003 ------------------------------------------------------------------------------------------------


def overlap(a: str, a_range: str, b: str, b_range: str, label: str = "mt:safetensors") -> str:
    return (
        f"{a} ({a_range}) and {b} ({b_range}) both auto-select {label} models in overlapping size ranges; "
        "make the ranges disjoint, or turn autoSelect off on one of them"
    )


A, B = "ClusterServingRuntime a", "ClusterServingRuntime b"
LLAMA: dict[str, Any] = {"arch": "LlamaForCausalLM", "framework": "transformers", "version": "1.0.0"}

SIZE003_CASES = [
    pytest.param(
        [runtime("a", entry(), min="1B", max="8B"), runtime("b", entry(), min="2B", max="4B")],
        [([A, B], overlap(A, "[1B, 8B]", B, "[2B, 4B]"))],
        id="nested-ranges",
    ),
    pytest.param(
        [runtime("a", entry(), min="1B", max="2B"), runtime("b", entry(), min="2000M", max="4B")],
        [([A, B], overlap(A, "[1B, 2B]", B, "[2000M, 4B]"))],
        id="touching-bounds-overlap-inclusively",
    ),
    pytest.param(
        [runtime("a", entry(), min="1B", max="2B"), runtime("b", entry(), min="2.5B", max="4B")],
        [],
        id="disjoint",
    ),
    pytest.param(
        [runtime("a", entry(), max="8B"), runtime("b", entry())],
        [([A, B], overlap(A, "(-inf, 8B]", B, "any size"))],
        id="open-bound-and-no-range",
    ),
    pytest.param(
        [runtime("a", entry(), max="1B"), runtime("b", entry(), min="2B")],
        [],
        id="open-bounds-apart",
    ),
    pytest.param(
        [runtime("a", entry(), min="8B", max="2B"), runtime("b", entry())],
        [],
        id="empty-range-holds-no-size",
    ),
    pytest.param([runtime("a", entry()), runtime("b", entry(auto_select=False))], [], id="manual"),
    pytest.param([runtime("a", entry()), runtime("b", entry(), disabled=True)], [], id="disabled"),
    pytest.param([runtime("a", entry()), runtime("b", entry(weight=-1))], [], id="score-below-1"),
    pytest.param([runtime("a", entry()), runtime("b", entry(), namespace=NS)], [], id="different-scopes"),
    pytest.param(
        [runtime("a", entry(), classes=["h100"]), runtime("b", entry(), classes=["a100"])],
        [([A, B], overlap(A, "any size", B, "any size"))],
        id="accelerator-classes-ignored",
    ),
    pytest.param(
        [runtime("a", entry(), namespace=NS), runtime("b", entry(), namespace=NS)],
        [
            (
                ["ServingRuntime ns/a", "ServingRuntime ns/b"],
                overlap("ServingRuntime ns/a", "any size", "ServingRuntime ns/b", "any size"),
            )
        ],
        id="one-namespace",
    ),
    pytest.param(
        [runtime("a", entry(), namespace=NS), runtime("b", entry(), namespace="other")],
        [],
        id="two-namespaces",
    ),
    pytest.param([runtime("a", entry(arch="X")), runtime("b", entry(arch="Y"))], [], id="architecture"),
    pytest.param([runtime("a", entry(quant="fp8")), runtime("b", entry())], [], id="quantization"),
    pytest.param([runtime("a", entry("onnx")), runtime("b", entry())], [], id="format-name"),
    pytest.param(
        [runtime("a", entry(framework="transformers")), runtime("b", entry())], [], id="framework-presence"
    ),
    pytest.param(
        [runtime("a", entry(framework="transformers")), runtime("b", entry(framework="vllm"))],
        [],
        id="framework-name",
    ),
    pytest.param([runtime("a", entry(version="1.0.0")), runtime("b", entry())], [], id="version-presence"),
    pytest.param(
        [runtime("a", entry(version="1.0.0")), runtime("b", entry(version="v1"))],
        [([A, B], overlap(A, "any size", B, "any size", "mt:safetensors:1.0.0"))],
        id="equal-ignores-precision-and-prefix",
    ),
    pytest.param(
        [runtime("a", entry(version="1.0.0")), runtime("b", entry(version="2.0.0"))], [], id="other-version"
    ),
    pytest.param(
        [
            runtime(
                "a", entry(framework="transformers", fw_version="4.51.0", fw_operator="GreaterThanOrEqual")
            ),
            runtime("b", entry(framework="transformers", fw_version="4.45.0")),
        ],
        [([A, B], overlap(A, "any size", B, "any size", "mt:safetensors:transformers:4.51.0"))],
        id="at-least-holds-an-equal",
    ),
    pytest.param(
        [
            runtime("a", entry(framework="transformers", fw_version="4.40.0", fw_operator="GreaterThan")),
            runtime("b", entry(framework="transformers", fw_version="4.45.0")),
        ],
        [],
        id="greater-than-excludes-a-higher-equal",
    ),
    pytest.param(
        [
            runtime("a", entry(framework="transformers", fw_version="4.51", fw_operator="GreaterThan")),
            runtime("b", entry(framework="transformers", fw_version="4.45.0")),
        ],
        [([A, B], overlap(A, "any size", B, "any size", "mt:safetensors:transformers:4.51"))],
        id="equal-written-in-the-others-precision",
    ),
    pytest.param(
        [
            runtime("a", entry(framework="transformers", fw_version="4.51", fw_operator="GreaterThan")),
            runtime("b", entry(framework="transformers", fw_version="4.45.1")),
        ],
        [],
        id="no-shorter-spelling",
    ),
    pytest.param(
        [
            runtime("a", entry(version="2", operator="GreaterThan")),
            runtime("b", entry(version="9", operator="GreaterThanOrEqual")),
        ],
        [([A, B], overlap(A, "any size", B, "any size", "mt:safetensors:2"))],
        id="two-upper-limits-share-zero",
    ),
    pytest.param(
        [
            runtime("a", entry(version="0", operator="GreaterThan")),
            runtime("b", entry(version="9", operator="GreaterThanOrEqual")),
        ],
        [],
        id="nothing-below-zero",
    ),
    pytest.param(
        [
            runtime("a", entry(version="2.0", operator="GreaterThan")),
            runtime("b", entry(version="9", operator="GreaterThanOrEqual")),
        ],
        [],
        id="precisions-differ",
    ),
    pytest.param(
        [
            runtime("a", entry(version="4.43.0.dev0", operator="GreaterThan")),
            runtime("b", entry(version="4.43.0.dev0")),
        ],
        [([A, B], overlap(A, "any size", B, "any size", "mt:safetensors:4.43.0.dev0"))],
        id="dev-part-forces-equal",
    ),
    pytest.param(
        [runtime("a", entry(version="1.0.0", operator="Bigger")), runtime("b", entry(version="1.0.0"))],
        [],
        id="unknown-operator-accepts-nothing",
    ),
    pytest.param(
        [
            runtime("a", entry(pipeline={"className": "QwenImagePipeline"})),
            runtime("b", entry(pipeline={"className": "QwenImageEditPipeline"})),
        ],
        [],
        id="pipeline-classes",
    ),
    pytest.param(
        [
            runtime("a", entry(pipeline={"vae": {"library": "diffusers"}})),
            runtime("b", entry(pipeline={"vae": {"library": "other"}})),
        ],
        [],
        id="pipeline-component-libraries",
    ),
    pytest.param(
        [
            runtime("a", entry(pipeline={"additionalComponents": {"x": {"type": "T1"}}})),
            runtime("b", entry(pipeline={"additionalComponents": {"x": {"type": "T2"}}})),
        ],
        [],
        id="pipeline-additional-component-types",
    ),
    pytest.param(
        [runtime("a", entry(pipeline={"className": "QwenImagePipeline"})), runtime("b", entry())],
        [([A, B], overlap(A, "any size", B, "any size"))],
        id="a-free-pipeline-accepts-all",
    ),
    pytest.param(
        [runtime("a", entry(**LLAMA)), runtime("b", entry("onnx"), entry(**LLAMA, priority=3))],
        [
            (
                [A, B],
                overlap(A, "any size", B, "any size", "mt:safetensors:1.0.0:LlamaForCausalLM:transformers"),
            )
        ],
        id="any-pair-of-entries",
    ),
]


@pytest.mark.parametrize(("resources", "expected"), SIZE003_CASES)
def test_size003(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.SIZE003) == expected


def test_size003_names_each_overlapping_pair_once() -> None:
    resources: list[Resource] = [
        runtime("a", entry(), entry(priority=2)),
        runtime("b", entry()),
        runtime("c", entry()),
    ]
    assert [objects for objects, _ in found(resources, Code.SIZE003)] == [
        [A, B],
        [A, "ClusterServingRuntime c"],
        [B, "ClusterServingRuntime c"],
    ]


# --- RANK001 ------------------------------------------------------------------------------------------------


def tie_sized(subject: str, a: str, b: str, score: int, winner: str) -> str:
    return (
        f"{subject}: {a} and {b} tie on score {score} and size distance, so the name picks {winner}; "
        "raise the priority of the one that should serve it, or give them different modelSizeRanges"
    )


def tie_unsized(subject: str, a: str, b: str, score: int, winner: str) -> str:
    return (
        f"{subject}: {a} and {b} tie on score {score}, so the name picks {winner}; "
        "set the model's modelParameterSize, or raise the priority of the runtime that should serve it"
    )


RANK001_CASES = [
    pytest.param(
        [
            model(size="3B"),
            runtime("b", entry(), min="1B", max="5B"),
            runtime("a", entry(), min="2B", max="6B"),
        ],
        [(["ClusterBaseModel m", A, B], tie_sized("ClusterBaseModel m (3B)", A, B, 1, "a"))],
        id="same-score-and-distance",
    ),
    pytest.param(
        [model(), runtime("a", entry(), min="1B", max="2B"), runtime("b", entry(), min="30B", max="40B")],
        [
            (
                ["ClusterBaseModel m", A, B],
                tie_unsized("ClusterBaseModel m (no modelParameterSize)", A, B, 1, "a"),
            )
        ],
        id="no-size-so-name-decides",
    ),
    pytest.param(
        [
            model(size="3B"),
            runtime("a", entry(), min="1B", max="5B"),
            runtime("b", entry(), min="2B", max="4B"),
        ],
        [],
        id="distance-decides",
    ),
    pytest.param(
        # Each one-sided range counts its one bound (SPEC §4 step 3 v4): 2B and 2B, a tie.
        [model(size="3B"), runtime("a", entry(), min="1B"), runtime("b", entry(), max="5B")],
        [(["ClusterBaseModel m", A, B], tie_sized("ClusterBaseModel m (3B)", A, B, 1, "a"))],
        id="one-sided-distances-tie",
    ),
    pytest.param(
        [model(size="3B"), runtime("a", entry(), min="1B"), runtime("b", entry(), max="8B")],
        [],
        id="one-sided-distances-differ",
    ),
    pytest.param([model(), runtime("a", entry()), runtime("b", entry(priority=2))], [], id="score-decides"),
    pytest.param(
        [model(), runtime("a", entry()), runtime("b", entry(), namespace=NS)], [], id="scope-decides"
    ),
    pytest.param(
        [model(namespace=NS), runtime("b", entry(), namespace=NS), runtime("a", entry(), namespace=NS)],
        [
            (
                ["BaseModel ns/m", "ServingRuntime ns/a", "ServingRuntime ns/b"],
                tie_unsized(
                    "BaseModel ns/m (no modelParameterSize)",
                    "ServingRuntime ns/a",
                    "ServingRuntime ns/b",
                    1,
                    "a",
                ),
            )
        ],
        id="namespaced",
    ),
    pytest.param(
        [model(), runtime("c", entry()), runtime("b", entry()), runtime("a", entry())],
        [
            (
                ["ClusterBaseModel m", A, B],
                tie_unsized("ClusterBaseModel m (no modelParameterSize)", A, B, 1, "a"),
            )
        ],
        id="only-the-top-two",
    ),
    pytest.param([model(fmt=None), runtime("a", entry()), runtime("b", entry())], [], id="pending-model"),
]


@pytest.mark.parametrize(("resources", "expected"), RANK001_CASES)
def test_rank001(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.RANK001) == expected


# --- RANK002 ------------------------------------------------------------------------------------------------


def unranged_wins(subject: str, winner: str, winner_name: str, beaten: str, whose: str, raise_: str) -> str:
    return (
        f"{subject}: {winner} has no modelSizeRange, so it counts as closest and wins over {beaten}, {whose} "
        f"the model; give {winner_name} a modelSizeRange, or raise the priority of {raise_}"
    )


RANK002_CASES = [
    pytest.param(
        [
            model("qwen", size="72B"),
            runtime("z-any", entry()),
            runtime("a-fit", entry(), min="70B", max="75B"),
        ],
        [
            (
                ["ClusterBaseModel qwen", "ClusterServingRuntime a-fit", "ClusterServingRuntime z-any"],
                unranged_wins(
                    "ClusterBaseModel qwen (72B)",
                    "ClusterServingRuntime z-any",
                    "z-any",
                    "ClusterServingRuntime a-fit ([70B, 75B])",
                    "whose range covers",
                    "a-fit",
                ),
            )
        ],
        id="unranged-wins",
    ),
    pytest.param(
        [
            model("qwen", size="72B"),
            runtime("any", entry()),
            runtime("fit", entry(), min="70B", max="75B"),
            runtime("open", entry(), min="70B"),
            runtime("far", entry(), min="80B"),
        ],
        [
            (
                [
                    "ClusterBaseModel qwen",
                    "ClusterServingRuntime any",
                    "ClusterServingRuntime fit",
                    "ClusterServingRuntime open",
                ],
                unranged_wins(
                    "ClusterBaseModel qwen (72B)",
                    "ClusterServingRuntime any",
                    "any",
                    # In rank order: open is 2B away, fit 2B + 3B (SPEC §4 step 3 v4).
                    "ClusterServingRuntime open ([70B, inf)) and ClusterServingRuntime fit ([70B, 75B])",
                    "whose ranges cover",
                    "the one that should serve it",
                ),
            )
        ],
        id="several-beaten",
    ),
    pytest.param(
        [model("qwen"), runtime("any", entry()), runtime("fit", entry(), min="70B", max="75B")],
        [],
        id="no-size-never",
    ),
    pytest.param(
        [model("qwen", size="72B"), runtime("any", entry()), runtime("fit", entry(priority=2), min="70B")],
        [],
        id="ranged-scores-higher",
    ),
    pytest.param(
        [model("qwen", size="72B"), runtime("any", entry(priority=2)), runtime("fit", entry(), min="70B")],
        [],
        id="unranged-scores-higher",
    ),
    pytest.param(
        [
            model("qwen", size="72B"),
            runtime("any", entry(), namespace=NS),
            runtime("fit", entry(), min="70B", max="75B"),
        ],
        [],
        id="scope-decides",
    ),
    pytest.param(
        [
            model("qwen", size="72B"),
            runtime("a-any", entry()),
            runtime("b-point", entry(), min="72B", max="72B"),
        ],
        [],
        id="unranged-wins-by-name-not-distance",
    ),
]


@pytest.mark.parametrize(("resources", "expected"), RANK002_CASES)
def test_rank002(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.RANK002) == expected


def test_a_point_range_at_the_size_ties_with_no_range_by_name() -> None:
    resources: list[Resource] = [
        model("qwen", size="72B"),
        runtime("a-any", entry()),
        runtime("b-point", entry(), min="72B", max="72B"),
    ]
    assert [objects for objects, _ in found(resources, Code.RANK001)] == [
        ["ClusterBaseModel qwen", "ClusterServingRuntime a-any", "ClusterServingRuntime b-point"]
    ]


# --- DEAD001 ------------------------------------------------------------------------------------------------


def dead(subject: str, why: str, fix: str) -> str:
    return f"{subject} {why} and no InferenceService names it{fix}"


OUTRANKED = "; raise its priority or narrow its modelSizeRange, or delete it"
NO_MODEL = (
    "; make its supportedModelFormats and modelSizeRange match the models it should serve, or delete it"
)

DEAD001_CASES = [
    pytest.param(
        [
            model(size="3B"),
            runtime("a", entry(), min="2B", max="4B"),
            runtime("b", entry(), min="1B", max="8B"),
        ],
        [
            (
                [B],
                f"{B} is rank 1 for no model and no InferenceService names it "
                f"(for ClusterBaseModel m it ranks 2, behind {A}){OUTRANKED}",
            )
        ],
        id="outranked",
    ),
    pytest.param(
        [model(), runtime("a", entry()), runtime("b", entry(), disabled=True)],
        [([B], dead(B, "is disabled", "; delete it, or enable it"))],
        id="disabled",
    ),
    pytest.param(
        [model(), runtime("a", entry()), runtime("b", entry(auto_select=False))],
        [
            (
                [B],
                dead(
                    B,
                    "has no supportedModelFormats entry with autoSelect: true",
                    "; set autoSelect: true on the entry for the models it should serve, or delete it",
                ),
            )
        ],
        id="manual",
    ),
    pytest.param(
        [model(), runtime("a", entry()), runtime("b", entry("onnx"))],
        [([B], dead(B, "can auto-select no model of the catalog", NO_MODEL))],
        id="no-model-of-its-format",
    ),
    pytest.param(
        [model(fmt=None), runtime("a", entry())],
        [([A], dead(A, "can auto-select no model of the catalog", NO_MODEL))],
        id="pending-model-selects-nothing",
    ),
    pytest.param(
        [model(), runtime("a", entry()), runtime("b", entry(auto_select=False)), isvc(runtime_name="b")],
        [],
        id="named",
    ),
    pytest.param(
        [model(), runtime("a", entry()), runtime("b", entry(), disabled=True), isvc(runtime_name="b")],
        [],
        id="named-while-disabled",
    ),
    pytest.param(
        [
            model(),
            runtime("a", entry()),
            runtime("b", entry(auto_select=False)),
            isvc(model_name="gone", runtime_name="b"),
        ],
        [],
        id="named-by-an-isvc-whose-model-is-missing",
    ),
    pytest.param(
        [
            model(),
            runtime("a", entry(priority=2)),
            runtime("b", entry(), classes=["h100"]),
            isvc(annotations={"ome.io/accelerator-class": "h100"}),
        ],
        [],
        id="selected-through-an-accelerator-class",
    ),
    pytest.param(
        [
            model(),
            runtime("a", entry()),
            runtime("b", entry(auto_select=False)),
            isvc(runtime_name="b", namespace="other"),
        ],
        [
            (
                [B],
                dead(
                    B,
                    "has no supportedModelFormats entry with autoSelect: true",
                    "; set autoSelect: true on the entry for the models it should serve, or delete it",
                ),
            )
        ],
        id="named-only-outside-the-views",
    ),
]


@pytest.mark.parametrize(("resources", "expected"), DEAD001_CASES)
def test_dead001(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.DEAD001) == expected


def test_dead001_a_cluster_runtime_that_wins_in_one_namespace_is_alive() -> None:
    resources: list[Resource] = [model(), runtime("a", entry()), runtime("local", entry(), namespace="team")]
    # From "team" the namespaced runtime ranks first; from NS the cluster one does.
    assert found(resources, Code.DEAD001, ("team",)) == [
        (
            [A],
            f"{A} is rank 1 for no model and no InferenceService names it "
            f"(for ClusterBaseModel m it ranks 2, behind ServingRuntime team/local){OUTRANKED}",
        )
    ]
    assert found(resources, Code.DEAD001, (NS, "team")) == []


# --- SERV001 ------------------------------------------------------------------------------------------------


def unserved(subject: str, about: str, explain_args: str) -> str:
    return (
        f"{subject} ({about}): no runtime supports it; add or fix a runtime for it "
        f"(kubectl ome-selector runtime explain {explain_args} shows each runtime's reason)"
    )


SERV001_CASES = [
    pytest.param(
        [model(size="32B", arch="Qwen3"), runtime("a", entry(arch="Qwen3"), max="16B")],
        [
            (
                ["ClusterBaseModel m"],
                unserved("ClusterBaseModel m", "mt:safetensors:Qwen3, 32B", "--model m"),
            )
        ],
        id="outside-every-range",
    ),
    pytest.param(
        [model(namespace=NS, version="1.0.0")],
        [(["BaseModel ns/m"], unserved("BaseModel ns/m", "mt:safetensors:1.0.0", "--model m -n ns"))],
        id="base-model-and-no-runtimes",
    ),
    pytest.param([model(fmt=None)], [], id="pending-model"),
    pytest.param([model(), runtime("a", entry(auto_select=False))], [], id="supported-by-a-manual-runtime"),
    pytest.param(
        [model(), runtime("a", entry(), disabled=True)],
        [(["ClusterBaseModel m"], unserved("ClusterBaseModel m", "mt:safetensors", "--model m"))],
        id="disabled-runtime-supports-nothing",
    ),
]


@pytest.mark.parametrize(("resources", "expected"), SERV001_CASES)
def test_serv001(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.SERV001) == expected


def test_serv001_judges_a_cluster_model_in_every_view() -> None:
    resources: list[Resource] = [model(), runtime("local", entry(), namespace="team")]
    assert len(found(resources, Code.SERV001, (NS,))) == 1
    assert found(resources, Code.SERV001, (NS, "team")) == []


def test_a_base_model_shadows_the_cluster_model_of_its_name() -> None:
    resources: list[Resource] = [model(arch="X"), model(namespace=NS), runtime("a", entry())]
    # From NS only the BaseModel is visible (SPEC §1), and a runtime supports it.
    assert found(resources, Code.SERV001, (NS,)) == []
    assert [objects for objects, _ in found(resources, Code.SERV001, (NS, "other"))] == [
        ["ClusterBaseModel m"]
    ]


# --- order, severity, views, the document -------------------------------------------------------------------


def test_findings_sort_by_code_then_objects_and_severities() -> None:
    c = catalog(
        model("z", size="4b"),
        model("a", size="1b", namespace=NS),
        runtime("r", entry(version="1", operator="Above"), min="8B", max="2B"),
        runtime("q", entry()),
    )
    findings = lint(c, [NS])
    assert [(f.code.value, [str(k) for k in f.objects]) for f in findings] == [
        ("DEAD001", ["ClusterServingRuntime r"]),
        ("OPER001", ["ClusterServingRuntime r"]),
        ("SIZE001", ["BaseModel ns/a"]),
        ("SIZE001", ["ClusterBaseModel z"]),
        ("SIZE002", ["ClusterServingRuntime r"]),
    ]
    assert [f.severity for f in findings] == [
        Severity.WARNING,
        Severity.ERROR,
        Severity.ERROR,
        Severity.ERROR,
        Severity.ERROR,
    ]
    assert has_errors(findings)
    assert not has_errors(findings[:1])


def test_a_finding_several_views_share_is_reported_once() -> None:
    c = catalog(model(), runtime("a", entry()), runtime("b", entry()))
    assert [f.code for f in lint(c, [NS, "other", NS])] == [Code.DEAD001, Code.RANK001, Code.SIZE003]


def test_document() -> None:
    c = catalog(model(size="4b"), runtime("local", entry(), namespace=NS, max="8b"))
    document = lint_document(lint(c, [NS]))
    assert document == {
        "findings": [
            {
                "code": "SIZE001",
                "severity": "error",
                "objects": [{"kind": "ClusterBaseModel", "name": "m", "namespace": None}],
                "message": not_a_count("ClusterBaseModel m", "spec.modelParameterSize", "4b", "4B"),
            },
            {
                "code": "SIZE001",
                "severity": "error",
                "objects": [{"kind": "ServingRuntime", "name": "local", "namespace": "ns"}],
                "message": not_a_count("ServingRuntime ns/local", "spec.modelSizeRange.max", "8b", "8B"),
            },
        ]
    }
    json.dumps(document)


# --- properties ---------------------------------------------------------------------------------------------

SIZES = ["500M", "1B", "3B", "3.21B", "4B", "8B", "4b", ""]
#: (min, max): no range, one-sided, nested and crossing ranges, min above max, and bounds that read as 0.
RANGES = [
    (None, None),
    (None, "4B"),
    ("1B", None),
    ("1B", "4B"),
    ("2B", "8B"),
    ("1B", "8B"),
    ("3B", "3.5B"),
    ("4B", "2B"),
    ("8b", None),
    (None, "8b"),
]


@st.composite
def catalogs(draw: st.DrawFn) -> list[Resource]:
    """Small catalogs of one format where ties are common: runtimes share a few ranges and priorities."""
    resources: list[Resource] = []
    for index in range(draw(st.integers(0, 4))):
        resources.append(
            model(
                f"m{index}",
                size=draw(st.sampled_from([None, *SIZES])),
                arch=draw(st.sampled_from([None, None, None, "X"])),
                namespace=draw(st.sampled_from([None, NS])),
            )
        )
    ranges = draw(st.lists(st.sampled_from(RANGES), min_size=1, max_size=3))
    for index in range(draw(st.integers(0, 7))):
        low, high = draw(st.sampled_from(ranges))
        resources.append(
            runtime(
                f"r{index}",
                entry(
                    arch=draw(st.sampled_from([None, None, None, "X"])),
                    priority=draw(st.sampled_from([1, 1, 2])),
                    auto_select=draw(st.sampled_from([True, True, True, False])),
                ),
                min=low,
                max=high,
                namespace=draw(st.sampled_from([None, None, NS])),
                disabled=draw(st.sampled_from([False, False, False, True])),
            )
        )
    return resources


@settings(max_examples=200, deadline=None)
@given(catalogs(), st.randoms(use_true_random=False))
def test_properties(resources: list[Resource], shuffler: random.Random) -> None:
    c = catalog(*resources)
    findings = lint(c, [NS])
    # Sorted, one line each, objects sorted, and independent of the order the objects arrived in.
    assert list(findings) == sorted(findings, key=lambda f: f.order)
    for finding in findings:
        assert finding.message.isprintable()
        assert list(finding.objects) == sorted(
            finding.objects, key=lambda k: (k.kind.value, k.namespace or "", k.name)
        )
    shuffled = list(resources)
    shuffler.shuffle(shuffled)
    assert lint(Catalog.from_resources(shuffled), [NS]) == findings
    # RANK001 is exactly where explain's top two agree on scope, score and distance.
    tied = {f.objects[0] for f in findings if f.code is Code.RANK001}
    expected = set()
    for m in c.models():
        ranked = explain(c, m, NS).ranked if c.resolve_model(NS, m.name) is m else ()
        if len(ranked) > 1 and ties(ranked[0], ranked[1], c.model_profile(m).size):
            expected.add(m.key)
    assert tied == expected
