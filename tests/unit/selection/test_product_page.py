"""The product page (seed/model-size-range-matching.md): its examples table, row by row, and its reasons."""

from __future__ import annotations

import pytest
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import Model
from ome_selector.selection.explain import explain
from ome_selector.selection.outcome import OutcomeKind, evaluate

# | min | max | modelParameterSize | Passes | Why |  (None = "Not set")
EXAMPLES = [
    ("2B", "4B", "3.21B", True, "3.21 billion is between 2 and 4 billion"),
    ("2B", "4B", "4B", True, "the bounds are inclusive"),
    ("500M", "2B", "3.21B", False, "the model's size is above max"),
    ("1B", "4B", "1500M", True, "the suffixes can differ"),
    ("70B", None, "405B", True, "no upper limit"),
    (None, "13B", "3.21B", True, "no lower limit"),
    ("2B", "4B", None, True, "a model without a size always passes"),
]


@pytest.mark.parametrize(
    ("minimum", "maximum", "size", "passes"), [row[:4] for row in EXAMPLES], ids=[row[4] for row in EXAMPLES]
)
def test_examples_table(minimum: str | None, maximum: str | None, size: str | None, passes: bool) -> None:
    m = model(size=size)
    size_range = {k: v for k, v in (("min", minimum), ("max", maximum)) if v is not None}
    verdict = explain(catalog(m, runtime("rt", entry(), size_range=size_range)), m, NS).verdicts[0]
    assert verdict.supports_model is passes
    assert verdict.compatible is passes


LLAMA_3B_ENTRY = entry(
    "safetensors",
    version="1.0.0",
    framework="transformers",
    fw_version="4.45.0.dev0",
    arch="LlamaForCausalLM",
    auto_select=False,
    priority=1,
)


def llama_3b() -> Model:
    return model(
        "llama-3-2-3b-instruct",
        version="1.0.0",
        framework="transformers",
        fw_version="4.45.0.dev0",
        arch="LlamaForCausalLM",
        size="3.21B",
    )


def test_where_a_rejection_shows_up() -> None:
    m = llama_3b()
    c = catalog(
        m,
        runtime("srt-llama-3-2-3b-instruct", LLAMA_3B_ENTRY, min="2B", max="4B"),
        runtime("srt-llama-3-2-1b-instruct", LLAMA_3B_ENTRY, min="500M", max="2B"),
    )
    verdicts = {v.name: v for v in explain(c, m, NS).verdicts}
    assert (
        verdicts["srt-llama-3-2-1b-instruct"].reason
        == "model size 3.21B is outside supported range [500M, 2B]"
    )
    assert verdicts["srt-llama-3-2-3b-instruct"].supports_model
    # Both catalog runtimes set autoSelect: false: used only when named.
    assert not verdicts["srt-llama-3-2-3b-instruct"].compatible


def test_named_runtime_is_used_anyway_with_a_warning() -> None:
    c = catalog(llama_3b(), runtime("srt-llama-3-2-1b-instruct", LLAMA_3B_ENTRY, min="500M", max="2B"))
    result = evaluate(c, isvc(model_name="llama-3-2-3b-instruct", runtime_name="srt-llama-3-2-1b-instruct"))
    assert result is not None
    assert result.kind is OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED
    assert result.event is not None
    assert result.event.reason == "RuntimeCompatibilityAdvisory"
    assert "does not declare support for model llama-3-2-3b-instruct" in result.event.message
    assert result.event.message.endswith("model size 3.21B is outside supported range [500M, 2B]")


def test_lower_case_suffixes_as_the_warning_describes() -> None:
    m = model(size="3B")
    shown = explain(catalog(m, runtime("rt", entry(), min="2B", max="4b")), m, NS).verdicts[0]
    assert shown.reason == "model size 3B is outside supported range [2B, 4b]"
    no_lower = explain(catalog(m, runtime("rt", entry(), min="2b", max="4B")), model(size="1M"), NS)
    assert no_lower.verdicts[0].compatible


def test_open_bounds_show_as_inf() -> None:
    m = model(size="8B")
    verdict = explain(catalog(m, runtime("rt", entry(), min="70B")), m, NS).verdicts[0]
    assert verdict.reason == "model size 8B is outside supported range [70B, inf)"


def test_min_above_max_rejects_any_model_with_a_size() -> None:
    for size in ("0", "1M", "3B", "5B", "1T"):
        m = model(size=size)
        assert (
            not explain(catalog(m, runtime("rt", entry(), min="4B", max="2B")), m, NS)
            .verdicts[0]
            .supports_model
        )
    m = model()
    assert explain(catalog(m, runtime("rt", entry(), min="4B", max="2B")), m, NS).verdicts[0].compatible


def test_size_is_checked_after_the_format() -> None:
    m = model(size="3.21B")
    verdict = explain(catalog(m, runtime("rt", entry("onnx"), min="500M", max="2B")), m, NS).verdicts[0]
    assert "outside supported range" not in verdict.reason
    assert verdict.reason.startswith("model format")


def test_closest_range_wins_ties_and_no_range_counts_as_closest() -> None:
    m = model(size="3.21B")
    c = catalog(
        m,
        runtime("wide", entry(), min="1B", max="70B"),
        runtime("tight", entry(), min="2B", max="4B"),
        runtime("zz-none", entry()),
    )
    assert [v.name for v in explain(c, m, NS).ranked] == ["zz-none", "tight", "wide"]
