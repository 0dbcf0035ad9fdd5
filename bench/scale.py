"""Scale benchmark on the local control plane: the operator at 10,000 / 30,000 / 100,000 InferenceServices.

One control plane holds 1,000 ClusterServingRuntimes and 1,000 ClusterBaseModels; InferenceServices are added
size by size (10 namespaces, each model referenced by every 1,000th of them) and kept for every row. At each
size, with the operator (`ome-selector run`, a separate process, 4 workers):

- cold start: the new InferenceServices have no condition yet → all evaluated and written;
- start → ready (/healthz: the first listing indexed) and start → idle (the process's CPU quiet for 2 s,
  Kopf's initial listing processed) when every condition is already right, with the writes of that restart;
- a periodic resync with nothing changed (``--resync-seconds``): its wall time until every InferenceService
  was evaluated again, its CPU, and the loop's lateness meanwhile;
- RSS once idle;
- one ClusterServingRuntime's priority changed → the re-evaluation: evaluations, CPU, condition writes;
- a burst of 20 ClusterServingRuntime creates (one `kubectl apply`): evaluations, CPU, condition writes;
- during each of those: the event loop's lateness above 100 ms and above 250 ms
  (``ome_selector_event_loop_lag_seconds``), and the part of it the loop's thread computed
  (``ome_selector_event_loop_lag_cpu_seconds``: on a shared machine lateness alone also counts the time the
  process waited for a CPU);
- the control plane's own CPU and RSS (kube-apiserver, etcd) over each phase: which side is the bottleneck.

Nothing asserts a time. It takes about 12 minutes for 10k and 30k on an idle 2-core machine, and 40 more for
100k (creating 70,000 objects and writing their conditions dominate).

    python -m bench.scale [--sizes 10000 30000 100000] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from bench.fanout import WORKERS, cpu_seconds, create_all, rss_kib, write_figures
from harness import objects
from harness.controlplane import ControlPlane, running_control_plane
from harness.operator_process import RunningOperator, metric_in, operator_process

RUNTIMES = 1_000
MODELS = 1_000
NAMESPACES = [f"scale-{i}" for i in range(10)]
BURST = 20
POLL_SECONDS = 0.25
#: The process counts as idle once its CPU grew by less than this over QUIET_SECONDS.
QUIET_CPU = 0.05
QUIET_SECONDS = 2.0
LAG = "ome_selector_event_loop_lag_seconds"
LAG_CPU = "ome_selector_event_loop_lag_cpu_seconds"
#: Issue goals at 100k (start → ready, start → idle, resync wall and CPU, RSS).
GOALS = {"ready_s": 30.0, "idle_s": 90.0, "resync_s": 30.0, "resync_cpu_s": 15.0, "rss_mib": 300.0}


def _catalog() -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    for i in range(MODELS):
        bodies.append(objects.model(f"scale-model-{i}", size=f"{1 + i % 70}B"))
    for i in range(RUNTIMES):
        low = 1 + i % 60
        bodies.append(
            objects.runtime(f"scale-rt-{i}", size_range=(f"{low}B", f"{low + 10}B"), priority=1 + i % 5)
        )
    return bodies


def _inference_services(start: int, stop: int) -> list[dict[str, Any]]:
    return [
        objects.inference_service(
            f"svc-{i}", namespace=NAMESPACES[i % len(NAMESPACES)], model_name=f"scale-model-{i % MODELS}"
        )
        for i in range(start, stop)
    ]


def _plane_processes(plane: ControlPlane) -> dict[str, int]:
    return {name: process.pid for name, process in plane._processes}


class Meter:
    """CPU (operator and control plane) and the loop's lateness over one phase."""

    def __init__(self, plane: ControlPlane, operator: RunningOperator) -> None:
        self.plane, self.operator = plane, operator
        self.pids = _plane_processes(plane)
        self.started = time.perf_counter()
        self.cpu = cpu_seconds(operator.process.pid)
        self.plane_cpu = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self.lags = _lags(operator.scrape())

    def figures(self) -> dict[str, float]:
        text = self.operator.scrape()
        lags = _lags(text)
        figures = {
            "seconds": time.perf_counter() - self.started,
            "cpu_s": cpu_seconds(self.operator.process.pid) - self.cpu,
        }
        for name, pid in self.pids.items():
            figures[f"{name}_cpu_s"] = cpu_seconds(pid) - self.plane_cpu[name]
            figures[f"{name}_rss_mib"] = rss_kib(pid) / 1024
        for key, value in lags.items():
            figures[key] = value - self.lags[key]
        return figures


def _lags(text: str) -> dict[str, float]:
    def over(name: str, bound: str) -> float:
        return metric_in(text, f"{name}_count") - metric_in(text, f"{name}_bucket", le=bound)

    return {
        "late_100ms": over(LAG, "0.1"),
        "late_250ms": over(LAG, "0.25"),
        "late_1s": over(LAG, "1.0"),
        "computed_100ms": over(LAG_CPU, "0.1"),
        "computed_250ms": over(LAG_CPU, "0.25"),
    }


