"""Fan-out benchmark on the local control plane: a model size change reaching N InferenceServices.

For N in (100, 1000): N InferenceServices reference one ClusterBaseModel; the operator (`ome-selector run`, a
separate process) has evaluated them all; then the model gains `modelParameterSize: 3.21B`, which turns every
one of them RuntimeNotFound. Measured: time from the size PATCH to the last condition written and to the last
event recorded (polling the operator's /metrics), API writes, and — in the same run — the same writes made raw
against the same apiserver in the same shape (WORKERS status patches at a time, each followed by its event
create on one of WORKERS event workers), as the limit to compare with. Then the operator's resident memory
with 10,000 InferenceServices, 1,000 runtimes and 1,000 models indexed.

    python -m bench.fanout [--sizes 100 1000] [--memory-objects 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client as aclient
from kubernetes_asyncio import config as aconfig

from harness import objects
from harness.controlplane import ControlPlane, running_control_plane
from harness.operator_process import RunningOperator, metric_in, operator_process
from ome_selector.api.resources import Kind
from ome_selector.kube.objects import Objects
from ome_selector.kube.scope import custom_object_call

WORKERS = 4
CONCURRENCY = 32  # object creation only


async def _api(plane: ControlPlane) -> aclient.ApiClient:
    configuration = aclient.Configuration()
    await aconfig.load_kube_config(config_file=str(plane.kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = CONCURRENCY
    return aclient.ApiClient(configuration)


async def _bounded(coroutines: list[Any], limit: int) -> None:
    semaphore = asyncio.Semaphore(limit)

    async def one(coroutine: Any) -> None:
        async with semaphore:
            await coroutine

    await asyncio.gather(*(one(c) for c in coroutines))


async def create_all(plane: ControlPlane, bodies: list[dict[str, Any]], *, namespaces: bool = True) -> None:
    """Create ``bodies`` (and first their namespaces, unless ``namespaces`` is false: they exist)."""
    async with await _api(plane) as api:
        objects_api: Any = aclient.CustomObjectsApi(api)
        core: Any = aclient.CoreV1Api(api)
        wanted = {b["metadata"]["namespace"] for b in bodies if b["metadata"].get("namespace")}
        for ns in sorted(wanted) if namespaces else ():
            await core.create_namespace({"metadata": {"name": ns}})

        def create(body: dict[str, Any]) -> Any:
            namespace = body["metadata"].get("namespace")
            return custom_object_call(objects_api, "create", Kind(body["kind"]), namespace)(body)

        await _bounded([create(b) for b in bodies], CONCURRENCY)


async def raw_writes_seconds(plane: ControlPlane, namespace: str, names: list[str]) -> float:
    """The fan-out's writes without the operator, in the operator's shape: WORKERS concurrent status merge
    patches, each followed by its event create on one of WORKERS concurrent event workers (as the operator's
    event pipeline does). Through the product's own client calls; the apiserver's limit for these writes."""
    async with await _api(plane) as api:
        writes = Objects(api)
        events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        patches: asyncio.Queue[str | None] = asyncio.Queue()
        for name in names:
            patches.put_nowait(name)

        async def patcher() -> None:
            while (name := await patches.get()) is not None:
                body = await writes.patch_status(
                    Kind.INFERENCE_SERVICE,
                    namespace,
                    name,
                    {"status": {"benchmark": f"{time.time()}"}},
                    field_manager="bench",
                )
                events.put_nowait(body)

        async def recorder() -> None:
            while (body := await events.get()) is not None:
                await writes.create_event(
                    Kind.INFERENCE_SERVICE,
                    body,
                    type_="Warning",
                    reason="Benchmark",
                    message="raw fan-out write",
                    component="bench",
                    instance="bench",
                )

        started = time.perf_counter()
        for _ in range(WORKERS):
            patches.put_nowait(None)
        recorders = [asyncio.create_task(recorder()) for _ in range(WORKERS)]
        await asyncio.gather(*(patcher() for _ in range(WORKERS)))
        for _ in range(WORKERS):
            events.put_nowait(None)
        await asyncio.gather(*recorders)
        return time.perf_counter() - started


#: How often the benchmark scrapes the operator's /metrics while it waits: often enough for a 1% resolution on
#: a 5 s fan-out, seldom enough that serving the scrapes costs the operator little CPU.
POLL_SECONDS = 0.05


def wait_for(operator: RunningOperator, expected: float, timeout: float = 900.0, **labels: str) -> float:
    started = time.perf_counter()
    while True:
        text = operator.scrape()
        if (
            metric_in(text, "ome_selector_inferenceservices", **labels) == expected
            and metric_in(text, "ome_selector_workqueue_depth") == 0
        ):
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"not {expected} {labels} after {timeout}s")
        time.sleep(POLL_SECONDS)


def wait_for_metric(
    operator: RunningOperator, expected: float, name: str, timeout: float = 900.0, **labels: str
) -> None:
    started = time.perf_counter()
    while operator.metric(name, **labels) < expected:
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"{name}{labels} not {expected} after {timeout}s")
        time.sleep(POLL_SECONDS)


def settle_writes(operator: RunningOperator, quiet: float = 0.5) -> None:
    last, since = operator.metric("ome_selector_api_writes_total"), time.perf_counter()
    while time.perf_counter() - since < quiet:
        time.sleep(0.05)
        now = operator.metric("ome_selector_api_writes_total")
        if now != last:
            last, since = now, time.perf_counter()


def fanout(plane: ControlPlane, size: int) -> dict[str, float]:
    namespace, model_name = f"fanout-{size}", f"fanout-model-{size}"
    bodies = [
        objects.model(model_name),
        objects.runtime("rt-1b", namespace=namespace, size_range=("500M", "2B")),
    ]
    bodies += [
        objects.inference_service(f"svc-{i}", namespace=namespace, model_name=model_name) for i in range(size)
    ]
    asyncio.run(create_all(plane, bodies))
    with operator_process(plane, "-n", namespace, "--workers", str(WORKERS)) as operator:
        wait_for(operator, size, status="True", reason="RuntimeSelected")
        settle_writes(operator)  # the first conditions' last events may still be on their way
        writes_before = operator.metric("ome_selector_api_writes_total")
        status_before = operator.metric("ome_selector_api_writes_total", operation="patch_status")
        events_before = operator.metric("ome_selector_api_writes_total", operation="create_event")
        evaluations_before = operator.metric("ome_selector_evaluations_total")
        cpu_before = cpu_seconds(operator.process.pid)
        subprocess.run(
            [
                str(plane.bin_dir / "kubectl"),
                f"--kubeconfig={plane.kubeconfig}",
                "patch",
                "clusterbasemodel",
                model_name,
                "--type=merge",
                "-p",
                '{"spec":{"modelParameterSize":"3.21B"}}',
            ],
            check=True,
            capture_output=True,
        )
        started = time.perf_counter()
        wait_for(operator, size, status="False", reason="RuntimeNotFound")
        conditions_seconds = time.perf_counter() - started
        # Done when the last event is recorded too: the raw figure below includes the event creates.
        wait_for_metric(
            operator, events_before + size, "ome_selector_api_writes_total", operation="create_event"
        )
        elapsed = time.perf_counter() - started
        settle_writes(operator)
        writes = operator.metric("ome_selector_api_writes_total") - writes_before
        status_writes = (
            operator.metric("ome_selector_api_writes_total", operation="patch_status") - status_before
        )
        evaluations = operator.metric("ome_selector_evaluations_total") - evaluations_before
        dropped = operator.metric("ome_selector_events_dropped_total")
        cpu = cpu_seconds(operator.process.pid) - cpu_before
    raw = asyncio.run(raw_writes_seconds(plane, namespace, [f"svc-{i}" for i in range(size)]))
    return {
        "n": size,
        "seconds": elapsed,
        "conditions_seconds": conditions_seconds,
        "writes": writes,
        "status_writes": status_writes,
        "evaluations": evaluations,
        "events_dropped": dropped,
        "operator_cpu_seconds": cpu,
        "raw_seconds": raw,
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/PID/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory(plane: ControlPlane, isvcs: int, runtimes: int, models: int) -> dict[str, float]:
    namespaces = [f"mem-{i}" for i in range(10)]
    bodies: list[dict[str, Any]] = []
    for i in range(models):
        bodies.append(objects.model(f"mem-model-{i}", size=f"{1 + i % 70}B"))
    for i in range(runtimes):
        low = 1 + i % 60
        bodies.append(
            objects.runtime(f"mem-rt-{i}", size_range=(f"{low}B", f"{low + 10}B"), priority=1 + i % 5)
        )
    for i in range(isvcs):
        bodies.append(
            objects.inference_service(
                f"svc-{i}", namespace=namespaces[i % len(namespaces)], model_name=f"mem-model-{i % models}"
            )
        )
    started = time.perf_counter()
    asyncio.run(create_all(plane, bodies))
    created = time.perf_counter() - started
    with operator_process(plane, "--workers", str(WORKERS)) as operator:
        wait_for(operator, isvcs, timeout=1800)  # every InferenceService evaluated, whatever the verdict
        settled = rss_kib(operator.process.pid)
    return {"objects": len(bodies), "create_seconds": created, "rss_mib": settled / 1024}


#: The goals for the two figures this benchmark prints.
GOAL_RATIO = 1.15
GOAL_RSS_MIB = 150.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--memory-objects", type=int, default=10_000, help="InferenceServices (0 skips)")
    parser.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    args = parser.parse_args(argv)
    os.environ.setdefault("OME_SELECTOR_CONTROLPLANE_START_TIMEOUT", "120")
    document: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "fanout": []}
    with running_control_plane() as plane:
        print(f"fan-out on kube-apiserver {plane.server} ({WORKERS} operator workers)")
        for size in args.sizes:
            r = fanout(plane, size)
            r["ratio"] = r["seconds"] / r["raw_seconds"]
            document["fanout"].append(r)
            met = "met" if r["ratio"] <= GOAL_RATIO else "NOT met"
            print(
                f"  N={size:>5}: size change → last condition {r['conditions_seconds']:.2f}s, last event "
                f"{r['seconds']:.2f}s ({r['seconds'] / size * 1000:.2f} ms/isvc); "
                f"{r['writes']:.0f} API writes ({r['status_writes']:.0f} status patches + "
                f"{r['writes'] - r['status_writes']:.0f} events, {r['evaluations']:.0f} evaluations, "
                f"{r['events_dropped']:.0f} events dropped, operator CPU {r['operator_cpu_seconds']:.2f}s); "
                f"the same writes raw {r['raw_seconds']:.2f}s → "
                f"ratio {r['ratio']:.2f}x (goal ≤ {GOAL_RATIO}x: {met})"
            )
    if args.memory_objects:
        # A control plane of its own: the operator must index exactly these objects.
        with running_control_plane() as plane:
            m = memory(plane, args.memory_objects, args.memory_objects // 10, args.memory_objects // 10)
            document["memory"] = m
            met = "met" if m["rss_mib"] <= GOAL_RSS_MIB else "NOT met"
            print(
                f"  memory: {m['objects']:.0f} objects indexed (created in {m['create_seconds']:.0f}s), "
                f"operator RSS {m['rss_mib']:.0f} MiB (goal ≤ {GOAL_RSS_MIB:.0f} MiB: {met})"
            )
    write_figures(args.out, document)
    return 0


def write_figures(path: Path | None, document: dict[str, Any]) -> None:
    """Write a benchmark's figures as JSON to ``path`` (``--out``), if given."""
    if path is not None:
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print(f"figures written to {path}")


if __name__ == "__main__":
    sys.exit(main())
