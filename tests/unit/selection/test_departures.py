"""SPEC §9's "Where this contract departs" table (v4: the upstream column is OME v1.3, and cfa05c69 for the
rows that name it): one test per row that runtime selection decides, each pinning the contract's behaviour
and, where it is observable, showing what upstream does instead. Three rows are decided outside selection
and pinned where they are decided: updates (tests/unit/webhook/test_decisions.py), model metadata and
runtime edits (the indexes that re-evaluate InferenceServices, tests/unit/catalog/test_catalog.py); the
success text of the last row is the webhook's (tests/unit/webhook/test_decisions_v4.py), and the webhook's
side of the v5 rows is in tests/unit/webhook/test_decisions_v5.py. Last come the rows that later versions no
longer list because OME now does what this contract does (two of v3, the model lookup of v4): kept behaviour,
no longer departures."""

from __future__ import annotations

from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.selection.explain import explain
from ome_selector.selection.matcher import Step
from ome_selector.selection.outcome import OutcomeKind, evaluate
from ome_selector.selection.quantity import format_parameter_count, parse_parameter_count
from ome_selector.selection.version import version_matches


def test_parsing_accepts_only_the_grammar() -> None:
    # Upstream (cfa05c69) uses Go's ParseFloat, which accepts these: it reads 1e9 as a billion and Inf as
    # infinity.
    for text in ("1e9", "+5", "Inf", "NaN", "-1B", "1e3B"):
        assert parse_parameter_count(text) == 0, text
    m = model(size="1e9")  # reads as 0 here, a billion upstream
    c = catalog(m, runtime("rt", entry(), min="500M", max="2B"))
    assert explain(c, m, NS).verdicts[0].reason == "model size 1e9 is outside supported range [500M, 2B]"


def test_score_is_the_matching_entry_only() -> None:
    # Upstream takes the maximum over every entry with autoSelect != false (here 5 from the second entry).
    rt = runtime("rt", entry(priority=1), entry(priority=5, auto_select=None))
    m = model()
    verdict = explain(catalog(m, rt), m, NS).verdicts[0]
    assert verdict.score == 1
    assert verdict.priority == 1


def test_auto_selectable_needs_autoselect_on_the_matching_entry() -> None:
    # Upstream: any entry with autoSelect true makes the runtime auto-selectable, even one for another format.
    rt = runtime("rt", entry(auto_select=False), entry("onnx", auto_select=True))
    m = model()
    verdict = explain(catalog(m, rt), m, NS).verdicts[0]
    assert verdict.supports_model
    assert not verdict.compatible
    assert verdict.reason == "autoSelect is not enabled for the matching format safetensors"


def test_tie_distance_is_exact() -> None:
    # Upstream (still so in OME v1.3) truncates the float distance to an integer: 0.4 and 0.2 parameters both
    # become 0, and the name decides ("a" first). Exactly, "b" is closer.
    m = model(size="10")
    c = catalog(m, runtime("a", entry(), min="9.8", max="10.2"), runtime("b", entry(), min="9.9", max="10.1"))
    assert [v.name for v in explain(c, m, NS).ranked] == ["b", "a"]


def test_unknown_operator_never_matches() -> None:
    # Upstream applies the precision/prefix guard and then falls back to Equal: equal versions match.
    assert not version_matches("1.0.0", "LessThanOrEqual", "1.0.0")
    m = model(version="1.0.0")
    c = catalog(m, runtime("rt", entry(version="1.0.0", operator="Equals")))
    verdict = explain(c, m, NS).verdicts[0]
    assert not verdict.supports_model


def test_unknown_operator_reason_names_the_operator() -> None:
    # Upstream: "format version mismatch (model=1.0.0, runtime=1.0.0)", which hides why equal versions fail.
    m = model(version="1.0.0", framework="tf", fw_version="2")
    c = catalog(
        m,
        runtime(
            "rt", entry(version="1.0.0", operator="Equals", framework="tf", fw_version="2", fw_operator="Ge")
        ),
    )
    assert explain(c, m, NS).verdicts[0].reason == (
        "model format 'mt:safetensors:1.0.0:tf:2' not in supported formats: "
        "unknown version operator 'Equals', unknown version operator 'Ge'"
    )


def test_very_long_size_values_read_as_zero() -> None:
    # Upstream parses a value of any length (quadratic cost: a 1 MB value took 39 s).
    assert parse_parameter_count("1" * 64) == int("1" * 64)
    assert parse_parameter_count("1" * 65) == 0
    m = model(size="0" * 64 + "3B")  # 66 characters: reads as 0, so it is below every positive minimum
    c = catalog(m, runtime("rt", entry(), min="1B"))
    assert explain(c, m, NS).verdicts[0].failed is Step.SIZE


