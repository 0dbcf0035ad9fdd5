"""SPEC §5 "Another writer", §5 replicaRefs and §12 "Switch events", in the controller: which writes, events
and counts follow from what is stored. The controller writes through an in-memory stand-in of the apiserver
that keeps managedFields as the apiserver does for an atomic ``status.conditions`` (the last writer owns the
list); the real apiserver's side is tests/integration/test_operator_v5.py."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

import pytest

from harness import objects
from ome_selector.api.resources import Kind
from ome_selector.operator import controller as controller_module
from ome_selector.operator.controller import Controller
from ome_selector.operator.metrics import Metrics

NS = "ns"
OME = "ome-controller"
CONFLICT = "RuntimeReady is also written by {}; beside OME v1.3 or later run ome-selector with --report-only"
SELECTED_A = ("True", "RuntimeSelected", "selected ClusterServingRuntime rt-a (score 2)")
SELECTED_B = ("True", "RuntimeSelected", "selected ClusterServingRuntime rt-b (score 4)")
#: What OME v1.3's controller writes after a False of its own (SPEC §0).
OME_RESOLVED = {"type": "RuntimeReady", "status": "True", "reason": "RuntimeResolved", "message": ""}


def _owned_by(manager: str | None) -> list[dict[str, Any]]:
    if manager is None:
        return []
    fields: dict[str, Any] = {"f:status": {"f:conditions": {}}}
    return [{"manager": manager, "operation": "Update", "subresource": "status", "fieldsV1": fields}]


class _Api:
    """InferenceService bodies by name; the controller's writes (as field manager ome-selector), other
    writers' writes, and every event recorded."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = {b["metadata"]["name"]: copy.deepcopy(b) for b in bodies}
        self.writes = 0
        self.events: list[tuple[str, str, str]] = []

    def may_write(self) -> bool:
        return True

    def _store(self, name: str, conditions: list[Any], manager: str | None) -> dict[str, Any]:
        body = self.bodies[name]
        body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        body["metadata"]["managedFields"] = _owned_by(manager)
        body["status"] = {"conditions": copy.deepcopy(conditions)}
        return copy.deepcopy(body)

    async def patch_conditions(
        self, namespace: str, name: str, *, resource_version: str, conditions: list[Any]
    ) -> dict[str, Any]:
        self.writes += 1
        return self._store(name, conditions, "ome-selector")

    def write_as(self, manager: str | None, name: str, *conditions: dict[str, Any]) -> dict[str, Any]:
        """Another writer replaces the conditions (``manager`` None: no managedFields name anyone)."""
        return self._store(name, list(conditions), manager)

    async def read_inference_service(self, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.bodies[name])

    async def record_event(
        self,
        involved: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        message: str,
        kind: Kind = Kind.INFERENCE_SERVICE,
    ) -> None:
        self.events.append((type_, reason, message))

    def condition(self, name: str = "svc") -> tuple[str, str, str] | None:
        conditions = self.bodies[name].get("status", {}).get("conditions", [])
        found = [c for c in conditions if c["type"] == "RuntimeReady"]
        return (found[0]["status"], found[0]["reason"], found[0]["message"]) if found else None


def _isvc(name: str = "svc", uid: str = "uid-1", **fields: Any) -> dict[str, Any]:
    body = objects.inference_service(name, namespace=NS, model_name="m")
    body["metadata"] |= {"resourceVersion": "1", "uid": uid}
    body["spec"] |= fields
    return body


A = objects.runtime("rt-a", priority=1)
B = objects.runtime("rt-b", priority=2)
MODEL = objects.model("m", size="7B")


class _Run:
    """A controller over ``api`` with ``bodies`` listed, started and ready."""

    def __init__(self, api: _Api, *bodies: dict[str, Any], report_only: bool = False) -> None:
        self.api = api
        self.metrics = Metrics()
        self.controller = Controller(
            api,  # type: ignore[arg-type]
            self.metrics,
            workers=1,
            report_only=report_only,
            catalog_quiet_s=0.01,
            catalog_max_wait_s=0.05,
        )
        for body in bodies:
            self.controller.mirror.on_watch_event(body, deleted=False)

    async def __aenter__(self) -> _Run:
        self.controller.start()
        self.controller.mark_ready()
        await self.settle()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.controller.stop()

    async def settle(self) -> None:
        await self.controller.wait_idle(timeout=10)
        assert not self.controller.busy

    async def foreign(self, manager: str | None, *conditions: dict[str, Any], name: str = "svc") -> None:
        """Another writer's write, seen by the watch, then a resync evaluates everyone (SPEC §5)."""
        self.controller.mirror.on_watch_event(self.api.write_as(manager, name, *conditions), deleted=False)
        await self.resync()

    async def resync(self) -> None:
        self.controller.evaluate_all()
        await self.settle()

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels or {})

    @property
    def conflicts(self) -> float | None:
        return self.sample("ome_selector_condition_conflicts_total")


