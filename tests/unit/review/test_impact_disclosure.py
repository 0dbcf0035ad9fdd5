"""SPEC §12 "Who is told names": a review answered to a caller not verified as the apiserver names objects of
the shown namespaces only (the request's own), and counts the others."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from selection_builders import catalog, entry, isvc, model, runtime

from ome_selector.api.resources import InferenceService, Kind, ObjectKey, Resource, Runtime
from ome_selector.review.catalog_review import CatalogReview, ReviewResult, Shown
from ome_selector.review.impact import run_to_end
from ome_selector.webhook.admission import shown_namespaces

SEE = "; see kubectl ome-selector runtime what-if"
ALLOW = (
    "; annotate the ClusterServingRuntime with ome-selector.ome.io/allow-disruption: "
    '"true" to apply it anyway'
)


def review(
    before: Sequence[Resource], changed: Resource | None, key: ObjectKey, shown: Shown, **kw: Any
) -> ReviewResult:
    run = CatalogReview(catalog(*before), key, changed, shown=shown, **kw)
    run_to_end(run.steps())
    return run.result


def csr(name: str, priority: int = 1, **kw: Any) -> Runtime:
    return runtime(name, entry(priority=priority), **kw)


def services(namespace: str, *names: str) -> list[InferenceService]:
    return [isvc(name, namespace=namespace) for name in names]


#: Three tenants whose InferenceServices all lose their only runtime when it is deleted.
ONLY = csr("only")
TENANTS: list[Resource] = [
    ONLY,
    model(),
    *services("alpha", "a1", "a2"),
    *services("beta", "b1"),
    *services("gamma", "g1", "g2", "g3"),
]


@pytest.mark.parametrize(
    ("shown", "warning", "denial"),
    [
        (
            None,  # the apiserver: everything, as before
            "this change moves 6 InferenceService(s): 6 lose their runtime "
            f"(e.g. alpha/a1: ClusterServingRuntime/only → none){SEE}",
            "this change leaves 6 InferenceService(s) without a runtime: alpha/a1 (RuntimeNotFound); "
            "alpha/a2 (RuntimeNotFound); beta/b1 (RuntimeNotFound); gamma/g1 (RuntimeNotFound); "
            f"gamma/g2 (RuntimeNotFound); gamma/g3 (RuntimeNotFound){ALLOW}",
        ),
        (
            frozenset(),  # a cluster-scoped change from an unverified caller: counts only
            "this change moves 6 InferenceService(s): 6 lose their runtime "
            f"(names withheld from an unverified caller){SEE}",
            "this change leaves 6 InferenceService(s) without a runtime: "
            f"6 (names withheld from an unverified caller){ALLOW}",
        ),
        (
            frozenset({"gamma"}),  # the example and the entries come from the shown namespace only
            "this change moves 6 InferenceService(s): 6 lose their runtime "
            f"(e.g. gamma/g1: ClusterServingRuntime/only → none){SEE}",
            "this change leaves 6 InferenceService(s) without a runtime: gamma/g1 (RuntimeNotFound); "
            "gamma/g2 (RuntimeNotFound); gamma/g3 (RuntimeNotFound); "
            f"3 (names withheld from an unverified caller){ALLOW}",
        ),
        (
            frozenset({"delta"}),  # a namespace with nothing moved: nothing named
            "this change moves 6 InferenceService(s): 6 lose their runtime "
            f"(names withheld from an unverified caller){SEE}",
            "this change leaves 6 InferenceService(s) without a runtime: "
            f"6 (names withheld from an unverified caller){ALLOW}",
        ),
    ],
    ids=["apiserver", "none", "one-namespace", "elsewhere"],
)
def test_only_the_shown_namespaces_are_named(shown: Shown, warning: str, denial: str) -> None:
    result = review(TENANTS, None, ONLY.key, shown, protect=True)
    assert result == ReviewResult((warning,), denial, "denied_protection")


def test_a_long_denial_keeps_the_withheld_count_and_its_end() -> None:
    names = [f"service-{i:03d}-{'x' * 40}" for i in range(60)]
    objects: list[Resource] = [ONLY, model(), *services("mine", *names), *services("theirs", "t1", "t2")]
    denial = review(objects, None, ONLY.key, frozenset({"mine"}), protect=True).denial
    assert denial is not None
    assert len(denial) <= 1024
    head = "this change leaves 62 InferenceService(s) without a runtime: "
    assert denial.startswith(f"{head}mine/{names[0]} (")
    assert denial.endswith(f"; …; 2 (names withheld from an unverified caller){ALLOW}")
    assert "theirs/" not in denial


def test_a_switch_is_counted_not_named() -> None:
    objects: list[Resource] = [csr("old"), model(), *services("alpha", "a"), *services("beta", "b")]
    better = csr("better", priority=9)
    result = review(objects, better, better.key, frozenset())
    assert result.warnings[0] == (
        "this change moves 2 InferenceService(s): 2 switch runtime "
        f"(names withheld from an unverified caller){SEE}"
    )
    assert not any("alpha" in warning or "beta" in warning for warning in result.warnings)


def test_an_ambiguity_involving_another_namespace_is_counted_not_named() -> None:
    # A cluster runtime that ties with another for a BaseModel of namespace "team" (RANK001 names the model),
    # and overlaps the other cluster runtime (SIZE003 names cluster runtimes only: named to anyone).
    a, b = csr("a"), csr("b")
    objects: list[Resource] = [a, model("private-weights", size="7B", namespace="team")]
    told = review(objects, b, b.key, None).warnings
    assert [w[:8] for w in told] == ["RANK001:", "SIZE003:"]
    assert "team/private-weights" in told[0]
    withheld = review(objects, b, b.key, frozenset(), deny_ambiguous=True)
    assert withheld.warnings == (
        "RANK001: a new finding involving another namespace's objects "
        "(names withheld from an unverified caller)",
        told[1],
    )
    assert withheld.denial == "; ".join(withheld.warnings)
    assert review(objects, b, b.key, frozenset({"team"})).warnings == told


@pytest.mark.parametrize("shown", [frozenset(), frozenset({"alpha"}), frozenset({"beta", "gamma"})])
def test_no_answer_names_a_hidden_namespace(shown: frozenset[str]) -> None:
    result = review(TENANTS, None, ONLY.key, shown, protect=True)
    texts = " ".join((*result.warnings, result.denial or ""))
    named = set(re.findall(r"\b(alpha|beta|gamma)/", texts))
    assert named <= shown
    assert "6 InferenceService(s)" in texts  # the counts stay whole


def _body(kind: Kind, namespace: str | None) -> dict[str, Any]:
    metadata = {"name": "x", **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "ome.io/v1beta1", "kind": kind.value, "metadata": metadata}


@pytest.mark.parametrize(
    ("kind", "namespace", "sslpeer", "shown"),
    [
        (Kind.SERVING_RUNTIME, "team", {"subject": ((("commonName", "kube-apiserver"),),)}, None),
        (Kind.CLUSTER_SERVING_RUNTIME, None, {"subject": ((("commonName", "kube-apiserver"),),)}, None),
        (Kind.SERVING_RUNTIME, "team", {}, frozenset({"team"})),
        (Kind.BASE_MODEL, "team", None, frozenset({"team"})),
        (Kind.CLUSTER_SERVING_RUNTIME, None, {}, frozenset()),
        (Kind.CLUSTER_BASE_MODEL, None, None, frozenset()),
    ],
)
def test_who_is_told_names(kind: Kind, namespace: str | None, sslpeer: Any, shown: Shown) -> None:
    assert shown_namespaces(kind, _body(kind, namespace), sslpeer) == shown
