"""The impact of a catalog change (SPEC §12): the texts, protection, ambiguity, and that the review by groups
finds exactly what evaluating every InferenceService before and after the change finds (SPEC §11's
what-if is the same implementation)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from catalog_strategies import OTHER, models, runtimes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selection_builders import NS, catalog, entry, isvc, model, runtime, runtime_doc

from ome_selector.api.loading import load_resource
from ome_selector.api.resources import InferenceService, Kind, ObjectKey, Resource, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.catalog_review import CatalogReview, ReviewResult
from ome_selector.review.impact import ImpactRun, Verdict, run_to_end, verdict
from ome_selector.review.lint import lint
from ome_selector.selection.impact_messages import NOT_COMPUTED
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.impact import review_catalog_change

SEE = "; see kubectl ome-selector runtime what-if"


def review(
    before: Sequence[Resource], changed: Resource | None, key: ObjectKey | None = None, **kw: Any
) -> ReviewResult:
    """The review of storing ``changed``, or (None) of deleting ``key``."""
    target = key if key is not None else changed.key if changed is not None else None
    assert target is not None
    run = CatalogReview(catalog(*before), target, changed, **kw)
    run_to_end(run.steps())
    return run.result


def csr(name: str, low: str | None = None, high: str | None = None, priority: int = 1, **kw: Any) -> Runtime:
    return runtime(name, entry(priority=priority), min=low, max=high, **kw)


def services(*names: str, namespace: str = NS, **kw: Any) -> list[InferenceService]:
    return [isvc(name, namespace=namespace, **kw) for name in names]


# --- the impact warning --------------------------------------------------------------------------------


def test_a_new_runtime_that_wins_switches_the_inference_services() -> None:
    old, new = csr("old"), csr("new", priority=5)
    result = review([old, model(), *services("b", "a")], new)
    assert result == ReviewResult(
        (
            "this change moves 2 InferenceService(s): 2 switch runtime "
            "(e.g. ns/a: ClusterServingRuntime/old → "
            f"ClusterServingRuntime/new){SEE}",
            "SIZE003: ClusterServingRuntime new (any size) and ClusterServingRuntime old (any size) both "
            "auto-select mt:safetensors models in overlapping size ranges; make the ranges disjoint, or turn "
            "autoSelect off on one of them",
        ),
        None,
        "moved",
    )


def test_deleting_the_only_runtime_loses_and_creating_one_gains() -> None:
    only = csr("only")
    lost = review([only, model(), *services("z", "y")], None, key=only.key)
    assert lost.warnings == (
        f"this change moves 2 InferenceService(s): 2 lose their "
        f"runtime (e.g. ns/y: ClusterServingRuntime/only → none){SEE}",
    )
    gained = review([model(), *services("z")], only)
    assert gained.warnings == (
        f"this change moves 1 InferenceService(s): 1 gain one (e.g. "
        f"ns/z: none → ClusterServingRuntime/only){SEE}",
    )


def test_categories_in_order_and_the_example_from_the_first_non_empty_one() -> None:
    # Changing model m2 to another format: its services lose; m's services are untouched; a new model spec
    # for "small" makes the runtime serve it (gain) ... all in one change is not possible for one object, so
    # the mix comes from one runtime that is the only one for m (lose) and wins n over another (switch).
    keep = csr("keep", high="10B")
    victim = csr("victim", priority=5)
    objects: list[Resource] = [
        keep,
        victim,
        model("m", size="20B"),
        model("n", size="5B"),
        *services("m-1", "m-2", model_name="m"),
        *services("n-1", model_name="n", namespace="a-first"),
    ]
    result = review(objects, None, key=victim.key)
    assert result.warnings == (
        "this change moves 3 InferenceService(s): 2 lose their runtime, 1 switch runtime "
        f"(e.g. ns/m-1: ClusterServingRuntime/victim → none){SEE}",
    )


def test_a_change_that_moves_nothing_says_nothing() -> None:
    a = csr("a")
    same = runtime("a", entry(), annotations={"note": "relabelled"})
    assert review([a, model(), *services("x")], same) == ReviewResult()
    wider = runtime("a", entry(), max="80B")  # read, judged: the one InferenceService keeps its runtime
    assert review([a, model(), *services("x")], wider) == ReviewResult()


def test_an_update_selection_reads_alike_is_not_judged() -> None:
    a = csr("a")
    run = CatalogReview(
        catalog(a, model(), *services("x")), a.key, runtime("a", entry(), annotations={"n": "1"})
    )
    run_to_end(run.steps())
    assert run.impact.judged == 0
    judged = CatalogReview(catalog(a, model(), *services("x")), a.key, runtime("a", entry(), max="80B"))
    run_to_end(judged.steps())
    assert judged.impact.judged == 1


def test_a_reason_change_alone_has_no_list() -> None:
    # Disabling a model that nothing serves: NoRuntime (RuntimeNotFound) becomes ModelDisabled.
    m = model("m")
    result = review([m, *services("x")], model("m", disabled=True))
    assert result.warnings == (f"this change moves 1 InferenceService(s) (e.g. ns/x: none → none){SEE}",)


def test_the_warning_is_cut_to_256_characters() -> None:
    name = "n" * 200
    only = csr("only")
    result = review([only, model(), *services(name)], None, key=only.key)
    (text,) = result.warnings
    assert len(text) == 256
    assert text.endswith("…")
    assert text.startswith("this change moves 1 InferenceService(s): 1 lose their runtime (e.g. ns/nnn")


def test_named_runtimes_and_descendants_move_too() -> None:
    parent = csr("parent")
    child = runtime("child", entry(), inherit_from="parent")
    objects: list[Resource] = [parent, child, model(), *services("x", runtime_name="child")]
    result = review(objects, None, key=parent.key)
    assert result.warnings == (
        "this change moves 1 InferenceService(s): 1 lose their runtime "
        f"(e.g. ns/x: ClusterServingRuntime/child → ClusterServingRuntime/child){SEE}",
    )


# --- protection ----------------------------------------------------------------------------------------


def test_protection_denies_a_change_that_strands_inference_services() -> None:
    only = csr("only")
    objects: list[Resource] = [only, model(), *services("b", "a"), *services("c", namespace="other")]
    result = review(objects, None, key=only.key, protect=True)
    assert result.denial == (
        "this change leaves 3 InferenceService(s) without a runtime: ns/a (RuntimeNotFound); "
        "ns/b (RuntimeNotFound); other/c (RuntimeNotFound); annotate the ClusterServingRuntime with "
        'ome-selector.ome.io/allow-disruption: "true" to apply it anyway'
    )
    assert result.outcome == "denied_protection"
    assert len(result.warnings) == 1  # the impact warning goes with the denial


def test_the_annotation_lets_the_change_through_with_the_warning() -> None:
    only = csr("only")
    result = review([only, model(), *services("a")], None, key=only.key, protect=True, allow_disruption=True)
    assert result.denial is None
    assert result.outcome == "allowed_disruption"
    assert result.warnings[0].startswith("this change moves 1 InferenceService(s): 1 lose their runtime")


def test_protection_lets_a_switch_through() -> None:
    result = review([csr("old"), model(), *services("a")], csr("new", priority=5), protect=True)
    assert result.denial is None


def test_the_denial_holds_1024_characters_and_keeps_its_end() -> None:
    only = csr("only")
    names = [f"service-{i:03d}-{'x' * 40}" for i in range(60)]
    result = review([only, model(), *services(*names)], None, key=only.key, protect=True)
    denial = result.denial
    assert denial is not None
    assert len(denial) <= 1024
    assert denial.startswith(f"this change leaves 60 InferenceService(s) without a runtime: ns/{names[0]} (")
    assert denial.endswith(
        "; …; annotate the ClusterServingRuntime with "
        'ome-selector.ome.io/allow-disruption: "true" to apply it '
        "anyway"
    )


# --- ambiguity -----------------------------------------------------------------------------------------


def _lint_messages(objects: list[Resource], code: str) -> set[str]:
    return {f"{f.code.value}: {f.message}" for f in lint(catalog(*objects), [NS]) if f.code.value == code}


def test_an_overlapping_runtime_is_warned_with_lints_own_text() -> None:
    a = csr("a", "1B", "10B")
    b = csr("b", "5B", "20B")
    result = review([a], b, warn=True)
    expected = (
        "SIZE003: ClusterServingRuntime a ([1B, 10B]) and "
        "ClusterServingRuntime b ([5B, 20B]) both auto-select "
        "mt:safetensors models in overlapping size ranges; make the "
        "ranges disjoint, or turn autoSelect off on one "
        "of them"
    )
    assert result.warnings == (expected,)
    assert _lint_messages([a, b], "SIZE003") == {expected}


def test_a_tie_the_runtime_brings_is_warned_and_one_it_had_is_not() -> None:
    a, b = csr("a"), csr("b")
    m = model("m", size="7B")
    result = review([a, m], b)
    expected = (
        "RANK001: ClusterBaseModel m (7B): ClusterServingRuntime a "
        "and ClusterServingRuntime b tie on score 1 "
        "and size distance, so the name picks a; raise the priority of the one that should serve it, or give "
        "them different modelSizeRanges"
    )
    assert expected in result.warnings
    assert expected in _lint_messages([a, b, m], "RANK001")
    # The same tie, already in the catalog: b edited (a new annotation) brings nothing new.
    again = review([a, b, m], runtime("b", entry(), annotations={"note": "x"}))
    assert again == ReviewResult()


def test_deny_ambiguous_runtimes_denies_with_the_same_text() -> None:
    a, b = csr("a", "1B", "10B"), csr("b", "5B", "20B")
    result = review([a], b, deny_ambiguous=True)
    assert result.denial == result.warnings[0]
    assert result.outcome == "denied_ambiguity"


def test_at_most_three_ambiguity_warnings() -> None:
    others = [csr(f"r{i}", "1B", "10B") for i in range(5)]
    result = review(others, csr("new", "2B", "3B"))
    assert len(result.warnings) == 3
    assert all(w.startswith("SIZE003: ") and len(w) <= 256 for w in result.warnings)


def test_a_deletion_brings_no_ambiguity() -> None:
    a, b = csr("a", "1B", "10B"), csr("b", "5B", "20B")
    assert review([a, b], None, key=b.key) == ReviewResult()


# --- the admission driver ------------------------------------------------------------------------------


def test_past_the_budget_the_review_says_not_computed_and_never_denies() -> None:
    only = csr("only")
    live = catalog(only, model(), *services("a"))
    config = WebhookConfig(protect_inference_services=True, impact_budget=-1.0)
    body = runtime_doc("only", entry())
    result = asyncio.run(
        review_catalog_change(
            live, Kind.CLUSTER_SERVING_RUNTIME, body, body, operation="DELETE", config=config
        )
    )
    assert result == ReviewResult((NOT_COMPUTED,), None, "not_computed")
    assert NOT_COMPUTED == (
        "the impact of this change was not computed within the "
        "admission budget; see kubectl ome-selector runtime what-if"
    )


@pytest.mark.parametrize(
    "body",
    [
        {"apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": "x"},
         "spec": 7},
        {"apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": "x"},
         "spec": {"supportedModelFormats": "not a list"}},
    ],
)  # fmt: skip
def test_an_object_the_product_cannot_read_gets_no_impact(body: dict[str, Any]) -> None:
    live = catalog(csr("only"), model(), *services("a"))
    result = asyncio.run(
        review_catalog_change(
            live, Kind.CLUSTER_SERVING_RUNTIME, body, None, operation="CREATE", config=WebhookConfig()
        )
    )
    assert result is None


def test_on_delete_the_stored_object_and_its_annotation_count() -> None:
    only = csr("only")
    live = catalog(only, model(), *services("a"))
    stored = runtime_doc("only", entry(), annotations={"ome-selector.ome.io/allow-disruption": "true"})
    config = WebhookConfig(protect_inference_services=True)
    result = asyncio.run(
        review_catalog_change(
            live, Kind.CLUSTER_SERVING_RUNTIME, stored, stored, operation="DELETE", config=config
        )
    )
    assert result is not None
    assert result.denial is None
    assert result.outcome == "allowed_disruption"


def test_every_part_off_reviews_nothing() -> None:
    live = catalog(csr("only"), model(), *services("a"))
    body = runtime_doc("only", entry())
    config = WebhookConfig(catalog_impact=False)
    result = asyncio.run(
        review_catalog_change(
            live, Kind.CLUSTER_SERVING_RUNTIME, body, body, operation="DELETE", config=config
        )
    )
    assert result is None


# --- the groups find what evaluating everything finds ------------------------------------------------


@st.composite
def _isvc(draw: st.DrawFn) -> InferenceService:
    return isvc(
        draw(st.sampled_from("uvwxyz")),
        namespace=draw(st.sampled_from([NS, OTHER])),
        model_name=draw(st.sampled_from(["m", "n", None])),
        runtime_name=draw(st.sampled_from([None, None, "a", "b", "c"])),
        selector_class=draw(st.sampled_from([None, "a100"])),
        # SPEC §5: one that fronts referenced replicas is left alone, so never moved
        replica_refs=draw(st.sampled_from([None, None, None, [{"name": "replica-0"}]])),
    )


@st.composite
def _inheriting(draw: st.DrawFn) -> Runtime:
    base = draw(runtimes("abcd", min_entries=1))
    parent = draw(st.sampled_from(["a", "b", "c", "d"]))
    document = runtime_doc(base.name, entry(), namespace=base.namespace, inherit_from=parent)
    resource = load_resource(document)
    assert isinstance(resource, Runtime)
    return resource


_objects = st.lists(st.one_of(runtimes("abcd"), _inheriting(), models("mn"), _isvc()), max_size=14)
_changes = st.one_of(runtimes("abcd"), _inheriting(), models("mn"))


def _brute_force(
    before: list[Resource], key: ObjectKey, after_object: Resource | None
) -> dict[ObjectKey, tuple[Verdict | None, Verdict | None]]:
    old = Catalog.from_resources(before)
    new = Catalog.from_resources(
        [r for r in before if r.key != key] + ([after_object] if after_object else [])
    )
    moved = {}
    for service in old.inference_services():
        pair = (verdict(old, service, RuntimeLookup.V1_3), verdict(new, service, RuntimeLookup.V1_3))
        if pair[0] != pair[1]:
            moved[service.key] = pair
    return moved


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_objects, _changes, st.booleans(), st.booleans())
def test_the_groups_move_exactly_what_evaluating_everything_moves(
    objects: list[Resource], changed: Resource, delete: bool, warm: bool
) -> None:
    live = Catalog.from_resources(objects)
    stored = list(live)
    if delete:
        candidates = [r for r in stored if r.kind is not Kind.INFERENCE_SERVICE]
        if not candidates:
            return
        key, after_object = candidates[0].key, None
    else:
        key, after_object = changed.key, changed
    if warm:  # the memo holds results (and a log of runtime changes to replay)
        for service in live.inference_services():
            verdict(live, service, RuntimeLookup.V1_3)
        for resource in stored:
            if isinstance(resource, Runtime):
                live.upsert(resource)
    run = ImpactRun(live, {key: after_object})
    run_to_end(run.steps())
    found = {k: (m.before, m.after) for m in run.moved for k in m.keys}
    assert found == _brute_force(stored, key, after_object)


@pytest.mark.parametrize(
    ("username", "denied"),
    [
        ("alice", True),
        ("system:serviceaccount:kube-system:namespace-controller", False),
        ("system:serviceaccount:kube-system:generic-garbage-collector", False),
    ],
)
def test_protection_never_blocks_kubernetes_own_deletions(username: str, denied: bool) -> None:
    only = csr("only")
    live = catalog(only, model(), *services("a"))
    body = runtime_doc("only", entry())
    config = WebhookConfig(protect_inference_services=True)
    result = asyncio.run(
        review_catalog_change(
            live,
            Kind.CLUSTER_SERVING_RUNTIME,
            body,
            body,
            operation="DELETE",
            config=config,
            username=username,
        )
    )
    assert result is not None
    assert (result.denial is not None) is denied
    assert result.warnings[0].startswith("this change moves 1 InferenceService(s): 1 lose their runtime")


def test_a_tie_seen_from_several_namespaces_is_one_warning() -> None:
    # The ClusterBaseModel is seen from the namespaces without ServingRuntimes and from NS, which has one
    # (of another format): the same RANK001 finding from both views is warned about once.
    a, b = csr("a"), csr("b")
    local = runtime("local", entry("onnx"), namespace=NS)
    result = review([a, local, model("m", size="7B")], b)
    assert [w[:8] for w in result.warnings] == ["RANK001:", "SIZE003:"]


def test_the_catalog_version_moves_with_what_decisions_read() -> None:
    live = catalog(csr("a"), model(), *services("x"))
    version = live.version
    live.upsert(isvc("x", annotations={"team": "a"}))  # labels, status: the same decision inputs
    assert live.version == version
    live.upsert(isvc("x", model_name="other"))
    assert live.version > version
    version = live.version
    live.upsert(csr("a", high="9B"))
    assert live.version > version
