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
- during each of those: the event loop's lateness above 25, 100 and 250 ms
  (``ome_selector_event_loop_lag_seconds``), and the part of it the loop's thread computed
  (``ome_selector_event_loop_lag_cpu_seconds``: on a shared machine lateness alone also counts the time the
  process waited for a CPU);
- the control plane's own CPU and RSS (kube-apiserver, etcd) over each phase: which side is the bottleneck;
- the webhook's admission latency (p50, p99) while idle, during the change and during the burst: a process
  of its own posts an allowed InferenceService review straight to the operator's webhook port every 50 ms
  (the loop that re-evaluates also answers admission), and the same to a control server that answers at
  once (what the machine itself adds meanwhile);
- failover: a second replica (both with ``--leader-election``) takes over when the leader is stopped with
  SIGTERM (it releases the Lease); measured from the leader's exit to the new leader having evaluated every
  InferenceService, with the writes it made (0: every condition is right).

Nothing asserts a time. It takes about 10 minutes for 10k and 30k on an idle 2-core machine, and about 23
minutes with 100k (creating 70,000 objects and writing their first conditions take 7 of them).

    python -m bench.scale [--sizes 10000 30000 100000] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from bench.fanout import WORKERS, cpu_seconds, create_all, rss_kib, write_figures
from bench.hostile import registration
from harness import objects
from harness.controlplane import ControlPlane, free_port, running_control_plane
from harness.hostile import WebhookClient, path_of, review, webhook_address
from harness.operator_process import RunningOperator, metric_in, operator_process
from ome_selector.api.resources import Kind

RUNTIMES = 1_000
MODELS = 1_000
NAMESPACES = [f"scale-{i}" for i in range(10)]
BURST = 20
POLL_SECONDS = 0.25
PROBE_SECONDS = 0.05
#: How long admission is measured while nothing happens, before the change.
IDLE_ADMISSION_SECONDS = 15.0
#: Lease timings of the failover row (the chart's).
LEASE = ("--leader-election-lease-duration=15", "--leader-election-renew-deadline=10",
         "--leader-election-retry-period=2")  # fmt: skip
#: The process counts as idle once its CPU grew by less than this over QUIET_SECONDS.
QUIET_CPU = 0.05
QUIET_SECONDS = 2.0
LAG = "ome_selector_event_loop_lag_seconds"
LAG_CPU = "ome_selector_event_loop_lag_cpu_seconds"
#: Goals at 100k (start → ready, start → idle, resync wall and CPU, RSS).
GOALS = {"ready_s": 30.0, "idle_s": 90.0, "resync_s": 30.0, "resync_cpu_s": 15.0, "rss_mib": 300.0}
#: Goals at every size: admission p99 during a change within 2x idle, failover, no write on a restart.
GOALS |= {"admission_p99_ratio": 2.0, "failover_caught_up_s": 5.0, "restart_writes": 0.0}


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
        "late_25ms": over(LAG, "0.025"),
        "computed_25ms": over(LAG_CPU, "0.025"),
        "late_100ms": over(LAG, "0.1"),
        "late_250ms": over(LAG, "0.25"),
        "late_1s": over(LAG, "1.0"),
        "computed_100ms": over(LAG_CPU, "0.1"),
        "computed_250ms": over(LAG_CPU, "0.25"),
    }


def _control_server(port: int) -> None:
    """The control's process: answers every POST at once (what a request costs on this machine when no
    event loop of the operator's stands in its way)."""

    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"response": {"allowed": True}})

    app = web.Application()
    app.router.add_post("/{tail:.*}", answer)
    web.run_app(app, host="127.0.0.1", port=port, print=None, handle_signals=False)


