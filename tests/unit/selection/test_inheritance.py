"""Runtime inheritance and the named-runtime lookup (SPEC §1 "Effective runtime" and "Lookups"): the chain
walk (its lookup context, every error and its text, depth 5, cycles of 1-5), the merge of each field read,
and the lookup by ``spec.runtime.kind`` with both rules. Hypothesis: a runtime without the annotation is its
own effective spec, and no annotation changes auto-selection."""

from __future__ import annotations

from typing import Any

import pytest
from catalog_strategies import models, runtimes
from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import Kind, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.explain import explain
from ome_selector.selection.inheritance import (
    Chain,
    ChainError,
    ChainErrorReason,
    RuntimeLookup,
    effective_profile,
    effective_spec,
    find_named_runtime,
    is_runtime_name,
    named_runtime_not_found,
    resolve_chain,
)
from ome_selector.selection.outcome import evaluate
from ome_selector.selection.profiles import RuntimeProfile

CSR, SR = Kind.CLUSTER_SERVING_RUNTIME, Kind.SERVING_RUNTIME


def profile_of(c: Catalog, kind: Kind, name: str, namespace: str | None = None) -> RuntimeProfile:
    found = c.runtime_profile(kind, namespace, name)
    assert found is not None
    return found


def chain_of(c: Catalog, kind: Kind, name: str, namespace: str | None = None) -> Chain | ChainError:
    return resolve_chain(c, profile_of(c, kind, name, namespace))


def links(result: Chain | ChainError) -> list[str]:
    assert isinstance(result, Chain), result
    return [str(link.runtime.key) for link in result.links]


def error(result: Chain | ChainError) -> tuple[ChainErrorReason, str]:
    assert isinstance(result, ChainError), result
    return result.reason, result.message


# --- the walk ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("annotation", [None, ""])
def test_no_parent_is_a_chain_of_one(annotation: str | None) -> None:
    c = catalog(runtime("a", entry(), inherit_from=annotation))
    result = chain_of(c, CSR, "a")
    assert links(result) == ["ClusterServingRuntime a"]
    assert isinstance(result, Chain)
    assert not result.has_parent


def test_a_cluster_chain_resolves_child_first_and_lists_root_first() -> None:
    c = catalog(runtime("a", inherit_from="b"), runtime("b", inherit_from="c"), runtime("c", entry()))
    result = chain_of(c, CSR, "a")
    assert links(result) == [f"ClusterServingRuntime {n}" for n in "abc"]
    assert isinstance(result, Chain)
    assert [link.name for link in result.root_first] == ["c", "b", "a"]


def test_from_a_cluster_runtime_parents_are_cluster_runtimes_only() -> None:
    c = catalog(runtime("a", inherit_from="p"), runtime("p", entry(), namespace=NS))
    assert error(chain_of(c, CSR, "a")) == (
        ChainErrorReason.PARENT_NOT_FOUND,
        'inherit-from parent "p" not found (chain so far: [a])',
    )


def test_from_a_serving_runtime_the_namespace_comes_first_then_the_cluster() -> None:
    c = catalog(
        runtime("a", namespace=NS, inherit_from="p"),
        runtime("p", entry(), namespace=NS),
        runtime("p", entry()),
        runtime("b", namespace=NS, inherit_from="q"),
        runtime("q", entry()),
    )
    assert links(chain_of(c, SR, "a", NS)) == ["ServingRuntime ns/a", "ServingRuntime ns/p"]
    assert links(chain_of(c, SR, "b", NS)) == ["ServingRuntime ns/b", "ClusterServingRuntime q"]


def test_serving_runtimes_of_other_namespaces_are_never_parents() -> None:
    c = catalog(runtime("a", namespace=NS, inherit_from="p"), runtime("p", entry(), namespace="other"))
    assert error(chain_of(c, SR, "a", NS))[0] is ChainErrorReason.PARENT_NOT_FOUND


