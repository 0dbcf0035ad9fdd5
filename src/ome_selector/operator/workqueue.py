"""A coalescing work queue of InferenceService keys, in the spirit of client-go's workqueue.

- A key added while it waits is not added twice; a key added while it is being processed is processed once
  more afterwards (never concurrently with itself). A burst of triggers therefore costs one evaluation each.
- A bounded number of workers drain it.
- A failed key is retried with exponential backoff (capped), so a briefly unavailable apiserver loses nothing.
- The workers share one turn of the event loop (``turn_s``): a worker whose keys need no I/O (an evaluation
  whose verdict is already written) would otherwise take key after key without ever letting the loop run, and
  30,000 of them hold the loop, the webhook and the Lease renewal included, for seconds (SPEC §8: no handler
  holds the loop). Once the turn is used up, each worker yields after its key; the first to run again starts
  the next turn. The turn is short (2 ms) because an admission review waits for about two turns of the loop
  before its handler runs: with 10 ms turns a burst of runtime changes, whose evaluations write nothing, added
  about 40 ms to the webhook's p99 (SPEC §8).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ome_selector.operator.tasks import cancel_and_wait

K = TypeVar("K", bound=Hashable)
#: How often a stopping queue looks whether the keys under way have finished.
FINISH_POLL_S = 0.01

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff per key: base * 2**(failures-1), capped."""

    base_s: float = 0.2
    cap_s: float = 30.0

    def delay(self, failures: int) -> float:
        return float(min(self.cap_s, self.base_s * 2 ** max(0, failures - 1)))


@dataclass
class WorkQueue(Generic[K]):
    process: Callable[[K], Awaitable[None]]
    workers: int = 4
    backoff: Backoff = field(default_factory=Backoff)
    on_depth: Callable[[int], None] | None = None
    on_retry: Callable[[K, BaseException], None] | None = None
    #: Called with the seconds a key waited, from being added until a worker took it.
    on_wait: Callable[[float], None] | None = None
    #: How long the workers may run before they let the event loop run (the time of one key more at most).
    turn_s: float = 0.002
    clock: Callable[[], float] = time.monotonic

    _queue: asyncio.Queue[K] = field(default_factory=asyncio.Queue, init=False)
    _waiting: dict[K, float] = field(default_factory=dict, init=False)  # key → when it was added
    _active: set[K] = field(default_factory=set, init=False)
    _dirty_while_active: set[K] = field(default_factory=set, init=False)
    _failures: dict[K, int] = field(default_factory=dict, init=False)
    _delayed: dict[K, asyncio.TimerHandle] = field(default_factory=dict, init=False)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list, init=False)
    _idle: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _turn: int = field(default=0, init=False)
    _turn_started: float = field(default=0.0, init=False)
    _closing: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self._idle.set()

    @property
    def depth(self) -> int:
        return len(self._waiting) + len(self._delayed)

    def add(self, key: K) -> None:
        """Schedule `key` now; a pending retry of it is superseded."""
        timer = self._delayed.pop(key, None)
        if timer is not None:
            timer.cancel()
        if key in self._active:
            self._dirty_while_active.add(key)
            return
        if key in self._waiting:
            return
        self._waiting[key] = time.monotonic()
        self._idle.clear()
        self._queue.put_nowait(key)
        self._report_depth()

    def start(self) -> None:
        for index in range(self.workers):
            self._tasks.append(asyncio.create_task(self._worker(), name=f"workqueue-worker-{index}"))

    async def stop(self, finish_s: float = 0.0) -> None:
        """Start no key from now on; give the keys under way up to ``finish_s`` seconds to finish (a write
        that has begun completes, and hands over its event), then cancel the workers."""
        self._closing = True
        for timer in self._delayed.values():
            timer.cancel()
        self._delayed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(finish_s):
                while self._active:
                    await asyncio.sleep(FINISH_POLL_S)
        await cancel_and_wait(self._tasks)
        self._tasks.clear()

    async def wait_idle(self) -> None:
        """Until nothing waits, runs or is scheduled for retry (used by tests and benchmarks)."""
        while True:
            await self._idle.wait()
            if not self.busy:
                return

    @property
    def busy(self) -> bool:
        """Whether anything waits, runs or is scheduled for retry."""
        return bool(self._waiting or self._active or self._delayed)

    def _report_depth(self) -> None:
        if self.on_depth is not None:
            self.on_depth(self.depth)

    async def _worker(self) -> None:
        while True:
            key = await self._queue.get()
            added = self._waiting.pop(key)
            if self._closing:  # stopping: nothing new is started
                self._queue.task_done()
                continue
            if self.on_wait is not None:
                self.on_wait(time.monotonic() - added)
            self._active.add(key)
            self._report_depth()
            try:
                await self.process(key)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                failures = self._failures.get(key, 0) + 1
                self._failures[key] = failures
                delay = self.backoff.delay(failures)
                logger.warning(
                    "evaluation of %s failed (attempt %d), retrying in %.1fs: %s", key, failures, delay, error
                )
                if self.on_retry is not None:
                    self.on_retry(key, error)
                self._active.discard(key)
                if key not in self._dirty_while_active:
                    self._schedule_retry(key, delay)
            else:
                self._failures.pop(key, None)
                self._active.discard(key)
            finally:
                self._queue.task_done()
            if key in self._dirty_while_active:
                self._dirty_while_active.discard(key)
                self.add(key)
            self._report_depth()
            if not self.busy:
                self._idle.set()
            await self._end_of_turn()

    async def _end_of_turn(self) -> None:
        """Yield to the event loop once the workers' turn is used up."""
        if self.clock() - self._turn_started < self.turn_s:
            return
        turn = self._turn
        await asyncio.sleep(0)
        if self._turn == turn:  # the first worker back starts the next turn for all of them
            self._turn += 1
            self._turn_started = self.clock()

    def _schedule_retry(self, key: K, delay: float) -> None:
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._delayed.pop(key, None)
            self.add(key)

        self._delayed[key] = loop.call_later(delay, fire)
        self._report_depth()
