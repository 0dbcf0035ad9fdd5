"""Admission latency through the real kube-apiserver , next to a no-op webhook in the same run.

On a local control plane with 1,000 ClusterServingRuntimes (a fifth of them naming the model's format), two
operators run as ``ome-selector run --webhook-bind-address …`` (separate processes, as in a cluster): one
deciding, one started with a hidden ``--webhook-noop`` flag (the same Kopf server, answering "allowed" without
looking). Each is registered for a namespace of its own (``--webhook-namespace-selector``); a third namespace
has no webhook. Server-side dry-run creates of InferenceServices are sent one at a time, taking turns between
the three namespaces, so the three rows share the machine's load moment by moment; the client measures each
round trip. Two requests:

- *selects*: auto-selection finds a runtime among the 1,000 (allowed) — the common case;
- *no runtime*: no runtime supports the model (denied), after the read that confirms it (SPEC §7): a
  metadata-only listing of the runtimes, compared with the live catalog. Repeated against unchanged runtimes,
  the listing is found as before by its digest and not decoded again. That listing alone, made by the
  benchmark in turn with these requests, is printed as the floor of a confirmed denial;
- *no runtime, a runtime changed*: the same, with one runtime's labels patched before each request (outside
  the timed call, before every row's request alike), so each confirmation decodes and compares the listing;
  its floor is the same listing made after such a change.

Figures are client-side p50 and p99 of the whole API call, and each webhook's own mean time per review (its
``ome_selector_admission_duration_seconds``); then the two admission rows with their goals. Nothing
here asserts a time. ``--out FILE`` also writes every figure as JSON, so runs can be compared.

    python -m bench.admission [--runtimes 1000] [--requests 300] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config

from bench.fanout import create_all
from harness import objects
from harness.admission import ADMISSION_METRIC, PROBE_KIND, wait_until_called
from harness.controlplane import ControlPlane, running_control_plane
from harness.operator_process import RunningOperator, operator_process
from ome_selector.api.resources import API_GROUP_VERSION, Kind
from ome_selector.kube.objects import METADATA_ONLY
from ome_selector.kube.scope import custom_object_call

WARMUP = 20
#: The namespace label each webhook is registered for.
LABEL = "ome-selector-bench"
#: Where each request goes: no webhook, the no-op webhook, ome-selector.
TARGETS = {"no webhook": "bench-none", "no-op webhook": "bench-noop", "ome-selector": "bench-real"}
SERVER_SECONDS = "ome_selector_admission_duration_seconds"


@dataclass(frozen=True)
class Goal:
    """One admission row: ome-selector minus the no-op webhook, in the same run."""

    row: str
    shape: str
    p50_ms: float
    p99_ms: float | None


#: The request shape whose every request follows a change to one runtime.
AFTER_A_CHANGE = "no runtime, a runtime changed"
GOALS = (
    Goal("admission, 1,000 runtimes, denied", "no runtime", 10.0, 25.0),
    Goal("admission, 1,000 runtimes, denied after a change", AFTER_A_CHANGE, 10.0, 25.0),
    Goal("admission, allowed", "selects", 1.0, None),
)


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


def requests(namespace: str) -> dict[str, dict[str, Any]]:
    def request(model: str) -> dict[str, Any]:
        engine = {"minReplicas": 1}
        return objects.inference_service("svc", namespace=namespace, model_name=model, engine=engine)

    return {"selects": request("llama"), "no runtime": request("tiny"), AFTER_A_CHANGE: request("tiny")}


def touch_runtime(api: Any, index: int, count: int) -> None:
    """A new resourceVersion for one of the ``count`` runtimes (a label changes)."""
    body = {"metadata": {"labels": {"bench-touched": str(index)}}}
    custom_object_call(api, "patch", Kind.CLUSTER_SERVING_RUNTIME, None)(f"rt-{index % count:05d}", body)


@contextmanager
def operator(plane: ControlPlane, *, noop: bool) -> Iterator[RunningOperator]:
    """An operator whose webhook covers only its namespace, once the apiserver calls it."""
    name = "noop" if noop else "real"
    arguments = [
        "--webhook-bind-address", "127.0.0.1:0", "--instance", f"bench-{name}",
        "--webhook-namespace-selector", f"{LABEL}={name}", *(["--webhook-noop"] if noop else []),
    ]  # fmt: skip
    with operator_process(plane, *arguments, name=f"operator-{name}") as running:

        def probes_answered() -> float:
            return running.metric(ADMISSION_METRIC, kind=PROBE_KIND)

        wait_until_called(probes_answered, _client(plane), timeout=300)
        yield running


def _client(plane: ControlPlane) -> Any:
    new_client: Any = config.new_client_from_config  # the official client is untyped
    return new_client(config_file=str(plane.kubeconfig))


def create_once(api: Any, body: dict[str, Any]) -> float:
    """Seconds for one server-side dry-run create (a denial is an answer too)."""
    started = time.perf_counter()
    try:
        custom_object_call(api, "create", Kind.INFERENCE_SERVICE, body["metadata"]["namespace"])(
            body, dry_run="All"
        )
    except client.ApiException as error:
        if error.status != 403:
            raise
    return time.perf_counter() - started


def list_metadata_once(api_client: Any) -> float:
    """Seconds for the one listing a confirmed denial cannot do without: every ClusterServingRuntime,
    metadata only, as the confirming read asks for it (body read, not parsed)."""
    started = time.perf_counter()
    method, url, headers, _, _ = api_client.param_serialize(
        "GET",
        f"/apis/{API_GROUP_VERSION}/{Kind.CLUSTER_SERVING_RUNTIME.plural}",
        header_params={"Accept": METADATA_ONLY},
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(method, url, header_params=headers)
    response.read()
    if response.status != 200:
        raise RuntimeError(f"listing the runtimes: HTTP {response.status}")
    return time.perf_counter() - started


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    rank = max(1, round(fraction * len(ordered) + 0.5))
    return ordered[min(rank, len(ordered)) - 1]


def server_seconds(running: RunningOperator, allowed: str) -> tuple[float, float]:
    """(sum of seconds, count) of the InferenceService reviews the operator answered with ``allowed``."""
    labels = {"kind": "InferenceService", "allowed": allowed}
    return running.metric(f"{SERVER_SECONDS}_sum", **labels), running.metric(
        f"{SERVER_SECONDS}_count", **labels
    )


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.admission", description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=300, help="measured requests per row")
    parser.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with running_control_plane() as plane:
        began = time.monotonic()
        models = [objects.model("llama", size="3.21B"), objects.model("tiny", size="100M")]
        bodies = runtimes(args.runtimes)
        asyncio.run(create_all(plane, [*bodies, *models]))
        core: Any = client.CoreV1Api(_client(plane))
        for namespace in TARGETS.values():
            labels = {LABEL: namespace.removeprefix("bench-")}  # what each operator's selector names
            core.create_namespace({"metadata": {"name": namespace, "labels": labels}})
        serving = sum(
            1 for b in bodies if b["spec"]["supportedModelFormats"][0]["modelFormat"]["name"] == "safetensors"
        )
        print(
            f"admission latency on kube-apiserver {plane.server}: {args.runtimes} ClusterServingRuntimes "
            f"({serving} naming the model's format), created in {time.monotonic() - began:.1f}s; "
            f"{os.cpu_count()} CPUs, load {load_before[0]:.1f}"
        )
        print(
            f"{args.requests} server-side dry-run creates per row, one at a time, taking turns between the "
            f"rows, after {WARMUP} warm-up ones"
        )
        api = client.CustomObjectsApi(_client(plane))
        samples: dict[tuple[str, str], list[float]] = {}
        served: dict[tuple[str, str], float] = {}
        floors: dict[str, list[float]] = {}
        lister = _client(plane)
        with ExitStack() as stack:
            noop = stack.enter_context(operator(plane, noop=True))
            real = stack.enter_context(operator(plane, noop=False))
            shapes = {target: requests(namespace) for target, namespace in TARGETS.items()}
            for shape in requests(""):
                # Each webhook's own time per review of this shape (warm-up included): the difference of its
                # latency histogram over the shape's requests.
                verdict = "true" if shape == "selects" else "false"
                answering = {"no-op webhook": (noop, "true"), "ome-selector": (real, verdict)}
                before = {target: server_seconds(*answering[target]) for target in answering}
                for index in range(WARMUP + args.requests):
                    for turn, target in enumerate(TARGETS):
                        if shape == AFTER_A_CHANGE:
                            touch_runtime(api, index * len(TARGETS) + turn, args.runtimes)
                        seconds = create_once(api, shapes[target][shape])
                        if index >= WARMUP:
                            samples.setdefault((target, shape), []).append(seconds)
                    if shape != "selects":  # the floor of a confirmed denial, in turn with the rows
                        if shape == AFTER_A_CHANGE:
                            touch_runtime(api, index * len(TARGETS) + len(TARGETS), args.runtimes)
                        seconds = list_metadata_once(lister)
                        if index >= WARMUP:
                            floors.setdefault(shape, []).append(seconds)
                for target, (running, label) in answering.items():
                    (total, count), (total_0, count_0) = server_seconds(running, label), before[target]
                    served[(target, shape)] = (
                        (total - total_0) / (count - count_0) if count > count_0 else 0.0
                    )
        load_after = os.getloadavg()

    print(f"  {'':<46} {'p50':>10} {'p99':>10} {'webhook mean':>14}")
    rows: dict[str, dict[str, float]] = {}
    for (target, shape), values in samples.items():
        p50, p99 = percentile(values, 0.50), percentile(values, 0.99)
        inside = served.get((target, shape))
        rows[f"{target}: {shape}"] = {"p50_ms": p50 * 1e3, "p99_ms": p99 * 1e3}
        mean = f"{inside * 1e3:11.2f} ms" if inside is not None else ""
        if inside is not None:
            rows[f"{target}: {shape}"]["webhook_mean_ms"] = inside * 1e3
        print(f"  {target + ': ' + shape:<46} {p50 * 1e3:7.2f} ms {p99 * 1e3:7.2f} ms {mean:>14}")

    print("\nsame run (ome-selector minus the no-op webhook):")
    goals = []
    for goal in GOALS:
        ours, noop_ = samples[("ome-selector", goal.shape)], samples[("no-op webhook", goal.shape)]
        p50 = 1e3 * (percentile(ours, 0.5) - percentile(noop_, 0.5))
        p99 = 1e3 * (percentile(ours, 0.99) - percentile(noop_, 0.99))
        met = p50 <= goal.p50_ms and (goal.p99_ms is None or p99 <= goal.p99_ms)
        wanted = f"≤ +{goal.p50_ms:g} ms p50" + (f", ≤ +{goal.p99_ms:g} ms p99" if goal.p99_ms else "")
        print(f"  {goal.row:<50} p50 {p50:+7.2f} ms, p99 {p99:+7.2f} ms   goal {wanted}: {_verdict(met)}")
        goals.append(
            {
                "row": goal.row,
                "p50_over_noop_ms": p50,
                "p99_over_noop_ms": p99,
                "goal_p50_ms": goal.p50_ms,
                "goal_p99_ms": goal.p99_ms,
                "met": met,
            }
        )
    floor_figures = {}
    for shape, floor in floors.items():
        floor_p50, floor_p99 = percentile(floor, 0.5) * 1e3, percentile(floor, 0.99) * 1e3
        floor_figures[shape] = {"p50": floor_p50, "p99": floor_p99}
        print(
            f"  floor of a confirmed denial ({shape}): the metadata-only listing of the {args.runtimes} "
            f"runtimes, p50 {floor_p50:.2f} ms, p99 {floor_p99:.2f} ms (client round trip, same run)"
        )
    print(f"load (1, 5, 15 min) before {_load(load_before)}, after {_load(load_after)}")
    if args.out is not None:
        document = {
            "python": sys.version.split()[0],
            "machine": {
                "cpus": os.cpu_count(),
                "load_before": list(load_before),
                "load_after": list(load_after),
                "platform": platform.platform(),
            },
            "runtimes": args.runtimes,
            "requests_per_row": args.requests,
            "rows": rows,
            "issue_17": goals,
            "denial_floor_listing_ms": floor_figures,
        }
        args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print(f"figures written to {args.out}")
    return 0


def _load(load: tuple[float, float, float]) -> str:
    return ", ".join(f"{value:.1f}" for value in load)


if __name__ == "__main__":
    sys.exit(main())
