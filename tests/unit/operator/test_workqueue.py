"""The coalescing work queue: one evaluation per burst, never concurrent per key, retries with backoff."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from ome_selector.operator.workqueue import Backoff, WorkQueue


def run(coroutine: object) -> None:
    asyncio.run(coroutine)  # type: ignore[arg-type]


def test_a_burst_of_adds_is_processed_once_per_key() -> None:
    async def scenario() -> None:
        seen: Counter[str] = Counter()

        async def process(key: str) -> None:
            seen[key] += 1

        queue: WorkQueue[str] = WorkQueue(process, workers=2)
        for _ in range(100):
            for key in ("a", "b", "c"):
                queue.add(key)
        queue.start()
        await queue.wait_idle()
        await queue.stop()
        assert seen == Counter({"a": 1, "b": 1, "c": 1})

    run(scenario())


def test_an_add_while_processing_runs_once_more_afterwards_never_concurrently() -> None:
    async def scenario() -> None:
        running: set[str] = set()
        overlaps = 0
        calls = 0
        release, first = asyncio.Event(), asyncio.Event()

        async def process(key: str) -> None:
            nonlocal overlaps, calls
            overlaps += key in running
            running.add(key)
            calls += 1
            if calls == 1:
                first.set()
                await release.wait()
            running.discard(key)

        queue: WorkQueue[str] = WorkQueue(process, workers=4)
        queue.start()
        queue.add("k")
        await asyncio.wait_for(first.wait(), 30)  # the first run is going
        for _ in range(10):
            queue.add("k")  # all arrive while the first run is still going
        release.set()
        await queue.wait_idle()
        await queue.stop()
        assert (calls, overlaps) == (2, 0)

    run(scenario())


def test_failures_are_retried_with_backoff_until_they_succeed() -> None:
    async def scenario() -> None:
        attempts = 0
        retries: list[str] = []

        async def process(key: str) -> None:
            nonlocal attempts
            attempts += 1
            if attempts < 3:
                raise ConnectionError("apiserver unavailable")

        queue: WorkQueue[str] = WorkQueue(
            process, backoff=Backoff(base_s=0.01, cap_s=0.02), on_retry=lambda key, _: retries.append(key)
        )
        queue.start()
        queue.add("k")
        assert queue.busy
        await asyncio.wait_for(queue.wait_idle(), 5)
        await queue.stop()
        assert attempts == 3
        assert retries == ["k", "k"]
        assert queue.depth == 0

    run(scenario())


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(1, 0.2), (2, 0.4), (3, 0.8), (10, 30.0), (100, 30.0)],
    ids=["first", "second", "third", "capped", "far-capped"],
)
def test_backoff_doubles_up_to_the_cap(failures: int, delay: float) -> None:
    assert Backoff().delay(failures) == pytest.approx(delay)


def test_depth_is_reported() -> None:
    async def scenario() -> None:
        depths: list[int] = []

        async def process(key: str) -> None:
            return None

        queue: WorkQueue[str] = WorkQueue(process, on_depth=depths.append)
        queue.add("a")
        queue.add("b")
        assert queue.depth == 2
        queue.start()
        await queue.wait_idle()
        await queue.stop()
        assert depths[:2] == [1, 2]
        assert depths[-1] == 0

    run(scenario())


def test_each_key_taken_reports_how_long_it_waited_and_each_failure_a_retry() -> None:
    async def scenario() -> None:
        waits: list[float] = []
        retries: list[str] = []
        failed: set[str] = set()

        async def process(key: str) -> None:
            if key == "b" and key not in failed:
                failed.add(key)
                raise RuntimeError("once")

        queue: WorkQueue[str] = WorkQueue(
            process,
            workers=1,
            backoff=Backoff(base_s=0.01),
            on_wait=waits.append,
            on_retry=lambda key, _error: retries.append(key),
        )
        for key in ("a", "b", "a"):
            queue.add(key)
        queue.start()
        await queue.wait_idle()
        await queue.stop()
        assert len(waits) == 3  # a, b, and b once more after its failure
        assert all(wait >= 0 for wait in waits)
        assert retries == ["b"]

    run(scenario())


@pytest.mark.parametrize("workers", [1, 4])
def test_workers_whose_keys_never_wait_still_let_the_event_loop_run(workers: int) -> None:
    # Each key takes 4 ms of a clock of the test's own and never awaits: the workers share 10 ms turns.
    now = 0.0
    log: list[str] = []

    async def scenario() -> None:
        async def process(key: int) -> None:
            nonlocal now
            now += 0.004
            log.append("key")

        async def other_task() -> None:
            while True:
                log.append("loop")
                await asyncio.sleep(0)

        queue: WorkQueue[int] = WorkQueue(process, workers=workers, turn_s=0.01, clock=lambda: now)
        for key in range(200):
            queue.add(key)
        ticker = asyncio.create_task(other_task())
        queue.start()
        await queue.wait_idle()
        await queue.stop()
        ticker.cancel()

    run(scenario())
    runs = [len(run) for run in "".join("k" if e == "key" else " " for e in log).split()]
    assert sum(runs) == 200
    # One turn: three keys (0, 4, 8 ms; the third ends it), then one key more for each other worker.
    assert max(runs) <= 3 + (workers - 1)


def test_stopping_lets_the_keys_under_way_finish_and_starts_no_other() -> None:
    """A stopping leader's writes that have begun complete (and hand over their events, SPEC §5, §8); what
    is still waiting is not started, and a key that outlasts the time given is cancelled."""

    async def scenario() -> tuple[list[str], list[str]]:
        finished: list[str] = []
        cancelled: list[str] = []
        started = asyncio.Event()

        async def process(key: str) -> None:
            started.set()
            try:
                await asyncio.sleep(0.05 if key == "quick" else 10)
            except asyncio.CancelledError:
                cancelled.append(key)
                raise
            finished.append(key)

        queue: WorkQueue[str] = WorkQueue(process, workers=2)
        queue.add("quick")
        queue.add("slow")
        queue.start()
        await started.wait()
        await asyncio.sleep(0)
        queue.add("waiting")  # no worker is free: it waits
        await queue.stop(finish_s=0.3)
        return finished, cancelled

    finished, cancelled = asyncio.run(scenario())
    assert finished == ["quick"]
    assert cancelled == ["slow"]
