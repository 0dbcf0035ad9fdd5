"""Catalog lint, the findings of OME v1.3's inheritance and deployment modes (SPEC §11 v4): INHR001–INHR004,
MODE001, RANK003 and the DEAD001 exceptions, each with its exact objects and message, its severity, and
``--runtime-lookup`` for what "names" means."""

from __future__ import annotations

from typing import Any

import pytest
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import Resource
from ome_selector.review.lint import PROFILE_NOT_DISABLED, Code, Severity, lint
from ome_selector.selection.inheritance import RuntimeLookup

Expected = list[tuple[list[str], str]]

PROFILE = {"ome.io/runtime-profile": "true"}


def found(
    resources: list[Resource],
    code: Code,
    namespaces: tuple[str, ...] = (NS,),
    lookup: RuntimeLookup = RuntimeLookup.V1_3,
) -> Expected:
    """The findings of ``code``, as (objects, message)."""
    return [
        ([str(key) for key in f.objects], f.message)
        for f in lint(catalog(*resources), namespaces, lookup)
        if f.code is code
    ]


# --- INHR001 ------------------------------------------------------------------------------------------------


def inhr001(subject: str, parent: str) -> str:
    return (
        f'{subject} inherits from "{parent}" (ome.io/inherit-from) and has an entry with autoSelect: true, '
        "but auto-selection judges it on its own spec and ignores what it inherits; turn autoSelect off and "
        "name it in spec.runtime.name, or give it its own spec in full"
    )


INHR001_CASES = [
    pytest.param(
        [runtime("base", entry()), runtime("child", entry(), inherit_from="base")],
        [(["ClusterServingRuntime child"], inhr001("ClusterServingRuntime child", "base"))],
        id="auto-select-entry-and-a-parent",
    ),
    pytest.param(
        [runtime("child", entry(), namespace=NS, inherit_from="missing")],
        [(["ServingRuntime ns/child"], inhr001("ServingRuntime ns/child", "missing"))],
        id="also-with-a-broken-chain",
    ),
    pytest.param(
        [runtime("base", entry()), runtime("child", entry(auto_select=False), inherit_from="base")],
        [],
        id="no-auto-select-entry",
    ),
    pytest.param(
        [runtime("base", entry()), runtime("child", entry(), inherit_from="base", disabled=True)],
        [],
        id="own-spec-disabled",
    ),
    pytest.param(
        [runtime("base", entry()), runtime("child", inherit_from="base")],
        [],
        id="entries-only-inherited",  # the parent's autoSelect does not count: auto-selection reads own specs
    ),
    pytest.param([runtime("child", entry(), inherit_from="")], [], id="empty-annotation-is-no-parent"),
]


@pytest.mark.parametrize(("resources", "expected"), INHR001_CASES)
def test_inhr001(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.INHR001) == expected


# --- INHR002 ------------------------------------------------------------------------------------------------

