"""How late the event loop runs what is due: the measure behind SPEC §7's "no request holds the event loop
for more than 50 ms".

A task asks to wake every :data:`PERIOD` and records how late it woke in
``ome_selector_event_loop_lag_seconds``. A late wake-up means that something held the loop (a long callback, a
blocking call) or that the process was not scheduled at all; the loop thread's CPU time over the same span
tells the two apart in the log line written for a wake-up later than :data:`BUDGET` (at most one a minute),
and in ``ome_selector_event_loop_lag_cpu_seconds``: of each wake-up's lateness, the part the loop's thread
computed (on a busy machine the lag alone says little about what the operator holds).
Under asyncio's debug mode (``PYTHONASYNCIODEBUG=1``) asyncio itself also names every callback that ran longer
than the budget.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from prometheus_client import Histogram

__all__ = ["BUDGET", "PERIOD", "watch_loop_lag"]

logger = logging.getLogger(__name__)

#: The longest any one callback may hold the loop.
BUDGET = 0.05
#: How often the watcher asks to wake: a hold of at least this long is always seen, a shorter one sometimes.
PERIOD = 0.1
#: At most one log line per this many seconds (the histogram counts every late wake-up).
LOG_INTERVAL = 60.0


async def watch_loop_lag(
    histogram: Histogram,
    *,
    period: float = PERIOD,
    budget: float = BUDGET,
    cpu_clock: Callable[[], float] = time.thread_time,
    computed: Histogram | None = None,
) -> None:
    """Run until cancelled, observing each wake-up's lateness (seconds) in ``histogram`` and, in
    ``computed``, how much of it the loop's thread spent on the CPU."""
    loop = asyncio.get_running_loop()
    if loop.get_debug():
        _name_slow_callbacks(loop, budget)
    logged_at: float | None = None
    late_since_log = 0
    while True:
        due = loop.time() + period
        cpu_before = cpu_clock()
        await asyncio.sleep(period)
        woke = loop.time()
        lag = max(0.0, woke - due)
        histogram.observe(lag)
        if computed is not None:
            computed.observe(min(lag, max(0.0, cpu_clock() - cpu_before - period)) if lag else 0.0)
        if lag <= budget:
            continue
        late_since_log += 1
        if logged_at is not None and woke - logged_at < LOG_INTERVAL:
            continue
        cpu = cpu_clock() - cpu_before
        logger.warning(
            "the event loop ran %.0f ms late (%d time(s) over %.0f ms since the last line); its thread "
            "was on the CPU for %.0f of the last %.0f ms (less: the process waited, it did not compute)",
            lag * 1000,
            late_since_log,
            budget * 1000,
            cpu * 1000,
            (period + lag) * 1000,
        )
        logged_at, late_since_log = woke, 0


def _name_slow_callbacks(loop: asyncio.AbstractEventLoop, budget: float) -> None:
    """Under asyncio's debug mode: have asyncio log each callback over ``budget`` (its own default is 100 ms),
    through the operator's log (Kopf silences the ``asyncio`` logger unless run with ``--debug``)."""
    loop.slow_callback_duration = budget
    asyncio_logger = logging.getLogger("asyncio")
    asyncio_logger.handlers[:] = []
    asyncio_logger.propagate = True