def _wait(operator: RunningOperator, done: Any, timeout: float = 3600.0) -> None:
    started = time.perf_counter()
    while not done(operator.scrape()):
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"not done after {timeout}s")
        time.sleep(POLL_SECONDS)


def _wait_quiet(operator: RunningOperator) -> float:
    """Until the operator's CPU stays quiet; returns when the quiet period began (perf_counter)."""
    pid = operator.process.pid
    last, since = cpu_seconds(pid), time.perf_counter()
    while True:
        time.sleep(0.5)
        now = cpu_seconds(pid)
        if now - last >= QUIET_CPU:
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= QUIET_SECONDS:
            return since


def _wait_settled(operator: RunningOperator, quiet: float = 3.0) -> None:
    """Until no evaluation has been counted for ``quiet`` seconds (longer than a burst's wait) and nothing
    waits in the work queue."""
    last, since = -1.0, time.perf_counter()
    while True:
        text = operator.scrape()
        now = metric_in(text, "ome_selector_evaluations_total")
        if now != last or metric_in(text, "ome_selector_workqueue_depth"):
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= quiet:
            return
        time.sleep(POLL_SECONDS)


def _evaluated_at_least(count: float) -> Any:
    return lambda text: (
        metric_in(text, "ome_selector_evaluations_total") >= count
        and metric_in(text, "ome_selector_workqueue_depth") == 0
    )


@contextmanager
def _operator(plane: ControlPlane, *arguments: str) -> Iterator[tuple[RunningOperator, float]]:
    """The operator, and how long from its start until /healthz answered (ready); its log's end is printed
    when a phase fails (the control plane's directory goes with it)."""
    started = time.perf_counter()
    with operator_process(plane, "--workers", str(WORKERS), *arguments) as operator:
        try:
            yield operator, time.perf_counter() - started
        except BaseException:
            print(f"operator exit status {operator.process.poll()}; its log ends:", file=sys.stderr)
            print(operator.log.read_text(errors="replace")[-4000:], file=sys.stderr)
            raise


def _writes(text: str) -> float:
    return metric_in(text, "ome_selector_api_writes_total", operation="patch_status")


def _kubectl_apply(plane: ControlPlane, bodies: list[dict[str, Any]]) -> None:
    document = yaml.safe_dump_all(bodies)
    plane.kubectl("apply", "-f", "-", input=document)


def size_rows(plane: ControlPlane, size: int, resync_seconds: float) -> dict[str, Any]:
    rows: dict[str, Any] = {"n": size}
    # Cold start: the InferenceServices created since the last size have no condition.
    with _operator(plane) as (operator, _):
        meter = Meter(plane, operator)
        _wait(operator, lambda text: metric_in(text, "ome_selector_inferenceservices") >= size)
        _wait(operator, _evaluated_at_least(size))
        rows["cold"] = meter.figures() | {"writes": _writes(operator.scrape())}
    # Restart with every condition right: ready, idle, no write; then a resync, a change and a burst.
    started = time.perf_counter()
    with _operator(plane, "--resync-seconds", str(resync_seconds)) as (operator, ready):
        meter = Meter(plane, operator)
        idle = _wait_quiet(operator) - started
        text = operator.scrape()
        rows["restart"] = meter.figures() | {
            "ready_s": ready,
            "idle_s": idle,
            "writes": _writes(text),
            "rss_mib": rss_kib(operator.process.pid) / 1024,
        }
        # The periodic resync (first due resync_seconds after start): its listing, then every evaluation.
        resyncs = metric_in(text, "ome_selector_resync_duration_seconds_count")
        listed_before = metric_in(text, "ome_selector_resync_duration_seconds_sum")
        evaluated_before = metric_in(text, "ome_selector_evaluations_total")
        meter = Meter(plane, operator)
        _wait(operator, lambda t: metric_in(t, "ome_selector_resync_duration_seconds_count") > resyncs)
        listed = time.perf_counter()
        _wait(operator, _evaluated_at_least(evaluated_before + size))
        text = operator.scrape()
        listing = metric_in(text, "ome_selector_resync_duration_seconds_sum") - listed_before
        rows["resync"] = meter.figures() | {
            "listing_s": listing,
            "seconds": listing + time.perf_counter() - listed,
            "writes": _writes(text) - rows["restart"]["writes"],
        }
        rows["change"] = _catalog_change(plane, operator, size, [_runtime_change()])
        rows["burst"] = _catalog_change(plane, operator, size * BURST, _burst())
        rows["rss_mib"] = rss_kib(operator.process.pid) / 1024
    return rows


def _runtime_change() -> dict[str, Any]:
    return objects.runtime("scale-rt-0", size_range=("1B", "11B"), priority=5)


def _burst() -> list[dict[str, Any]]:
    return [
        objects.runtime(f"scale-burst-{i}", size_range=(f"{1 + i}B", f"{11 + i}B"), priority=1)
        for i in range(BURST)
    ]


