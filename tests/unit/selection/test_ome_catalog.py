"""Realistic data: explain every model of OME's published catalog against the whole catalog, as published and
with the metadata OME would fill in — for each vendored snapshot (harness.ome_data: OME cfa05c6 in
tests/data/ome-catalog, OME 5e4857e of 2026-08-21 in tests/data/ome-2026-08-21/catalog)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

import pytest
from selection_builders import isvc, load_ome_catalog, resolve_runtime

from harness.ome_data import OME_5E4857E, OME_CFA05C6, SNAPSHOTS, OmeSnapshot
from ome_selector.api.resources import Kind, Model, ModelFormat, ModelFramework, Resource, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.explain import Explanation, explain, explanation_document
from ome_selector.selection.outcome import OutcomeKind, evaluate

NS = "default"


@dataclass(frozen=True)
class Figures:
    """What a snapshot holds: definitions in the files, objects once duplicates are resolved, and how many
    models carry a modelFormat as published (and how many of those some runtime supports)."""

    model_definitions: int
    runtime_definitions: int
    runtimes: int
    models: int
    with_format: int
    supported: int
    #: The models whose namesake runtime serves them once their metadata is filled in.
    served_by_namesake: int


FIGURES = {
    OME_CFA05C6.id: Figures(205, 205, 201, 205, 41, 39, 118),
    # Five more runtimes (two nvfp4 ones, the first tokenspeed one, DeepSeek V4 Flash and Pro, Kimi K3) and
    # two more models (DeepSeek V4 Flash and Pro, published without a modelFormat).
    OME_5E4857E.id: Figures(207, 210, 206, 207, 41, 39, 120),
}


@pytest.fixture(params=SNAPSHOTS, ids=[snapshot.id for snapshot in SNAPSHOTS])
def snapshot(request: pytest.FixtureRequest) -> OmeSnapshot:
    chosen: OmeSnapshot = request.param
    return chosen


@cache
def published(snapshot: OmeSnapshot) -> tuple[Resource, ...]:
    return tuple(load_ome_catalog(snapshot.catalog))


@cache
def ome_catalog(snapshot: OmeSnapshot = OME_CFA05C6) -> Catalog:
    return Catalog.from_resources(published(snapshot))


def test_the_vendored_catalog_is_complete(snapshot: OmeSnapshot) -> None:
    assert (snapshot.catalog / "LICENSE").is_file()
    assert snapshot.commit in (snapshot.catalog / "README.md").read_text()
    figures = FIGURES[snapshot.id]
    resources = published(snapshot)
    assert sum(r.kind is Kind.CLUSTER_BASE_MODEL for r in resources) == figures.model_definitions
    assert sum(r.kind is Kind.CLUSTER_SERVING_RUNTIME for r in resources) == figures.runtime_definitions
    c = ome_catalog(snapshot)
    # Four runtime names appear in two files each; the later file (in kubectl's order) wins.
    assert len(c.runtimes()) == figures.runtimes == figures.runtime_definitions - 4
    assert len(c.models()) == figures.models
    qwen = resolve_runtime(c, NS, "srt-qwen2-5-32b-instruct")
    assert qwen is not None


def check_invariants(explanation: Explanation, runtime_count: int) -> None:
    verdicts = explanation.verdicts
    assert len(verdicts) == runtime_count
    ranked = [v for v in verdicts if v.rank is not None]
    assert verdicts[: len(ranked)] == tuple(ranked)
    assert [v.rank for v in ranked] == list(range(1, len(ranked) + 1))
    assert explanation.selected == (ranked[0] if ranked else None)
    for v in verdicts:
        assert v.compatible == (v.rank is not None)
        assert v.compatible <= v.supports_model
        assert (v.reason == "") == v.compatible
        if v.compatible:
            assert v.score > 0
        if v.priority is None:
            assert v.score == 0
    rest = verdicts[len(ranked) :]
    assert list(rest) == sorted(rest, key=lambda v: (v.is_cluster, v.name))
    json.dumps(explanation_document(explanation))


def test_every_published_model_as_published(snapshot: OmeSnapshot) -> None:
    c = ome_catalog(snapshot)
    runtime_count = len(c.runtimes())
    with_format = supported = 0
    for model in c.models():
        explanation = explain(c, model, NS)
        check_invariants(explanation, runtime_count)
        if not model.spec.has_format:
            assert {v.reason for v in explanation.verdicts} == {f"model {model.name} has no modelFormat yet"}
            continue
        with_format += 1
        supported += any(v.supports_model for v in explanation.verdicts)
    # Most published models carry no modelFormat yet: OME fills it in after reading the weights.
    figures = FIGURES[snapshot.id]
    assert (with_format, supported) == (figures.with_format, figures.supported)


def namesake(c: Catalog, model: Model) -> Runtime | None:
    for prefix in ("srt-", "vllm-"):
        found = resolve_runtime(c, NS, prefix + model.name)
        if found is not None:
            return found
    return None


def filled_in(model: Model, runtime: Runtime) -> Model:
    """The model with the metadata its namesake runtime declares, as OME would fill it in from the weights."""
    declared = runtime.spec.supported_model_formats[0]
    assert declared.model_format is not None
    spec = model.spec.model_copy(
        update={
            "model_format": ModelFormat(
                name=declared.model_format.name, version=declared.model_format.version
            ),
            "model_framework": ModelFramework(
                name=declared.model_framework.name, version=declared.model_framework.version
            )
            if declared.model_framework is not None
            else None,
            "model_architecture": declared.model_architecture,
            "quantization": declared.quantization,
        }
    )
    return model.model_copy(update={"spec": spec})


def test_every_model_with_filled_in_metadata_is_served_by_its_namesake(snapshot: OmeSnapshot) -> None:
    c = ome_catalog(snapshot)
    runtime_count = len(c.runtimes())
    checked = 0
    for model in c.models():
        if model.spec.has_format:
            continue
        runtime = namesake(c, model)
        if runtime is None or not runtime.spec.supported_model_formats:
            continue
        enriched = filled_in(model, runtime)
        explanation = explain(c, enriched, NS)
        check_invariants(explanation, runtime_count)
        verdict = next(v for v in explanation.verdicts if v.name == runtime.name)
        if enriched.spec.has_size and runtime.spec.model_size_range is not None:
            continue  # a published size may fall outside a copied range; judged below for one real case
        assert verdict.supports_model, (model.name, verdict.reason)
        checked += 1
    assert checked == FIGURES[snapshot.id].served_by_namesake


@pytest.fixture
def llama_3b() -> Model:
    c = ome_catalog()
    model = c.resolve_model(NS, "llama-3-2-3b-instruct")
    assert model is not None
    assert model.spec.model_parameter_size is None  # as published
    runtime = resolve_runtime(c, NS, "srt-llama-3-2-3b-instruct")
    assert runtime is not None
    enriched = filled_in(model, runtime)
    return enriched.model_copy(
        update={"spec": enriched.spec.model_copy(update={"model_parameter_size": "3.21B"})}
    )


def test_llama_3_2_3b_at_3_21b(llama_3b: Model) -> None:
    c = ome_catalog()
    verdicts = {v.name: v for v in explain(c, llama_3b, NS).verdicts}
    small = verdicts["srt-llama-3-2-1b-instruct"]
    assert small.reason == "model size 3.21B is outside supported range [500M, 2B]"
    assert not small.supports_model
    own = verdicts["srt-llama-3-2-3b-instruct"]
    assert own.supports_model
    assert not own.compatible  # autoSelect: false in the catalog
    assert own.reason == "autoSelect is not enabled for the matching format safetensors"
    assert own.range_text == "[2B, 4B]"
    assert [v.name for v in explain(c, llama_3b, NS).ranked] == ["vllm-llama-3-2-3b-instruct"]


def test_llama_3_2_3b_named_runtime_advisory(llama_3b: Model) -> None:
    c = Catalog.from_resources([*ome_catalog().runtimes(), llama_3b])
    result = evaluate(
        c, isvc(model_name=llama_3b.name, runtime_name="srt-llama-3-2-1b-instruct", namespace=NS)
    )
    assert result is not None
    assert result.kind is OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED
    assert result.advisory == (
        "runtime srt-llama-3-2-1b-instruct does not declare support for model llama-3-2-3b-instruct: "
        "model size 3.21B is outside supported range [500M, 2B]"
    )
    auto = evaluate(c, isvc(model_name=llama_3b.name, namespace=NS))
    assert auto is not None
    # The srt- runtimes are manual (autoSelect: false); the vllm- one for this model is auto-selectable.
    assert auto.kind is OutcomeKind.RUNTIME_SELECTED
    assert auto.message == "selected ClusterServingRuntime vllm-llama-3-2-3b-instruct (score 2)"
