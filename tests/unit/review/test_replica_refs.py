"""Lint and what-if skip InferenceServices with ``spec.replicaRefs`` (SPEC §5, §11): selection leaves them
alone, so they have no finding, keep no runtime in use, and no verdict to compare."""

from __future__ import annotations

from typing import Any

import pytest
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import InferenceService, Kind, ObjectKey, Resource
from ome_selector.review.lint import lint
from ome_selector.review.whatif import CatalogChange, Change, Verdict, WhatIf, what_if

REFS = [{"name": "replica-a"}]


def codes(resources: list[Resource]) -> list[tuple[str, list[str]]]:
    return [(f.code.value, [str(k) for k in f.objects]) for f in lint(catalog(*resources), (NS,))]


def modes(**kwargs: Any) -> InferenceService:
    invalid = {"annotations": {"ome.io/deploymentMode": "Serverless"}}
    return isvc("svc", engine=invalid, decoder=invalid, **kwargs)


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        (
            None,
            [
                ("MODE001", ["InferenceService ns/svc"]),
                ("MODE001", ["InferenceService ns/svc"]),
            ],
        ),
        (REFS, []),
    ],
)
def test_lint_gives_no_mode_finding_for_it(refs: list[dict[str, Any]] | None, expected: list[Any]) -> None:
    resources: list[Resource] = [model(), runtime("rt", entry()), modes(replica_refs=refs)]
    assert codes(resources) == expected


@pytest.mark.parametrize(("refs", "dead"), [(None, []), (REFS, [("DEAD001", ["ClusterServingRuntime rt"])])])
def test_a_runtime_it_names_is_not_in_use_through_it(
    refs: list[dict[str, Any]] | None, dead: list[Any]
) -> None:
    resources: list[Resource] = [
        model(),
        runtime("rt", entry(auto_select=False)),
        isvc(runtime_name="rt", replica_refs=refs),
    ]
    assert [c for c in codes(resources) if c[0] == "DEAD001"] == dead


def test_what_if_leaves_it_out() -> None:
    before: list[Resource] = [
        model(),
        runtime("a", entry()),
        isvc("plain"),
        isvc("fronting", replica_refs=REFS),
        isvc("named", runtime_name="a", replica_refs=REFS),
    ]
    change = CatalogChange(deleted=(ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "a"),))
    result = what_if(catalog(*before), change)
    selected = Verdict("True", "RuntimeSelected", "ClusterServingRuntime/a")
    assert result == WhatIf(
        changes=(Change(NS, "plain", selected, Verdict("False", "RuntimeNotFound", None)),), unchanged=0
    )


def test_what_if_shows_an_inference_service_that_drops_them() -> None:
    before: list[Resource] = [model(), runtime("a", entry()), isvc("svc", replica_refs=REFS)]
    change = CatalogChange(applied=(isvc("svc"),))
    result = what_if(catalog(*before), change)
    selected = Verdict("True", "RuntimeSelected", "ClusterServingRuntime/a")
    assert result == WhatIf(changes=(Change(NS, "svc", None, selected),), unchanged=0)
