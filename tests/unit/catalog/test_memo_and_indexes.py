"""The catalog's match-key index and its memo of auto-selection results change no outcome (issue 17).

One long-lived catalog takes random upserts and removes of runtimes (three scopes, entries that match or miss
on format, architecture, version, size, accelerator classes, auto-select) and of models (metadata appearing,
changing, going away). After every step each probe InferenceService must get from it exactly the outcome that
a catalog rebuilt from the same objects gives (nothing memoized, indexes fresh), and the selection or the
no-runtime message that ``explain`` (every runtime judged, whole reasons) implies. Each probe is decided twice
in a row, so the second decision reads the memo.
"""

from __future__ import annotations

from catalog_strategies import OTHER, models, runtimes
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from selection_builders import NS, entry, isvc, model, no_runtime_message_from, runtime

from ome_selector.api.resources import InferenceService, Kind, ObjectKey, Resource
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
    assert len(memo) == 0
