"""Timing for the benchmarks: the median time per call, and how to write it.

A call of a few microseconds cannot be timed alone with any precision, so calls are timed in batches long
enough for the clock (at least :data:`BATCH_SECONDS`), and the figure is the median over several batches of
the time per call. The median resists the bursts of a machine shared with other work; the best batch is kept
too, as the floor the code reaches when nothing interferes.

Each batch is timed twice: by the wall clock, and by the CPU time of this process. The code measured is pure
computation on one thread, so on an idle machine both agree; on a machine whose cores are oversubscribed the
wall clock also counts the time spent waiting for a core, and the CPU time is the cost of the code itself.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Timing", "human", "time_per_call"]

#: A batch runs at least this long.
BATCH_SECONDS = 0.005
#: Batches per figure, and the fewest when single calls are slow.
SAMPLES = 21
FEWEST_SAMPLES = 5
#: Time spent on one figure beyond which fewer batches are taken.
BUDGET_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Timing:
    """Seconds per call: the median over the batches and the best batch by the wall clock, and the median by
    CPU time."""

    median: float
    best: float
    cpu_median: float
    calls: int

    def as_json(self) -> dict[str, float | int]:
        return {
            "median_seconds": self.median,
            "best_seconds": self.best,
            "cpu_median_seconds": self.cpu_median,
            "calls": self.calls,
        }


def _batch(call: Callable[[], object], number: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``number`` calls."""
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(number):
        call()
    return time.perf_counter() - start, time.process_time() - start_cpu


def time_per_call(call: Callable[[], object]) -> Timing:
    """Time ``call``: batches of as many calls as last :data:`BATCH_SECONDS`, the median over the batches."""
    number = 1
    elapsed, _ = _batch(call, number)  # also warms up whatever the call fills on first use
    while elapsed < BATCH_SECONDS:
        number *= 2 if elapsed < BATCH_SECONDS / 10 else 1 + int(BATCH_SECONDS / max(elapsed, 1e-9))
        elapsed, _ = _batch(call, number)
    samples = max(FEWEST_SAMPLES, min(SAMPLES, int(BUDGET_SECONDS / elapsed)))
    batches = [_batch(call, number) for _ in range(samples)]
    wall = [seconds / number for seconds, _ in batches]
    cpu = [seconds / number for _, seconds in batches]
    return Timing(
        median=statistics.median(wall),
        best=min(wall),
        cpu_median=statistics.median(cpu),
        calls=number * samples,
    )


def human(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"
