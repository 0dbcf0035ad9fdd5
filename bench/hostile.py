"""Hostile input at the webhook port (SPEC §7 robustness and §8 bounded resources).

On a local control plane, ``ome-selector run --webhook-bind-address 127.0.0.1:0`` (a separate process, as in a
cluster) gets 20,000 fuzzed admission requests posted straight to its webhook port, not through the apiserver
(anyone who reaches the port can do this): garbage, malformed AdmissionReviews, invalid UTF-8, deep nesting,
bodies over 1 MiB, fresh ``kind`` strings, and well-formed reviews whose objects carry hostile values
(:mod:`harness.hostile`). Reported: the answers by HTTP status (5xx are failures), the operator's RSS and the
size and scrape time of its ``/metrics`` before and after, the slowest ``/healthz`` answer while the
requests were sent, and the operator's own event-loop lag (``ome_selector_event_loop_lag_seconds``: how many
wake-ups came more than 50 ms late). Then a second operator, under asyncio's debug mode, gets the first
``--debug-requests`` of the same requests, and every callback that held its loop for more than 50 ms is listed
by what it was (asyncio names them). Nothing here asserts a figure.

    python -m bench.hostile [--requests 20000] [--debug-requests 5000] [--seed 12]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import threading
import time
import urllib.request
from typing import Any

from kubernetes import client, config

from harness.controlplane import ControlPlane, running_control_plane
from harness.hostile import HostileReviews, client_for, metrics_size, rss_bytes
from harness.operator_process import RunningOperator, operator_process

MIB = 1024 * 1024
LAG = "ome_selector_event_loop_lag_seconds"
#: asyncio's debug-mode line for a slow callback: "Executing <Handle ...> took 0.123 seconds".
SLOW_CALLBACK = re.compile(r"Executing (?P<what><.*>) took (?P<seconds>[0-9.]+) seconds")


class HealthProbe(threading.Thread):
    """Polls /healthz every 20 ms and keeps the slowest answer."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self._port = port
        self._done = threading.Event()
        self.slowest = 0.0
        self.failures = 0

    def run(self) -> None:
        while not self._done.is_set():
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self._port}/healthz", timeout=30) as answer:
                    answer.read()
            except OSError:
                self.failures += 1
            self.slowest = max(self.slowest, time.perf_counter() - started)
            self._done.wait(0.02)

    def stop(self) -> None:
        self._done.set()
        self.join()


def registration(plane: ControlPlane) -> Any:
    new_client: Any = config.new_client_from_config  # the official client is untyped
    api: Any = client.AdmissionregistrationV1Api(new_client(config_file=str(plane.kubeconfig)))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for item in api.list_validating_webhook_configuration().items:
            if item.metadata.name.startswith("ome-selector-"):
                return item
        time.sleep(0.2)
    raise TimeoutError("the operator registered no webhook configuration")


def _scrape(running: RunningOperator) -> tuple[int, float]:
    started = time.perf_counter()
    size = metrics_size(running.health_port)
    return size, time.perf_counter() - started


def _late_wakeups(running: RunningOperator) -> tuple[float, float]:
    """(wake-ups of the lag watcher, those more than 50 ms late) so far."""
    total = running.metric(f"{LAG}_count")
    return total, total - running.metric(f"{LAG}_bucket", le="0.05")


def _post_all(
    webhook: Any, requests: int, seed: int
) -> tuple[collections.Counter[int], collections.Counter[str]]:
    statuses: collections.Counter[int] = collections.Counter()
    server_errors: collections.Counter[str] = collections.Counter()
    for _, hostile in zip(range(requests), HostileReviews(seed), strict=False):
        status, _ = webhook.post(hostile.path, hostile.body)
        statuses[status] += 1
        if status >= 500:
            server_errors[hostile.category] += 1
    return statuses, server_errors


def slow_callbacks_under_debug(plane: ControlPlane, requests: int, seed: int) -> list[tuple[float, str]]:
    """The callbacks asyncio's debug mode saw holding the loop over 50 ms, slowest first, while an operator
    answered ``requests`` of the same hostile requests (after its start-up)."""
    os.environ["PYTHONASYNCIODEBUG"] = "1"  # inherited by the operator's process only for this run
    try:
        with operator_process(
            plane, "--webhook-bind-address", "127.0.0.1:0", name="operator-hostile-debug"
        ) as running:
            started_at = len(running.log.read_text().splitlines())
            webhook = client_for(registration(plane))
            _post_all(webhook, requests, seed)
            webhook.close()
            lines = running.log.read_text().splitlines()[started_at:]
    finally:
        del os.environ["PYTHONASYNCIODEBUG"]
    found = [(float(m["seconds"]), m["what"]) for line in lines if (m := SLOW_CALLBACK.search(line))]
    return sorted(found, reverse=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--debug-requests", type=int, default=5_000, help="0 skips the asyncio debug run")
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args(argv)
    with (
        running_control_plane() as plane,
        operator_process(plane, "--webhook-bind-address", "127.0.0.1:0", name="operator-hostile") as running,
    ):
        webhook = client_for(registration(plane))
        rss_before = rss_bytes(running.process.pid)
        metrics_before, scrape_before = _scrape(running)
        wakeups_before, late_before = _late_wakeups(running)
        probe = HealthProbe(running.health_port)
        probe.start()
        started = time.perf_counter()
        statuses, server_errors = _post_all(webhook, args.requests, args.seed)
        elapsed = time.perf_counter() - started
        probe.stop()
        webhook.close()
        rss_after = rss_bytes(running.process.pid)
        metrics_after, scrape_after = _scrape(running)
        wakeups_after, late_after = _late_wakeups(running)
        failed = [line for line in running.log.read_text().splitlines() if "failed" in line]
        slow = (
            slow_callbacks_under_debug(plane, args.debug_requests, args.seed) if args.debug_requests else None
        )
    print(f"hostile admissions: {args.requests} posted straight to the webhook port in {elapsed:.1f} s")
    print("  answers by HTTP status: " + ", ".join(f"{code}: {n}" for code, n in sorted(statuses.items())))
    if server_errors:
        print("  5xx by request category: " + ", ".join(f"{c}: {n}" for c, n in server_errors.most_common()))
        print("  the operator's first failure lines:", *failed[:5], sep="\n    ")
    print(f"  RSS: {rss_before / MIB:.0f} MiB before, {rss_after / MIB:.0f} MiB after")
    print(
        f"  /metrics: {metrics_before / 1024:.1f} kB ({scrape_before * 1000:.0f} ms) before, "
        f"{metrics_after / 1024:.1f} kB ({scrape_after * 1000:.0f} ms) after"
    )
    print(
        f"  slowest /healthz during the run: {probe.slowest * 1000:.0f} ms ({probe.failures} failed); "
        "includes the probe's own scheduling on a shared machine"
    )
    print(
        f"  event loop: {late_after - late_before:.0f} of {wakeups_after - wakeups_before:.0f} wake-ups "
        "(every 100 ms) more than 50 ms late during the run, load included"
    )
    if slow is not None:
        print(
            f"  asyncio debug mode, {args.debug_requests} of the same requests: {len(slow)} callback(s) "
            "held the loop over 50 ms" + (":" if slow else "")
        )
        for seconds, what in slow[:10]:
            print(f"    {seconds * 1000:.0f} ms  {what[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
