"""The event pipeline: beside the status writes, at most once, bounded, in order per object; and the
controller hands it an event only after the status write succeeded."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, cast

import pytest

from harness import objects
from ome_selector.api.resources import Kind
from ome_selector.kube.objects import ConflictError, Objects
from ome_selector.operator.controller import Controller
from ome_selector.operator.events import EventPipeline, PendingEvent, involved_reference
from ome_selector.operator.metrics import Metrics
from ome_selector.operator.writer import ApiWriter


def _event(name: str, reason: str = "RuntimeNotFound") -> PendingEvent:
    involved = {"metadata": {"name": name, "namespace": "ns"}}
    return PendingEvent(involved, "Warning", reason, f"{name} {reason}")


def test_events_of_one_object_are_recorded_in_the_order_they_were_submitted() -> None:
    recorded: list[tuple[str, str]] = []

    async def record(event: PendingEvent) -> None:
        await asyncio.sleep(0.001 if event.reason == "RuntimeSelected" else 0)  # the first is the slower
        recorded.append((event.involved["metadata"]["name"], event.reason))

    async def scenario() -> None:
        pipeline = EventPipeline(record, workers=4)
        pipeline.start()
        for index in range(20):
            name = f"svc-{index}"
            pipeline.submit(name, _event(name, "RuntimeSelected"))
            pipeline.submit(name, _event(name, "RuntimeNotFound"))
        await pipeline.wait_idle()
        await pipeline.stop()

    asyncio.run(scenario())
    assert len(recorded) == 40
    for index in range(20):
        name = f"svc-{index}"
        assert [reason for who, reason in recorded if who == name] == ["RuntimeSelected", "RuntimeNotFound"]


def test_a_full_queue_drops_without_waiting_counts_and_says_it_once(caplog: pytest.LogCaptureFixture) -> None:
    dropped: list[None] = []
    release = asyncio.Event()
    recorded: list[PendingEvent] = []

    async def record(event: PendingEvent) -> None:
        await release.wait()
        recorded.append(event)

    async def scenario() -> None:
        pipeline = EventPipeline(record, on_drop=lambda: dropped.append(None), workers=1, capacity=3)
        pipeline.start()
        await asyncio.sleep(0)
        for index in range(10):  # never blocks: submit is synchronous
            pipeline.submit("same", _event(f"svc-{index}"))
        await asyncio.sleep(0)
        release.set()
        await pipeline.wait_idle()
        await pipeline.stop()

    with caplog.at_level(logging.WARNING, logger="ome_selector.operator.events"):
        asyncio.run(scenario())
    # One taken by the worker before the burst could not happen (it waits on get), so: 3 queued, 7 dropped.
    assert len(recorded) == 3
    assert len(dropped) == 7
    assert [r.getMessage() for r in caplog.records] == [
        "event queue full: not recording RuntimeNotFound (1 dropped since the last such line); "
        "the conditions carry the same text"
    ]


def test_a_failed_event_is_not_retried_and_the_worker_goes_on() -> None:
    attempts: list[str] = []

    async def record(event: PendingEvent) -> None:
        attempts.append(event.involved["metadata"]["name"])
        if event.involved["metadata"]["name"] == "bad":
            raise RuntimeError("boom")

    async def scenario() -> None:
        pipeline = EventPipeline(record, workers=1)
        pipeline.start()
        pipeline.submit("k", _event("bad"))
        pipeline.submit("k", _event("good"))
        await pipeline.wait_idle()
        await pipeline.stop()

    asyncio.run(scenario())
    assert attempts == ["bad", "good"]


def test_stop_records_what_is_queued_then_gives_up_after_the_drain_timeout() -> None:
    recorded: list[str] = []

    async def record(event: PendingEvent) -> None:
        name = event.involved["metadata"]["name"]
        if name == "stuck":
            await asyncio.sleep(3600)
        recorded.append(name)

    async def scenario() -> None:
        quick = EventPipeline(record, workers=2)
        quick.start()
        for index in range(5):
            quick.submit(index, _event(f"svc-{index}"))
        await quick.stop(drain_timeout=5)
        stuck = EventPipeline(record, workers=1)
        stuck.start()
        stuck.submit("k", _event("stuck"))
        await stuck.stop(drain_timeout=0.01)  # returns: the stuck create is cancelled

    asyncio.run(scenario())
    assert sorted(recorded) == [f"svc-{index}" for index in range(5)]


def test_involved_reference_keeps_only_what_an_event_names() -> None:
    body = objects.inference_service("svc", namespace="ns", model_name="m")
    body["metadata"] |= {"uid": "u", "resourceVersion": "7", "managedFields": [{"manager": "x"}]}
    body["status"] = {"conditions": [{"type": "RuntimeReady"}]}
    assert involved_reference(body) == {
        "metadata": {"name": "svc", "namespace": "ns", "uid": "u", "resourceVersion": "7"}
    }


class _RecordingWriter(ApiWriter):
    """The writer's two calls, in memory: ``conflicts`` status writes answer 409 first."""

    def __init__(self, conflicts: int = 0) -> None:
        super().__init__(cast(Objects, None), Metrics(), instance="test")
        self.calls: list[str] = []
        self.conflicts = conflicts

    async def patch_conditions(
        self, namespace: str, name: str, *, resource_version: str, conditions: list[Any]
    ) -> dict[str, Any]:
        if self.conflicts:
            self.conflicts -= 1
            self.calls.append("patch 409")
            raise ConflictError("conflict")
        self.calls.append("patch")
        body = objects.inference_service(name, namespace=namespace, model_name="m")
        body["metadata"] |= {"resourceVersion": str(int(resource_version) + 1), "uid": "u"}
        body["status"] = {"conditions": conditions}
        return body

    async def read_inference_service(self, namespace: str, name: str) -> dict[str, Any]:
        self.calls.append("read")
        body = objects.inference_service(name, namespace=namespace, model_name="m")
        body["metadata"] |= {"resourceVersion": "5", "uid": "u"}
        return body

    async def record_event(
        self,
        involved: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        message: str,
        kind: Kind = Kind.INFERENCE_SERVICE,
    ) -> None:
        assert kind is Kind.INFERENCE_SERVICE
        assert set(involved["metadata"]) == {"name", "namespace", "uid", "resourceVersion"}
        self.calls.append(f"event {reason}")


@pytest.mark.parametrize(
    ("conflicts", "calls"),
    [
        (0, ["patch", "event RuntimeNotFound"]),
        (1, ["patch 409", "read", "patch", "event RuntimeNotFound"]),
    ],
)
def test_the_controller_hands_over_an_event_only_after_its_status_write_succeeded(
    conflicts: int, calls: list[str]
) -> None:
    writer = _RecordingWriter(conflicts)

    async def scenario() -> None:
        controller = Controller(writer, Metrics(), workers=1)
        isvc = objects.inference_service("svc", namespace="ns", model_name="m")
        isvc["metadata"] |= {"resourceVersion": "1", "uid": "u"}
        for body in (objects.model("m", size="3B"), isvc):  # no runtime: RuntimeNotFound
            controller.mirror.on_watch_event(body, deleted=False)
        controller.start()
        controller.mark_ready()
        await controller.wait_idle(timeout=10)
        assert not controller.busy
        await controller.stop()

    asyncio.run(scenario())
    assert writer.calls == calls
