"""Leader election against the real apiserver: one leader, hand-over on release, and the write fence.

Short timings keep these fast (lease 2 s, renew deadline 1.5 s, retry 0.25 s); the rules are the same as
with client-go's 15/10/2. A monitor samples every elector's fence throughout: two writers at once is the one
failure that must never happen, whatever the scheduling on a loaded machine.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kubernetes_asyncio import client as aclient
from kubernetes_asyncio import config as aconfig

from harness.controlplane import ControlPlane
from ome_selector.kube.leaderelection import ApiLeaseStore, LeaderElector, LeaseRecord, LeaseTimings

TIMINGS = LeaseTimings(lease_duration=2.0, renew_deadline=1.5, retry_period=0.25)


class Partitionable:
    """The real Lease store, behind a switch that cuts this replica off the API (a network partition)."""

    def __init__(self, store: ApiLeaseStore) -> None:
        self.store = store
        self.cut = False

    def _check(self) -> None:
        if self.cut:
            raise ConnectionError("partitioned")

    async def get(self) -> LeaseRecord | None:
        self._check()
        return await self.store.get()

    async def create(self, record: LeaseRecord) -> LeaseRecord | None:
        self._check()
        return await self.store.create(record)

    async def update(self, record: LeaseRecord) -> LeaseRecord | None:
        self._check()
        return await self.store.update(record)


class Cluster:
    def __init__(self, api: Any, namespace: str, lease: str) -> None:
        self.api, self.namespace, self.lease = api, namespace, lease
        self.electors: list[LeaderElector] = []
        self.stores: list[Partitionable] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.overlaps = 0
        self.became_leader_at: dict[str, float] = {}

    def start(self, identity: str) -> LeaderElector:
        store = Partitionable(ApiLeaseStore(self.api, self.namespace, self.lease))

        def started() -> None:
            self.became_leader_at[identity] = time.monotonic()

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

    async def until_one_leader(self, timeout: float = 10.0) -> str:
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
            await asyncio.sleep(3 * TIMINGS.lease_duration)  # renewals keep the same leader
            assert state.leaders() == [leader]
            lease = await ApiLeaseStore(state.api, state.namespace, state.lease).get()
            assert lease is not None
            assert (lease.holder, lease.duration_seconds) == (leader, 2)

            index = [e.identity for e in state.electors].index(leader)
            cancelled = time.monotonic()
            state.tasks[index].cancel()  # SIGTERM: stop writing, release the Lease
            await asyncio.gather(state.tasks[index], return_exceptions=True)
            assert not state.electors[index].may_write()
            successor = await state.until_one_leader()
            handover = state.became_leader_at[successor] - cancelled
            assert successor != leader
            # A released Lease is free at once: a follower takes it at its next retry, not after 2 s.
            assert handover < TIMINGS.lease_duration, f"hand-over took {handover:.2f} s"
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
            await asyncio.sleep(1.0)
            fence_closed_at: float | None = None
            state.stores[0].cut = True
            while "b" not in state.became_leader_at:
                if fence_closed_at is None and not state.electors[0].may_write():
                    fence_closed_at = time.monotonic()
                await asyncio.sleep(0.005)
            assert fence_closed_at is not None, "the old leader could still write when b took over"
            assert state.became_leader_at["b"] > fence_closed_at
            assert state.leaders() == ["b"]

            state.stores[0].cut = False  # the partition heals: a sees b's Lease and stays a follower
            await asyncio.sleep(3 * TIMINGS.retry_period)
            assert state.leaders() == ["b"]

    asyncio.run(scenario())


def test_a_killed_leader_is_replaced_after_the_lease_expires(control_plane: ControlPlane) -> None:
    async def scenario() -> None:
        async with cluster(control_plane) as state:
            state.start("a")
            assert await state.until_one_leader() == "a"
            state.start("b")
            await asyncio.sleep(0.5)
            # kill -9: the task vanishes without releasing (cut the API first so the release cannot happen).
            state.stores[0].cut = True
            killed = time.monotonic()
            state.tasks[0].cancel()
            await asyncio.gather(state.tasks[0], return_exceptions=True)
            assert await state.until_one_leader() == "b"
            waited = state.became_leader_at["b"] - killed
            assert waited >= TIMINGS.lease_duration - 2 * TIMINGS.retry_period, (
                f"took over after {waited:.2f} s"
            )

    asyncio.run(scenario())