def test_an_empty_size_is_no_size() -> None:
    # Upstream reads "" as a size of 0, which every ranged runtime rejects; here it is no size (§2), which
    # passes every range (and the webhook warns, §7). A size that does read as 0 still fails the range.
    c = catalog(model(size=""), runtime("rt", entry(), min="1B"))
    result = evaluate(c, isvc())
    assert result is not None
    assert result.message == "selected ClusterServingRuntime rt (score 1)"
    zero = model(size="0")
    assert explain(catalog(zero, runtime("rt", entry(), min="1B")), zero, NS).verdicts[0].failed is Step.SIZE


def test_the_no_runtime_message_is_capped_with_the_nearest_misses_first() -> None:
    # Upstream's message is unbounded (2.5 MB at 10,000 runtimes); here it is cut to 1,024 characters (§5),
    # and the nearest miss is kept although its name sorts last.
    runtimes = [runtime(f"rt-{i:03d}", entry(arch="OtherForCausalLM")) for i in range(200)]
    c = catalog(model(size="3B"), *runtimes, runtime("zz-small", entry(), max="1B"))
    result = evaluate(c, isvc())
    assert result is not None
    assert len(result.message) <= 1024
    assert result.message.startswith(
        "no runtime supports model m (checked 201 runtimes: 0 namespace-scoped, 201 cluster-scoped): "
        "zz-small (model size 3B is outside supported range (-inf, 1B]); rt-000 ("
    )
    assert result.message.endswith(" more (kubectl ome-selector runtime explain --isvc svc -n ns)")


def test_model_without_format_is_metadata_pending_not_an_error() -> None:
    # Upstream fails with "model format name is required".
    result = evaluate(catalog(model(fmt=None), runtime("rt", entry())), isvc())
    assert result is not None
    assert result.kind is OutcomeKind.MODEL_METADATA_PENDING
    assert (result.status, result.reason) == ("Unknown", "ModelMetadataPending")


def test_no_runtime_message_names_the_model_and_every_runtime_of_the_format_nearest_miss_first() -> None:
    # Upstream: the format name as "model", random (map) order, only a first reason, keyed by bare name (a
    # test below), and runtimes that support the model but are not auto-selectable (z-manual) counted, not
    # listed. Here: the model's name and every runtime of the format, the one that failed at the latest step
    # first (§5).
    c = catalog(
        model("llama", size="3B"),
        runtime("z-manual", entry(auto_select=False)),
        runtime("a-small", entry(), max="1B"),
        runtime("b-local", entry(arch="X"), namespace=NS),
    )
    result = evaluate(c, isvc(model_name="llama"))
    assert result is not None
    assert result.message == (
        "no runtime supports model llama (checked 3 runtimes: 1 namespace-scoped, 2 cluster-scoped): "
        "z-manual (autoSelect is not enabled for the matching format safetensors); "
        "a-small (model size 3B is outside supported range (-inf, 1B]); "
        "ns/b-local (model format 'mt:safetensors' not in supported formats: "
        "model has no architecture but runtime requires X)"
    )


def test_writing_counts_follows_the_spec_rule() -> None:
    # Upstream writes a K suffix, "3.2B" for 3.21e9 and "1000.00B" at the carry.
    assert format_parameter_count(3_210_000_000) == "3.21B"
    assert format_parameter_count(999_999_999_999) == "1T"
    assert format_parameter_count(350_000) == "350000"


# --- rows new in v4 ----------------------------------------------------------------------------------------


def test_an_empty_accelerator_class_is_skipped() -> None:
    # Upstream counts "" as a class no runtime lists, so every runtime is rejected.
    c = catalog(model(), runtime("rt", entry(), classes=["a100"]))
    result = evaluate(c, isvc(selector_class="", annotations={"ome.io/accelerator-class": ""}))
    assert result is not None
    assert result.message == "selected ClusterServingRuntime rt (score 1)"


def test_the_model_lookup_ignores_spec_model_kind_everywhere() -> None:
    # SPEC §9 (v5): no longer a departure — OME's controller now also looks in the namespace first, whatever
    # spec.model.kind says, as its webhook and explain do. Kept behaviour: the namespace's BaseModel first.
    c = catalog(model(namespace=NS, size="3B"), model(size="300B"), runtime("rt", entry(), max="10B"))
    result = evaluate(c, isvc())
    assert result is not None
    assert result.message == "selected ClusterServingRuntime rt (score 1)"