def _conflicts(api: _Api) -> list[str]:
    return [message for _, reason, message in api.events if reason == "RuntimeReadyConflict"]


def test_another_writer_is_reported_once_counted_once_and_left_alone() -> None:
    """SPEC §5 "Another writer": from the finding on, the product writes nothing to that condition."""
    api = _Api(_isvc())

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            assert (api.condition(), api.writes, api.events, run.conflicts) == (SELECTED_A, 1, [], 0.0)
            await run.foreign(OME, OME_RESOLVED)
            assert api.condition() == _fields(OME_RESOLVED)  # yielded: not written over
            assert api.events == [("Warning", "RuntimeReadyConflict", CONFLICT.format(OME))]
            assert (run.conflicts, api.writes) == (1.0, 1)
            # Evaluations go on (the verdict feeds the metrics), writing nothing, counting nothing more.
            await run.resync()
            await run.foreign(OME, {**OME_RESOLVED, "message": "again"})
            assert (len(api.events), run.conflicts, api.writes) == (1, 1.0, 1)
            assert (
                run.sample("ome_selector_inferenceservices", {"status": "True", "reason": "RuntimeSelected"})
                == 1.0
            )
            # A catalog change that moves the verdict: still left alone.
            run.controller.mirror.on_watch_event(B, deleted=False)
            await run.settle()
            assert (api.condition(), api.writes) == (_fields({**OME_RESOLVED, "message": "again"}), 1)

    asyncio.run(scenario())


def _fields(condition: Mapping[str, Any]) -> tuple[str, str, str]:
    return condition["status"], condition["reason"], condition["message"]


def _selected(verdict: tuple[str, str, str]) -> dict[str, Any]:
    return {"type": "RuntimeReady", "status": verdict[0], "reason": verdict[1], "message": verdict[2]}


def test_a_removed_condition_of_the_other_writer_is_written_as_usual() -> None:
    api = _Api(_isvc())

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            await run.foreign(OME, OME_RESOLVED)
            assert (api.condition(), api.writes) == (_fields(OME_RESOLVED), 1)
            await run.foreign(OME)  # the other writer's condition is gone: restored, with its event
            assert (api.condition(), api.writes, run.conflicts) == (SELECTED_A, 2, 1.0)
            # A new finding after that starts the yielding again: counted, not reported twice.
            await run.foreign(OME, OME_RESOLVED)
            assert (api.condition(), api.writes, run.conflicts) == (_fields(OME_RESOLVED), 2, 2.0)
            assert _conflicts(api) == [CONFLICT.format(OME)]

    asyncio.run(scenario())


def test_a_condition_equal_to_the_verdict_is_the_products_again() -> None:
    api = _Api(_isvc())

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            await run.foreign(OME, OME_RESOLVED)
            await run.foreign(OME, _selected(SELECTED_A))  # the other writer wrote the verdict
            assert (api.condition(), api.writes) == (SELECTED_A, 1)
            # The product's again: a change of the verdict is written (over a condition OME wrote last).
            run.controller.mirror.on_watch_event(B, deleted=False)
            await run.settle()
            assert (api.condition(), api.writes, run.conflicts) == (SELECTED_B, 2, 1.0)

    asyncio.run(scenario())


def test_a_restart_finds_the_other_writer_from_the_managed_fields() -> None:
    api = _Api(_isvc())
    api.write_as(OME, "svc", OME_RESOLVED)

    async def scenario() -> None:
        async with _Run(api, MODEL, A, api.bodies["svc"]) as run:
            assert (api.condition(), api.writes, run.conflicts) == (_fields(OME_RESOLVED), 0, 1.0)
            assert _conflicts(api) == [CONFLICT.format(OME)]

    asyncio.run(scenario())


def test_the_conflict_event_is_recorded_and_nothing_is_restored() -> None:
    api = _Api(_isvc())  # no runtime: RuntimeNotFound, with its Warning event
    not_found = "no runtime supports model m (checked 0 runtimes: 0 namespace-scoped, 0 cluster-scoped): "
    not_found += "no runtimes are installed"

    async def scenario() -> None:
        async with _Run(api, MODEL, _isvc()) as run:
            await run.foreign(OME, OME_RESOLVED)
            assert api.events == [
                ("Warning", "RuntimeNotFound", not_found),
                ("Warning", "RuntimeReadyConflict", CONFLICT.format(OME)),
            ]

    asyncio.run(scenario())


