"""Leader election against the real apiserver: one leader, hand-over on release, and the write fence.

Short timings keep these fast (lease 2 s, renew deadline 1.5 s, retry 0.25 s); the rules are the same as
with client-go's 15/10/2. A monitor samples every elector's fence throughout: two writers at once is the one
failure that must never happen, whatever the scheduling on a loaded machine. Every wait is on what the
replicas read and wrote (each store keeps a log), never on a clock: how long a hand-over takes is the
benchmarks' business, and the rules' timing is unit-tested on an injected clock (tests/unit/kube).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from kubernetes_asyncio import client as aclient
from kubernetes_asyncio import config as aconfig

from harness.controlplane import ControlPlane
from ome_selector.kube.leaderelection import ApiLeaseStore, LeaderElector, LeaseRecord, LeaseTimings

TIMINGS = LeaseTimings(lease_duration=2.0, renew_deadline=1.5, retry_period=0.25)


class Partitionable:
    """The real Lease store, behind a switch that cuts this replica off the API (a network partition); it
    logs what this replica read, tried to write and wrote, in order."""

    def __init__(self, store: ApiLeaseStore) -> None:
        self.store = store
        self.cut = False
        self.log: list[tuple[str, LeaseRecord | None]] = []

    def _check(self) -> None:
        if self.cut:
            raise ConnectionError("partitioned")

    async def get(self) -> LeaseRecord | None:
        self._check()
        record = await self.store.get()
        self.log.append(("read", record))
        return record

    async def create(self, record: LeaseRecord) -> LeaseRecord | None:
        self._check()
        self.log.append(("tried", record))
        return self._wrote(await self.store.create(record))

    async def update(self, record: LeaseRecord) -> LeaseRecord | None:
        self._check()
        self.log.append(("tried", record))
        return self._wrote(await self.store.update(record))

    def _wrote(self, written: LeaseRecord | None) -> LeaseRecord | None:
        if written is not None:
            self.log.append(("wrote", written))
        return written

    def reads_held_by(self, holder: str, since: int = 0) -> int:
        """How many of this replica's reads from log entry ``since`` on found ``holder`` holding the Lease."""
        return sum(
            1 for kind, record in self.log[since:] if kind == "read" and record and record.holder == holder
        )

    def after_first_read_held_by(self, holder: str) -> tuple[str, LeaseRecord | None]:
        """What this replica did right after it first read ``holder`` holding the Lease."""
        for index, (kind, record) in enumerate(self.log[:-1]):
            if kind == "read" and record is not None and record.holder == holder:
                return self.log[index + 1]
        raise AssertionError(f"never read {holder!r} holding the Lease, or did nothing after: {self.log}")

    def acquisition(self, identity: str) -> tuple[LeaseRecord | None, LeaseRecord]:
        """The record this replica read just before it first wrote itself as holder, and what it wrote."""
        for index, (kind, record) in enumerate(self.log):
            if kind == "wrote" and record is not None and record.holder == identity:
                before = [entry for kind_, entry in self.log[:index] if kind_ == "read"]
                return (before[-1] if before else None), record
        raise AssertionError(f"{identity} never wrote itself as the holder: {self.log}")