def test_the_parent_of_a_cluster_runtime_met_from_a_serving_runtime_is_looked_up_in_its_namespace() -> None:
    c = catalog(
        runtime("a", namespace=NS, inherit_from="b"),
        runtime("b", inherit_from="c"),  # a ClusterServingRuntime on the way
        runtime("c", entry(), namespace=NS),  # found from ns although b is cluster-scoped
    )
    assert links(chain_of(c, SR, "a", NS)) == [
        "ServingRuntime ns/a",
        "ClusterServingRuntime b",
        "ServingRuntime ns/c",
    ]
    # Walked from b itself, the context is the cluster's: c is not found.
    assert error(chain_of(c, CSR, "b"))[1] == 'inherit-from parent "c" not found (chain so far: [b])'


def _cycle(length: int) -> Catalog:
    names = [f"r{i}" for i in range(length)]
    return catalog(*(runtime(n, entry(), inherit_from=names[(i + 1) % length]) for i, n in enumerate(names)))


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (1, (ChainErrorReason.INHERITANCE_CYCLE, "inheritance cycle detected: [r0 r0]")),
        (2, (ChainErrorReason.INHERITANCE_CYCLE, "inheritance cycle detected: [r0 r1 r0]")),
        (3, (ChainErrorReason.INHERITANCE_CYCLE, "inheritance cycle detected: [r0 r1 r2 r0]")),
        (4, (ChainErrorReason.INHERITANCE_CYCLE, "inheritance cycle detected: [r0 r1 r2 r3 r0]")),
        # Five names are collected before r4's parent is looked at: the depth is checked first.
        (
            5,
            (
                ChainErrorReason.MAX_DEPTH_EXCEEDED,
                "inheritance chain exceeds max depth 5 (chain: [r0 r1 r2 r3 r4])",
            ),
        ),
    ],
)
def test_cycles_of_one_to_five(length: int, expected: tuple[ChainErrorReason, str]) -> None:
    assert error(chain_of(_cycle(length), CSR, "r0")) == expected


def test_a_cycle_compares_names_whatever_the_kinds() -> None:
    # ns/a -> cluster a (no ServingRuntime ns/b... the parent name "a" was collected already).
    c = catalog(runtime("a", namespace=NS, inherit_from="a"), runtime("a", entry()))
    assert error(chain_of(c, SR, "a", NS)) == (
        ChainErrorReason.INHERITANCE_CYCLE,
        "inheritance cycle detected: [a a]",
    )


def _line(length: int) -> Catalog:
    names = [f"r{i}" for i in range(length)]
    return catalog(
        *(
            runtime(n, entry(), inherit_from=names[i + 1] if i + 1 < length else None)
            for i, n in enumerate(names)
        )
    )


def test_a_chain_of_five_resolves_and_of_six_exceeds_the_depth() -> None:
    assert len(links(chain_of(_line(5), CSR, "r0"))) == 5
    assert error(chain_of(_line(6), CSR, "r0")) == (
        ChainErrorReason.MAX_DEPTH_EXCEEDED,
        "inheritance chain exceeds max depth 5 (chain: [r0 r1 r2 r3 r4])",
    )
    assert len(links(chain_of(_line(6), CSR, "r1"))) == 5  # the same runtimes, walked from the second


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("Upper", "Upper"),
        ("a_b", "a_b"),
        ("-a", "-a"),
        ("a.", "a."),
        ("a..b", "a..b"),
        (" b", " b"),
        ("b\n", "b\\n"),
        ("evil\u202etxt", "evil\\u202etxt"),
        ("a" * 254, "a" * 253 + "…"),
        ("é", "é"),
    ],
)
def test_a_value_that_is_not_a_runtime_name_is_never_looked_up(value: str, shown: str) -> None:
    c = catalog(runtime("a", entry(), inherit_from=value), runtime(value.strip() or "x", entry()))
    result = chain_of(c, CSR, "a")
    assert error(result) == (
        ChainErrorReason.PARENT_NOT_FOUND,
        f'inherit-from parent "{shown}" is not a valid runtime name (chain so far: [a])',
    )
    assert isinstance(result, ChainError)
    assert result.missing_parent is None


