"""Run an `Operator` in a background thread with its own event loop (tests, benchmarks, the demo).

Like `kopf.testing.KopfRunner`, but handing back the live operator so callers can wait for its queue to drain
and read its metrics.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from ome_selector.operator.app import Operator, OperatorConfig

T = TypeVar("T")

START_TIMEOUT_S = 60.0


class OperatorThread:
    def __init__(self, config: OperatorConfig) -> None:
        self.operator = Operator(config)
        self._loop = asyncio.new_event_loop()
        self._stop_flag: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="ome-selector-operator", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._stop_flag = asyncio.Event()
            self._loop.run_until_complete(self.operator.run(stop_flag=self._stop_flag))
        except BaseException as error:
            self._error = error
        finally:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    def start(self, timeout: float = START_TIMEOUT_S) -> OperatorThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.ready:
            if self._error is not None or not self._thread.is_alive():
                raise RuntimeError(f"operator stopped during start-up: {self._error!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"operator not ready after {timeout:.0f}s")
            time.sleep(0.05)
        return self

    @property
    def ready(self) -> bool:
        controller = self.operator.controller
        return controller is not None and controller.ready.is_set()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run a coroutine on the operator's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def wait_idle(self, timeout: float = 60.0, settle: float = 0.3) -> None:
        """Until the work queue stays empty for `settle` seconds (watch events may still be in flight)."""
        controller = self.operator.controller
        assert controller is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.call(controller.wait_idle(timeout=deadline - time.monotonic()), timeout=timeout)
            time.sleep(settle)
            if not controller.busy:
                return
        raise TimeoutError(f"operator queue not idle after {timeout:.0f}s")

    def evaluations(self) -> float:
        """How many InferenceService evaluations the operator has made (``ome_selector_evaluations``)."""
        registry = self.operator.metrics.registry
        return sum(
            sample.value
            for metric in registry.collect()
            if metric.name == "ome_selector_evaluations"
            for sample in metric.samples
            if sample.name == "ome_selector_evaluations_total"
        )

    def stop(self, timeout: float = 30.0) -> None:
        if self._thread.is_alive() and self._stop_flag is not None:
            self._loop.call_soon_threadsafe(self._stop_flag.set)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("operator did not stop")
