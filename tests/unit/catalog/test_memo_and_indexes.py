"""The catalog's match-key index and its memo of auto-selection results change no outcome.

One long-lived catalog takes random upserts and removes of runtimes (three scopes, entries that match or miss
on format, architecture, version, size, accelerator classes, auto-select) and of models (metadata appearing,
changing, going away). After every step each probe InferenceService must get from it exactly the outcome that
a catalog rebuilt from the same objects gives (nothing memoized, indexes fresh), and the selection or the
no-runtime message that ``explain`` (every runtime judged, whole reasons) implies. Each probe is decided twice
in a row, so the second decision reads the memo.
"""

from __future__ import annotations

from catalog_strategies import OTHER, models, runtimes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from selection_builders import NS, entry, isvc, model, no_runtime_message_from, runtime

from ome_selector.api.resources import InferenceService, Kind, ObjectKey, Resource, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.explain import explain
from ome_selector.selection.outcome import Outcome, OutcomeKind, evaluate


def _probe(namespace: str, model_name: str, accelerator: str | None) -> InferenceService:
    return isvc(
        f"svc-{model_name}-{accelerator}",
        namespace=namespace,
        model_name=model_name,
        selector_class=accelerator,
    )


PROBES = [
    _probe(namespace, model_name, accelerator)
    for namespace in (NS, OTHER)
    for model_name in "mn"
    for accelerator in (None, "a100")
]


def _decided(catalog: Catalog, service: InferenceService) -> Outcome:
    outcome = evaluate(catalog, service)
    assert outcome is not None
    return outcome


class CatalogUnderChange(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.catalog = Catalog()
        self.objects: dict[ObjectKey, Resource] = {}

    @rule(resource=runtimes() | models())
    def store(self, resource: Resource) -> None:
        self.catalog.upsert(resource)
        self.objects[resource.key] = resource

    @rule(
        data=st.data(),
        name=st.sampled_from("abcd"),
        namespace=st.sampled_from([NS, OTHER, None]),
        priority=st.integers(1, 3),
    )
    def copy(self, data: st.DataObject, name: str, namespace: str | None, priority: int) -> None:
        """A copy of a stored runtime under another name, scope or priority: one that can rank just before or
        after it (random runtimes seldom match the model a stored one matches)."""
        stored = sorted(key for key in self.objects if key.kind.is_runtime)
        if not stored:
            return
        original = self.objects[data.draw(st.sampled_from(stored))]
        assert isinstance(original, Runtime)
        entries = tuple(
            e.model_copy(update={"priority": priority}) for e in original.spec.supported_model_formats
        )
        kind = Kind.SERVING_RUNTIME if namespace is not None else Kind.CLUSTER_SERVING_RUNTIME
        spec = original.spec.model_copy(update={"supported_model_formats": entries})
        self.store(
            original.model_copy(update={"kind": kind, "name": name, "namespace": namespace, "spec": spec})
        )

    @rule(
        kind=st.sampled_from(
            [Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL, Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME]
        ),
        namespace=st.sampled_from([NS, OTHER]),
        name=st.sampled_from("abcdmn"),
    )
    def remove(self, kind: Kind, namespace: str, name: str) -> None:
        key = ObjectKey(kind, namespace if kind.namespaced else None, name)
        assert (self.catalog.remove(key) is None) == (self.objects.pop(key, None) is None)

    @invariant()
    def outcomes_equal_those_of_a_rebuilt_catalog_and_of_explain(self) -> None:
        rebuilt = Catalog.from_resources(self.objects.values())
        for service in PROBES:
            first, again = _decided(self.catalog, service), _decided(self.catalog, service)
            assert first == again == _decided(rebuilt, service)
            if first.kind not in (OutcomeKind.RUNTIME_SELECTED, OutcomeKind.NO_RUNTIME):
                continue
            assert first.model is not None
            explanation = explain(rebuilt, first.model, service.namespace, service)
            if explanation.selected is None:
                assert first.kind is OutcomeKind.NO_RUNTIME
                assert first.message == no_runtime_message_from(explanation, service)
            else:
                assert first.kind is OutcomeKind.RUNTIME_SELECTED
                assert first.runtime == explanation.selected.runtime
                assert first.score == explanation.selected.score

    @invariant()
    def the_match_key_index_holds_exactly_the_runtimes_with_an_entry_of_the_key(self) -> None:
        for namespace in (NS, OTHER):
            visible = self.catalog.runtime_profiles_visible_from(namespace)
            keys = {key for profile in visible for key in profile.entries_by_key}
            for key in keys:
                expected = [profile for profile in visible if key in profile.entries_by_key]
                assert self.catalog.runtime_profiles_for_match_key(namespace, key) == expected
            for format_name in ("safetensors", "onnx"):
                expected = [profile for profile in visible if profile.serves_format(format_name)]
                assert self.catalog.runtime_profiles_for_format(namespace, format_name) == expected


CatalogUnderChange.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
test_the_memo_and_the_indexes_change_no_outcome = CatalogUnderChange.TestCase


def test_the_memo_is_read_and_forgets_on_runtime_changes() -> None:
    # The stateful test shows outcomes do not change; this shows the memo is really in the way.
    m = model(size="3B")
    c = Catalog.from_resources([m, runtime("rt", entry())])
    memo = c.auto_selections
    service = isvc(model_name="m")
    assert len(memo) == 0
    _decided(c, service)
    assert len(memo) == 1
    _decided(c, isvc("another", model_name="m"))
    assert len(memo) == 1  # the second InferenceService of the model read the same result
    _decided(c, isvc("elsewhere", namespace=OTHER, model_name="m"))
    assert len(memo) == 1  # so did one of another namespace without ServingRuntimes
    c.upsert(runtime("local", entry(), namespace=OTHER))
    assert len(memo) == 1  # OTHER reads a result of its own from now on; NS still reads the shared one
    _decided(c, service)
    assert len(memo) == 1
    c.upsert(runtime("local", entry(), namespace=NS))
    _decided(c, service)
    assert len(memo) == 2  # NS has a ServingRuntime now: a result of its own
    c.remove(ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "rt"))
    _decided(c, isvc("elsewhere", namespace="third", model_name="m"))
    assert len(memo) == 2  # the shared result selected rt: computed again (NS's selects its own runtime)


