"""Replicas as real `ome-selector run --leader-election` processes (SPEC §8): one writer, fail-over, fencing.

Short Lease timings (3 s lease, 2 s renew deadline, 0.5 s retry) keep this quick; the rules are those of the
chart's 15/10/2. Throughout, every InferenceService must carry exactly one event per change: a duplicate
would mean two replicas wrote.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from harness import objects
from harness.controlplane import ControlPlane
from harness.kube import create, events_for, eventually, patch, runtime_ready
from harness.operator_process import RunningOperator, operator_process

ISVCS = [f"chat-{index}" for index in range(5)]
LEASE = ("3", "2", "0.5")  # lease duration, renew deadline, retry period


@pytest.fixture
def replicas(control_plane: ControlPlane, namespace: str) -> Iterator[Any]:
    with ExitStack() as stack:

        def start(name: str) -> RunningOperator:
            arguments = (
                "--leader-election",
                f"--leader-election-namespace={namespace}",
                "--leader-election-id=ome-selector",
                f"--leader-election-lease-duration={LEASE[0]}",
                f"--leader-election-renew-deadline={LEASE[1]}",
                f"--leader-election-retry-period={LEASE[2]}",
                "--resync-seconds=3600",
            )
            return stack.enter_context(
                operator_process(control_plane, *arguments, name=f"{namespace}-{name}")
            )

        yield start


def leaders(running: dict[str, RunningOperator]) -> list[str]:
    alive = {name: op for name, op in running.items() if op.process.poll() is None}
    return [name for name, op in alive.items() if op.metric("ome_selector_leader") == 1]


def one_leader(running: dict[str, RunningOperator], timeout: float = 30.0) -> str:
    def single() -> list[str] | None:
        found = leaders(running)
        return found if len(found) == 1 else None

    return eventually(single, timeout=timeout, interval=0.05, what="exactly one leader")[0]


def reasons(api_client: Any, namespace: str) -> dict[str, str | None]:
    found = {}
    for name in ISVCS:
        condition = runtime_ready(api_client, name, namespace)
        found[name] = condition["reason"] if condition else None
    return found


def all_reasons(api_client: Any, namespace: str, reason: str, timeout: float = 30.0) -> None:
    eventually(
        lambda: all(r == reason for r in reasons(api_client, namespace).values()),
        timeout=timeout,
        what=f"every InferenceService {reason}",
    )


def events(api_client: Any, namespace: str) -> Counter[tuple[str, str]]:
    return Counter((name, e.reason) for name in ISVCS for e in events_for(api_client, namespace, name))


def test_one_writer_fail_over_and_fencing(
    api_client: Any, namespace: str, replicas: Any, cluster_objects: list[tuple[str, str]]
) -> None:
    model = f"{namespace}-llama"
    create(api_client, objects.model(model))
    cluster_objects.append(("ClusterBaseModel", model))
    create(api_client, objects.runtime("rt-1b", namespace=namespace, size_range=("500M", "2B")))
    for name in ISVCS:
        create(api_client, objects.inference_service(name, namespace=namespace, model_name=model))

    running = {name: replicas(name) for name in ("a", "b", "c")}
    first = one_leader(running)
    all_reasons(api_client, namespace, "RuntimeSelected")
    time.sleep(1.0)
    assert leaders(running) == [first]
    assert all(op.metric("ome_selector_leader") == 0 for n, op in running.items() if n != first)

    # A size change: exactly one event per InferenceService, recorded by the leader alone.
    patch(api_client, "ClusterBaseModel", model, {"spec": {"modelParameterSize": "3.21B"}})
    all_reasons(api_client, namespace, "RuntimeNotFound")
    expected = Counter({(name, "RuntimeNotFound"): 1 for name in ISVCS})
    eventually(lambda: events(api_client, namespace) == expected, what="one RuntimeNotFound event each")
    for name, op in running.items():
        if name != first:
            assert op.metric("ome_selector_api_writes_total") == 0, f"follower {name} wrote"

    # kill -9 the leader: another takes over after the lease and applies the next change.
    running[first].process.kill()
    running[first].process.wait()
    killed = time.monotonic()
    create(api_client, objects.runtime("rt-4b", namespace=namespace, size_range=("2B", "4B")))
    all_reasons(api_client, namespace, "RuntimeSelected", timeout=30)
    kill_failover = time.monotonic() - killed
    second = one_leader(running)
    assert second != first

    # SIGTERM hands over at once: the Lease is released, not left to expire.
    running[second].process.send_signal(signal.SIGTERM)
    terminated = time.monotonic()
    running[second].process.wait(30)
    third = one_leader(running)
    sigterm_handover = time.monotonic() - terminated
    assert sigterm_handover < 5, f"SIGTERM hand-over took {sigterm_handover:.1f} s"

    # SIGSTOP the leader past its lease: a new replica takes over; after SIGCONT the old one writes nothing.
    running["d"] = replicas("d")
    assert one_leader(running) == third
    stopped = running[third]
    writes_before = stopped.metric("ome_selector_api_writes_total")
    stopped.process.send_signal(signal.SIGSTOP)
    try:
        patch(api_client, "ClusterBaseModel", model, {"spec": {"modelParameterSize": "1.5B"}})
        eventually(
            lambda: all(
                (c := runtime_ready(api_client, n, namespace)) is not None and "rt-1b" in c["message"]
                for n in ISVCS
            ),
            timeout=30,
            what="the new leader applies the change made while the old one is paused",
        )
    finally:
        stopped.process.send_signal(signal.SIGCONT)
    time.sleep(2 * float(LEASE[0]))
    assert stopped.metric("ome_selector_api_writes_total") == writes_before, "a paused leader wrote on waking"
    assert stopped.metric("ome_selector_leader") == 0
    assert leaders(running) == ["d"]

    # Across all of it: one event per change and InferenceService, never two — the last change moved each from
    # rt-4b to rt-1b (SPEC §12 "Switch events").
    expected.update({(name, "RuntimeSelectionChanged"): 1 for name in ISVCS})
    eventually(lambda: events(api_client, namespace) == expected, what="one switch event each")
    assert events(api_client, namespace) == expected
    print(f"fail-over after kill -9: {kill_failover:.1f} s; SIGTERM hand-over: {sigterm_handover:.1f} s")