def test_a_missing_parent_is_named_for_the_confirming_read() -> None:
    c = catalog(runtime("a", inherit_from="b"), runtime("b", inherit_from="c"))
    result = chain_of(c, CSR, "a")
    assert error(result) == (
        ChainErrorReason.PARENT_NOT_FOUND,
        'inherit-from parent "c" not found (chain so far: [a b])',
    )
    assert isinstance(result, ChainError)
    assert result.missing_parent == "c"


@pytest.mark.parametrize(
    ("value", "valid"),
    [("a", True), ("a-b.c-d", True), ("0", True), ("a" * 253, True), ("a" * 254, False), ("", False)]
    + [(v, False) for v in ("A", "a_b", "-a", "a-", ".a", "a.", "a..b", "a b", "a\n")],
)
def test_runtime_names_are_dns_subdomains(value: str, valid: bool) -> None:
    assert is_runtime_name(value) is valid


# --- the merge ---------------------------------------------------------------------------------------------


def merged(child: dict[str, Any], parent: dict[str, Any], grandparent: dict[str, Any] | None = None) -> Any:
    resources: list[Runtime] = [runtime("child", inherit_from="parent", **child)]
    resources.append(runtime("parent", inherit_from="root" if grandparent is not None else None, **parent))
    if grandparent is not None:
        resources.append(runtime("root", **grandparent))
    c = catalog(*resources)
    result = chain_of(c, CSR, "child")
    assert isinstance(result, Chain)
    return effective_spec(result)


A, B = entry("a"), entry("b")


@pytest.mark.parametrize(
    ("child", "parent", "expected"),
    [
        ({}, {"disabled": True}, True),
        ({"disabled": False}, {"disabled": True}, False),  # false overrides a parent's true
        ({"disabled": True}, {"disabled": False}, True),
        ({}, {}, None),
    ],
)
def test_disabled_is_set_by_a_boolean(child: dict[str, Any], parent: dict[str, Any], expected: Any) -> None:
    assert merged(child, parent).disabled is expected


@pytest.mark.parametrize(
    ("child", "parent", "expected"),
    [
        ((), (B, entry("c", auto_select=False)), ("b", "c")),  # an empty list sets nothing
        ((A,), (B, entry("c")), ("a",)),  # a non-empty list is taken whole, not merged entry by entry
        ((), (), ()),
    ],
)
def test_formats_are_taken_whole_from_the_nearest_non_empty_list(
    child: tuple[dict[str, Any], ...], parent: tuple[dict[str, Any], ...], expected: tuple[str, ...]
) -> None:
    c = catalog(runtime("child", *child, inherit_from="parent"), runtime("parent", *parent))
    result = chain_of(c, CSR, "child")
    assert isinstance(result, Chain)
    formats = effective_spec(result).supported_model_formats
    assert tuple(f.model_format.name for f in formats if f.model_format is not None) == expected
    if child == () and parent:
        assert formats == profile_of(c, CSR, "parent").runtime.spec.supported_model_formats  # autoSelect too


@pytest.mark.parametrize(
    ("child", "parent", "expected"),
    [
        ({"max": "5B"}, {"min": "1B", "max": "10B"}, ("1B", "5B")),  # each bound on its own
        ({"min": "2B"}, {"max": "10B"}, ("2B", "10B")),
        ({"min": ""}, {"min": "1B"}, ("", None)),  # "" is a string: it sets the bound (reads as 0)
        ({}, {"min": "1B"}, ("1B", None)),
        ({"size_range": {}}, {"max": "3B"}, (None, "3B")),
        ({}, {}, (None, None)),
    ],
)
def test_each_size_bound_is_set_by_a_string(
    child: dict[str, Any], parent: dict[str, Any], expected: tuple[str | None, str | None]
) -> None:
    size_range = merged(child, parent).model_size_range
    assert ((size_range.min, size_range.max) if size_range is not None else (None, None)) == expected


