"""The impact review of a catalog change at admission (SPEC §12), in process, at the scale bench's population.

One catalog holds 1,000 ClusterServingRuntimes, 1,000 ClusterBaseModels and 100,000 InferenceServices
(:mod:`bench.scale`'s objects, every InferenceService evaluated once, as the operator has after its first
listing; then ``gc.freeze()`` as the operator does). The webhook's own handler for the catalog kinds
(:class:`~ome_selector.webhook.admission.AdmissionHandlers`, without HTTP) answers, with the impact on and
off, reviews of:

- ``new``: a new auto-select ClusterServingRuntime that competes for every model of its format (wide range,
  highest priority: it would take every InferenceService);
- ``edit``: the most selected runtime edited (its priority lowered: its InferenceServices switch);
- ``delete``: the same runtime deleted.

``--only tenants`` runs the same three changes in a tenant-heavy catalog instead: the same runtimes and
models, and 1,000 namespaces each with a ServingRuntime of the models' format (ranked for every model, winning
for the largest: the worst case, no namespace shares the cluster view), the 100,000 InferenceServices spread
over them (10 models per namespace).

For each: the answer's p50 and p99 over the samples, the longest the review held the event loop (a probe
task asks for a turn every millisecond and records how late it got it), and what was answered. Then a GitOps
burst: OME's 397 catalog objects (``tests/data/ome-catalog``) reviewed all at once (as `kubectl apply
--server-side` of the whole catalog sends them), each stored into the catalog after its review as the watch
would, while an InferenceService review is answered every 10 ms: the catalog reviews' p99, the
InferenceService reviews' p99 against idle, the loop's lateness, the outcomes, and the longest warning (every
warning is checked for control characters). Nothing asserts a time.

    python -m bench.impact [--size 100000] [--samples 30] [--only tenants] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import kopf
import yaml

from bench.scale import MODELS, _catalog, _inference_services
from harness import objects
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Kind, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection import messages
from ome_selector.selection.impact_messages import NOT_COMPUTED
from ome_selector.selection.outcome import evaluate
from ome_selector.webhook.admission import AdmissionHandlers
from ome_selector.webhook.config import WebhookConfig

OME_CATALOG = Path(__file__).resolve().parents[1] / "tests" / "data" / "ome-catalog"
_KINDS = (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL, Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME)
CATALOG_KINDS = {kind.value: kind for kind in _KINDS}
#: Reviews in flight at once during the burst (a sync's parallel requests; kubectl sends one at a time).
CONNECTIONS = 8
#: SPEC §12 goals: the answer's p99 within 100 ms of impact off; the loop never held more than 50 ms;
#: InferenceService reviews during the burst within 2x of idle.
GOALS = {"p99_over_off_ms": 100.0, "loop_late_ms": 50.0, "isvc_p99_ratio": 2.0}


def build(size: int) -> Catalog:
    started = time.perf_counter()
    live = Catalog()
    for body in _catalog():
        resource = load_resource(body)
        assert resource is not None
        live.upsert(resource)
    for body in _inference_services(0, size):
        resource = load_resource(body)
        assert resource is not None
        live.upsert(resource)
    for isvc in live.inference_services():
        evaluate(live, isvc)
    gc.collect()
    gc.freeze()
    print(
        f"  catalog of {size:,} InferenceServices built and evaluated in {time.perf_counter() - started:.0f}s"
    )
    return live


#: The tenant-heavy case: namespaces with a ServingRuntime, and the models each one's InferenceServices use.
TENANTS = 1_000
TENANT_MODELS = 10


def build_tenants(size: int) -> Catalog:
    """The scale catalog's runtimes and models, a ServingRuntime in each of :data:`TENANTS` namespaces, and
    ``size`` InferenceServices over them, every one evaluated once."""
    started = time.perf_counter()
    live = Catalog()
    bodies = list(_catalog())
    bodies += [
        objects.runtime("tenant-rt", namespace=f"tenant-{k}", size_range=("60B", "70B"), priority=1 + k % 5)
        for k in range(TENANTS)
    ]
    for i in range(size):
        namespace, round_ = i % TENANTS, (i // TENANTS) % TENANT_MODELS
        model = (namespace + round_ * (MODELS // TENANT_MODELS)) % MODELS
        bodies.append(
            objects.inference_service(
                f"svc-{i}", namespace=f"tenant-{namespace}", model_name=f"scale-model-{model}"
            )
        )
    for body in bodies:
        resource = load_resource(body)
        assert resource is not None
        live.upsert(resource)
    for isvc in live.inference_services():
        evaluate(live, isvc)
    gc.collect()
    gc.freeze()
    print(
        f"  tenant-heavy catalog ({TENANTS:,} namespaces with a ServingRuntime, {size:,} InferenceServices) "
        f"built and evaluated in {time.perf_counter() - started:.0f}s"
    )
    return live


class LoopProbe:
    """Asks for a turn of the loop every millisecond; the lateness of each turn is the loop's hold. ``held``
    is the CPU the loop's thread spent meanwhile (``time.thread_time``): the part of the lateness the code
    computed, without the time a shared machine kept the process waiting for a CPU."""

    def __init__(self) -> None:
        self.late: list[float] = []
        self.held: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            asked, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(0.001)
            self.late.append(max(0.0, time.perf_counter() - asked - 0.001))
            self.held.append(time.thread_time() - cpu)

    def start(self) -> None:
        self.late.clear()
        self.held.clear()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> float:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        return max(self.late, default=0.0)


def _handler(
    live: Catalog, *, impact: bool, kind: Kind, config: WebhookConfig | None = None
) -> Callable[..., Awaitable[None]]:
    config = config if config is not None else WebhookConfig(catalog_impact=impact)
    handlers = AdmissionHandlers(config, catalog=lambda: live, reader=None, review_metrics=None)
    return handlers._sizes(kind)


async def _answer(
    handler: Callable[..., Awaitable[None]], body: dict[str, Any], old: dict[str, Any] | None, operation: str
) -> tuple[float, list[str], str | None]:
    warnings: list[str] = []
    started = time.perf_counter()
    denied: str | None = None
    try:
        await handler(
            body=body, old=old, operation=operation, warnings=warnings, userinfo={"username": "bench"}
        )
    except Exception as error:  # a denial (kopf.AdmissionError)
        denied = str(error)
    return time.perf_counter() - started, warnings, denied


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _most_selected(live: Catalog) -> Runtime:
    counts: Counter[str] = Counter()
    for isvc in live.inference_services()[:20_000]:
        outcome = evaluate(live, isvc)
        if outcome is not None and outcome.runtime is not None and outcome.runtime.namespace is None:
            counts[outcome.runtime.name] += 1
    name = counts.most_common(1)[0][0]
    found = live.runtime_profile(Kind.CLUSTER_SERVING_RUNTIME, None, name)
    assert found is not None
    return found.runtime


def _stored_body(runtime: Runtime, live: Catalog) -> dict[str, Any]:
    spec = runtime.spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    return {"apiVersion": "ome.io/v1beta1", "kind": runtime.kind.value, "metadata": {"name": runtime.name},
            "spec": spec}  # fmt: skip


async def changes(live: Catalog, samples: int) -> dict[str, dict[str, Any]]:
    widely = _most_selected(live)
    stored = _stored_body(widely, live)
    edited = json.loads(json.dumps(stored))
    # Wider and no higher: where it won on distance others now win (its InferenceServices switch).
    edited["spec"]["modelSizeRange"] = {"min": "1B", "max": "80B"}
    cases: dict[str, tuple[dict[str, Any], dict[str, Any] | None, str]] = {
        "new": (objects.runtime("bench-new", size_range=("1B", "80B"), priority=9), None, "CREATE"),
        "edit": (edited, stored, "UPDATE"),
        "delete": (stored, stored, "DELETE"),
    }
    rows: dict[str, dict[str, Any]] = {}
    probe = LoopProbe()
    # The machine's own floor: how late the loop is with nothing to do (a shared machine deschedules us).
    probe.start()
    await asyncio.sleep(2.0)
    rows["idle"] = {
        "loop_late_idle_ms": 1000 * await probe.stop(),
        "p99_idle_probe_ms": 1000 * _quantile(probe.late, 0.99),
    }
    for name, (body, old, operation) in cases.items():
        row: dict[str, Any] = {}
        for impact in (False, True):
            handler = _handler(live, impact=impact, kind=Kind.CLUSTER_SERVING_RUNTIME)
            times: list[float] = []
            probe.start()
            answer: tuple[float, list[str], str | None] = (0.0, [], None)
            for _ in range(samples):
                answer = await _answer(handler, body, old, operation)
                times.append(answer[0])
                await asyncio.sleep(0.002)
            late = await probe.stop()
            label = "on" if impact else "off"
            row[f"p50_{label}_ms"] = 1000 * statistics.median(times)
            row[f"p99_{label}_ms"] = 1000 * _quantile(times, 0.99)
            row[f"loop_late_{label}_ms"] = 1000 * late
            row[f"loop_held_{label}_ms"] = 1000 * max(probe.held, default=0.0)
            if impact:
                row["warnings"] = answer[1]
                row["denied"] = answer[2]
        row["p99_over_off_ms"] = row["p99_on_ms"] - row["p99_off_ms"]
        rows[name] = row
    return rows


def ome_catalog_bodies() -> list[dict[str, Any]]:
    bodies: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in sorted(OME_CATALOG.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(document, dict) and document.get("kind") in CATALOG_KINDS:
                metadata = document.get("metadata") or {}
                bodies[(document["kind"], metadata.get("namespace"), metadata.get("name"))] = document
    return list(bodies.values())  # one object per key, as the cluster stores them


async def _isvc_probe(live: Catalog, stop: asyncio.Event, times: list[float]) -> None:
    handlers = AdmissionHandlers(WebhookConfig(), catalog=lambda: live, reader=None, review_metrics=None)
    body = objects.inference_service(
        "probe", namespace="scale-0", model_name="scale-model-0", engine={"minReplicas": 1}
    )
    while not stop.is_set():
        warnings: list[str] = []
        started = time.perf_counter()
        await handlers._validate_inference_service(
            body=kopf.Body(cast(Any, body)), warnings=warnings, operation="CREATE"
        )
        times.append(time.perf_counter() - started)
        await asyncio.sleep(0.01)


async def burst(live: Catalog) -> dict[str, Any]:
    bodies = ome_catalog_bodies()
    # Idle: the InferenceService review alone.
    idle: list[float] = []
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(_isvc_probe(live, stop, idle))
    await asyncio.sleep(3.0)
    stop.set()
    await task

    handlers = {kind: _handler(live, impact=True, kind=kind) for kind in CATALOG_KINDS.values()}
    during: list[float] = []
    stop = asyncio.Event()
    probe = LoopProbe()
    probe.start()
    task = asyncio.get_running_loop().create_task(_isvc_probe(live, stop, during))
    outcomes: Counter[str] = Counter()
    longest_warning = 0
    clean = True

    async def one(body: dict[str, Any]) -> float:
        nonlocal longest_warning, clean
        kind = CATALOG_KINDS[body["kind"]]
        took, warnings, denied = await _answer(handlers[kind], body, None, "CREATE")
        for warning in warnings:
            longest_warning = max(longest_warning, len(warning))
            clean = clean and messages.escape_controls(warning) == warning
        if NOT_COMPUTED in warnings:
            outcomes["not computed"] += 1
        outcomes["denied" if denied else ("warned" if warnings else "silent")] += 1
        resource = load_resource(body)
        if resource is not None:
            live.upsert(resource)  # as the watch delivers it
        return took

    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    times: list[float] = []

    async def client() -> None:  # one of the sync's connections: the next object once this one is answered
        while not queue.empty():
            body = queue.get_nowait()
            await asyncio.sleep(0)  # the request arrives (a read on its connection)
            times.append(await one(body))

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(CONNECTIONS)))
    wall = time.perf_counter() - started
    stop.set()
    await task
    late = await probe.stop()
    return {
        "objects": len(bodies),
        "wall_s": wall,
        "catalog_p50_ms": 1000 * statistics.median(times),
        "catalog_p99_ms": 1000 * _quantile(list(times), 0.99),
        "isvc_idle_p99_ms": 1000 * _quantile(idle, 0.99),
        "isvc_burst_p99_ms": 1000 * _quantile(during, 0.99) if during else 0.0,
        "isvc_p99_ratio": _quantile(during, 0.99) / _quantile(idle, 0.99) if during and idle else 0.0,
        "loop_late_ms": 1000 * late,
        "loop_held_ms": 1000 * max(probe.held, default=0.0),
        "outcomes": dict(outcomes),
        "longest_warning": longest_warning,
        "warnings_clean": clean,
    }


def _print_changes(title: str, rows: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title}")
    header = ("change", "p50 off", "p99 off", "p50 on", "p99 on", "p99 +", "loop late", "loop held")
    print("  " + " ".join(f"{h:>9}" for h in header))
    rows = dict(rows)
    idle = rows.pop("idle")
    print(
        f"  the machine's floor: the loop late by up to {idle['loop_late_idle_ms']:.1f} ms with nothing to do"
    )
    for name, row in rows.items():
        keys = ["p50_off_ms", "p99_off_ms", "p50_on_ms", "p99_on_ms", "p99_over_off_ms", "loop_late_on_ms"]
        keys.append("loop_held_on_ms")
        print(f"  {name:>9} " + " ".join(f"{row[k]:7.1f}ms" for k in keys))
        for warning in row["warnings"][:2]:
            print(f"            {warning[:100]}")
    goals = (
        f"p99 within {GOALS['p99_over_off_ms']:.0f} ms of off, loop late under {GOALS['loop_late_ms']:.0f} ms"
    )
    print(f"  goals: {goals}")


def _print(size: int, rows: dict[str, dict[str, Any]], gitops: dict[str, Any]) -> None:
    title = f"SPEC §12 impact review at {size:,} InferenceServices, 1,000 runtimes, 1,000 models"
    _print_changes(title, rows)
    g = gitops
    print(f"\nGitOps burst: {g['objects']} OME catalog objects, {CONNECTIONS} at a time: {g['wall_s']:.2f}s")
    print(f"  catalog reviews p50 {g['catalog_p50_ms']:.1f} ms, p99 {g['catalog_p99_ms']:.1f} ms")
    print(
        f"  InferenceService reviews p99 {g['isvc_burst_p99_ms']:.1f} ms "
        f"vs {g['isvc_idle_p99_ms']:.1f} ms idle "
        f"({g['isvc_p99_ratio']:.2f}x, goal {GOALS['isvc_p99_ratio']:.0f}x)"
    )
    clean = "none" if g["warnings_clean"] else "FOUND"
    print(f"  loop late at most {g['loop_late_ms']:.1f} ms (held {g['loop_held_ms']:.1f} ms of CPU)")
    print(f"  outcomes {g['outcomes']}")
    print(f"  longest warning {g['longest_warning']} characters; control characters: {clean}")


async def _main(size: int, samples: int) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    live = build(size)
    rows = await changes(live, samples)
    gitops = await burst(live)
    return rows, gitops


async def _tenants(size: int, samples: int) -> dict[str, dict[str, Any]]:
    live = build_tenants(size)
    rows = await changes(live, samples)
    rows["ambiguity"] = await _ambiguity_only(live, samples)
    return rows


async def _ambiguity_only(live: Catalog, samples: int) -> dict[str, Any]:
    """The ``new`` change with the ambiguity review alone (``--deny-ambiguous-runtimes``, the impact warning
    off): nothing spends the budget on InferenceServices first, so the per-namespace views are reached."""
    body = objects.runtime("bench-new", size_range=("1B", "80B"), priority=9)
    row: dict[str, Any] = {}
    probe = LoopProbe()
    for on in (False, True):
        config = WebhookConfig(catalog_impact=False, deny_ambiguous_runtimes=on)
        handler = _handler(live, impact=on, kind=Kind.CLUSTER_SERVING_RUNTIME, config=config)
        times: list[float] = []
        probe.start()
        answer: tuple[float, list[str], str | None] = (0.0, [], None)
        for _ in range(samples):
            answer = await _answer(handler, body, None, "CREATE")
            times.append(answer[0])
            await asyncio.sleep(0.002)
        late = await probe.stop()
        label = "on" if on else "off"
        row[f"p50_{label}_ms"] = 1000 * statistics.median(times)
        row[f"p99_{label}_ms"] = 1000 * _quantile(times, 0.99)
        row[f"loop_late_{label}_ms"] = 1000 * late
        row[f"loop_held_{label}_ms"] = 1000 * max(probe.held, default=0.0)
        if on:
            row["warnings"], row["denied"] = answer[1], answer[2]
    row["p99_over_off_ms"] = row["p99_on_ms"] - row["p99_off_ms"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.impact", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--only", choices=["tenants"], help="run only the tenant-heavy case")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.only == "tenants":
        tenants = asyncio.run(_tenants(args.size, args.samples))
        title = (
            f"SPEC §12 impact review, tenant-heavy: {TENANTS:,} namespaces with a ServingRuntime, "
            f"{args.size:,} InferenceServices, 1,000 runtimes, 1,000 models"
        )
        _print_changes(title, tenants)
        if args.out is not None:
            args.out.write_text(json.dumps({"tenants": tenants}, indent=2, ensure_ascii=False) + "\n")
        return 0
    rows, gitops = asyncio.run(_main(args.size, args.samples))
    _print(args.size, rows, gitops)
    if args.out is not None:
        args.out.write_text(
            json.dumps({"changes": rows, "gitops": gitops}, indent=2, ensure_ascii=False) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