INHR002_CASES = [
    pytest.param(
        [runtime("child", namespace=NS, inherit_from="gone")],
        [
            (
                ["ServingRuntime ns/child"],
                'inherit-from parent "gone" not found (chain so far: [child])',
            )
        ],
        id="parent-not-found",
    ),
    pytest.param(
        [runtime("a", inherit_from="b"), runtime("b", inherit_from="a")],
        [
            (["ClusterServingRuntime a"], "inheritance cycle detected: [a b a]"),
            (["ClusterServingRuntime b"], "inheritance cycle detected: [b a b]"),
        ],
        id="each-runtime-of-a-cycle-with-its-own-chain-error",
    ),
    pytest.param(
        [runtime("self", inherit_from="self")],
        [(["ClusterServingRuntime self"], "inheritance cycle detected: [self self]")],
        id="self-parent",
    ),
    pytest.param(
        [runtime("child", inherit_from="Not A Name\n")],
        [
            (
                ["ClusterServingRuntime child"],
                'inherit-from parent "Not A Name\\n" is not a valid runtime name (chain so far: [child])',
            )
        ],
        id="not-a-runtime-name-escaped",
    ),
    pytest.param(
        [runtime(f"r{i}", inherit_from=f"r{i + 1}") for i in range(5)] + [runtime("r5")],
        [
            (
                ["ClusterServingRuntime r0"],
                "inheritance chain exceeds max depth 5 (chain: [r0 r1 r2 r3 r4])",
            )
        ],
        id="max-depth-only-for-the-runtime-six-deep",
    ),
    pytest.param(
        # From a ClusterServingRuntime, parents are ClusterServingRuntimes only (SPEC §1).
        [runtime("child", inherit_from="base"), runtime("base", namespace=NS)],
        [
            (
                ["ClusterServingRuntime child"],
                'inherit-from parent "base" not found (chain so far: [child])',
            )
        ],
        id="a-cluster-runtime-never-inherits-from-a-serving-runtime",
    ),
    pytest.param(
        [runtime("child", namespace=NS, inherit_from="base"), runtime("base")],
        [],
        id="a-serving-runtime-inherits-from-a-cluster-runtime",
    ),
]


@pytest.mark.parametrize(("resources", "expected"), INHR002_CASES)
def test_inhr002(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.INHR002) == expected


def test_inhr002_is_an_error_and_fails_lint() -> None:
    [finding] = [f for f in lint(catalog(runtime("c", inherit_from="gone")), (NS,)) if f.code is Code.INHR002]
    assert finding.severity is Severity.ERROR


# --- INHR003 ------------------------------------------------------------------------------------------------


def test_inhr003_text_is_omes_webhook_denial() -> None:
    assert PROFILE_NOT_DISABLED == (
        'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'
    )


INHR003_CASES = [
    pytest.param([runtime("p", entry(), annotations=PROFILE)], ["ClusterServingRuntime p"], id="no-disabled"),
    pytest.param(
        [runtime("p", entry(), namespace=NS, annotations=PROFILE, disabled=False)],
        ["ServingRuntime ns/p"],
        id="disabled-false",
    ),
    pytest.param(
        # Only the own spec counts: OME's webhook judges the object as written.
        [runtime("base", disabled=True), runtime("p", annotations=PROFILE, inherit_from="base")],
        ["ClusterServingRuntime p"],
        id="inherited-disabled-does-not-count",
    ),
    pytest.param([runtime("p", entry(), annotations=PROFILE, disabled=True)], [], id="profile-disabled"),
    pytest.param(
        [runtime("p", entry(), annotations={"ome.io/runtime-profile": "True"})], [], id="only-exactly-true"
    ),
]


@pytest.mark.parametrize(("resources", "objects"), INHR003_CASES)
def test_inhr003(resources: list[Resource], objects: list[str]) -> None:
    assert found(resources, Code.INHR003) == [([key], PROFILE_NOT_DISABLED) for key in objects]


def test_inhr003_is_an_error() -> None:
    [finding] = lint(catalog(runtime("p", entry(auto_select=False), annotations=PROFILE)), (NS,))
    assert (finding.code, finding.severity) == (Code.INHR003, Severity.ERROR)


# --- INHR004 ------------------------------------------------------------------------------------------------


def inhr004(subject: str, setter: str) -> str:
    return (
        f"{subject} sets no spec.disabled and inherits disabled: true from {setter}: disabled when an "
        "InferenceService names it, enabled when auto-selected; set spec.disabled on it"
    )


CSR_BASE, CSR_ROOT = "ClusterServingRuntime base", "ClusterServingRuntime root"

