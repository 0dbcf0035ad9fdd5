"""SPEC §5 "Bursts": runtime-caused re-evaluations wait for a quiet catalog, and the waiting changes nothing
but the number of writes: a burst ends in exactly the conditions an immediate evaluation gives.

The controller writes through an in-memory stand-in of the apiserver's InferenceServices (no cluster needed:
the real apiserver's side is tests/integration/test_operator.py's burst test)."""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness import objects
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import InferenceService, Kind
from ome_selector.catalog.catalog import Catalog
from ome_selector.operator.controller import Controller
from ome_selector.operator.metrics import Metrics
from ome_selector.selection.outcome import evaluate

NS = "ns"
ISVCS = ["svc-a", "svc-b", "svc-c"]


class _InferenceServices:
    """What the controller writes to: InferenceService bodies by name, their condition writes and events."""

    def __init__(self, bodies: list[dict[str, Any]]) -> None:
        self.bodies = {b["metadata"]["name"]: copy.deepcopy(b) for b in bodies}
        self.writes: Counter[str] = Counter()
        self.events: list[tuple[str, str]] = []

    def may_write(self) -> bool:
        return True

    async def patch_conditions(
        self, namespace: str, name: str, *, resource_version: str, conditions: list[Any]
    ) -> dict[str, Any]:
        body = self.bodies[name]
        body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        body["status"] = {"conditions": copy.deepcopy(conditions)}
        self.writes[name] += 1
        await asyncio.sleep(0)  # a write waits for the apiserver
        return copy.deepcopy(body)

    async def read_inference_service(self, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.bodies[name])

    async def record_event(
        self, involved: Mapping[str, Any], *, type_: str, reason: str, message: str, kind: Kind
    ) -> None:
        self.events.append((involved["metadata"]["name"], reason))

    def condition(self, name: str) -> tuple[str, str, str] | None:
        conditions = self.bodies[name].get("status", {}).get("conditions", [])
        found = [c for c in conditions if c["type"] == "RuntimeReady"]
        return (found[0]["status"], found[0]["reason"], found[0]["message"]) if found else None


def _isvc(name: str, model_name: str) -> dict[str, Any]:
    body = objects.inference_service(name, namespace=NS, model_name=model_name)
    body["metadata"] |= {"resourceVersion": "1", "uid": f"uid-{name}"}
    return body


_runtimes = st.builds(
    lambda name, namespaced, low, span, priority, disabled: objects.runtime(
        name,
        namespace=NS if namespaced else None,
        size_range=(f"{low}B", f"{low + span}B"),
        priority=priority,
        disabled=disabled,
    ),
    st.sampled_from(["r1", "r2", "r3", "r4"]),
    st.booleans(),
    st.integers(1, 8),
    st.integers(0, 4),
    st.integers(1, 3),
    st.sampled_from([False, False, True]),
)
# A change: a runtime stored or deleted (waits for the burst), or a model's size changed (evaluated at once);
# then a pause of the given length (0: the next change comes in the same turn of the event loop).
_changes = st.tuples(
    st.one_of(
        st.tuples(st.just("store"), _runtimes),
        st.tuples(st.just("delete"), _runtimes),
        st.tuples(
            st.just("model"), st.sampled_from(["2B", "5B", "9B"]).map(lambda s: objects.model("m", size=s))
        ),
    ),
    st.sampled_from([0.0, 0.0, 0.001, 0.01]),
)


async def _run(
    initial: list[dict[str, Any]], changes: list[tuple[tuple[str, dict[str, Any]], float]], quiet: float
) -> _InferenceServices:
    isvcs = [_isvc(name, "m") for name in ISVCS[:2]] + [_isvc(ISVCS[2], "other")]
    api = _InferenceServices(isvcs)
    controller = Controller(api, Metrics(), workers=2, catalog_quiet_s=quiet, catalog_max_wait_s=quiet * 4)  # type: ignore[arg-type]
    for body in [*initial, *isvcs]:
        controller.mirror.on_watch_event(body, deleted=False)
    controller.start()
    controller.mark_ready()
    await controller.wait_idle()
    for (operation, body), pause in changes:
        controller.mirror.on_watch_event(body, deleted=operation == "delete")
        if pause:
            await asyncio.sleep(pause)
    await controller.wait_idle()
    await controller.stop()
    return api


def _final_catalog(
    initial: list[dict[str, Any]], changes: list[tuple[tuple[str, dict[str, Any]], float]]
) -> Catalog:
    catalog = Catalog()
    for body in initial:
        resource = load_resource(body)
        assert resource is not None
        catalog.upsert(resource)
    for (operation, body), _ in changes:
        resource = load_resource(body)
        assert resource is not None
        if operation == "delete":
            catalog.remove(resource.key)
        else:
            catalog.upsert(resource)
    return catalog


@settings(max_examples=40, deadline=None)
@given(
    st.lists(_runtimes, max_size=3),
    st.lists(_changes, min_size=1, max_size=12),
)
def test_a_debounced_burst_ends_in_the_conditions_of_an_immediate_evaluation(
    runtimes: list[dict[str, Any]], changes: list[tuple[tuple[str, dict[str, Any]], float]]
) -> None:
    initial = [objects.model("m", size="3B"), objects.model("other", size="7B"), *runtimes]
    debounced = asyncio.run(_run(initial, changes, quiet=0.02))
    immediate = asyncio.run(_run(initial, changes, quiet=0.0))
    final = _final_catalog(initial, changes)
    for name in ISVCS:
        isvc = load_resource(debounced.bodies[name])
        assert isinstance(isvc, InferenceService)
        outcome = evaluate(final, isvc)
        assert outcome is not None
        expected = (outcome.status, outcome.reason, outcome.message)
        assert debounced.condition(name) == immediate.condition(name) == expected
    if all(operation != "model" and not pause for (operation, _), pause in changes):
        # Runtime changes all in one turn of the event loop: one pass after the burst, one write at most.
        assert max(debounced.writes.values()) <= 1 + 1  # the first verdict (at start), then the final one