@pytest.mark.parametrize(
    ("child", "parent", "expected"),
    [
        ({}, {"classes": ["a100"]}, ("a100",)),
        ({"classes": []}, {"classes": ["a100"]}, ("a100",)),  # an empty list sets nothing
        ({"classes": ["h100"]}, {"classes": ["a100"]}, ("h100",)),
    ],
)
def test_accelerator_classes_are_set_by_a_non_empty_list(
    child: dict[str, Any], parent: dict[str, Any], expected: tuple[str, ...]
) -> None:
    assert merged(child, parent).accelerator_classes == expected


@pytest.mark.parametrize(
    ("child", "parent", "expected"),
    [
        ({}, {"engine_mode": "RawDeployment"}, ("RawDeployment", None)),
        ({"decoder_mode": "OMENative"}, {"engine_mode": "RawDeployment"}, ("RawDeployment", "OMENative")),
        (
            {"engine_mode": "bogus"},
            {"engine_mode": "RawDeployment"},
            ("bogus", None),
        ),  # set, declares nothing
        ({"engine_mode": ""}, {"engine_mode": "MultiNode"}, ("", None)),
    ],
)
def test_each_mode_annotation_is_set_by_a_string(
    child: dict[str, Any], parent: dict[str, Any], expected: tuple[str | None, str | None]
) -> None:
    spec = merged(child, parent)
    assert (spec.engine_mode_annotation, spec.decoder_mode_annotation) == expected


def test_the_nearest_runtime_wins_over_three_levels_and_cannot_remove_what_a_parent_sets() -> None:
    spec = merged(
        {"max": "8B"}, {"min": "2B", "disabled": False}, {"min": "1B", "max": "9B", "disabled": True}
    )
    assert spec.model_size_range is not None
    assert (spec.model_size_range.min, spec.model_size_range.max, spec.disabled) == ("2B", "8B", False)


def test_the_effective_profile_keeps_the_named_runtimes_identity() -> None:
    c = catalog(
        runtime("child", namespace=NS, inherit_from="base"),
        runtime("base", entry(), disabled=True, min="1B", engine_mode="RawDeployment"),
    )
    result = chain_of(c, SR, "child", NS)
    assert isinstance(result, Chain)
    profile = effective_profile(result)
    assert (profile.runtime.key, profile.is_cluster, profile.disabled) == (
        profile_of(c, SR, "child", NS).runtime.key,
        False,
        True,
    )
    assert (profile.range_text, profile.engine_mode, len(profile.entries)) == (
        "[1B, inf)",
        "RawDeployment",
        1,
    )


# --- the lookup --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "present", "v13", "legacy"),
    [
        ("ServingRuntime", "both", "ServingRuntime", "ServingRuntime"),
        ("ServingRuntime", "cluster", None, "ClusterServingRuntime"),
        ("ClusterServingRuntime", "both", "ClusterServingRuntime", "ServingRuntime"),
        ("ClusterServingRuntime", "namespaced", "ServingRuntime", "ServingRuntime"),
        (None, "both", "ServingRuntime", "ServingRuntime"),  # absent on an object stored without the default
        ("", "both", "ServingRuntime", "ServingRuntime"),
        ("servingruntime", "both", "ServingRuntime", "ServingRuntime"),  # compared exactly
        ("Other", "cluster", "ClusterServingRuntime", "ClusterServingRuntime"),
        ("ClusterServingRuntime", "none", None, None),
    ],
)
def test_lookup_by_kind(kind: str | None, present: str, v13: str | None, legacy: str | None) -> None:
    resources = []
    if present in ("both", "namespaced"):
        resources.append(runtime("rt", entry(), namespace=NS))
    if present in ("both", "cluster"):
        resources.append(runtime("rt", entry()))
    c = catalog(*resources)
    for lookup, expected in ((RuntimeLookup.V1_3, v13), (RuntimeLookup.LEGACY, legacy)):
        found = find_named_runtime(c, NS, "rt", kind, lookup)
        assert (found.runtime.kind.value if found is not None else None) == expected, lookup


