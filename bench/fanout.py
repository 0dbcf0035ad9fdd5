"""Fan-out benchmark on the local control plane (issue 6): a model size change reaching N InferenceServices.

For N in (100, 1000): N InferenceServices reference one ClusterBaseModel; the operator (`ome-selector run`, a
separate process) has evaluated them all; then the model gains `modelParameterSize: 3.21B`, which turns every
one of them RuntimeNotFound. Measured: time from the size PATCH to the last condition written (polling the
operator's /metrics), API writes, and — in the same run — the raw status-PATCH throughput of the same
apiserver with the same concurrency, as the limit to compare with. Then the operator's resident memory with
10,000 InferenceServices, 1,000 runtimes and 1,000 models indexed.

    python -m bench.fanout [--sizes 100 1000] [--memory-objects 10000]
"""

from __future__ import annotations

import argparse
import asyncio
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
from harness.operator_process import RunningOperator, operator_process
from ome_selector.api.resources import Kind
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


async def create_all(plane: ControlPlane, bodies: list[dict[str, Any]]) -> None:
    async with await _api(plane) as api:
        objects_api: Any = aclient.CustomObjectsApi(api)
        core: Any = aclient.CoreV1Api(api)
        for ns in sorted({b["metadata"]["namespace"] for b in bodies if b["metadata"].get("namespace")}):
            await core.create_namespace({"metadata": {"name": ns}})

        def create(body: dict[str, Any]) -> Any:
            namespace = body["metadata"].get("namespace")
            return custom_object_call(objects_api, "create", Kind(body["kind"]), namespace)(body)

        await _bounded([create(b) for b in bodies], CONCURRENCY)


async def raw_patch_seconds(plane: ControlPlane, namespace: str, names: list[str]) -> float:
    """N resourceVersion-less status merge patches with the operator's concurrency: the apiserver's limit."""
    async with await _api(plane) as api:
        objects_api: Any = aclient.CustomObjectsApi(api)
        started = time.perf_counter()
        await _bounded(
            [
                custom_object_call(objects_api, "patch", Kind.INFERENCE_SERVICE, namespace, status=True)(
                    name,
                    {"status": {"benchmark": f"{time.time()}"}},
                    _content_type="application/merge-patch+json",
                )
                for name in names
            ],
            WORKERS,
        )
        return time.perf_counter() - started


def wait_for(operator: RunningOperator, expected: float, timeout: float = 900.0, **labels: str) -> float:
    started = time.perf_counter()
    while True:
        if (
            operator.metric("ome_selector_inferenceservices", **labels) == expected
            and operator.metric("ome_selector_workqueue_depth") == 0
        ):
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"not {expected} {labels} after {timeout}s")
        time.sleep(0.02)


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
        writes_before = operator.metric("ome_selector_api_writes_total")
        status_before = operator.metric("ome_selector_api_writes_total", operation="patch_status")
        evaluations_before = operator.metric("ome_selector_evaluations_total")
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
        elapsed = time.perf_counter() - started
        settle_writes(operator)  # the last events are recorded just after the last status writes
        writes = operator.metric("ome_selector_api_writes_total") - writes_before
        status_writes = (
            operator.metric("ome_selector_api_writes_total", operation="patch_status") - status_before
        )
        evaluations = operator.metric("ome_selector_evaluations_total") - evaluations_before
    raw = asyncio.run(raw_patch_seconds(plane, namespace, [f"svc-{i}" for i in range(size)]))
    return {
        "n": size,
        "seconds": elapsed,
        "writes": writes,
        "status_writes": status_writes,
        "evaluations": evaluations,
        "raw_patch_seconds": raw,
    }


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--memory-objects", type=int, default=10_000, help="InferenceServices (0 skips)")
    args = parser.parse_args(argv)
    os.environ.setdefault("OME_SELECTOR_CONTROLPLANE_START_TIMEOUT", "120")
    with running_control_plane() as plane:
        print(f"fan-out on kube-apiserver {plane.server} ({WORKERS} operator workers)")
        for size in args.sizes:
            r = fanout(plane, size)
            per_write = r["raw_patch_seconds"] / size
            print(
                f"  N={size:>5}: size change → last condition {r['seconds']:.2f}s "
                f"({r['seconds'] / size * 1000:.2f} ms/isvc), {r['writes']:.0f} API writes "
                f"({r['status_writes']:.0f} status patches + {r['writes'] - r['status_writes']:.0f} events, "
                f"{r['evaluations']:.0f} evaluations); raw status PATCH {r['raw_patch_seconds']:.2f}s "
                f"({per_write * 1000:.2f} ms each) → ratio {r['seconds'] / r['raw_patch_seconds']:.2f}x"
            )
    if args.memory_objects:
        # A control plane of its own: the operator must index exactly these objects.
        with running_control_plane() as plane:
            m = memory(plane, args.memory_objects, args.memory_objects // 10, args.memory_objects // 10)
            print(
                f"  memory: {m['objects']:.0f} objects indexed (created in {m['create_seconds']:.0f}s), "
                f"operator RSS {m['rss_mib']:.0f} MiB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
