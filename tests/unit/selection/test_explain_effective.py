"""explain and inheritance (SPEC §6 v4): WEIGHT, ``inheritanceChain``, ``--with-effective``, and the
differential with evaluate extended to named runtimes with chains: what explain says an InferenceService runs,
and the spec merged from the chain it shows, give the operator's verdict."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import NS, catalog, entry, isvc, model, runtime

from ome_selector.api.resources import (
    AcceleratorRequirements,
    InferenceService,
    Kind,
    ModelSizeRange,
    ObjectKey,
    Runtime,
    RuntimeSpec,
)
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.explain import (
    EffectiveRuntime,
    Selection,
    effective_document,
    effective_runtime,
    explain,
    explanation_document,
)
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.matcher import check
from ome_selector.selection.outcome import OutcomeKind, evaluate
from ome_selector.selection.profiles import RuntimeProfile

CSR, SR = Kind.CLUSTER_SERVING_RUNTIME, Kind.SERVING_RUNTIME


def _effective(c: Catalog, service: InferenceService, lookup: RuntimeLookup = RuntimeLookup.V1_3) -> Any:
    m = c.resolve_model(service.namespace, service.model_name or "")
    assert m is not None
    return effective_runtime(c, explain(c, m, service.namespace, service), service, lookup)


def test_explicit_with_a_chain() -> None:
    c = catalog(
        model(),
        runtime("root", entry(), disabled=True),
        runtime("mid", namespace=NS, inherit_from="root"),
        runtime("leaf", namespace=NS, inherit_from="mid"),
    )
    result = _effective(c, isvc(runtime_name="leaf", runtime_kind="ServingRuntime"))
    assert result == EffectiveRuntime(
        Selection.EXPLICIT,
        ObjectKey(SR, NS, "leaf"),
        chain=(ObjectKey(CSR, None, "root"), ObjectKey(SR, NS, "mid"), ObjectKey(SR, NS, "leaf")),
    )
    assert effective_document(result) == {
        "selection": "Explicit",
        "source": {"kind": "ServingRuntime", "name": "leaf", "namespace": NS},
        "inheritance": "Observed",
        "reason": None,
        "chain": [
            {"kind": "ClusterServingRuntime", "name": "root", "namespace": None},
            {"kind": "ServingRuntime", "name": "mid", "namespace": NS},
            {"kind": "ServingRuntime", "name": "leaf", "namespace": NS},
        ],
        "error": None,
    }


def test_selected_shows_the_chain_of_the_winner_for_information() -> None:
    """Auto-selection judged the winner on its own spec; its chain is shown anyway (SPEC §6)."""
    c = catalog(model(), runtime("base", entry(), disabled=True), runtime("rt", entry(), inherit_from="base"))
    result = _effective(c, isvc())
    assert result == EffectiveRuntime(
        Selection.SELECTED,
        ObjectKey(CSR, None, "rt"),
        chain=(ObjectKey(CSR, None, "base"), ObjectKey(CSR, None, "rt")),
    )


def test_selected_with_a_broken_chain() -> None:
    c = catalog(model(), runtime("rt", entry(), inherit_from="gone"))
    result = _effective(c, isvc())
    assert result == EffectiveRuntime(
        Selection.SELECTED,
        ObjectKey(CSR, None, "rt"),
        reason="ParentNotFound",
        error='inherit-from parent "gone" not found (chain so far: [rt])',
    )
    assert (result.inheritance, result.observed) == ("Unavailable", False)


def test_no_source() -> None:
    c = catalog(model())
    assert _effective(c, isvc()) == EffectiveRuntime(Selection.SELECTED, None, reason="RuntimeNotFound")
    assert _effective(c, isvc(runtime_name="x")) == EffectiveRuntime(
        Selection.EXPLICIT, None, reason="RuntimeNotFound"
    )


def test_inheritance_chain_in_the_document() -> None:
    m = model()
    c = catalog(
        m,
        runtime("base", entry(auto_select=False)),
        runtime("child", entry(), inherit_from="base"),
        runtime("loop", entry(), inherit_from="loop"),
        runtime("plain", entry(), inherit_from=""),
    )
    rows = {r["name"]: r["inheritanceChain"] for r in explanation_document(explain(c, m, NS))["runtimes"]}
    assert rows == {
        "base": None,
        "child": ["base", "child"],
        "loop": {"error": "inheritance cycle detected: [loop loop]"},
        "plain": None,
    }


# --- the differential: explain's effective runtime and chain against evaluate -------------------------------

NAMES = "abcde"


def _reference_spec(links: list[Runtime]) -> RuntimeSpec:
    """The SPEC §1 merge written from its table (child first, the nearest runtime that sets a field wins),
    independently of the product's."""

    def first(values: list[Any]) -> Any:
        return next((value for value in values if value is not None), None)

    specs = [link.spec for link in links]
    ranges = [spec.model_size_range for spec in specs if spec.model_size_range is not None]
    minimum = first([r.min for r in ranges])
    maximum = first([r.max for r in ranges])
    classes = first([spec.accelerator_classes or None for spec in specs]) or ()
    return RuntimeSpec(
        disabled=first([spec.disabled for spec in specs]),
        supported_model_formats=first([spec.supported_model_formats or None for spec in specs]) or (),
        model_size_range=ModelSizeRange(min=minimum, max=maximum)
        if (minimum, maximum) != (None, None)
        else None,
        accelerator_requirements=AcceleratorRequirements(accelerator_classes=classes) if classes else None,
        engine_config=first(
            [spec.engine_config for spec in specs if spec.engine_mode_annotation is not None]
        ),
        decoder_config=first(
            [spec.decoder_config for spec in specs if spec.decoder_mode_annotation is not None]
        ),
    )


