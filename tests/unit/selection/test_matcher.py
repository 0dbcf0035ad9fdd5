"""The matcher (SPEC §3 and the entry rules of §9): check order, exact reasons, entries, pipelines, sizes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import entry, model, runtime

from ome_selector.api.resources import Model, Runtime
from ome_selector.selection import messages
from ome_selector.selection.matcher import RuntimeCheck, Step, check, entry_mismatch_reason, matching_entry
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile

Summary = tuple[bool, bool, str, int | None, int, int | None]


def judge(rt: Runtime, m: Model, classes: tuple[str, ...] = ()) -> RuntimeCheck:
    return check(RuntimeProfile.of(rt), ModelProfile.of(m), classes)


def summary(result: RuntimeCheck) -> Summary:
    """(supports model, auto-selectable, reason, matching entry, score, priority)."""
    return (
        result.supports_model,
        result.auto_selectable,
        result.reason,
        result.entry,
        result.score,
        result.priority,
    )


def reason(rt: Runtime, m: Model, classes: tuple[str, ...] = ()) -> str:
    return judge(rt, m, classes).reason


ST = "safetensors"

# --- check order --------------------------------------------------------------------------------------------


def test_passing_runtime_is_auto_selectable() -> None:
    result = judge(runtime("rt", entry()), model())
    assert summary(result) == (True, True, "", 0, 1, 1)
    assert result.failed is None


def test_disabled_comes_first() -> None:
    rt = runtime("rt", entry("onnx"), disabled=True, min="1T", classes=[])
    assert reason(rt, model(size="1B"), ("h100",)) == "runtime is disabled"


def test_accelerator_comes_before_formats() -> None:
    rt = runtime("rt", entry("onnx"), classes=["a100"])
    assert reason(rt, model(), ("h100",)) == "runtime does not support the required accelerator class"


def test_formats_come_before_size() -> None:
    rt = runtime("rt", entry("onnx"), min="1T")
    assert reason(rt, model(size="1B")).startswith("model format 'mt:safetensors' not in supported formats")


def test_size_comes_before_auto_select() -> None:
    rt = runtime("rt", entry(auto_select=False), max="1B")
    assert reason(rt, model(size="2B")) == "model size 2B is outside supported range (-inf, 1B]"


def test_auto_select_then_score() -> None:
    not_auto = judge(runtime("rt", entry(auto_select=False)), model())
    assert summary(not_auto) == (
        True,
        False,
        "autoSelect is not enabled for the matching format safetensors",
        0,
        1,
        1,
    )
    assert not_auto.failed is Step.AUTO_SELECT
    absent = judge(runtime("rt", entry(auto_select=None)), model())
    assert absent.reason == "autoSelect is not enabled for the matching format safetensors"
    negative = judge(runtime("rt", entry(weight=-1)), model())
    assert summary(negative) == (True, False, "auto-select score is -1", 0, -1, 1)
    zero = judge(runtime("rt", entry(weight=-1, framework="tf", fw_weight=1)), model(framework="tf"))
    assert summary(zero) == (True, False, "auto-select score is 0", 0, 0, 1)


def test_model_without_format_is_pending_for_every_runtime() -> None:
    for m in (model("pending", fmt=None), model("pending", fmt="")):
        result = judge(runtime("rt", entry()), m)
        assert summary(result) == (False, False, "model pending has no modelFormat yet", None, 0, None)
        assert result.failed is Step.MODEL_PENDING
    assert (
        reason(runtime("rt", entry(), disabled=True), model("p", fmt=None))
        == "model p has no modelFormat yet"
    )


def test_score_is_computed_whatever_the_other_checks_say() -> None:
    result = judge(runtime("rt", entry(priority=3), disabled=True), model())
    assert (result.score, result.priority, result.entry) == (3, 3, 0)
    no_entry = judge(runtime("rt", entry("onnx"), disabled=True), model())
    assert (no_entry.score, no_entry.priority, no_entry.entry) == (0, None, None)


# --- accelerator classes ------------------------------------------------------------------------------------

ACCELERATORS = [
    ((), None, True, "nothing asked, runtime lists none"),
    ((), ["a100"], True, "nothing asked"),
    (("a100",), ["a100", "h100"], True, "listed"),
    (("a100", "h100"), ["h100", "a100"], True, "all listed"),
    (("a100", "h100"), ["a100"], False, "one of two missing"),
    (("A100",), ["a100"], False, "case-sensitive"),
    (("a100",), None, False, "runtime without acceleratorRequirements"),
    (("a100",), [], False, "runtime with an empty list"),
    (("a10",), ["a100"], False, "exact, not prefix"),
]


@pytest.mark.parametrize(
    ("asked", "listed", "passes"),
    [(a, b, c) for a, b, c, _ in ACCELERATORS],
    ids=[i for *_, i in ACCELERATORS],
)
def test_accelerator_classes(asked: tuple[str, ...], listed: list[str] | None, passes: bool) -> None:
    result = judge(runtime("rt", entry(), classes=listed), model(), asked)
    assert result.supports_model is passes
    if not passes:
        assert result.reason == "runtime does not support the required accelerator class"


# --- formats: label and entry reasons -----------------------------------------------------------------------

LABELS = [
    ({}, "mt:safetensors", "name only"),
    ({"version": "1.0.0"}, "mt:safetensors:1.0.0", "version"),
    ({"arch": "LlamaForCausalLM"}, "mt:safetensors:LlamaForCausalLM", "architecture"),
    ({"quant": "fp8"}, "mt:safetensors:fp8", "quantization"),
    ({"framework": "transformers"}, "mt:safetensors:transformers", "framework"),
    (
        {"framework": "transformers", "fw_version": "4.45.0"},
        "mt:safetensors:transformers:4.45.0",
        "framework version",
    ),
    ({"fw_version": "4.45.0"}, "mt:safetensors", "framework version without framework"),
    (
        {"version": "1", "arch": "A", "quant": "q", "framework": "f", "fw_version": "2"},
        "mt:safetensors:1:A:q:f:2",
        "everything",
    ),
]


@pytest.mark.parametrize(("fields", "label"), [(f, x) for f, x, _ in LABELS], ids=[i for *_, i in LABELS])
def test_format_label(fields: dict[str, Any], label: str) -> None:
    fields = dict(fields)
    if "fw_version" in fields and "framework" not in fields:
        fields.pop("fw_version")
    rt = runtime("rt", entry("onnx"))
    assert reason(rt, model(**fields)).startswith(f"model format '{label}' not in supported formats: ")


# (entry fields, model fields, the entry's reason)
ENTRY_REASONS = [
    ({"fmt": "onnx"}, {}, "format name mismatch (model=safetensors, runtime=onnx)", "format name"),
    ({"arch": "B"}, {"arch": "A"}, "architecture mismatch (model=A, runtime=B)", "architecture values"),
    ({"arch": "B"}, {}, "model has no architecture but runtime requires B", "architecture required"),
    (
        {},
        {"arch": "A"},
        "model has architecture A but runtime has no architecture requirement",
        "architecture extra",
    ),
    (
        {"quant": "int4"},
        {"quant": "fp8"},
        "quantization mismatch (model=fp8, runtime=int4)",
        "quantization values",
    ),
    ({"quant": "fp8"}, {}, "model has no quantization but runtime requires fp8", "quantization required"),
    (
        {},
        {"quant": "fp8"},
        "model has quantization fp8 but runtime has no quantization requirement",
        "quant extra",
    ),
    (
        {"version": "2.0.0"},
        {"version": "1.0.0"},
        "format version mismatch (model=1.0.0, runtime=2.0.0)",
        "version",
    ),
    ({"version": "1.0.0"}, {}, "model has no format version but runtime requires 1.0.0", "version required"),
    (
        {},
        {"version": "1.0.0"},
        "model has format version but runtime has no version requirement",
        "version extra",
    ),
    (
        {"version": "1.0.0", "operator": "Newer"},
        {"version": "1.0.0"},
        "unknown version operator 'Newer'",
        "unknown operator: named in place of the version clause",
    ),
    (
        {"version": "2", "operator": "Newer", "arch": "B"},
        {"version": "1", "arch": "A"},
        "architecture mismatch (model=A, runtime=B), unknown version operator 'Newer'",
        "unknown operator among other mismatches",
    ),
    (
        {"operator": "Newer"},
        {},
        "",
        "unknown operator without versions: nothing to compare, the entry matches",
    ),
    (
        {"framework": "tf", "fw_version": "2", "fw_operator": "Above"},
        {"framework": "tf", "fw_version": "1"},
        "unknown version operator 'Above'",
        "unknown framework operator",
    ),
    (
        {"framework": "vllm"},
        {"framework": "tf"},
        "framework name mismatch (model=tf, runtime=vllm)",
        "framework name",
    ),
    ({"framework": "tf"}, {}, "model has no framework but runtime requires tf", "framework required"),
    (
        {},
        {"framework": "tf"},
        "model has framework tf but runtime has no framework requirement",
        "framework extra",
    ),
    (
        {"framework": "tf", "fw_version": "2"},
        {"framework": "tf", "fw_version": "1"},
        "framework version mismatch (model=1, runtime=2)",
        "framework version",
    ),
    (
        {"framework": "tf", "fw_version": "2"},
        {"framework": "tf"},
        "model has no framework version but runtime requires 2",
        "framework version required",
    ),
    (
        {"framework": "tf"},
        {"framework": "tf", "fw_version": "1"},
        "model has framework version but runtime has no version requirement",
        "framework version extra",
    ),
    (
        {"fmt": "onnx", "version": "9", "arch": "B", "quant": "int4", "framework": "vllm"},
        {"version": "1", "arch": "A", "quant": "fp8", "framework": "tf"},
        "architecture mismatch (model=A, runtime=B), quantization mismatch (model=fp8, runtime=int4), "
        "format name mismatch (model=safetensors, runtime=onnx), "
        "framework name mismatch (model=tf, runtime=vllm)",
        "every mismatch in upstream order (a name mismatch hides the version)",
    ),
    (
        {"pipeline": {"className": "P"}, "arch": "B", "version": "2"},
        {"arch": "A", "version": "1"},
        "diffusion pipeline required by runtime but not specified in model, architecture mismatch (model=A, "
        "runtime=B), format version mismatch (model=1, runtime=2)",
        "pipeline first",
    ),
]


@pytest.mark.parametrize(
    ("entry_fields", "model_fields", "expected"),
    [(e, m, r) for e, m, r, _ in ENTRY_REASONS],
    ids=[i for *_, i in ENTRY_REASONS],
)
def test_entry_reasons(entry_fields: dict[str, Any], model_fields: dict[str, Any], expected: str) -> None:
    m = model(**model_fields)
    rt = runtime("rt", entry(**entry_fields))
    if not expected:
        assert judge(rt, m).auto_selectable
        return
    label = ModelProfile.of(m).label
    assert reason(rt, m) == f"model format '{label}' not in supported formats: {expected}"


def test_every_entry_is_listed_in_order() -> None:
    rt = runtime("rt", entry("onnx"), entry(arch="X"), entry("pytorch", quant="q"))
    assert reason(rt, model()) == (
        "model format 'mt:safetensors' not in supported formats: "
        "format name mismatch (model=safetensors, runtime=onnx); "
        "model has no architecture but runtime requires X; "
        "model has no quantization but runtime requires q, "
        "format name mismatch (model=safetensors, runtime=pytorch)"
    )


def test_no_entries() -> None:
    assert reason(runtime("rt"), model()) == (
        "model format 'mt:safetensors' not in supported formats: no supported formats defined"
    )


def test_entry_without_model_format_never_matches() -> None:
    rt = runtime("rt", entry(None))
    assert reason(rt, model()) == "model format 'mt:safetensors' not in supported formats: unknown mismatch"
    rt_arch = runtime("rt", entry(None, arch="X"))
    assert reason(rt_arch, model()) == (
        "model format 'mt:safetensors' not in supported formats: "
        "model has no architecture but runtime requires X"
    )


def test_first_matching_entry_is_the_matching_entry() -> None:
    rt = runtime("rt", entry("onnx", priority=9), entry(priority=2, auto_select=False), entry(priority=5))
    result = judge(rt, model())
    assert (result.entry, result.priority, result.score) == (1, 2, 2)
    assert result.reason == "autoSelect is not enabled for the matching format safetensors"


def test_versions_with_operators_in_entries() -> None:
    rt = runtime(
        "rt",
        entry(
            version="1.1.0",
            operator="GreaterThan",
            framework="tf",
            fw_version="2.0",
            fw_operator="GreaterThanOrEqual",
        ),
    )
    assert judge(rt, model(version="1.0.0", framework="tf", fw_version="2.0")).auto_selectable
    assert not judge(rt, model(version="1.0.0", framework="tf", fw_version="2.0.0")).supports_model
    assert not judge(rt, model(version="1.1.0", framework="tf", fw_version="2.0")).supports_model


# --- diffusion pipelines ------------------------------------------------------------------------------------

FULL_PIPELINE = {
    "className": "FluxPipeline",
    "scheduler": {"library": "diffusers", "type": "FlowMatch"},
    "textEncoder": {"library": "transformers", "type": "CLIP"},
    "tokenizer": {"library": "transformers", "type": "Tok"},
    "transformer": {"library": "diffusers", "type": "Flux"},
    "vae": {"library": "diffusers", "type": "AutoencoderKL"},
    "additionalComponents": {"b": {"library": "x", "type": "B"}, "a": {"library": "x", "type": "A"}},
}

PIPELINES: list[tuple[dict[str, Any] | None, dict[str, Any] | None, str, str]] = [
    (FULL_PIPELINE, FULL_PIPELINE, "", "identical"),
    ({}, FULL_PIPELINE, "", "empty runtime pipeline: any model pipeline"),
    ({}, {}, "", "empty on both"),
    (None, FULL_PIPELINE, "", "runtime without pipeline serves a pipeline model"),
    ({}, None, "diffusion pipeline required by runtime but not specified in model", "even {} needs one"),
    (
        {"className": "FluxPipeline"},
        {"scheduler": {}},
        "pipeline class mismatch (model=<nil>, runtime=FluxPipeline)",
        "absent model class prints <nil>",
    ),
    (
        {"className": "FluxPipeline"},
        {"className": "SDXL"},
        "pipeline class mismatch (model=SDXL, runtime=FluxPipeline)",
        "class differs",
    ),
    (
        {"className": ""},
        {"className": "SDXL"},
        "pipeline class mismatch (model=SDXL, runtime=)",
        "an empty runtime class is present: it must equal the model's",
    ),
    ({"className": ""}, {"className": ""}, "", "empty classes on both sides"),
    (
        {"scheduler": {"library": "diffusers"}},
        {},
        "component scheduler required by runtime but not specified in model",
        "component missing",
    ),
    (
        {"textEncoder": {}},
        {},
        "component textEncoder required by runtime but not specified in model",
        "empty runtime component still needs the model's",
    ),
    ({"textEncoder": {}}, {"textEncoder": {"library": "l"}}, "", "empty runtime component matches any"),
    (
        {"tokenizer": {"library": "transformers"}},
        {"tokenizer": {"type": "Tok"}},
        "tokenizer library mismatch (model=, runtime=transformers)",
        "absent model library prints empty",
    ),
    (
        {"transformer": {"type": "Flux"}},
        {"transformer": {"library": "diffusers", "type": "SD3"}},
        "transformer type mismatch (model=SD3, runtime=Flux)",
        "type differs",
    ),
    ({"vae": {"type": ""}}, {"vae": {"type": "X"}}, "", "empty runtime type matches any"),
    (
        {"scheduler": {"library": "a"}, "vae": {"library": "b"}},
        {"scheduler": {"library": "x"}, "vae": {"library": "y"}},
        "scheduler library mismatch (model=x, runtime=a)",
        "first failing component only",
    ),
    (
        {"additionalComponents": {"a": {}}},
        {},
        "diffusion pipeline missing required additional components",
        "model has no additional components",
    ),
    (
        {"additionalComponents": {"z": {}, "b": {}}},
        {"additionalComponents": {"a": {}}},
        "diffusion component b missing in model",
        "keys checked in ascending order",
    ),
    (
        {"additionalComponents": {"b": {"type": "B"}, "a": {"type": "A"}}},
        {"additionalComponents": {"a": {"type": "X"}, "b": {"type": "Y"}}},
        "a type mismatch (model=X, runtime=A)",
        "ascending order for mismatches too",
    ),
    ({"additionalComponents": {}}, {}, "", "empty additional components require nothing"),
]


@pytest.mark.parametrize(
    ("runtime_pipeline", "model_pipeline", "expected"),
    [(r, m, x) for r, m, x, _ in PIPELINES],
    ids=[i for *_, i in PIPELINES],
)
def test_diffusion_pipelines(
    runtime_pipeline: dict[str, Any] | None, model_pipeline: dict[str, Any] | None, expected: str
) -> None:
    m = model(pipeline=model_pipeline)
    result = judge(runtime("rt", entry(pipeline=runtime_pipeline)), m)
    if not expected:
        assert result.auto_selectable, result.reason
    else:
        assert (
            result.reason == f"model format '{ModelProfile.of(m).label}' not in supported formats: {expected}"
        )


# --- sizes --------------------------------------------------------------------------------------------------

SIZES = [
    # (min, max, model size, passes, interval in the reason)
    ("2B", "4B", "3.21B", True, None, "inside"),
    ("2B", "4B", "2B", True, None, "lower bound inclusive"),
    ("2B", "4B", "4B", True, None, "upper bound inclusive"),
    ("2B", "4B", "4.01B", False, "[2B, 4B]", "above"),
    ("2B", "4B", "1999M", False, "[2B, 4B]", "below"),
    ("70B", None, "405B", True, None, "no upper limit"),
    ("70B", None, "8B", False, "[70B, inf)", "open upper bound in the reason"),
    (None, "13B", "3.21B", True, None, "no lower limit"),
    (None, "13B", "70B", False, "(-inf, 13B]", "open lower bound in the reason"),
    (None, None, "70B", True, None, "empty range passes"),
    ("2B", "4B", None, True, None, "model without a size passes"),
    ("2b", "4B", "1M", True, None, "min 2b reads as 0: no lower limit"),
    ("2B", "4b", "3B", False, "[2B, 4b]", "max 4b reads as 0: rejects every valid size"),
    ("2B", "4b", "0", False, "[2B, 4b]", "max 4b: even a zero model is below min"),
    (None, "4b", "0", True, None, "max 4b admits only 0"),
    ("4B", "2B", "3B", False, "[4B, 2B]", "min above max rejects"),
    ("", "4B", "1", True, None, "empty min reads as 0"),
    ("1B", "", "1", False, "[1B, ]", "empty max reads as 0, written as is"),
    ("0.5B", "2B", "500M", True, None, "0.5B equals 500M"),
    ("1B", "4B", "1500M", True, None, "suffixes differ"),
    ("2B", "4B", "4b", False, "[2B, 4B]", "model size 4b reads as 0: below min"),
    ("2B ", "4B", "3B", True, None, "min with a space reads as 0"),
]


@pytest.mark.parametrize(
    ("minimum", "maximum", "size", "passes", "interval"),
    [row[:5] for row in SIZES],
    ids=[row[5] for row in SIZES],
)
def test_size_ranges(
    minimum: str | None, maximum: str | None, size: str | None, passes: bool, interval: str | None
) -> None:
    size_range = {k: v for k, v in (("min", minimum), ("max", maximum)) if v is not None}
    rt = runtime("rt", entry(), size_range=size_range)
    result = judge(rt, model(size=size))
    assert result.supports_model is passes
    if interval is not None:
        assert result.reason == f"model size {size} is outside supported range {interval}"


def test_runtime_without_range_passes_every_model() -> None:
    assert judge(runtime("rt", entry()), model(size="1T")).auto_selectable


def test_empty_model_size_is_no_size() -> None:
    assert judge(runtime("rt", entry(), min="1B"), model(size="")).auto_selectable


def test_range_text_on_profiles() -> None:
    assert RuntimeProfile.of(runtime("a", min="2B", max="4B")).range_text == "[2B, 4B]"
    assert RuntimeProfile.of(runtime("b", min="70B")).range_text == "[70B, inf)"
    assert RuntimeProfile.of(runtime("c", max="13B")).range_text == "(-inf, 13B]"
    assert RuntimeProfile.of(runtime("d", size_range={})).range_text is None
    assert RuntimeProfile.of(runtime("e")).range_text is None


# --- property: the indexed search finds the entry the SPEC §9 rules call the first match --------------------

values = st.none() | st.sampled_from(["A", "B"])
versions = st.none() | st.sampled_from(["1", "1.0", "v1", "2.0.0", "1.0.0-rc1", "x"])
operators = st.none() | st.sampled_from(["Equal", "GreaterThan", "GreaterThanOrEqual", "Newer"])


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    return entry(
        draw(st.none() | st.sampled_from([ST, "onnx"])),
        version=draw(versions),
        operator=draw(operators),
        framework=draw(st.none() | st.sampled_from(["tf", "vllm"])),
        fw_version=draw(versions),
        fw_operator=draw(operators),
        arch=draw(values),
        quant=draw(values),
        pipeline=draw(st.none() | st.sampled_from([{}, {"className": "P"}])),
    )


@settings(max_examples=300)
@given(
    st.lists(entries(), max_size=6),
    versions,
    st.none() | st.sampled_from(["tf", "vllm"]),
    versions,
    values,
    values,
    st.none() | st.sampled_from([{}, {"className": "P"}]),
)
def test_the_matching_entry_is_the_first_without_a_mismatch(
    runtime_entries: list[dict[str, Any]],
    version: str | None,
    framework: str | None,
    fw_version: str | None,
    arch: str | None,
    quant: str | None,
    pipeline: dict[str, Any] | None,
) -> None:
    m = model(
        version=version, framework=framework, fw_version=fw_version, arch=arch, quant=quant, pipeline=pipeline
    )
    rt = runtime("rt", *runtime_entries)
    # The reference: an entry with a modelFormat matches when its reason lists no mismatch at all.
    expected = next(
        (
            index
            for index, candidate in enumerate(rt.spec.supported_model_formats)
            if candidate.model_format is not None
            and entry_mismatch_reason(m.spec, candidate) == messages.UNKNOWN_MISMATCH
        ),
        None,
    )
    assert matching_entry(RuntimeProfile.of(rt), ModelProfile.of(m)) == expected
