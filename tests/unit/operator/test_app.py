"""The operator's composition of the webhook: only when configured, on its own registry, ready with it; the
Kopf settings and memories."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import aiohttp
import kopf
from aiohttp import web
from kopf._cogs.aiokits.aiotoggles import ToggleSet  # not exported by Kopf, as the names below
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients.watching import streaming_block
from kopf._cogs.structs.references import Resource

from harness import objects
from harness.controlplane import free_port
from ome_selector.kube.objects import PAGE_SIZE
from ome_selector.operator.app import Operator, OperatorConfig
from ome_selector.operator.controller import Controller
from ome_selector.operator.kopfwiring import (
    KOPF_IDLE_WORKER_SECONDS,
    KOPF_PAUSE_WAITER_PREFIX,
    KOPF_RETRY_MAX_SECONDS,
    ForgetfulMemories,
    NoDiffBase,
    configure_settings,
)
from ome_selector.operator.metrics import Metrics
from ome_selector.webhook.config import WebhookConfig


def test_no_webhook_without_config() -> None:
    operator = Operator(OperatorConfig(health_address=None))
    assert operator.admission is None
    assert operator.webhook is None
    assert operator.registry._webhooks.get_all_handlers() == []


def test_the_webhook_sees_the_catalog_once_the_first_listing_is_indexed() -> None:
    operator = Operator(OperatorConfig(health_address=None, webhook=WebhookConfig()))
    assert operator.admission is not None
    assert operator.webhook is not None
    assert len(operator.registry._webhooks.get_all_handlers()) == 5
    assert not operator.admission.ready

    async def start() -> Controller:
        controller = Controller(None, Metrics(), report_only=True)
        operator.controller = controller
        assert operator.indexed_catalog() is None  # listed, not yet marked ready
        controller.mark_ready()
        return controller

    controller = asyncio.run(start())
    assert operator.indexed_catalog() is controller.catalog
    assert operator.admission.ready


def test_kopf_lists_in_pages_and_lets_idle_object_workers_go() -> None:
    settings = kopf.OperatorSettings()
    configure_settings(settings)
    # Memory at scale: one page of Kopf's listing alive at a time, no task kept per quiet object.
    assert settings.watching.chunk_size == PAGE_SIZE
    assert settings.queueing.idle_timeout == KOPF_IDLE_WORKER_SECONDS < 1
    assert settings.posting.enabled is False
    assert settings.scanning.disabled is True


def test_kopf_builds_no_diff_base_and_the_operator_has_no_handler_that_would_read_one() -> None:
    settings = kopf.OperatorSettings()
    configure_settings(settings)
    storage = settings.persistence.diffbase_storage
    assert isinstance(storage, NoDiffBase)
    body = kopf.Body({"metadata": {"name": "svc", "labels": {"a": "b"}}, "spec": {"model": {"name": "m"}}})
    assert storage.build(body=body) == {}
    assert storage.fetch(body=body) is None
    # Change handlers (on.create/update/resume/field) would get empty diffs: there must be none.
    registry = Operator(OperatorConfig(health_address=None)).registry
    assert not list(registry._changing.get_all_handlers())
    assert not list(registry._spawning.get_all_handlers())
    assert list(registry._watching.get_all_handlers())


def test_kopf_keeps_no_memory_of_an_object_between_its_events() -> None:
    memories = ForgetfulMemories()
    body: kopf.RawBody = {"metadata": {"uid": "u1", "name": "svc", "namespace": "ns"}}

    async def twice() -> tuple[Any, Any]:
        first = await memories.recall(body, noticed_by_listing=True)
        return first, await memories.recall(body)

    first, second = asyncio.run(twice())
    assert first is not second
    assert first.noticed_by_listing  # what Kopf asks for is still passed on
    assert list(memories.iter_all_memories()) == []


def test_kopf_names_a_watch_streams_pause_waiter_as_the_cleanup_expects() -> None:
    """The cleanup cancels the pause waiters Kopf leaves behind by their task name, a detail Kopf does not
    export: if it changes, this fails (and a stop during an event would again take 5 s longer)."""

    async def scenario() -> tuple[list[str], bool]:
        resource = Resource("ome.io", "v1beta1", "servingruntimes")
        paused = ToggleSet(any)
        async with streaming_block(resource=resource, namespace=None, operator_paused=paused) as waiter:
            names = [task.get_name() for task in asyncio.all_tasks()]
        return names, waiter.cancelled()

    names, cancelled = asyncio.run(scenario())
    assert f"{KOPF_PAUSE_WAITER_PREFIX}servingruntimes.v1beta1.ome.io" in names
    assert cancelled  # a stream that is closed cancels its own; only an orphaned one is left running


def test_one_resync_per_listing_however_long_kopf_takes_to_hand_it_over(monkeypatch: Any) -> None:
    """SPEC §5 "Level-triggered resync": a listing Kopf hands over for longer than RELIST_MAX_DELAY
    (100,000 objects take minutes) costs one resync, not one every RELIST_MAX_DELAY; a listing after a gap
    gets its own, which evaluates; so does a listing that starts while a resync runs."""
    from ome_selector.operator import mirror

    monkeypatch.setattr(mirror, "RELIST_QUIET_SECONDS", 0.02)
    monkeypatch.setattr(mirror, "RELIST_MAX_DELAY_SECONDS", 0.1)
    monkeypatch.setattr(mirror, "RELIST_GAP_SECONDS", 1.0)
    operator = Operator(OperatorConfig(health_address=None))
    resyncs: list[bool] = []

    async def scenario() -> None:
        running, release = asyncio.Event(), asyncio.Event()

        async def resync(*, evaluate: bool = True) -> None:
            resyncs.append(evaluate)
            running.set()
            await release.wait()
            running.clear()

        monkeypatch.setattr(operator, "resync", resync)

        async def listing(kind: str, seconds: float) -> None:
            loop = asyncio.get_running_loop()
            end = loop.time() + seconds
            while loop.time() < end:
                operator.resync_schedule.listing_seen(kind)
                await asyncio.sleep(0.005)

        release.set()
        await listing("InferenceService", 1.0)  # ten times RELIST_MAX_DELAY
        assert operator.resync_schedule.task is not None
        await asyncio.wait_for(operator.resync_schedule.task, 5)
        assert resyncs == [False]  # the first listing: the catalog was just listed, nothing to evaluate
        await asyncio.sleep(1.1)  # past RELIST_GAP: the next listing of the kind is a gap's
        release.clear()
        await listing("InferenceService", 0.05)
        await asyncio.wait_for(running.wait(), 5)  # that resync is running now ...
        await listing("ClusterServingRuntime", 0.01)  # ... when another kind's listing starts
        release.set()
        assert operator.resync_schedule.task is not None
        await asyncio.wait_for(operator.resync_schedule.task, 5)

    asyncio.run(scenario())
    assert resyncs == [False, True, False]


def test_a_resync_after_a_gap_that_fails_is_tried_again_until_it_succeeds(monkeypatch: Any) -> None:
    """SPEC §5: a relist after a watch gap is reconciled within seconds. A failed listing removes nothing, so
    a resync that fails (an apiserver that just restarted drops requests) is tried again soon, still
    evaluating, rather than left to the periodic resync minutes later."""
    from ome_selector.operator import mirror

    monkeypatch.setattr(mirror, "RELIST_QUIET_SECONDS", 0.01)
    monkeypatch.setattr(mirror, "RELIST_GAP_SECONDS", 0.05)
    monkeypatch.setattr(mirror, "RELIST_RETRY_SECONDS", 0.01)
    operator = Operator(OperatorConfig(health_address=None))
    attempts: list[bool] = []

    async def resync(*, evaluate: bool = True) -> None:
        attempts.append(evaluate)
        if 2 <= len(attempts) <= 3:
            raise ConnectionResetError("the apiserver is restarting")

    monkeypatch.setattr(operator, "resync", resync)

    async def scenario() -> None:
        operator.resync_schedule.listing_seen("ClusterBaseModel")  # the first listing (start)
        assert operator.resync_schedule.task is not None
        await asyncio.wait_for(operator.resync_schedule.task, 5)
        await asyncio.sleep(0.1)  # past RELIST_GAP: the next listing is a gap's
        operator.resync_schedule.listing_seen("ClusterBaseModel")
        assert operator.resync_schedule.task is not None
        await asyncio.wait_for(operator.resync_schedule.task, 5)

    asyncio.run(scenario())
    # The start's resync (nothing to evaluate); the gap's failed twice, then succeeded, evaluating every time.
    assert attempts == [False, True, True, True]


def test_an_empty_relisting_after_a_gap_resyncs_and_evaluates(monkeypatch: Any) -> None:
    """SPEC §5: the only runtime deleted during a watch gap leaves its kind empty, and Kopf's relisting of it
    hands no event to any handler; the listing itself still makes a resync that evaluates everything."""
    from ome_selector.operator import mirror

    monkeypatch.setattr(mirror, "RELIST_QUIET_SECONDS", 0.01)
    monkeypatch.setattr(mirror, "RELIST_GAP_SECONDS", 0.05)
    operator = Operator(OperatorConfig(health_address=None))
    resyncs: list[bool] = []

    async def resync(*, evaluate: bool = True) -> None:
        resyncs.append(evaluate)

    monkeypatch.setattr(operator, "resync", resync)

    async def scenario() -> None:
        operator._kopf_listed("clusterservingruntimes")  # the start
        operator._kopf_listed("events")  # not a kind of ours
        assert operator.resync_schedule.task is not None
        await asyncio.wait_for(operator.resync_schedule.task, 5)
        await asyncio.sleep(0.1)  # a gap: Kopf lists the kind again, empty now
        operator._kopf_listed("clusterservingruntimes")
        await asyncio.wait_for(operator.resync_schedule.task, 5)

    asyncio.run(scenario())
    assert resyncs == [False, True]


def test_a_listing_cuts_the_wait_after_a_failed_resync_short(monkeypatch: Any) -> None:
    """Once the apiserver answers Kopf's relisting, the resync does not wait out its backoff (SPEC §5: the
    relist reconciles within seconds of the gap, however long the apiserver was away)."""
    from ome_selector.operator import mirror

    monkeypatch.setattr(mirror, "RELIST_QUIET_SECONDS", 0.01)
    monkeypatch.setattr(mirror, "RELIST_GAP_SECONDS", 0.05)
    monkeypatch.setattr(mirror, "RELIST_RETRY_SECONDS", 60.0)
    operator = Operator(OperatorConfig(health_address=None))
    attempts: list[bool] = []

    async def resync(*, evaluate: bool = True) -> None:
        attempts.append(evaluate)
        if len(attempts) == 1:
            raise ConnectionRefusedError("the apiserver is down")

    monkeypatch.setattr(operator, "resync", resync)

    async def scenario() -> None:
        operator._kopf_listed("clusterbasemodels")

        async def first_attempt() -> None:
            while not attempts:
                await asyncio.sleep(0.005)

        # The failed attempt and the start of the minute's wait are one step of the resync task (nothing is
        # awaited between the raise and the wait): once the attempt is recorded, the task is waiting.
        await asyncio.wait_for(first_attempt(), 30)
        assert attempts == [False]
        await asyncio.sleep(0.1)  # past RELIST_GAP (time passing, not a wait): the next listing is a gap's
        operator._kopf_listed("clusterbasemodels")  # Kopf lists again: the apiserver is back
        assert operator.resync_schedule.task is not None
        await asyncio.wait_for(operator.resync_schedule.task, 5)

    asyncio.run(scenario())
    assert attempts == [False, True]


def test_a_stopping_leader_records_its_written_conditions_events_before_it_hands_the_lease_over() -> None:
    """SPEC §5, §8: on SIGTERM the events of conditions already written are recorded while the Lease is still
    held; cancelling the election first closed the write fence, and a rolling restart dropped them."""
    operator = Operator(OperatorConfig(health_address=None))
    order: list[str] = []

    class Controller:
        async def finish_writes(self) -> None:
            order.append("events recorded")

        async def stop(self) -> None:
            order.append("controller stopped")

    async def scenario() -> None:
        async def election() -> None:
            try:
                await asyncio.sleep(3600)
            finally:
                order.append("lease released")

        operator.controller = Controller()  # type: ignore[assignment]
        operator._election = asyncio.create_task(election())
        await asyncio.sleep(0)
        await operator._cleanup()

    asyncio.run(scenario())
    assert order == ["events recorded", "lease released", "controller stopped"]


def test_kopfs_requests_retry_for_as_long_as_the_apiserver_is_away(monkeypatch: Any, caplog: Any) -> None:
    """SPEC §5: a relist within seconds of the apiserver's return. Kopf's own schedule gives up after nine
    attempts (about a minute), and a watch stream whose request gave up is never started again. Kopf's real
    request routine, against a port that refuses connections for 30 attempts and then answers; its line per
    failed attempt is kept for the first three and every fifteenth."""
    settings = kopf.OperatorSettings()
    configure_settings(settings)
    waits: list[float] = []

    async def scenario() -> int:
        port = free_port()
        runner: web.AppRunner | None = None
        real_sleep = asyncio.sleep

        async def counted_sleep(delay: float) -> None:
            nonlocal runner
            waits.append(delay)
            if len(waits) == 30:  # the apiserver is back

                async def version(_: web.Request) -> web.Response:
                    return web.json_response({"major": "1"})

                app = web.Application()
                app.router.add_get("/version", version)
                runner = web.AppRunner(app)
                await runner.setup()
                await web.TCPSite(runner, "127.0.0.1", port).start()
            await real_sleep(0)

        class KopfsAsyncio:  # only Kopf's request routine sleeps counted
            sleep = staticmethod(counted_sleep)

            def __getattr__(self, name: str) -> Any:
                return getattr(asyncio, name)

        monkeypatch.setattr(kopf_api, "asyncio", KopfsAsyncio())
        async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{port}") as session:
            context = SimpleNamespace(session=session, server=f"http://127.0.0.1:{port}")
            unauthenticated: Any = kopf_api.request.__wrapped__  # type: ignore[attr-defined]  # no vault
            response = await unauthenticated(
                "get", "/version", settings=settings, context=context, logger=watch_logger
            )
            status = int(response.status)
        assert runner is not None
        await runner.cleanup()
        return status

    watch_logger = logging.getLogger("kopf._cogs.clients.watching")  # the logger of Kopf's watch streams
    with caplog.at_level(logging.ERROR, logger=watch_logger.name):
        assert asyncio.run(scenario()) == 200
    assert len(waits) == 30
    assert max(waits) == KOPF_RETRY_MAX_SECONDS
    retried = [r.getMessage().split(" failed")[0] for r in caplog.records if "will retry" in r.getMessage()]
    assert retried == [f"Request attempt #{n}" for n in (1, 2, 3, 15, 30)]


def test_an_event_older_than_the_memory_reaches_neither_the_catalog_nor_the_learner() -> None:
    """The deletion of a reused name's old model, handed over after the creation of its new one (SPEC §5)."""
    seen: list[tuple[str, str]] = []

    class Learner:
        def observe(self, body: dict[str, Any]) -> None:
            seen.append(("observe", body["metadata"]["uid"]))

        def forget(self, body: dict[str, Any]) -> None:
            seen.append(("forget", body["metadata"]["uid"]))

    def model(uid: str, version: str) -> dict[str, Any]:
        body = objects.model("m", size="7B")
        body["metadata"] |= {"uid": uid, "resourceVersion": version, "generation": 1}
        return body

    operator = Operator(OperatorConfig(health_address=None))
    operator.controller = Controller(None, Metrics(), report_only=True)
    operator.learner = Learner()  # type: ignore[assignment]
    added: Any = {"type": "ADDED", "object": model("new", "7")}  # Kopf's RawEvent
    deleted: Any = {"type": "DELETED", "object": model("old", "6")}
    asyncio.run(operator._on_event(added))
    asyncio.run(operator._on_event(deleted))
    assert seen == [("observe", "new")]
    assert len(operator.controller.catalog.keys(kind=None)) == 1