@st.composite
def chained_catalogs(draw: st.DrawFn) -> list[Runtime]:
    runtimes: dict[tuple[str, str | None], Runtime] = {}
    for _ in range(draw(st.integers(1, 8))):
        name = draw(st.sampled_from(NAMES))
        namespace = draw(st.sampled_from([NS, None]))
        entries = [
            entry(priority=draw(st.integers(1, 2)), auto_select=draw(st.booleans()))
            for _ in range(draw(st.integers(0, 1)))
        ]
        runtimes[(name, namespace)] = runtime(
            name,
            *entries,
            namespace=namespace,
            inherit_from=draw(st.none() | st.sampled_from([*NAMES, "missing", "Not-A-Name"])),
            disabled=draw(st.sampled_from([None, True, False])),
            min=draw(st.none() | st.sampled_from(["1B", "5B"])),
            max=draw(st.none() | st.sampled_from(["4B", "9B"])),
            classes=draw(st.none() | st.just(["h100"])),
            engine_mode=draw(st.none() | st.sampled_from(["RawDeployment", "OMENative", "bogus"])),
        )
    return list(runtimes.values())


@settings(max_examples=300, deadline=None)
@given(
    chained_catalogs(),
    st.sampled_from(NAMES),
    st.sampled_from([None, "ServingRuntime", "ClusterServingRuntime", ""]),
    st.sampled_from(list(RuntimeLookup)),
    st.none() | st.sampled_from(["RawDeployment", "OMENative"]),
    st.booleans(),
    st.booleans(),
)
def test_evaluate_runs_what_explain_says_with_the_spec_of_the_chain_explain_shows(
    runtimes: list[Runtime],
    name: str,
    kind: str | None,
    lookup: RuntimeLookup,
    mode: str | None,
    h100: bool,
    auto_sync: bool,
) -> None:
    m = model(size="3B")
    c = catalog(m, *runtimes)
    service = isvc(
        runtime_name=name,
        runtime_kind=kind,
        deployment_mode=mode,
        selector_class="h100" if h100 else None,
        auto_sync=None if auto_sync else False,
    )
    shown = _effective(c, service, lookup)
    outcome = evaluate(c, service, lookup)
    assert outcome is not None
    assert shown.selection is Selection.EXPLICIT
    # The source is the runtime the operator names in its verdict, also when disabled or broken.
    assert shown.source == (outcome.runtime.key if outcome.runtime is not None else None)
    if shown.source is None:
        assert outcome.kind is OutcomeKind.RUNTIME_NOT_FOUND
        return
    if not shown.observed:
        assert outcome.chain_error is not None
        assert (shown.reason, shown.error) == (outcome.chain_error.reason.value, outcome.chain_error.message)
        expected = {
            True: OutcomeKind.RUNTIME_INHERITANCE_ERROR,
            False: OutcomeKind.RUNTIME_SPECIFIED_UNRESOLVED,
        }[service.auto_sync]
        assert outcome.kind is expected
        return
    links = [c.get(key) for key in reversed(shown.chain)]
    assert all(isinstance(link, Runtime) for link in links)
    assert shown.chain[-1] == shown.source
    named = links[0]
    assert isinstance(named, Runtime)
    merged = RuntimeProfile.of(named.model_copy(update={"spec": _reference_spec(links)}))  # type: ignore[arg-type]
    if merged.disabled:
        assert outcome.kind is OutcomeKind.RUNTIME_DISABLED
        return
    result = check(merged, c.model_profile(m), service.accelerator_classes, service.deployment_modes)
    assert outcome.kind is (
        OutcomeKind.RUNTIME_SPECIFIED if result.supports_model else OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED
    )
    # explain's row for the named runtime (when visible) shows the same chain, root first.
    if named.namespace in (None, NS):
        document = explanation_document(explain(c, m, NS, service))
        [row] = [r for r in document["runtimes"] if (r["kind"], r["name"]) == (named.kind.value, named.name)]
        assert row["inheritanceChain"] == ([k.name for k in shown.chain] if len(shown.chain) > 1 else None)
