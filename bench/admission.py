"""Admission latency through the real kube-apiserver (issue 7), next to a no-op webhook in the same run.

On a local control plane with 1,000 ClusterServingRuntimes (a fifth of them naming the model's format), the
operator runs as ``ome-selector run --webhook-bind-address …`` (a separate process, as in a cluster) and
answers server-side dry-run creates of InferenceServices, sent one at a time; the client measures each round
trip. The same requests then go to the same operator started with a hidden ``--webhook-noop`` flag (the same
Kopf server, answering "allowed" without looking), and to an apiserver without any webhook. Two requests:

- *selects*: auto-selection finds a runtime among the 1,000 (allowed) — the common case;
- *no runtime*: no runtime supports the model (denied), after the direct read that confirms it: one
  consistent listing of the runtimes (SPEC §7), here all 1,000 of them.

Figures are client-side p50 and p99 of the whole API call; nothing here asserts a time.

    python -m bench.admission [--runtimes 1000] [--requests 300]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client, config

from bench.fanout import create_all
from harness import objects
from harness.admission import ADMISSION_METRIC, PROBE_KIND, wait_until_called
from harness.controlplane import ControlPlane, running_control_plane
from harness.operator_process import operator_process
from ome_selector.api.resources import API_GROUP_VERSION, Kind
from ome_selector.kube.scope import custom_object_call

NAMESPACE = "bench"
WARMUP = 20
GV = API_GROUP_VERSION


def runtimes(count: int) -> list[dict[str, Any]]:
    """``count`` ClusterServingRuntimes: every fifth serves the model's format, with assorted size ranges."""
    bodies = []
    ranges = [("500M", "2B"), ("2B", "4B"), ("4B", "9B"), ("8B", "70B"), ("70B", None)]
    for index in range(count):
        body = objects.runtime(f"rt-{index:05d}", size_range=ranges[(index // 5) % len(ranges)])
        entry = body["spec"]["supportedModelFormats"][0]
        if index % 5:
            entry["modelFormat"] = {"name": f"format-{index % 13}", "version": "1.0.0"}
        entry["priority"] = 1 + index % 3
        bodies.append(body)
    return bodies


def requests() -> dict[str, dict[str, Any]]:
    engine = {"minReplicas": 1}
    return {
        "selects": objects.inference_service("svc", namespace=NAMESPACE, model_name="llama", engine=engine),
        "no runtime": objects.inference_service("svc", namespace=NAMESPACE, model_name="tiny", engine=engine),
    }


@contextmanager
def operator(plane: ControlPlane, *, noop: bool) -> Iterator[None]:
    """The operator with its webhook registered and already called by the apiserver."""
    arguments = ["--webhook-bind-address", "127.0.0.1:0", *(["--webhook-noop"] if noop else [])]
    with operator_process(plane, *arguments, name=f"operator-{'noop' if noop else 'real'}") as running:

        def probes_answered() -> float:
            return running.metric(ADMISSION_METRIC, kind=PROBE_KIND)

        wait_until_called(probes_answered, _client(plane), timeout=300)
        yield


def _client(plane: ControlPlane) -> Any:
    new_client: Any = config.new_client_from_config  # the official client is untyped
    return new_client(config_file=str(plane.kubeconfig))


def _api(plane: ControlPlane) -> Any:
    return client.CustomObjectsApi(_client(plane))


def latencies(plane: ControlPlane, body: dict[str, Any], count: int) -> list[float]:
    api = _api(plane)
    samples: list[float] = []
    for index in range(WARMUP + count):
        started = time.perf_counter()
        try:
            custom_object_call(api, "create", Kind.INFERENCE_SERVICE, NAMESPACE)(body, dry_run="All")
        except client.ApiException as error:
            if error.status != 403:
                raise
        if index >= WARMUP:
            samples.append(time.perf_counter() - started)
    return samples


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    rank = max(1, round(fraction * len(ordered) + 0.5))
    return ordered[min(rank, len(ordered)) - 1]


def row(label: str, samples: list[float]) -> str:
    p50, p99 = percentile(samples, 0.50), percentile(samples, 0.99)
    return f"  {label:<44} {p50 * 1e3:8.2f} ms {p99 * 1e3:8.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.admission")
    parser.add_argument("--runtimes", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=300, help="measured requests per row")
    args = parser.parse_args(argv)
    with running_control_plane() as plane:
        began = time.monotonic()
        models = [
            objects.model("llama", size="3.21B"),
            objects.model("tiny", size="100M"),
        ]
        bodies = runtimes(args.runtimes)
        asyncio.run(create_all(plane, [*bodies, *models]))
        core: Any = client.CoreV1Api(_client(plane))
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        serving = sum(
            1 for b in bodies if b["spec"]["supportedModelFormats"][0]["modelFormat"]["name"] == "safetensors"
        )
        print(
            f"admission latency on kube-apiserver {plane.server}: {args.runtimes} ClusterServingRuntimes "
            f"({serving} naming the model's format), created in {time.monotonic() - began:.1f}s"
        )
        print(
            f"{args.requests} server-side dry-run creates per row, one at a time, after {WARMUP} warm-up ones"
        )
        print(f"  {'':<44} {'p50':>11} {'p99':>11}")
        shapes = requests()
        results: dict[str, list[float]] = {}
        results["no webhook: selects"] = latencies(plane, shapes["selects"], args.requests)
        for noop in (True, False):
            with operator(plane, noop=noop):
                for shape, body in shapes.items():
                    label = f"{'no-op webhook' if noop else 'ome-selector'}: {shape}"
                    results[label] = latencies(plane, body, args.requests)
        for label, samples in results.items():
            print(row(label, samples))
        for shape in shapes:
            ours, noop_ = results[f"ome-selector: {shape}"], results[f"no-op webhook: {shape}"]
            p50 = 1e3 * (percentile(ours, 0.5) - percentile(noop_, 0.5))
            p99 = 1e3 * (percentile(ours, 0.99) - percentile(noop_, 0.99))
            print(f"  ome-selector minus no-op, {shape}: p50 {p50:+.2f} ms, p99 {p99:+.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
