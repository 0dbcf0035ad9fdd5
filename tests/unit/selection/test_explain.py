"""explain: table order, the SPEC §6 JSON document, and stability under unrelated catalog changes."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import Runtime
from ome_selector.selection.explain import explain, explanation_document


def test_table_order_ranked_then_namespaced_then_name() -> None:
    m = model(size="3B")
    c = catalog(
        m,
        runtime("z-cluster-ok", entry()),
        runtime("a-cluster-ok", entry(priority=2)),
        runtime("m-local-ok", entry(), namespace=NS),
        runtime("b-cluster-no", entry("onnx")),
        runtime("a-cluster-no", entry(auto_select=False)),
        runtime("y-local-no", entry(), namespace=NS, disabled=True),
        runtime("x-local-no", entry("onnx"), namespace=NS),
        runtime("other-namespace", entry(), namespace="elsewhere"),
    )
    explanation = explain(c, m, NS)
    assert [(v.name, v.rank) for v in explanation.verdicts] == [
        ("m-local-ok", 1),
        ("a-cluster-ok", 2),
        ("z-cluster-ok", 3),
        ("x-local-no", None),
        ("y-local-no", None),
        ("a-cluster-no", None),
        ("b-cluster-no", None),
    ]
    assert explanation.selected is not None
    assert explanation.selected.name == "m-local-ok"
    assert (explanation.namespaced_count, explanation.cluster_count) == (3, 4)


def test_verdict_fields() -> None:
    m = model(size="3.21B")
    c = catalog(
        m,
        runtime("ok", entry(priority=2), min="2B", max="4B"),
        runtime("small", entry(), min="500M", max="2B"),
        runtime("manual", entry(auto_select=False)),
        runtime("onnx", entry("onnx")),
    )
    by_name = {v.name: v for v in explain(c, m, NS).verdicts}
    ok, small, manual, onnx = by_name["ok"], by_name["small"], by_name["manual"], by_name["onnx"]
    assert (ok.supports_model, ok.compatible, ok.reason, ok.score, ok.priority, ok.rank, ok.range_text) == (
        True,
        True,
        "",
        2,
        2,
        1,
        "[2B, 4B]",
    )
    assert (small.supports_model, small.compatible, small.score, small.priority, small.rank) == (
        False,
        False,
        1,
        1,
        None,
    )
    assert small.reason == "model size 3.21B is outside supported range [500M, 2B]"
    assert (manual.supports_model, manual.compatible, manual.range_text) == (True, False, None)
    assert (onnx.supports_model, onnx.score, onnx.priority, onnx.serves_format) == (False, 0, None, False)
    assert ok.serves_format
    assert small.serves_format
    assert manual.serves_format


def test_accelerator_classes_take_part_only_with_an_inference_service() -> None:
    m = model()
    c = catalog(m, runtime("rt", entry(), classes=["a100"]))
    assert explain(c, m, NS).selected is not None
    service = isvc(selector_class="h100")
    explanation = explain(c, m, NS, service)
    assert explanation.selected is None
    assert explanation.verdicts[0].reason == "runtime does not support the required accelerator class"


def test_document_is_exactly_the_spec_shape() -> None:
    m = model("m", size="3.21B")
    c = catalog(m, runtime("rt", entry()), runtime("local", entry("onnx"), namespace=NS, max="1B"))
    document = explanation_document(explain(c, m, NS))
    assert document == {
        "model": {"kind": "ClusterBaseModel", "name": "m", "namespace": None, "modelParameterSize": "3.21B"},
        "selected": {
            "kind": "ClusterServingRuntime",
            "name": "rt",
            "namespace": None,
            "decidedBy": "only",
            "message": "selected ClusterServingRuntime rt (score 1)",
        },
        "runtimes": [
            {
                "kind": "ClusterServingRuntime",
                "name": "rt",
                "namespace": None,
                "supportsModel": True,
                "compatible": True,
                "rank": 1,
                "score": 1,
                "priority": 1,
                "reason": "",
                "weight": 1,
                "inheritanceChain": None,
            },
            {
                "kind": "ServingRuntime",
                "name": "local",
                "namespace": NS,
                "supportsModel": False,
                "compatible": False,
                "rank": None,
                "score": 0,
                "priority": None,
                "reason": "model format 'mt:safetensors' not in supported formats: "
                "format name mismatch (model=safetensors, runtime=onnx)",
                "weight": None,
                "inheritanceChain": None,
            },
        ],
    }
    json.dumps(document)  # serialisable as is


def test_document_without_runtimes_and_without_size() -> None:
    m = model("m", size="", namespace=NS)
    document = explanation_document(explain(catalog(m), m, NS))
    assert document == {
        "model": {"kind": "BaseModel", "name": "m", "namespace": NS, "modelParameterSize": None},
        "selected": None,
        "runtimes": [],
    }


def test_pending_model_explains_every_runtime() -> None:
    m = model("p", fmt=None)
    explanation = explain(catalog(m, runtime("a", entry()), runtime("b", entry("onnx"))), m, NS)
    assert explanation.selected is None
    assert {v.reason for v in explanation.verdicts} == {"model p has no modelFormat yet"}
    assert {(v.score, v.priority) for v in explanation.verdicts} == {(0, None)}


# --- property: unrelated runtimes leave the explanation alone -----------------------------------------------

names = st.text(alphabet="abcxyz-", min_size=1, max_size=6).filter(lambda n: n[0] != "-")


@st.composite
def catalogs(draw: st.DrawFn) -> list[Runtime]:
    runtimes = {}
    for _ in range(draw(st.integers(0, 6))):
        name = draw(names)
        namespace = draw(st.sampled_from([NS, None, "elsewhere"]))
        runtimes[(name, namespace)] = runtime(
            name,
            entry(
                draw(st.sampled_from(["safetensors", "onnx"])),
                priority=draw(st.integers(1, 3)),
                auto_select=draw(st.booleans()),
            ),
            namespace=namespace,
            min=draw(st.none() | st.sampled_from(["1B", "5B"])),
            disabled=draw(st.booleans()),
        )
    return list(runtimes.values())


@settings(max_examples=150)
@given(catalogs(), names, st.sampled_from(["elsewhere", NS, None]), st.booleans())
def test_adding_and_removing_an_unrelated_runtime_changes_nothing(
    runtimes: list[Runtime], extra_name: str, extra_namespace: str | None, same_format: bool
) -> None:
    m = model(size="3B")
    c = catalog(m, *runtimes)
    before = explain(c, m, NS)
    extra = runtime(
        "unrelated-" + extra_name, entry("safetensors" if same_format else "gguf"), namespace=extra_namespace
    )
    c.upsert(extra)
    during = explain(c, m, NS)
    if extra_namespace == "elsewhere":
        assert during == before  # not visible from NS at all
    c.remove(extra.key)
    assert explain(c, m, NS) == before