def test_a_managers_name_is_shown_escaped() -> None:
    api = _Api(_isvc())

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            await run.foreign("evil\x1b[2J", OME_RESOLVED)
            assert _conflicts(api) == [CONFLICT.format('"evil\\x1b[2J"')]

    asyncio.run(scenario())


def test_other_writers_reported_per_inference_service_are_bounded() -> None:
    api = _Api(_isvc())
    bound = controller_module.MAX_REPORTED_WRITERS

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            for number in range(bound + 2):
                await run.foreign(f"writer-{number}", OME_RESOLVED)
                await run.foreign(
                    f"writer-{number}"
                )  # removed again: restored, the next one is a new finding
            assert _conflicts(api) == [CONFLICT.format(f"writer-{n}") for n in range(bound)]
            assert run.conflicts == bound + 2

    asyncio.run(scenario())


def test_a_writer_that_no_managed_field_names_is_another_writer() -> None:
    api = _Api(_isvc())

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            await run.foreign(None, OME_RESOLVED)
            assert (api.condition(), _conflicts(api)) == (
                _fields(OME_RESOLVED),
                [CONFLICT.format("another writer")],
            )

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "case",
    [
        "removed",  # a removal is restored (its own rule), no other writer is named
        "same as the verdict",  # nothing to write
        "managed fields name only ome-selector",  # the product's own write whose answer was lost
        "never written by this process, no managed fields",  # nothing to compare with, nobody named
        "after losing the lead",  # the next leader's writes are the product's own
    ],
)
def test_what_is_not_another_writer(case: str) -> None:
    api = _Api(_isvc())
    selected = _selected(SELECTED_A)

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            assert api.condition() == SELECTED_A
            if case == "removed":
                await run.foreign(OME)
            elif case == "same as the verdict":
                await run.foreign(OME, selected)
            elif case == "managed fields name only ome-selector":
                await run.foreign("ome-selector", OME_RESOLVED)
            elif case == "never written by this process, no managed fields":
                api.write_as(None, "svc", OME_RESOLVED)  # e.g. while the product was down
                async with _Run(api, MODEL, A, api.bodies["svc"]) as restarted:
                    assert (restarted.conflicts, api.writes) == (0.0, 2)
            else:
                run.controller.forget_writes()
                await run.foreign("ome-selector", OME_RESOLVED)
            assert api.condition() == SELECTED_A
            assert (_conflicts(api), run.conflicts) == ([], 0.0)

    asyncio.run(scenario())


def test_report_only_writes_and_reports_nothing() -> None:
    api = _Api(_isvc())
    api.write_as(OME, "svc", OME_RESOLVED)

    async def scenario() -> None:
        async with _Run(api, MODEL, A, api.bodies["svc"], report_only=True) as run:
            await run.foreign(OME, {**OME_RESOLVED, "message": "again"})
            assert (api.writes, api.events, run.conflicts) == (0, [], 0.0)

    asyncio.run(scenario())


# --- SPEC §12 "Switch events" ---------------------------------------------------------------------------


def _switch_events(api: _Api) -> list[tuple[str, str, str]]:
    return [event for event in api.events if event[1] == "RuntimeSelectionChanged"]


def test_a_switch_of_the_selected_runtime_records_one_normal_event_with_the_new_score() -> None:
    api = _Api(_isvc())

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            assert api.condition() == SELECTED_A
            run.controller.mirror.on_watch_event(B, deleted=False)  # rt-b outranks rt-a
            await run.settle()
            assert api.condition() == SELECTED_B
            assert _switch_events(api) == [
                (
                    "Normal",
                    "RuntimeSelectionChanged",
                    "selected runtime changed from ClusterServingRuntime rt-a to ClusterServingRuntime rt-b "
                    "(score 4)",
                )
            ]
            await run.resync()  # nothing changed: no write, no event
            run.controller.mirror.on_watch_event(B, deleted=True)  # and back
            await run.settle()
            assert [message for *_, message in _switch_events(api)][1:] == [
                "selected runtime changed from ClusterServingRuntime rt-b to ClusterServingRuntime rt-a "
                "(score 2)"
            ]
            assert api.writes == 3

    asyncio.run(scenario())