# Runtimes that nearly all match one model (format safetensors, 3B): they differ in what ranks them (scope,
# priority, size range, name) and in what makes them miss (auto-select, disabled, size, accelerator classes).
_contenders = st.builds(
    lambda name, namespace, priority, auto_select, disabled, size_range, classes: runtime(
        name,
        entry(priority=priority, auto_select=auto_select),
        namespace=namespace,
        disabled=disabled,
        classes=classes,
        **size_range,
    ),
    st.sampled_from("abcdef"),
    st.sampled_from([NS, OTHER, None, None]),
    st.integers(1, 3),
    st.sampled_from([True, True, True, False]),
    st.sampled_from([False, False, False, True]),
    st.sampled_from([{}, {"min": "1B", "max": "9B"}, {"min": "2B", "max": "4B"}, {"max": "1B"}]),
    st.sampled_from([None, None, ["a100"]]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _contenders), min_size=1, max_size=30))
def test_runtime_changes_replayed_on_kept_results_give_the_outcomes_of_a_rebuilt_catalog(
    changes: list[tuple[bool, Runtime]],
) -> None:
    # Each kept result sees every change (probes decided after each), so the replay of SPEC §4's order is
    # compared with a fresh ranking at every step, across namespaces with and without ServingRuntimes.
    probes = [
        _probe(namespace, "m", accelerator)
        for namespace in (NS, OTHER, "third")
        for accelerator in (None, "a100")
    ]
    m = model(size="3B")
    live = Catalog.from_resources([m])
    stored: dict[ObjectKey, Resource] = {m.key: m}
    for remove, contender in changes:
        if remove:
            live.remove(contender.key)
            stored.pop(contender.key, None)
        else:
            live.upsert(contender)
            stored[contender.key] = contender
        rebuilt = Catalog.from_resources(stored.values())
        for service in probes:
            assert _decided(live, service) == _decided(rebuilt, service)
