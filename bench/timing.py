"""Timing for the benchmarks: the median time per call, and how to write it.

A call of a few microseconds cannot be timed alone with any precision, so calls are timed in batches long
enough for the clock (at least :data:`BATCH_SECONDS`), and the figure is the median over several batches of
the time per call. The median resists the bursts of a machine shared with other work; the best batch is kept
too, as the floor the code reaches when nothing interferes.
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
    """Seconds per call: the median over the batches, and the best batch."""

    median: float
    best: float
    calls: int

    def as_json(self) -> dict[str, float | int]:
        return {"median_seconds": self.median, "best_seconds": self.best, "calls": self.calls}


def _batch(call: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        call()
    return time.perf_counter() - start


def time_per_call(call: Callable[[], object]) -> Timing:
    """Time ``call``: batches of as many calls as last :data:`BATCH_SECONDS`, the median over the batches."""
    number = 1
    elapsed = _batch(call, number)  # also warms up whatever the call fills on first use
    while elapsed < BATCH_SECONDS:
        number *= 2 if elapsed < BATCH_SECONDS / 10 else 1 + int(BATCH_SECONDS / max(elapsed, 1e-9))
        elapsed = _batch(call, number)
    samples = max(FEWEST_SAMPLES, min(SAMPLES, int(BUDGET_SECONDS / elapsed)))
    per_call = [_batch(call, number) / number for _ in range(samples)]
    return Timing(median=statistics.median(per_call), best=min(per_call), calls=number * samples)


def human(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"