def test_a_switch_between_scopes_names_both_kinds() -> None:
    api = _Api(_isvc())
    namespaced = objects.runtime("rt-a", namespace=NS, priority=1)

    async def scenario() -> None:
        async with _Run(api, MODEL, A, _isvc()) as run:
            run.controller.mirror.on_watch_event(
                namespaced, deleted=False
            )  # a namespaced runtime comes first
            await run.settle()
            assert [message for *_, message in _switch_events(api)] == [
                "selected runtime changed from ClusterServingRuntime rt-a to ServingRuntime rt-a (score 2)"
            ]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "change",
    ["score only", "from no runtime", "to no runtime", "from another writer's text", "report-only"],
)
def test_what_is_not_a_switch(change: str) -> None:
    api = _Api(_isvc())
    report_only = change == "report-only"
    if report_only:
        stored = dict(zip(("status", "reason", "message"), SELECTED_A, strict=True))
        api.write_as(None, "svc", {"type": "RuntimeReady", **stored})

    async def scenario() -> None:
        start = [MODEL] if change == "from no runtime" else [MODEL, A]
        async with _Run(api, *start, api.bodies["svc"], report_only=report_only) as run:
            if change == "score only":
                run.controller.mirror.on_watch_event(objects.runtime("rt-a", priority=3), deleted=False)
            elif change in ("from no runtime", "report-only"):
                run.controller.mirror.on_watch_event(B, deleted=False)
            elif change == "to no runtime":
                run.controller.mirror.on_watch_event(A, deleted=True)
            else:
                text = {**OME_RESOLVED, "reason": "RuntimeSelected", "message": "chosen: rt-a"}
                run.controller.mirror.on_watch_event(api.write_as(None, "svc", text), deleted=False)
                run.controller.mirror.on_watch_event(B, deleted=False)
            await run.settle()
            assert _switch_events(api) == []
            # Another writer's text is left to it (SPEC §5 "Another writer"): no write, so no switch either.
            assert api.writes == (0 if report_only else 1 if change == "from another writer's text" else 2)

    asyncio.run(scenario())


# --- SPEC §5 replicaRefs ----------------------------------------------------------------------------------

REPLICA_REFS = [{"name": "replica-a"}]


def test_an_inference_service_with_replica_refs_gets_no_condition_event_or_metric_row() -> None:
    api = _Api(_isvc(replicaRefs=REPLICA_REFS), _isvc("plain", uid="uid-2"))

    async def scenario() -> None:
        async with _Run(api, MODEL, *api.bodies.values()) as run:
            assert api.condition() is None
            assert api.condition("plain") is not None  # no runtime: RuntimeNotFound
            assert [event[1] for event in api.events] == ["RuntimeNotFound"]
            rows = {"status": "False", "reason": "RuntimeNotFound"}
            assert run.sample("ome_selector_inferenceservices", rows) == 1.0
            evaluated = run.sample("ome_selector_evaluations_total", rows)
            # Gaining replicaRefs drops the metric row of the one that had a verdict.
            plain = copy.deepcopy(api.bodies["plain"])
            plain["spec"]["replicaRefs"] = REPLICA_REFS
            plain["metadata"]["resourceVersion"] = "9"
            run.controller.mirror.on_watch_event(plain, deleted=False)
            await run.settle()
            assert run.sample("ome_selector_inferenceservices", rows) == 0.0
            assert run.sample("ome_selector_evaluations_total", rows) == evaluated
            assert (api.writes, len(api.events)) == (1, 1)

    asyncio.run(scenario())


class _ChangedWhileWriting(_Api):
    """The InferenceService is changed (to a model that does not exist) while the controller's first write
    is on its way back: the watch delivers the write and the change before the write's answer arrives (they
    come over different connections)."""

    controller: Controller | None = None

    async def patch_conditions(
        self, namespace: str, name: str, *, resource_version: str, conditions: list[Any]
    ) -> dict[str, Any]:
        answer = await super().patch_conditions(
            namespace, name, resource_version=resource_version, conditions=conditions
        )
        if self.controller is not None and self.writes == 1:
            self.controller.mirror.on_watch_event(copy.deepcopy(answer), deleted=False)
            changed = self.bodies[name]
            changed["metadata"]["resourceVersion"] = str(int(changed["metadata"]["resourceVersion"]) + 1)
            changed["spec"]["model"]["name"] = "elsewhere"
            self.controller.mirror.on_watch_event(copy.deepcopy(changed), deleted=False)
        return answer


def test_a_writes_answer_older_than_what_the_watch_delivered_does_not_undo_it() -> None:
    api = _ChangedWhileWriting(_isvc())

    async def scenario() -> None:
        run = _Run(api, MODEL, A)
        api.controller = run.controller
        run.controller.mirror.on_watch_event(_isvc(), deleted=False)
        async with run:
            await run.settle()
            assert api.condition() is not None
            assert api.condition()[:2] == ("False", "ModelNotFound")  # type: ignore[index]

    asyncio.run(scenario())
