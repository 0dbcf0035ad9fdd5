"""Replicas as real `ome-selector run --leader-election` processes (SPEC §8): one writer, fail-over, fencing.

Short Lease timings (3 s lease, 2 s renew deadline, 0.5 s retry) keep this quick; the rules are those of the
chart's 15/10/2. Throughout, every InferenceService must carry exactly one event per change: a duplicate
would mean two replicas wrote.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from kubernetes import client

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


def lease(api_client: Any, namespace: str) -> Any:
    """The replicas' Lease (its holderIdentity and resourceVersion)."""
    return client.CoordinationV1Api(api_client).read_namespaced_lease("ome-selector", namespace)


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
    # The leader renews twice more (the followers, retrying at the same period, judge a renewed Lease).
    versions = {lease(api_client, namespace).metadata.resource_version}

    def renewed_twice() -> bool:
        versions.add(lease(api_client, namespace).metadata.resource_version)
        return len(versions) >= 3

    eventually(renewed_twice, what="two renewals of the Lease")
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
    create(api_client, objects.runtime("rt-4b", namespace=namespace, size_range=("2B", "4B")))
    all_reasons(api_client, namespace, "RuntimeSelected", timeout=60)
    second = one_leader(running)
    assert second != first

    # SIGTERM hands over at once: the Lease is released before the process ends, not left to expire (an
    # unreleased Lease would still name the stopped replica for a whole lease duration).
    holder = lease(api_client, namespace).spec.holder_identity
    running[second].process.send_signal(signal.SIGTERM)
    running[second].process.wait(30)
    assert lease(api_client, namespace).spec.holder_identity != holder
    third = one_leader(running)

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
    # Awake, the old leader finds its renew deadline passed and steps down; only as leader could it write.
    eventually(lambda: stopped.metric("ome_selector_leader") == 0, what="the woken leader stepping down")
    assert stopped.metric("ome_selector_api_writes_total") == writes_before, "a paused leader wrote on waking"
    assert leaders(running) == ["d"]

    # Across all of it: one event per change and InferenceService, never two — the last change moved each from
    # rt-4b to rt-1b (SPEC §12 "Switch events").
    expected.update({(name, "RuntimeSelectionChanged"): 1 for name in ISVCS})
    eventually(lambda: events(api_client, namespace) == expected, what="one switch event each")
    assert events(api_client, namespace) == expected
