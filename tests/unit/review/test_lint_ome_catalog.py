"""Lint of OME's published catalog, each vendored snapshot (harness.ome_data: OME cfa05c6 and 5e4857e),
loaded as the selection-core tests load it (four runtime names appear twice; the later file in kubectl's order
wins): the tie findings derived from explain's rankings, the 72B model an unranged 14B runtime wins, and no
false size or operator errors."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest
from lint_expectations import spec_distance, ties
from selection_builders import load_ome_catalog

from harness.ome_data import OME_5E4857E, OME_CFA05C6, SNAPSHOTS, OmeSnapshot
from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.lint import Code, Finding, lint, object_order
from ome_selector.selection.explain import explain

NS = "default"


#: The findings per code, per snapshot: OME 5e4857e adds five runtimes no published model auto-selects yet
#: (its two new models carry no modelFormat), so five more DEAD001.
COUNTS = {
    OME_CFA05C6.id: {"DEAD001": 178, "SIZE003": 20, "RANK001": 9, "RANK002": 3, "SERV001": 2, "QUANT001": 2},
    OME_5E4857E.id: {"DEAD001": 183, "SIZE003": 20, "RANK001": 9, "RANK002": 3, "SERV001": 2, "QUANT001": 2},
}


@pytest.fixture(params=SNAPSHOTS, ids=[snapshot.id for snapshot in SNAPSHOTS])
def snapshot(request: pytest.FixtureRequest) -> OmeSnapshot:
    chosen: OmeSnapshot = request.param
    return chosen


@cache
def ome(snapshot: OmeSnapshot) -> tuple[Catalog, tuple[Finding, ...]]:
    c = Catalog.from_resources(load_ome_catalog(snapshot.catalog))
    return c, lint(c, [NS])


def by_code(snapshot: OmeSnapshot, code: Code) -> list[Finding]:
    return [f for f in ome(snapshot)[1] if f.code is code]


def sorted_keys(keys: tuple[ObjectKey, ...]) -> tuple[ObjectKey, ...]:
    return tuple(sorted(keys, key=object_order))


def cluster_runtime(name: str) -> ObjectKey:
    return ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, name)


def test_ties_are_those_of_explains_rankings(snapshot: OmeSnapshot) -> None:
    c, _ = ome(snapshot)
    rank001: set[tuple[ObjectKey, ...]] = set()
    rank002: set[tuple[ObjectKey, ...]] = set()
    for model in c.models():
        ranked = explain(c, model, NS).ranked
        if len(ranked) < 2:
            continue
        size = c.model_profile(model).size
        first = ranked[0]
        if ties(first, ranked[1], size):
            rank001.add((model.key, first.runtime.key, ranked[1].runtime.key))
        if size is not None and first.runtime.spec.model_size_range is None:
            beaten = [
                v.runtime.key
                for v in ranked[1:]
                if v.score == first.score
                and v.runtime.spec.model_size_range is not None
                and spec_distance(v.runtime.spec, size) > spec_distance(first.runtime.spec, size)
            ]
            if beaten:
                rank002.add((model.key, first.runtime.key, *beaten))
    assert {f.objects for f in by_code(snapshot, Code.RANK001)} == {sorted_keys(t) for t in rank001}
    assert {f.objects for f in by_code(snapshot, Code.RANK002)} == {sorted_keys(t) for t in rank002}
    # OME's "9 models whose top two runtimes tie on score": here 6 without a size (name decides, RANK001)
    # and 3 with one, where two unranged runtimes tie (RANK001) and beat the model's own ranged one (RANK002).
    assert len(rank001) == 9
    assert len(rank002) == 3


def test_qwen2_5_72b_auto_selects_an_unranged_14b_runtime(snapshot: OmeSnapshot) -> None:
    qwen = ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "qwen2-5-72b-instruct")
    r14, r32, own = (
        cluster_runtime("srt-deepseek-r1-distill-qwen-14b"),
        cluster_runtime("srt-deepseek-r1-distill-qwen-32b"),
        cluster_runtime("srt-qwen2-5-72b-instruct"),
    )
    findings = [(f.code, f.objects, f.message) for f in ome(snapshot)[1] if qwen in f.objects]
    assert findings == [
        (
            Code.RANK001,
            (qwen, r14, r32),
            "ClusterBaseModel qwen2-5-72b-instruct (72B): "
            "ClusterServingRuntime srt-deepseek-r1-distill-qwen-14b and "
            "ClusterServingRuntime srt-deepseek-r1-distill-qwen-32b tie on score 2 and size distance, "
            "so the name picks srt-deepseek-r1-distill-qwen-14b; raise the priority of the one that should "
            "serve it, or give them different modelSizeRanges",
        ),
        (
            Code.RANK002,
            (qwen, r14, own),
            "ClusterBaseModel qwen2-5-72b-instruct (72B): "
            "ClusterServingRuntime srt-deepseek-r1-distill-qwen-14b has no modelSizeRange, so it counts as "
            "closest and wins over ClusterServingRuntime srt-qwen2-5-72b-instruct ([70B, 75B]), whose range "
            "covers the model; give srt-deepseek-r1-distill-qwen-14b a modelSizeRange, "
            "or raise the priority of srt-qwen2-5-72b-instruct",
        ),
    ]
    # The 72B runtime and the two unranged ones also overlap as runtimes (SIZE003).
    overlaps = {f.objects for f in by_code(snapshot, Code.SIZE003)}
    assert (r14, own) in overlaps
    assert (r32, own) in overlaps
    assert (r14, r32) in overlaps


def test_no_false_size_or_operator_errors(snapshot: OmeSnapshot) -> None:
    # Every size value in the catalog is a parameter count, every range is ordered, every operator known.
    assert by_code(snapshot, Code.SIZE001) == []
    assert by_code(snapshot, Code.SIZE002) == []
    assert by_code(snapshot, Code.OPER001) == []


def test_counts_per_code(snapshot: OmeSnapshot) -> None:
    # Most published models carry no modelFormat yet (OME fills it in from the weights), so most runtimes are
    # rank 1 for no model of the catalog as published.
    assert Counter(f.code.value for f in ome(snapshot)[1]) == COUNTS[snapshot.id]
    # A copied range: the 20B gpt-oss gRPC runtime declares the 120B model's 115B-125B.
    assert (cluster_runtime("srt-gpt-oss-120b-grpc"), cluster_runtime("srt-gpt-oss-20b-grpc")) in {
        f.objects for f in by_code(snapshot, Code.SIZE003)
    }


def test_the_new_runtimes_are_dead_until_their_models_are_read() -> None:
    """The five runtimes OME 5e4857e adds: no published model names their formats yet, so each is DEAD001."""
    old = {f.objects for f in by_code(OME_CFA05C6, Code.DEAD001)}
    new = {f.objects for f in by_code(OME_5E4857E, Code.DEAD001)}
    assert new - old == {
        (cluster_runtime(name),)
        for name in (
            "srt-inkling-small-nvfp4",
            "tokenspeed-inkling-nvfp4",
            "vllm-deepseek-v4-flash",
            "vllm-deepseek-v4-pro",
            "vllm-kimi-k3",
        )
    }
    assert old <= new


def test_gpt_oss_models_would_lose_every_runtime_once_learned(snapshot: OmeSnapshot) -> None:
    """SPEC §11 QUANT001: OME's gpt-oss models have their storage and no quantization; their files give
    mxfp4, which none of the four gpt-oss runtimes that serve them today declares."""
    serving = ", ".join(
        ("srt-gpt-oss-120b", "srt-gpt-oss-120b-grpc", "srt-gpt-oss-20b", "srt-gpt-oss-20b-grpc")
    )
    found = {f.objects[0].name: f for f in by_code(snapshot, Code.QUANT001)}
    assert sorted(found) == ["gpt-oss-120b", "gpt-oss-20b"]
    finding = found["gpt-oss-20b"]
    assert finding.objects[1:] == tuple(cluster_runtime(name) for name in serving.split(", "))
    assert finding.severity.value == "warning"
    assert finding.message == (
        "ClusterBaseModel gpt-oss-20b has no quantization yet; its files will give quantization mxfp4 (every "
        "published GptOssForCausalLM checkpoint declares it), which none of the runtimes that serve it today "
        f"declares ({serving}): once learned, no runtime serves it; add quantization: mxfp4 to their "
        "entries, or set the model's quantization"
    )
