"""The event-loop lag watcher: a callback that holds the loop is seen, counted and logged once."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time

import pytest
from prometheus_client import CollectorRegistry, Histogram

from ome_selector.operator import looplag
from ome_selector.operator.looplag import BUDGET, watch_loop_lag


def _histogram() -> tuple[CollectorRegistry, Histogram]:
    registry = CollectorRegistry()
    return registry, Histogram("lag", "test", buckets=(BUDGET,), registry=registry)


def _over_budget(registry: CollectorRegistry) -> float:
    count = registry.get_sample_value("lag_count") or 0.0
    return count - (registry.get_sample_value("lag_bucket", {"le": str(BUDGET)}) or 0.0)


async def _watch_while(hold: float, holds: int, *, debug: bool = False) -> float | None:
    """Watch while the loop is held ``holds`` times for ``hold`` seconds by a blocking callback."""
    loop = asyncio.get_running_loop()
    loop.set_debug(debug)
    registry, histogram = _histogram()
    ticks = itertools.count(step=0.001)  # a CPU clock that barely moves: the log line says "waited"
    watcher = asyncio.create_task(watch_loop_lag(histogram, period=0.01, cpu_clock=lambda: next(ticks)))
    for _ in range(holds):
        await asyncio.sleep(0.03)  # the watcher is asleep and due within its period
        time.sleep(hold)  # a callback that does not give the loop back
    await asyncio.sleep(0.03)
    watcher.cancel()
    with pytest.raises(asyncio.CancelledError):
        await watcher
    observed = registry.get_sample_value("lag_count")
    assert observed is not None
    assert observed >= holds  # at least one wake-up per hold, late or not
    slow = loop.slow_callback_duration
    return _over_budget(registry) if not debug else slow


def test_a_callback_holding_the_loop_is_seen_and_logged_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=looplag.__name__)
    over = asyncio.run(_watch_while(hold=0.2, holds=3))
    assert over is not None
    assert over >= 3  # each hold made a wake-up late by more than the budget (a loaded machine: more)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1  # the second and third within the minute are counted, not logged
    assert lines[0].startswith("the event loop ran ")
    assert "(1 time(s) over 50 ms since the last line)" in lines[0]
    assert "its thread was on the CPU for 1 of the last" in lines[0]


def test_under_asyncio_debug_mode_slow_callbacks_are_named_at_the_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    silenced = logging.getLogger("asyncio")
    silenced.propagate = False  # as Kopf leaves it outside its own debug mode
    silenced.handlers[:] = [logging.NullHandler()]
    caplog.set_level(logging.WARNING, logger="asyncio")
    assert asyncio.run(_watch_while(hold=0.08, holds=1, debug=True)) == BUDGET
    named = [
        r.getMessage()
        for r in caplog.records
        if r.name == "asyncio" and r.getMessage().startswith("Executing")
    ]
    # The 80 ms hold, named by the task that held the loop (on a loaded machine, maybe others too).
    assert any("_watch_while" in line for line in named)