async def until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait (on the test's loop) until ``condition()``; the error says what was waited for."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        await asyncio.sleep(0.01)


class Cluster:
    def __init__(self, api: Any, namespace: str, lease: str) -> None:
        self.api, self.namespace, self.lease = api, namespace, lease
        self.electors: list[LeaderElector] = []
        self.stores: list[Partitionable] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.overlaps = 0
        #: Who started leading, in order.
        self.started_leading: list[str] = []

    def start(self, identity: str) -> LeaderElector:
        store = Partitionable(ApiLeaseStore(self.api, self.namespace, self.lease))

        def started() -> None:
            self.started_leading.append(identity)

        elector = LeaderElector(store, identity, TIMINGS, on_started_leading=started)
        self.electors.append(elector)
        self.stores.append(store)
        self.tasks.append(asyncio.create_task(elector.run()))
        return elector

    def leaders(self) -> list[str]:
        return [e.identity for e in self.electors if e.may_write()]

    async def monitor(self) -> None:
        while True:
            if len(self.leaders()) > 1:
                self.overlaps += 1
            await asyncio.sleep(0.005)

    async def until_one_leader(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leaders = self.leaders()
            if len(leaders) == 1:
                return leaders[0]
            await asyncio.sleep(0.02)
        raise AssertionError(f"no single leader within {timeout} s: {self.leaders()}")


@asynccontextmanager
async def cluster(plane: ControlPlane) -> AsyncIterator[Cluster]:
    configuration = aclient.Configuration()
    await aconfig.load_kube_config(config_file=str(plane.kubeconfig), client_configuration=configuration)
    async with aclient.ApiClient(configuration) as api:
        namespace = f"le-{uuid.uuid4().hex[:8]}"
        await aclient.CoreV1Api(api).create_namespace(
            aclient.V1Namespace(metadata=aclient.V1ObjectMeta(name=namespace))
        )
        state = Cluster(api, namespace, "ome-selector")
        monitor = asyncio.create_task(state.monitor())
        try:
            yield state
        finally:
            monitor.cancel()
            for task in state.tasks:
                task.cancel()
            await asyncio.gather(monitor, *state.tasks, return_exceptions=True)
        assert state.overlaps == 0, "two replicas could write at the same time"


def test_one_of_three_leads_and_a_release_hands_over_quickly(
    control_plane: ControlPlane,
) -> None:
    async def scenario() -> None:
        async with cluster(control_plane) as state:
            for name in ("a", "b", "c"):
                state.start(name)
            leader = await state.until_one_leader()
            index = [e.identity for e in state.electors].index(leader)
            followers = [store for number, store in enumerate(state.stores) if number != index]
            # Renewals keep the same leader: it renews three times, and each follower reads its Lease after
            # that (so each has decided, on a renewed Lease, not to take it).
            await until(
                lambda: sum(kind == "wrote" for kind, _ in state.stores[index].log) >= 4,
                "the leader's three renewals",
            )
            marks = [len(store.log) for store in followers]
            await until(
                lambda: all(
                    store.reads_held_by(leader, mark) >= 1
                    for store, mark in zip(followers, marks, strict=True)
                ),
                "each follower reading the renewed Lease",
            )
            assert state.leaders() == [leader]
            assert state.started_leading == [leader]
            lease = await ApiLeaseStore(state.api, state.namespace, state.lease).get()
            assert lease is not None
            assert (lease.holder, lease.duration_seconds) == (leader, 2)

            state.tasks[index].cancel()  # SIGTERM: stop writing, release the Lease
            await asyncio.gather(state.tasks[index], return_exceptions=True)
            assert not state.electors[index].may_write()
            successor = await state.until_one_leader()
            assert successor != leader
            # A released Lease is free at once: the successor tried to take it right after its first read of
            # the release (holder cleared), not after waiting for the released record to age.
            successor_store = state.stores[[e.identity for e in state.electors].index(successor)]
            read_before, written = successor_store.acquisition(successor)
            assert read_before is not None
            assert read_before.holder == ""
            kind, tried = successor_store.after_first_read_held_by("")
            assert (kind, tried and tried.holder) == ("tried", successor), successor_store.log
            assert written.holder == successor
            lease = await ApiLeaseStore(state.api, state.namespace, state.lease).get()
            assert lease is not None
            assert lease.holder == successor
            assert lease.transitions >= 1

    asyncio.run(scenario())


def test_a_partitioned_leader_stops_writing_before_anyone_else_can_start(control_plane: ControlPlane) -> None:
    async def scenario() -> None:
        async with cluster(control_plane) as state:
            state.start("a")
            assert await state.until_one_leader() == "a"
            state.start("b")
            await until(lambda: state.stores[1].reads_held_by("a") >= 1, "b reading a's Lease")
            state.stores[0].cut = True
            # The monitor (above) fails the test if b could write while a still could; here: a's fence closed.
            await until(lambda: "b" in state.started_leading, "b taking over from the partitioned a")
            assert not state.electors[0].may_write(), "the old leader could still write when b took over"
            assert state.leaders() == ["b"]

            state.stores[0].cut = False  # the partition heals: a sees b's Lease and stays a follower
            mark = len(state.stores[0].log)
            await until(lambda: state.stores[0].reads_held_by("b", mark) >= 2, "a reading b's Lease twice")
            assert state.leaders() == ["b"]
            assert state.started_leading == ["a", "b"]

    asyncio.run(scenario())


def test_a_killed_leader_is_replaced_after_the_lease_expires(control_plane: ControlPlane) -> None:
    async def scenario() -> None:
        async with cluster(control_plane) as state:
            state.start("a")
            assert await state.until_one_leader() == "a"
            state.start("b")
            await until(lambda: state.stores[1].reads_held_by("a") >= 1, "b reading a's Lease")
            # kill -9: the task vanishes without releasing (cut the API first so the release cannot happen).
            state.stores[0].cut = True
            state.tasks[0].cancel()
            await asyncio.gather(state.tasks[0], return_exceptions=True)
            assert await state.until_one_leader() == "b"
            # b took the Lease by its expiry: what it read last still named a, as a's last renewal left it,
            # and it had read that same record before (it waited for it to age; how long: the unit tests).
            a_wrote = [record for kind, record in state.stores[0].log if kind == "wrote"]
            read_before, _ = state.stores[1].acquisition("b")
            assert read_before is not None
            assert read_before.same_record(a_wrote[-1])
            assert sum(kind == "read" and read_before.same_record(r) for kind, r in state.stores[1].log) >= 2

    asyncio.run(scenario())
