"""Scores and ranking (SPEC §4), with hypothesis properties of the ranking."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import NS, catalog, entry, model, runtime

from ome_selector.api.resources import Model, Runtime
from ome_selector.selection.explain import explain
from ome_selector.selection.matcher import check
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile

SCORES = [
    ({}, {}, 1, "defaults: format weight 1 x priority 1"),
    ({"priority": 3}, {}, 3, "priority multiplies"),
    ({"weight": 4, "priority": 2}, {}, 8, "format weight x priority"),
    ({"weight": 0}, {}, 10, "format weight 0 counts as 10"),
    ({"framework": "tf"}, {"framework": "tf"}, 2, "framework term when both name one"),
    (
        {"framework": "tf", "fw_weight": 0, "priority": 2},
        {"framework": "tf"},
        12,
        "framework weight 0 counts as 5",
    ),
    (
        {"framework": "tf", "weight": 3, "fw_weight": 7, "priority": 2},
        {"framework": "tf"},
        20,
        "both weights",
    ),
    ({"weight": -2, "framework": "tf", "fw_weight": 1}, {"framework": "tf"}, -1, "negative weights"),
]


@pytest.mark.parametrize(
    ("entry_fields", "model_fields", "score"),
    [(e, m, s) for e, m, s, _ in SCORES],
    ids=[i for *_, i in SCORES],
)
def test_scores(entry_fields: dict[str, Any], model_fields: dict[str, Any], score: int) -> None:
    result = check(
        RuntimeProfile.of(runtime("rt", entry(**entry_fields))), ModelProfile.of(model(**model_fields))
    )
    assert result.score == score
    assert result.priority == entry_fields.get("priority", 1)


def ranked_names(m: Model, *runtimes: Runtime) -> list[str]:
    explanation = explain(catalog(m, *runtimes), m, NS)
    return [f"{v.runtime.kind.value}/{v.name}" for v in explanation.ranked]


def test_namespaced_before_cluster_whatever_the_score() -> None:
    m = model()
    names = ranked_names(m, runtime("cluster", entry(priority=9)), runtime("local", entry(), namespace=NS))
    assert names == ["ServingRuntime/local", "ClusterServingRuntime/cluster"]


def test_higher_score_first() -> None:
    m = model()
    assert ranked_names(m, runtime("a", entry()), runtime("b", entry(priority=2))) == [
        "ClusterServingRuntime/b",
        "ClusterServingRuntime/a",
    ]


def test_closer_range_breaks_score_ties() -> None:
    m = model(size="3B")
    names = ranked_names(
        m,
        runtime("wide", entry(), min="1B", max="10B"),  # distance 2 + 7 = 9B
        runtime("narrow", entry(), min="2B", max="4B"),  # 1 + 1 = 2B
        runtime("open", entry(), min="1B"),  # only the bound present counts (SPEC §4 step 3 v4): 2B
        runtime("far-open", entry(), max="8B"),  # 5B
        runtime("none", entry()),  # no range: 0, closest
        runtime("empty", entry(), size_range={}),  # neither bound: 0
    )
    expected = ("empty", "none", "narrow", "open", "far-open", "wide")
    assert names == [f"ClusterServingRuntime/{n}" for n in expected]


@pytest.mark.parametrize(
    ("size_range", "distance"),
    [
        ({"min": "1B"}, 6),  # the SPEC §4 step 3 examples for a 7B model
        ({"max": "13B"}, 6),
        ({"min": "1B", "max": "13B"}, 12),
        ({"min": "0"}, 7),  # a bound that reads as 0 is present, at 0
        ({"max": "4b"}, 7),
        ({}, 0),
        (None, 0),
    ],
)
def test_distance_sums_the_bounds_that_are_present(size_range: dict[str, str] | None, distance: int) -> None:
    profile = RuntimeProfile.of(runtime("r", entry(), size_range=size_range))
    assert profile.size_distance(Fraction(7_000_000_000)) == distance * 10**9


def test_one_sided_ranges_tie_on_distance_and_fall_to_the_name() -> None:
    # Before v4 a missing bound counted as infinitely far; now each counts its one bound: 2B each.
    m = model(size="3B")
    names = ranked_names(m, runtime("b-open", entry(), min="1B"), runtime("a-open", entry(), max="5B"))
    assert names == ["ClusterServingRuntime/a-open", "ClusterServingRuntime/b-open"]


def test_a_one_sided_range_beats_a_farther_two_sided_one() -> None:
    m = model(size="7B")
    names = ranked_names(
        m, runtime("a-both", entry(), min="1B", max="13B"), runtime("b-min", entry(), min="1B")
    )
    assert names == ["ClusterServingRuntime/b-min", "ClusterServingRuntime/a-both"]


def test_distance_only_counts_when_the_model_has_a_size() -> None:
    m = model()
    names = ranked_names(m, runtime("b", entry()), runtime("a", entry(), min="1B", max="100B"))
    assert names == ["ClusterServingRuntime/a", "ClusterServingRuntime/b"]


def test_distance_is_exact_not_truncated() -> None:
    # Upstream truncated the float difference to an integer; these differ by 0.5 parameters.
    m = model(size="10")
    names = ranked_names(
        m, runtime("a", entry(), min="9", max="11.5"), runtime("b", entry(), min="9", max="11")
    )
    assert names == ["ClusterServingRuntime/b", "ClusterServingRuntime/a"]


def test_model_size_reading_zero_still_ranks_by_distance() -> None:
    m = model(size="4b")  # has a size, reads as 0
    names = ranked_names(
        m, runtime("a-far", entry(), min="0", max="10B"), runtime("b-near", entry(), min="0", max="1B")
    )
    assert names == ["ClusterServingRuntime/b-near", "ClusterServingRuntime/a-far"]


def test_ranks_are_consecutive_and_selection_is_rank_one() -> None:
    m = model()
    explanation = explain(catalog(m, runtime("a", entry()), runtime("b", entry(auto_select=False))), m, NS)
    assert [v.rank for v in explanation.verdicts] == [1, None]
    assert explanation.selected is explanation.verdicts[0]


# --- properties ---------------------------------------------------------------------------------------------

bounds = st.none() | st.sampled_from(["1B", "2B", "3B", "4B", "500M", "7B", "70B", "4b", ""])


@st.composite
def runtime_sets(draw: st.DrawFn) -> list[Runtime]:
    count = draw(st.integers(min_value=1, max_value=8))
    runtimes = []
    for index in range(count):
        namespaced = draw(st.booleans())
        size_range = {k: v for k, v in (("min", draw(bounds)), ("max", draw(bounds))) if v is not None}
        runtimes.append(
            runtime(
                draw(st.sampled_from(["a", "b", "c", "d"])) + str(index),
                entry(
                    priority=draw(st.integers(1, 3)),
                    weight=draw(st.integers(0, 2)),
                    auto_select=draw(st.booleans()),
                ),
                namespace=NS if namespaced else None,
                size_range=size_range if draw(st.booleans()) else None,
            )
        )
    return runtimes


@settings(max_examples=150)
@given(
    runtime_sets(),
    st.none() | st.sampled_from(["3B", "500M", "70B", "4b"]),
    st.randoms(use_true_random=False),
)
def test_ranking_is_a_total_order_independent_of_input_order(
    runtimes: list[Runtime], size: str | None, rng: random.Random
) -> None:
    m = model(size=size)
    reference = explain(catalog(m, *runtimes), m, NS)
    shuffled = list(runtimes)
    rng.shuffle(shuffled)
    again = explain(catalog(*shuffled, m), m, NS)
    assert again == reference
    ranked = reference.ranked
    # Total and strict: every pair is ordered by the SPEC §4 criteria.
    for better, worse in itertools.pairwise(ranked):
        key_better = (better.is_cluster, -better.score)
        key_worse = (worse.is_cluster, -worse.score)
        assert key_better <= key_worse
        if key_better == key_worse and m.spec.model_parameter_size is None:
            assert better.name < worse.name
    assert [v.rank for v in ranked] == list(range(1, len(ranked) + 1))
    assert len({(v.is_cluster, v.name) for v in ranked}) == len(ranked)
