"""How fast the operator recovers, on a local control plane: a Lease hand-over and a watch gap.

The tests show *that* these happen (tests/integration/test_leaderelection.py, test_watch_gap*.py); how long
they take is measured here, never asserted:

- *released*: two electors (lease 2 s, renew deadline 1.5 s, retry 0.25 s, as the tests use); the leader is
  cancelled as SIGTERM does (it releases the Lease), and the follower's start of leading is timed from the
  cancel. SPEC §8: a follower takes a released Lease at its next retry;
- *killed*: the same, but the leader is cut off the API first, so it vanishes without releasing: the follower
  waits for the Lease to expire on its own clock (about the lease duration);
- *watch gap*: an operator with its webhook; the only model and runtime are deleted in etcd while the
  apiserver is down, etcd compacted, the apiserver started again; timed from its return until the webhook
  denies an InferenceService of the vanished model (SPEC §5: a relist, not the hourly resync).

    python -m bench.recovery [--rounds 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes_asyncio import client as aclient
from kubernetes_asyncio import config as aconfig

from harness import objects
from harness.admission import wait_until_serving
from harness.controlplane import ControlPlane, running_control_plane
from harness.kube import create, eventually
from harness.operator_thread import OperatorThread
from ome_selector.kube.leaderelection import ApiLeaseStore, LeaderElector, LeaseRecord, LeaseTimings
from ome_selector.operator.app import OperatorConfig
from ome_selector.webhook.config import WebhookConfig

TIMINGS = LeaseTimings(lease_duration=2.0, renew_deadline=1.5, retry_period=0.25)


class _Cuttable:
    """The Lease store behind a switch that cuts the replica off the API."""

    def __init__(self, store: ApiLeaseStore) -> None:
        self.store, self.cut = store, False

    def _check(self) -> None:
        if self.cut:
            raise ConnectionError("cut off")

    async def get(self) -> LeaseRecord | None:
        self._check()
        return await self.store.get()

    async def create(self, record: LeaseRecord) -> LeaseRecord | None:
        self._check()
        return await self.store.create(record)

    async def update(self, record: LeaseRecord) -> LeaseRecord | None:
        self._check()
        return await self.store.update(record)


async def _hand_over(plane: ControlPlane, lease: str, *, release: bool) -> float:
    """Seconds from stopping the leader until the follower starts leading."""
    configuration = aclient.Configuration()
    await aconfig.load_kube_config(config_file=str(plane.kubeconfig), client_configuration=configuration)
    async with aclient.ApiClient(configuration) as api:
        started: dict[str, float] = {}
        stores: dict[str, _Cuttable] = {}
        electors: dict[str, LeaderElector] = {}
        tasks: dict[str, asyncio.Task[None]] = {}

        def noting(name: str) -> Callable[[], None]:
            return lambda: started.__setitem__(name, time.monotonic())

        for name in ("a", "b"):
            stores[name] = _Cuttable(ApiLeaseStore(api, "default", lease))
            electors[name] = LeaderElector(stores[name], name, TIMINGS, on_started_leading=noting(name))
            tasks[name] = asyncio.create_task(electors[name].run())
            while name == "a" and "a" not in started:
                await asyncio.sleep(0.01)
        await asyncio.sleep(3 * TIMINGS.retry_period)  # b has read a's Lease as a follower
        if not release:
            stores["a"].cut = True
        stopped = time.monotonic()
        tasks["a"].cancel()
        await asyncio.gather(tasks["a"], return_exceptions=True)
        while "b" not in started:
            await asyncio.sleep(0.005)
        tasks["b"].cancel()
        await asyncio.gather(tasks["b"], return_exceptions=True)
        return started["b"] - stopped


def _watch_gap(plane: ControlPlane, round_: int) -> float:
    """Seconds from the apiserver's return until the webhook denies an InferenceService of the vanished
    model."""
    namespace, model, runtime = f"gap-{round_}", f"lonely-{round_}", f"only-{round_}"
    new_client: Any = config.new_client_from_config  # the official client is untyped
    with new_client(config_file=str(plane.kubeconfig)) as admin:
        core: Any = client.CoreV1Api(admin)
        core.create_namespace({"metadata": {"name": namespace}})
        create(admin, objects.model(model, size="1B"))
        create(admin, objects.runtime(runtime, size_range=(None, "2B")))
        runner = OperatorThread(
            OperatorConfig(
                kubeconfig=plane.kubeconfig,
                health_address=None,
                resync_seconds=3600.0,
                webhook=WebhookConfig(bind_address=("127.0.0.1", 0), instance=f"gap-{round_}"),
            )
        ).start()
        try:
            wait_until_serving(runner, admin)
            probe = objects.inference_service(
                "probe", namespace=namespace, model_name=model, engine={"minReplicas": 1}
            )

            def dry_run() -> Any:
                return plane.kubectl(
                    "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(probe), check=False
                )

            eventually(lambda: dry_run().returncode == 0, what="the runtime serving the model")

            def behind_its_back() -> None:
                plane.etcd_delete(f"/registry/ome.io/clusterbasemodels/{model}")
                plane.etcd_delete(f"/registry/ome.io/clusterservingruntimes/{runtime}")
                plane.etcd_compact()

            plane.restart_apiserver(while_down=behind_its_back)
            back = time.monotonic()
            eventually(lambda: dry_run().returncode == 1, timeout=120, interval=0.05, what="the denial")
            return time.monotonic() - back
        finally:
            runner.stop()


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values), "min": min(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recovery", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="measurements of each kind (default 5)")
    parser.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    args = parser.parse_args(argv)
    figures: dict[str, list[float]] = {"released": [], "killed": [], "watch gap": []}
    with running_control_plane() as plane:
        for round_ in range(args.rounds):
            figures["released"].append(asyncio.run(_hand_over(plane, f"released-{round_}", release=True)))
            figures["killed"].append(asyncio.run(_hand_over(plane, f"killed-{round_}", release=False)))
            figures["watch gap"].append(_watch_gap(plane, round_))
    for name, values in figures.items():
        summary = _summary(values)
        print(
            f"{name:>10}: median {summary['median']:.2f} s, min {summary['min']:.2f} s, "
            f"max {summary['max']:.2f} s ({len(values)} rounds)"
        )
    if args.out is not None:
        args.out.write_text(json.dumps({name: {"seconds": v, **_summary(v)} for name, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