INHR004_CASES = [
    pytest.param(
        [runtime("base", entry(), disabled=True), runtime("child", inherit_from="base")],
        [(["ClusterServingRuntime child"], inhr004("ClusterServingRuntime child", CSR_BASE))],
        id="parent-disabled",
    ),
    pytest.param(
        [
            runtime("root", disabled=True),
            runtime("middle", inherit_from="root"),
            runtime("child", namespace=NS, inherit_from="middle"),
        ],
        [
            (["ClusterServingRuntime middle"], inhr004("ClusterServingRuntime middle", CSR_ROOT)),
            (["ServingRuntime ns/child"], inhr004("ServingRuntime ns/child", CSR_ROOT)),
        ],
        id="the-nearest-setter-is-named",
    ),
    pytest.param(
        [
            runtime("root", disabled=True),
            runtime("middle", inherit_from="root", disabled=False),
            runtime("child", inherit_from="middle"),
        ],
        [],
        id="a-nearer-false-wins",
    ),
    pytest.param(
        [runtime("base", disabled=True), runtime("child", inherit_from="base", disabled=False)],
        [],
        id="own-false",
    ),
    pytest.param([runtime("child", inherit_from="gone")], [], id="broken-chain-is-inhr002-only"),
]  # fmt: skip


@pytest.mark.parametrize(("resources", "expected"), INHR004_CASES)
def test_inhr004(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.INHR004) == expected


# --- MODE001 ------------------------------------------------------------------------------------------------

MODES_KEY = 'annotations["ome.io/deploymentMode"]'


def mode001(subject: str, path: str, value: str) -> str:
    return (
        f'{subject}: {path} "{value}" is not a deployment mode, so it declares none; use RawDeployment, '
        "OMENative, MultiNode or VirtualDeployment"
    )


def _isvc_with_modes(engine: str | None = None, decoder: str | None = None) -> Resource:
    def component(mode: str | None) -> dict[str, Any] | None:
        return {"annotations": {"ome.io/deploymentMode": mode}} if mode is not None else None

    return isvc("svc", engine=component(engine), decoder=component(decoder))


MODE001_CASES = [
    pytest.param(
        [runtime("rt", entry(), engine_mode="rawdeployment")],
        [
            (
                ["ClusterServingRuntime rt"],
                mode001("ClusterServingRuntime rt", f"spec.engineConfig.{MODES_KEY}", "rawdeployment"),
            )
        ],
        id="runtime-engine-lower-case",
    ),
    pytest.param(
        [runtime("rt", entry(), namespace=NS, decoder_mode="")],
        [
            (
                ["ServingRuntime ns/rt"],
                mode001("ServingRuntime ns/rt", f"spec.decoderConfig.{MODES_KEY}", ""),
            )
        ],
        id="runtime-decoder-empty",
    ),
    pytest.param(
        [_isvc_with_modes(engine="Serverless", decoder="Raw\tDeployment")],
        [
            (
                ["InferenceService ns/svc"],
                mode001("InferenceService ns/svc", f"spec.decoder.{MODES_KEY}", "Raw\\tDeployment"),
            ),
            (
                ["InferenceService ns/svc"],
                mode001("InferenceService ns/svc", f"spec.engine.{MODES_KEY}", "Serverless"),
            ),
        ],
        id="isvc-engine-and-decoder-escaped",
    ),
    pytest.param(
        [
            runtime("rt", entry(), engine_mode="MultiNode", decoder_mode="VirtualDeployment"),
            _isvc_with_modes(engine="OMENative", decoder="RawDeployment"),
        ],
        [],
        id="the-four-valid-modes",
    ),
]


@pytest.mark.parametrize(("resources", "expected"), MODE001_CASES)
def test_mode001(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.MODE001) == expected


def test_mode001_on_spec_deployment_mode_from_a_cluster_without_the_enum() -> None:
    """Files reject a spec.deploymentMode outside the CRD enum (SPEC §1); a live object may carry one."""
    from ome_selector.api.resources import InferenceService, InferenceServiceSpec

    live = InferenceService(
        name="svc", namespace=NS, spec=InferenceServiceSpec.model_validate({"deploymentMode": "MultiNode "})
    )
    assert found([live], Code.MODE001) == [
        (["InferenceService ns/svc"], mode001("InferenceService ns/svc", "spec.deploymentMode", "MultiNode "))
    ]
    valid = InferenceService(
        name="ok", namespace=NS, spec=InferenceServiceSpec.model_validate({"deploymentMode": "MultiNode"})
    )
    assert found([valid], Code.MODE001) == []


