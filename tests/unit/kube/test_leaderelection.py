"""Leader election's pure rules: when a Lease is free, the timing guards, and the write fence."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.kube.leaderelection import LeaderElector, LeaseRecord, LeaseTimings, lease_is_free

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def record(holder: str, duration: int = 15) -> LeaseRecord:
    return LeaseRecord(
        holder=holder, duration_seconds=duration, transitions=0, acquire_time=T0, renew_time=T0
    )


@pytest.mark.parametrize(
    ("current", "observed_at", "now", "free"),
    [
        pytest.param(None, None, 0.0, True, id="no lease yet"),
        pytest.param(record(""), 0.0, 0.0, True, id="released"),
        pytest.param(record("me"), 0.0, 0.0, True, id="held by me: renew"),
        pytest.param(record("other"), None, 100.0, False, id="held, never observed"),
        pytest.param(record("other"), 10.0, 24.9, False, id="held, observed 14.9 s ago"),
        pytest.param(record("other"), 10.0, 25.0, True, id="held, unchanged for the lease duration"),
        pytest.param(record("other", duration=1), 10.0, 11.0, True, id="released by SIGTERM"),
    ],
)
def test_lease_is_free(
    current: LeaseRecord | None, observed_at: float | None, now: float, free: bool
) -> None:
    assert lease_is_free(current, "me", observed_at, now) is free


@given(
    observed_at=st.floats(min_value=0, max_value=1e6),
    elapsed=st.floats(min_value=0, max_value=1e3),
    duration=st.integers(min_value=1, max_value=3600),
)
def test_another_holder_is_respected_for_exactly_its_duration(
    observed_at: float, elapsed: float, duration: int
) -> None:
    free = lease_is_free(record("other", duration), "me", observed_at, observed_at + elapsed)
    assert free is (observed_at + duration <= observed_at + elapsed)


def test_same_record_ignores_only_the_resource_version() -> None:
    base = replace(record("a"), resource_version="1")
    assert base.same_record(replace(base, resource_version="2"))
    assert not base.same_record(replace(base, renew_time=datetime(2026, 11, 30, 12, 1, tzinfo=UTC)))
    assert not base.same_record(None)


@pytest.mark.parametrize(
    ("lease", "renew", "retry"),
    [(10.0, 10.0, 2.0), (15.0, 2.0, 2.0), (15.0, 10.0, 0.0)],
)
def test_timings_keep_the_fence_inside_the_lease(lease: float, renew: float, retry: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        LeaseTimings(lease, renew, retry)


def test_client_go_defaults() -> None:
    assert LeaseTimings() == LeaseTimings(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)


class FrozenStore:
    """A Lease that answers nothing: the API is unreachable. Counts the reads tried."""

    def __init__(self) -> None:
        self.reads = 0

    async def get(self) -> LeaseRecord | None:
        self.reads += 1
        raise ConnectionError("unreachable")

    async def create(self, record: LeaseRecord) -> LeaseRecord | None:
        raise ConnectionError("unreachable")

    async def update(self, record: LeaseRecord) -> LeaseRecord | None:
        raise ConnectionError("unreachable")


def test_the_fence_closes_on_the_clock_even_when_the_loop_never_runs() -> None:
    """may_write() needs no renewal task to notice the deadline: a starved or paused leader stops writing."""
    now = [100.0]
    elector = LeaderElector(FrozenStore(), "me", LeaseTimings(15, 10, 2), clock=lambda: now[0])
    elector._leading, elector._renewed_at = True, 100.0  # as right after a successful acquisition
    assert elector.may_write()
    now[0] = 109.99
    assert elector.may_write()
    now[0] = 110.0
    assert not elector.may_write()


def test_an_unreachable_api_never_makes_a_leader() -> None:
    async def scenario() -> bool:
        store = FrozenStore()
        elector = LeaderElector(store, "me", LeaseTimings(2, 1.5, 0.01))
        task = asyncio.create_task(elector.run())

        async def tried_five_times() -> None:
            while store.reads < 5:
                await asyncio.sleep(0.005)

        await asyncio.wait_for(tried_five_times(), 30)  # five attempts, each failed: still no leader
        leading = elector.may_write()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return leading

    assert asyncio.run(scenario()) is False


class CancellingStore:
    """Leads once; the first renewal cancels the elector's task and fails in the same step (the cancellation
    arrives just as the renewal completes: a SIGTERM on a busy loop); after that the API is unreachable."""

    def __init__(self) -> None:
        self.task: asyncio.Task[None] | None = None
        self.renewals = 0

    async def get(self) -> LeaseRecord | None:
        if not self.renewals:
            return None
        if self.renewals == 1:
            self.renewals += 1
            assert self.task is not None
            self.task.cancel()
        raise ConnectionError("cut off")

    async def create(self, record: LeaseRecord) -> LeaseRecord | None:
        self.renewals += 1
        return record

    async def update(self, record: LeaseRecord) -> LeaseRecord | None:
        return None


def test_a_cancellation_arriving_as_a_renewal_completes_stops_the_elector() -> None:
    """The elector's task ends when cancelled, whatever it was awaiting (Python 3.11's asyncio.wait_for
    swallowed a cancellation that arrived as its inner call completed: the task ran on, never releasing)."""

    async def scenario() -> bool:
        store = CancellingStore()
        elector = LeaderElector(store, "me", LeaseTimings(2, 1.5, 0.01))
        task = store.task = asyncio.create_task(elector.run())
        done, _ = await asyncio.wait([task], timeout=5)
        if not done:
            task.cancel()
        return task in done and task.cancelled()

    assert asyncio.run(scenario()) is True


class LateRenewalStore:
    """Acquires at t=0; the first renewal starts at t=1.4 and lands at t=1.6, past the 1.5 s renew deadline,
    before the loop's timeout gets to run (a starved or paused process). Later renewals land at once."""

    def __init__(self, now: list[float]) -> None:
        self.now = now
        self.record: LeaseRecord | None = None
        self.fenced_at_landing: bool | None = None

    async def get(self) -> LeaseRecord | None:
        if self.record is not None and self.now[0] == 1.4:
            self.now[0] = 1.6
        return self.record

    async def create(self, record: LeaseRecord) -> LeaseRecord | None:
        self.record = record
        self.now[0] = 1.4  # the next renewal starts just before the deadline
        return record

    async def update(self, record: LeaseRecord) -> LeaseRecord | None:
        self.record = record
        return record


def test_a_renewal_landing_after_the_deadline_counts_as_a_new_start() -> None:
    """Between the renew deadline and a late renewal the fence refused every write while this replica still
    led; on_started_leading runs again once writes are allowed again, so those verdicts are not lost."""
    now = [0.0]
    store = LateRenewalStore(now)
    starts: list[bool] = []

    async def scenario() -> None:
        elector: LeaderElector

        def started() -> None:
            starts.append(elector.may_write())

        elector = LeaderElector(
            store, "me", LeaseTimings(2, 1.5, 0.01), clock=lambda: now[0], on_started_leading=started
        )
        task = asyncio.create_task(elector.run())
        for _ in range(500):
            await asyncio.sleep(0.01)
            if len(starts) >= 2:
                break
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert starts == [True, True]  # the acquisition, then the late renewal: both with writes allowed