def _catalog_change(
    plane: ControlPlane, operator: RunningOperator, unbatched: int, bodies: list[dict[str, Any]]
) -> dict[str, float]:
    """Apply ``bodies`` and wait until the operator is idle again. ``unbatched``: the evaluations one pass
    per runtime event would make."""
    text = operator.scrape()
    evaluations, writes = metric_in(text, "ome_selector_evaluations_total"), _writes(text)
    meter = Meter(plane, operator)
    _kubectl_apply(plane, bodies)
    time.sleep(0.5)  # the events arrive; the burst's wait (1 s of quiet) starts
    _wait(operator, lambda t: metric_in(t, "ome_selector_evaluations_total") > evaluations)
    _wait_settled(operator)
    text = operator.scrape()
    return meter.figures() | {
        "evaluations": metric_in(text, "ome_selector_evaluations_total") - evaluations,
        "unbatched_evaluations": unbatched,
        "writes": _writes(text) - writes,
    }


def _print(rows: dict[str, Any]) -> None:
    n = rows["n"]
    cold, restart, resync = rows["cold"], rows["restart"], rows["resync"]
    change, burst = rows["change"], rows["burst"]

    def lag(r: dict[str, float]) -> str:
        return (
            f"loop late >100 ms {r['late_100ms']:.0f}x (>250 ms {r['late_250ms']:.0f}x, "
            f">1 s {r['late_1s']:.0f}x), "
            f"of it computed >100 ms {r['computed_100ms']:.0f}x (>250 ms {r['computed_250ms']:.0f}x)"
        )

    def plane(r: dict[str, float]) -> str:
        return (
            f"apiserver CPU {r.get('kube-apiserver_cpu_s', 0):.1f}s "
            f"RSS {r.get('kube-apiserver_rss_mib', 0):.0f} MiB, "
            f"etcd CPU {r.get('etcd_cpu_s', 0):.1f}s RSS {r.get('etcd_rss_mib', 0):.0f} MiB"
        )

    print(f"N={n}:")
    print(
        f"  cold start → all evaluated {cold['seconds']:.1f}s ({cold['writes']:.0f} writes, operator CPU "
        f"{cold['cpu_s']:.1f}s); {lag(cold)}; {plane(cold)}"
    )
    print(
        f"  start → ready {restart['ready_s']:.1f}s, → idle {restart['idle_s']:.1f}s (operator CPU "
        f"{restart['cpu_s']:.1f}s after ready), {restart['writes']:.0f} writes; "
        f"RSS {restart['rss_mib']:.0f} MiB; "
        f"{lag(restart)}; {plane(restart)}"
    )
    print(
        f"  resync, nothing changed: {resync['seconds']:.1f}s (listing {resync['listing_s']:.1f}s), "
        f"operator CPU "
        f"{resync['cpu_s']:.1f}s (evaluations), {resync['writes']:.0f} writes; {lag(resync)}; {plane(resync)}"
    )
    for label, r in (("one runtime change", change), (f"burst of {BURST} runtime creates", burst)):
        print(
            f"  {label}: {r['evaluations']:.0f} evaluations (one pass per event: "
            f"{r['unbatched_evaluations']:.0f}), {r['writes']:.0f} condition writes, operator CPU "
            f"{r['cpu_s']:.1f}s, {r['seconds']:.1f}s until idle; {lag(r)}; {plane(r)}"
        )
    print(f"  RSS at the end {rows['rss_mib']:.0f} MiB")
    if n >= 100_000:
        checks = {
            "ready_s": restart["ready_s"],
            "idle_s": restart["idle_s"],
            "resync_s": resync["seconds"],
            "resync_cpu_s": resync["cpu_s"],
            "rss_mib": max(restart["rss_mib"], rows["rss_mib"]),
        }
        print(
            "  goals: "
            + ", ".join(
                f"{k} {v:.1f} (≤ {GOALS[k]:.0f}: {'met' if v <= GOALS[k] else 'NOT met'})"
                for k, v in checks.items()
            )
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 30_000])
    parser.add_argument(
        "--resync-seconds", type=float, default=60.0, help="the resync measured comes this late"
    )
    parser.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # each row as it comes
    os.environ.setdefault("OME_SELECTOR_CONTROLPLANE_START_TIMEOUT", "120")
    load = os.getloadavg()
    document: dict[str, Any] = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_at_start": load,
        "sizes": [],
    }
    print(f"scale bench: load average {load[0]:.1f} on {os.cpu_count()} CPUs at start")
    with running_control_plane() as plane:
        started = time.perf_counter()
        asyncio.run(create_all(plane, _catalog()))
        print(f"  {RUNTIMES} runtimes and {MODELS} models created in {time.perf_counter() - started:.0f}s")
        created = 0
        for size in sorted(args.sizes):
            started = time.perf_counter()
            asyncio.run(create_all(plane, _inference_services(created, size), namespaces=created == 0))
            print(f"  {size - created} InferenceServices created in {time.perf_counter() - started:.0f}s")
            created = size
            rows = size_rows(plane, size, args.resync_seconds)
            document["sizes"].append(rows)
            _print(rows)
            # The burst's runtimes go again: the next size starts from the same catalog.
            plane.kubectl("delete", "clusterservingruntime", *(b["metadata"]["name"] for b in _burst()))
    document["load_average_at_end"] = os.getloadavg()
    write_figures(args.out, document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