@pytest.mark.parametrize(
    ("kind", "lookup", "message"),
    [
        ("ServingRuntime", RuntimeLookup.V1_3, "ServingRuntime rt not found in namespace ns"),
        ("ServingRuntime", RuntimeLookup.LEGACY, "runtime rt not found in namespace ns or at cluster scope"),
        (
            "ClusterServingRuntime",
            RuntimeLookup.V1_3,
            "runtime rt not found in namespace ns or at cluster scope",
        ),
        (None, RuntimeLookup.V1_3, "runtime rt not found in namespace ns or at cluster scope"),
        ("", RuntimeLookup.V1_3, "runtime rt not found in namespace ns or at cluster scope"),
    ],
)
def test_not_found_texts(kind: str | None, lookup: RuntimeLookup, message: str) -> None:
    assert named_runtime_not_found("rt", NS, kind, lookup) == message


# --- properties --------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.lists(runtimes(), max_size=6))
def test_without_the_annotation_the_effective_spec_is_the_own_spec(stored: list[Runtime]) -> None:
    c = Catalog.from_resources(stored)
    for profile in (c.runtime_profile(r.kind, r.namespace, r.name) for r in stored):
        assert profile is not None
        result = resolve_chain(c, profile)
        assert isinstance(result, Chain)
        assert not result.has_parent
        assert effective_spec(result) is profile.runtime.spec
        assert effective_profile(result) is profile


_ANNOTATIONS = st.sampled_from([None, "", "a", "b", "c", "d", "missing", "Not A Name"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(runtimes(min_entries=1), max_size=6),
    st.lists(models(), min_size=1, max_size=2),
    st.lists(_ANNOTATIONS, min_size=6, max_size=6),
    st.sampled_from([None, "a100"]),
)
def test_auto_selection_is_unchanged_by_any_annotation(
    stored: list[Runtime], stored_models: list[Any], annotations: list[str | None], selector: str | None
) -> None:
    plain = Catalog.from_resources([*stored_models, *stored])
    annotated = Catalog.from_resources(
        [
            *stored_models,
            *(r.model_copy(update={"inherit_from": a}) for r, a in zip(stored, annotations, strict=False)),
        ]
    )
    for stored_model in stored_models:
        service = isvc(model_name=stored_model.name, selector_class=selector)
        before, after = evaluate(plain, service), evaluate(annotated, service)
        assert before is not None
        assert after is not None
        assert (before.kind, before.message) == (after.kind, after.message)
        resolved = plain.resolve_model(NS, stored_model.name)
        if resolved is not None:
            rows = [(v.name, v.reason, v.rank) for v in explain(plain, resolved, NS, service).verdicts]
            assert rows == [
                (v.name, v.reason, v.rank) for v in explain(annotated, resolved, NS, service).verdicts
            ]


def test_a_named_child_is_judged_on_its_effective_spec_but_auto_selection_on_its_own() -> None:
    # The child inherits the parent's entries: named, it supports the model; auto-selection ignores it.
    c = catalog(
        model(),
        runtime("child", inherit_from="base"),
        runtime("base", entry(auto_select=False)),
    )
    named = evaluate(c, isvc(runtime_name="child"))
    assert named is not None
    assert named.message == "using specified ClusterServingRuntime child"
    auto = evaluate(c, isvc())
    assert auto is not None
    assert auto.message.startswith("no runtime supports model m (checked 2 runtimes")
    assert "child" not in auto.message  # its own spec has no entry for the format