def test_mode001_is_a_warning() -> None:
    result = lint(catalog(runtime("rt", entry(auto_select=False), engine_mode="x")), (NS,))
    assert [(f.code, f.severity) for f in result if f.code is Code.MODE001] == [
        (Code.MODE001, Severity.WARNING)
    ]


# --- RANK003 ------------------------------------------------------------------------------------------------


def rank003(model_title: str, winner: str, name: str, others: str, which: str, raise_: str) -> str:
    return (
        f"{model_title}: {winner} has one size bound, so only that bound counts in its distance and it ranks "
        f"above {others}, {which} both; give {name} both bounds, or raise the priority of {raise_}"
    )


RANK003_CASES = [
    pytest.param(
        # SPEC §4's example: for 7B, min 1B alone is 6B away, [1B, 13B] 12B.
        [model(size="7B"), runtime("a-wide", entry(), min="1B", max="13B"),
         runtime("b-open", entry(), min="1B")],
        [
            (
                ["ClusterBaseModel m", "ClusterServingRuntime a-wide", "ClusterServingRuntime b-open"],
                rank003(
                    "ClusterBaseModel m (7B)", "ClusterServingRuntime b-open ([1B, inf))", "b-open",
                    "ClusterServingRuntime a-wide ([1B, 13B])", "which has", "a-wide",
                ),
            )
        ],
        id="lower-bound-only-wins",
    ),
    pytest.param(
        [
            model(size="7B"),
            runtime("a", entry(), max="13B"),
            runtime("b", entry(), min="1B", max="13B"),
            runtime("c", entry(), min="6B", max="20B"),
        ],
        [
            (
                ["ClusterBaseModel m", "ClusterServingRuntime a", "ClusterServingRuntime b",
                 "ClusterServingRuntime c"],
                rank003(
                    "ClusterBaseModel m (7B)", "ClusterServingRuntime a ((-inf, 13B])", "a",
                    "ClusterServingRuntime b ([1B, 13B]) and ClusterServingRuntime c ([6B, 20B])",
                    "which have",
                    "the one that should serve it",
                ),
            )
        ],
        id="upper-bound-only-wins-over-two",
    ),
    pytest.param(
        # The tie on distance is decided by name: RANK001, not RANK003.
        [model(size="7B"), runtime("a", entry(), min="1B"), runtime("b", entry(), min="4B", max="10B")],
        [],
        id="equal-distance-is-not-ahead",
    ),
    pytest.param(
        [model(size="7B"), runtime("a", entry(), min="6B", max="8B"), runtime("b", entry(), min="1B")],
        [],
        id="two-bounds-closer-wins",
    ),
    pytest.param(
        [model(size="7B"), runtime("a", entry(priority=2), min="1B"),
         runtime("b", entry(), min="1B", max="13B")],
        [],
        id="different-score",
    ),
    pytest.param(
        [
            model(size="7B", namespace=NS),
            runtime("a", entry(), min="1B", namespace=NS),
            runtime("b", entry(), min="1B", max="13B"),
        ],
        [],
        id="different-scope",
    ),
    pytest.param(
        [model(), runtime("a", entry(), min="1B"), runtime("b", entry(), min="1B", max="13B")],
        [],
        id="model-without-a-size",
    ),
    pytest.param(
        [model(size="7B"), runtime("a", entry(), max="13B"), runtime("b", entry())],
        [],
        id="unranged-runtime-is-not-two-bounds",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("resources", "expected"), RANK003_CASES)
def test_rank003(resources: list[Resource], expected: Expected) -> None:
    assert found(resources, Code.RANK003) == expected


def test_rank003_is_a_warning() -> None:
    resources: list[Resource] = [
        model(size="7B"),
        runtime("a", entry(), min="1B", max="13B"),
        runtime("b", entry(), min="1B"),
    ]
    severities = {f.code: f.severity for f in lint(catalog(*resources), (NS,))}
    assert severities[Code.RANK003] is Severity.WARNING


# --- DEAD001 exceptions -------------------------------------------------------------------------------------


def dead(resources: list[Resource], lookup: RuntimeLookup = RuntimeLookup.V1_3) -> list[str]:
    return [objects[0] for objects, _ in found(resources, Code.DEAD001, lookup=lookup)]


def test_a_runtime_a_chain_passes_through_is_not_dead() -> None:
    resources: list[Resource] = [
        model(),
        runtime("root", entry(auto_select=False)),
        runtime("middle", inherit_from="root"),
        runtime("leaf", inherit_from="middle"),
        isvc(runtime_name="leaf"),
    ]
    assert dead(resources) == []
    # Nothing names the leaf any more: the leaf is dead, the chain it walks still holds the others.
    assert dead(resources[:-1]) == ["ClusterServingRuntime leaf"]


def test_a_broken_chain_keeps_nothing_alive() -> None:
    resources: list[Resource] = [
        model(),
        runtime("a", entry(auto_select=False), inherit_from="b"),
        runtime("b", entry(auto_select=False), inherit_from="a"),
    ]
    assert dead(resources) == ["ClusterServingRuntime a", "ClusterServingRuntime b"]


def test_a_runtime_profile_is_never_dead() -> None:
    resources: list[Resource] = [model(), runtime("p", entry(), annotations=PROFILE, disabled=True)]
    assert dead(resources) == []
    assert dead([model(), runtime("p", entry(), disabled=True)]) == ["ClusterServingRuntime p"]


@pytest.mark.parametrize(
    ("kind", "lookup", "alive"),
    [
        # v1.3: kind ServingRuntime names the namespace's runtime only; ClusterServingRuntime the cluster's.
        ("ServingRuntime", RuntimeLookup.V1_3, "ServingRuntime ns/rt"),
        ("ClusterServingRuntime", RuntimeLookup.V1_3, "ClusterServingRuntime rt"),
        # legacy: the namespace's first, whatever the kind.
        ("ClusterServingRuntime", RuntimeLookup.LEGACY, "ServingRuntime ns/rt"),
    ],
)
def test_names_uses_the_runtime_lookup(kind: str, lookup: RuntimeLookup, alive: str) -> None:
    resources: list[Resource] = [
        model(),
        runtime("rt", entry(auto_select=False)),
        runtime("rt", entry(auto_select=False), namespace=NS),
        isvc(runtime_name="rt", runtime_kind=kind),
    ]
    both = {"ServingRuntime ns/rt", "ClusterServingRuntime rt"}
    assert set(dead(resources, lookup)) == both - {alive}


def test_a_model_less_inference_service_names_its_runtime_too() -> None:
    resources: list[Resource] = [
        model(),
        runtime("rt", entry(auto_select=False)),
        isvc(model_name=None, runtime_name="rt"),
    ]
    assert dead(resources) == []


# --- all at once --------------------------------------------------------------------------------------------


def test_findings_sort_by_code_and_the_severities() -> None:
    resources: list[Resource] = [
        runtime("p", annotations=PROFILE, inherit_from="gone", engine_mode="bad"),
        runtime("base", entry(), disabled=True),
        runtime("child", entry(), inherit_from="base"),
    ]
    result = lint(catalog(*resources), (NS,))
    assert [(f.code.value, f.severity.value, [str(k) for k in f.objects]) for f in result] == [
        ("DEAD001", "warning", ["ClusterServingRuntime child"]),
        ("INHR001", "warning", ["ClusterServingRuntime child"]),
        ("INHR002", "error", ["ClusterServingRuntime p"]),
        ("INHR003", "error", ["ClusterServingRuntime p"]),
        ("INHR004", "warning", ["ClusterServingRuntime child"]),
        ("MODE001", "warning", ["ClusterServingRuntime p"]),
    ]