def _probe(url: str, ca_pem: bytes, control: int, *, body: bytes, samples: str, stop: Any) -> None:
    """The probe's process: every PROBE_SECONDS one review to the webhook, then the same to the control; each
    answer's (start, seconds, allowed, target) a line of ``samples`` (time.monotonic: one clock for both
    processes)."""
    webhook = WebhookClient(url, ca_pem)
    path = path_of(Kind.INFERENCE_SERVICE)
    plain = http.client.HTTPConnection("127.0.0.1", control, timeout=30)
    with open(samples, "a", buffering=1) as sink:
        while not stop.is_set():
            for target in ("webhook", "control"):
                started = time.monotonic()
                try:
                    if target == "webhook":
                        status, answer = webhook.post(path, body)
                    else:
                        plain.request("POST", path, body, {"Content-Type": "application/json"})
                        response = plain.getresponse()
                        status, answer = response.status, response.read()
                    allowed = status == 200 and json.loads(answer)["response"]["allowed"] is True
                except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
                    allowed = False
                sink.write(f"{started} {time.monotonic() - started} {int(allowed)} {target}\n")
            stop.wait(PROBE_SECONDS)
    webhook.close()
    plain.close()


class AdmissionProbe:
    """Posts one allowed InferenceService review to the webhook every PROBE_SECONDS, and the same to a control
    server that answers at once, from processes of their own (in this one the probe would wait for the
    interpreter lock whenever the benchmark parses a scrape); a phase's percentiles come from the answers
    that started within it. The control shows what the machine itself adds meanwhile: on 2 cores shared with
    the apiserver, etcd and ``kubectl``, a request can wait for a CPU whatever the operator does."""

    def __init__(self, configuration: Any, directory: Path) -> None:
        body = review(Kind.INFERENCE_SERVICE, obj=_inference_services(0, 1)[0])
        body["request"]["namespace"] = NAMESPACES[0]
        self._samples = directory / "admission-probe.txt"
        self._samples.write_text("")
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        port = free_port()
        self._control = context.Process(target=_control_server, args=(port,), daemon=True)
        arguments = (*webhook_address(configuration), port)
        options = {"body": json.dumps(body).encode(), "samples": str(self._samples), "stop": self._stop}
        self._process = context.Process(target=_probe, args=arguments, kwargs=options, daemon=True)

    def start(self) -> None:
        self._control.start()
        time.sleep(2.0)  # the control listens
        self._process.start()

    def figures(self, since: float) -> dict[str, float]:
        """Percentiles of the answers that started after ``since`` (time.monotonic), and the failures: the
        webhook's as ``admission_*``, the control's as ``control_*``."""
        rows = [line.split() for line in self._samples.read_text().splitlines()]
        answers = [(float(r[0]), float(r[1]), r[2] == "1", r[3]) for r in rows if len(r) == 4]
        figures: dict[str, float] = {}
        for target, prefix in (("webhook", "admission"), ("control", "control")):
            mine = [(took, ok) for at, took, ok, where in answers if at >= since and where == target]
            seconds = sorted(took for took, ok in mine if ok)
            figures[f"{prefix}_requests"] = float(len(seconds))
            figures[f"{prefix}_failures"] = float(len(mine) - len(seconds))
            if seconds:
                figures[f"{prefix}_p50_ms"] = 1000 * seconds[len(seconds) // 2]
                figures[f"{prefix}_p99_ms"] = 1000 * seconds[min(len(seconds) - 1, int(len(seconds) * 0.99))]
                figures[f"{prefix}_max_ms"] = 1000 * seconds[-1]
        return figures

    def stop(self) -> None:
        self._stop.set()
        self._process.join(30)
        self._control.terminate()
        self._control.join(30)


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
def _operator(
    plane: ControlPlane, *arguments: str, name: str = "operator"
) -> Iterator[tuple[RunningOperator, float]]:
    """The operator, and how long from its start until /healthz answered (ready); its log's end is printed
    when a phase fails (the control plane's directory goes with it)."""
    started = time.perf_counter()
    with operator_process(plane, "--workers", str(WORKERS), *arguments, name=name) as operator:
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


def size_rows(plane: ControlPlane, size: int, resync_seconds: float, turn: int) -> dict[str, Any]:
    rows: dict[str, Any] = {"n": size}
    # Cold start: the InferenceServices created since the last size have no condition.
    with _operator(plane) as (operator, _):
        meter = Meter(plane, operator)
        _wait(operator, lambda text: metric_in(text, "ome_selector_inferenceservices") >= size)
        _wait(operator, _evaluated_at_least(size))
        rows["cold"] = meter.figures() | {"writes": _writes(operator.scrape())}
    # Restart with every condition right (a replica with leader election and the webhook): ready, idle, no
    # write; then a resync, a change and a burst with the webhook's latency; then a failover.
    replica = ("--leader-election", f"--leader-election-namespace={NAMESPACES[0]}", *LEASE)
    webhook = ("--webhook-bind-address", "127.0.0.1:0", "--instance", "scale")
    started = time.perf_counter()
    with _operator(plane, *replica, *webhook, "--resync-seconds", str(resync_seconds)) as (operator, ready):
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
        _wait_settled(operator)
        probe = AdmissionProbe(registration(plane), plane.workdir)
        probe.start()
        try:
            quiet = time.monotonic()
            time.sleep(IDLE_ADMISSION_SECONDS)
            rows["idle_admission"] = probe.figures(quiet)
            rows["change"] = _catalog_change(plane, operator, size, [_runtime_change(turn)], probe)
            rows["burst"] = _catalog_change(plane, operator, size * BURST, _burst(), probe)
        finally:
            probe.stop()
        rows["rss_mib"] = rss_kib(operator.process.pid) / 1024
        with _operator(plane, *replica, name="follower") as (follower, _):
            _wait_quiet(follower)
            rows["failover"] = _failover(operator, follower, size)
    return rows


def _failover(leader: RunningOperator, follower: RunningOperator, size: int) -> dict[str, float]:
    """SIGTERM the leader (it releases the Lease); the follower leads and evaluates every InferenceService."""
    text = follower.scrape()
    evaluations, writes = metric_in(text, "ome_selector_evaluations_total"), _writes(text)
    leader.process.send_signal(signal.SIGTERM)
    leader.process.wait(60)
    stopped = time.perf_counter()
    _wait(follower, lambda t: metric_in(t, "ome_selector_leader") == 1, timeout=120)
    leading = time.perf_counter()
    _wait(follower, _evaluated_at_least(evaluations + size))
    caught_up = time.perf_counter()
    _wait_settled(follower)
    text = follower.scrape()
    return {
        "lease_moved_s": leading - stopped,
        "caught_up_s": caught_up - leading,
        "evaluations": metric_in(text, "ome_selector_evaluations_total") - evaluations,
        "writes": _writes(text) - writes,
    }


def _runtime_change(turn: int) -> dict[str, Any]:
    """A real change of scale-rt-0 at every size (the same spec applied again would change nothing)."""
    low = 1 + turn % 2
    return objects.runtime("scale-rt-0", size_range=(f"{low}B", f"{low + 10}B"), priority=5 - turn % 2)


def _burst() -> list[dict[str, Any]]:
    return [
        objects.runtime(f"scale-burst-{i}", size_range=(f"{1 + i}B", f"{11 + i}B"), priority=1)
        for i in range(BURST)
    ]


def _catalog_change(
    plane: ControlPlane,
    operator: RunningOperator,
    unbatched: int,
    bodies: list[dict[str, Any]],
    probe: AdmissionProbe,
) -> dict[str, float]:
    """Apply ``bodies`` and wait until the operator is idle again. ``unbatched``: the evaluations one pass
    per runtime event would make."""
    text = operator.scrape()
    evaluations, writes = metric_in(text, "ome_selector_evaluations_total"), _writes(text)
    meter = Meter(plane, operator)
    since = time.monotonic()
    _kubectl_apply(plane, bodies)
    time.sleep(0.5)  # the events arrive; the burst's wait (1 s of quiet) starts
    _wait(operator, lambda t: metric_in(t, "ome_selector_evaluations_total") > evaluations)
    _wait_settled(operator)
    text = operator.scrape()
    return (
        meter.figures()
        | probe.figures(since)
        | {
            "evaluations": metric_in(text, "ome_selector_evaluations_total") - evaluations,
            "unbatched_evaluations": unbatched,
            "writes": _writes(text) - writes,
        }
    )


def _print(rows: dict[str, Any]) -> None:
    n = rows["n"]
    cold, restart, resync = rows["cold"], rows["restart"], rows["resync"]
    change, burst = rows["change"], rows["burst"]

    def lag(r: dict[str, float]) -> str:
        return (
            f"loop late >25 ms {r['late_25ms']:.0f}x ({r['computed_25ms']:.0f}x computing), "
            f">100 ms {r['late_100ms']:.0f}x (>250 ms {r['late_250ms']:.0f}x, "
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
    idle = rows["idle_admission"]

    def admission(r: dict[str, float]) -> str:
        if not r.get("admission_requests") or not r.get("control_requests"):
            return "no admission answered"
        return (
            f"admission p50 {r['admission_p50_ms']:.1f} ms, p99 {r['admission_p99_ms']:.1f} ms, "
            f"max {r['admission_max_ms']:.0f} ms ({r['admission_requests']:.0f} requests, "
            f"{r['admission_failures']:.0f} failed); the control server meanwhile p50 "
            f"{r['control_p50_ms']:.1f} ms, p99 {r['control_p99_ms']:.1f} ms, "
            f"max {r['control_max_ms']:.0f} ms"
        )

    print(f"  webhook while idle: {admission(idle)}")
    for label, r in (("during the change", change), ("during the burst", burst)):
        print(f"  webhook {label}: {admission(r)}")
    failover = rows["failover"]
    print(
        f"  failover (SIGTERM): the Lease moved {failover['lease_moved_s']:.1f}s after the leader's exit; "
        f"the new leader caught up {failover['caught_up_s']:.1f}s later ({failover['evaluations']:.0f} "
        f"evaluations, {failover['writes']:.0f} writes)"
    )
    print(f"  RSS at the end {rows['rss_mib']:.0f} MiB")
    checks = {
        "admission_p99_ratio": max(r.get("admission_p99_ms", float("inf")) for r in (change, burst))
        / idle.get("admission_p99_ms", float("nan")),
        "failover_caught_up_s": failover["caught_up_s"],
        "restart_writes": restart["writes"],
    }
    if n >= 100_000:
        checks |= {
            "ready_s": restart["ready_s"],
            "idle_s": restart["idle_s"],
            "resync_s": resync["seconds"],
            "resync_cpu_s": resync["cpu_s"],
            "rss_mib": max(restart["rss_mib"], rows["rss_mib"]),
        }
    print(
        "  goals: "
        + ", ".join(
            f"{k} {v:.1f} (≤ {GOALS[k]:g}: {'met' if v <= GOALS[k] else 'NOT met'})"
            for k, v in checks.items()
        )
    )
    # The floor: the same ratio for the control server, a process of its own that does nothing but answer.
    # When it is over the goal too, the machine (2 cores shared with the apiserver, etcd and kubectl) adds
    # that much to any server's p99, whatever the operator does.
    control = max(r.get("control_p99_ms", float("inf")) for r in (change, burst)) / idle.get(
        "control_p99_ms", float("nan")
    )
    print(f"  the control server's own p99 ratio meanwhile (the machine's floor): {control:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 30_000])
    parser.add_argument(
        "--resync-seconds",
        type=float,
        help="the resync measured comes this late (default 60 s; 90 s at 30,000 and 200 s above)",
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
        for turn, size in enumerate(sorted(args.sizes)):
            started = time.perf_counter()
            asyncio.run(create_all(plane, _inference_services(created, size), namespaces=created == 0))
            print(f"  {size - created} InferenceServices created in {time.perf_counter() - started:.0f}s")
            created = size
            # Late enough that the start is over, and the next resync comes after the change and the burst.
            resync = args.resync_seconds or (60.0 if size <= 10_000 else 90.0 if size <= 30_000 else 200.0)
            rows = size_rows(plane, size, resync, turn)
            document["sizes"].append(rows)
            _print(rows)
            # The burst's runtimes go again: the next size starts from the same catalog.
            plane.kubectl("delete", "clusterservingruntime", *(b["metadata"]["name"] for b in _burst()))
    document["load_average_at_end"] = os.getloadavg()
    write_figures(args.out, document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