def test_a_virtual_deployment_is_evaluated_like_any_other() -> None:
    # SPEC §9 (v5): upstream's controller resolves no runtime for an InferenceService annotated
    # ome.io/deploymentMode: VirtualDeployment (it writes Ready=True/VirtualDeployment, never RuntimeReady);
    # here it gets the condition of what selection would do, as upstream's webhook still checks selection.
    virtual = {"ome.io/deploymentMode": "VirtualDeployment"}
    c = catalog(model(size="3B"), runtime("rt", entry(), max="10B"))
    result = evaluate(c, isvc(annotations=virtual))
    assert result is not None
    assert (result.status, result.reason, result.message) == (
        "True",
        "RuntimeSelected",
        "selected ClusterServingRuntime rt (score 1)",
    )
    missing = evaluate(catalog(model(size="3B")), isvc(annotations=virtual))
    assert missing is not None
    assert (missing.reason, missing.event is not None) == ("RuntimeNotFound", True)


def test_a_pinned_model_less_inference_service_still_has_its_disabled_runtime_checked() -> None:
    # SPEC §9 (v5): upstream's webhook runs no check at all for a model-less InferenceService pinned with
    # autoSync: false; here its named runtime is still judged on §5's second table, so a disabled one is
    # RuntimeDisabled (and denied at admission, tests/unit/webhook/test_decisions_v5.py).
    c = catalog(runtime("rt", entry(), disabled=True))
    result = evaluate(c, isvc(model_name=None, runtime_name="rt", auto_sync=False))
    assert result is not None
    assert (result.kind, result.message, result.denies_admission) == (
        OutcomeKind.RUNTIME_DISABLED,
        "cluster-scoped runtime rt is disabled",
        True,
    )


def test_a_broken_chain_is_a_condition_of_its_own_not_a_retry() -> None:
    # Upstream records RuntimeValidationError and retries without a condition, and its webhook says "does not
    # support"; here it is RuntimeInheritanceError with "cannot be resolved".
    c = catalog(model(), runtime("child", entry(), inherit_from="gone"))
    result = evaluate(c, isvc(runtime_name="child"))
    assert result is not None
    assert (result.kind, result.reason, result.message) == (
        OutcomeKind.RUNTIME_INHERITANCE_ERROR,
        "RuntimeInheritanceError",
        'runtime child cannot be resolved: inherit-from parent "gone" not found (chain so far: [child])',
    )


def test_a_serving_runtime_and_a_cluster_runtime_of_one_name_are_two_entries() -> None:
    # Upstream keys the no-runtime reasons by bare name, so the two collapse into one entry.
    c = catalog(
        model(fmt="safetensors", arch="X"), runtime("rt", entry()), runtime("rt", entry(), namespace=NS)
    )
    result = evaluate(c, isvc())
    assert result is not None
    assert result.message.count("rt (model format") == 2
    assert f"{NS}/rt (model format" in result.message


def test_the_advisory_names_the_model_also_for_a_mode_failure() -> None:
    # Upstream's advisory has an empty model name for accelerator and mode failures and another wording.
    c = catalog(model(), runtime("rt", entry(), engine_mode="RawDeployment"))
    result = evaluate(c, isvc(runtime_name="rt", deployment_mode="OMENative"))
    assert result is not None
    assert result.advisory == (
        "runtime rt does not declare support for model m: runtime engine deployment mode RawDeployment does "
        "not match requested engine deployment mode OMENative"
    )


# --- v3 rows that v4 no longer lists (OME v1.3 now does what this contract does) --------------------------


def test_one_sided_or_empty_ranges_are_open_bounds_not_a_crash() -> None:
    # SPEC §9 (v4): no longer a departure; OME v1.3 also reads a missing bound as open, writes the same
    # interval labels and does not crash (§3 check 5).
    m = model(size="405B")
    c = catalog(
        m,
        runtime("big", entry(), min="70B"),
        runtime("small", entry(), max="13B"),
        runtime("empty", entry(), size_range={}),
    )
    verdicts = {v.name: v for v in explain(c, m, NS).verdicts}
    assert verdicts["big"].compatible
    assert verdicts["big"].range_text == "[70B, inf)"
    assert verdicts["small"].reason == "model size 405B is outside supported range (-inf, 13B]"
    assert verdicts["empty"].compatible
    assert verdicts["empty"].range_text is None


def test_named_runtime_is_used_anyway_with_an_advisory() -> None:
    # SPEC §9 (v4): no longer a departure; OME v1.3 also uses a named runtime that does not declare support,
    # with an advisory rather than a hard error (§5). The advisory's text is still the contract's own (the
    # "advisory and success texts" row).
    c = catalog(model(size="3.21B"), runtime("srt-llama-3-2-1b-instruct", entry(), min="500M", max="2B"))
    result = evaluate(c, isvc(runtime_name="srt-llama-3-2-1b-instruct"))
    assert result is not None
    assert (result.status, result.reason) == ("True", "RuntimeSpecified")
    assert result.advisory == (
        "runtime srt-llama-3-2-1b-instruct does not declare support for model m: "
        "model size 3.21B is outside supported range [500M, 2B]"
    )
