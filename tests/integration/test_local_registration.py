"""kill -9 of a local `ome-selector run` with its webhook (SPEC §8 "Local webhook registration", §5 writes).

A killed operator leaves its ValidatingWebhookConfiguration behind, pointing at a dead port: with
``failurePolicy: Fail`` every InferenceService write the webhook covers fails. Its name is stable
(``ome-selector-local-<instance>``), so the next start replaces it; ``ome-selector cleanup`` removes it
without a start. Killed in the middle of a burst of re-evaluations, nothing is written twice: the stored
condition is the memory, so the restart finishes the burst with one event per InferenceService at most.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import Counter
from typing import Any

import yaml
from kubernetes import client

from harness import objects
from harness.controlplane import ControlPlane
from harness.kube import create, eventually, list_objects, patch
from harness.operator_process import operator_process
from ome_selector.kube.connection import kubeconfig_context
from ome_selector.webhook.registration import default_instance

ISVCS = [f"svc-{index}" for index in range(150)]
ENGINE = {"minReplicas": 1}


def _reasons(api_client: Any, namespace: str) -> Counter[str | None]:
    """RuntimeReady reasons of the InferenceServices, from one listing."""
    reasons: Counter[str | None] = Counter()
    for item in list_objects(api_client, "InferenceService", namespace):
        ours = [c for c in (item.get("status") or {}).get("conditions") or [] if c["type"] == "RuntimeReady"]
        reasons[ours[0]["reason"] if ours else None] += 1
    return reasons


def _events(api_client: Any, namespace: str) -> Counter[tuple[str, str]]:
    listed = client.CoreV1Api(api_client).list_namespaced_event(namespace).items
    return Counter((e.involved_object.name, str(e.reason)) for e in listed if e.involved_object.name in ISVCS)


def _configuration_names(api_client: Any) -> set[str]:
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    return {item.metadata.name for item in admission.list_validating_webhook_configuration().items}


def _create_checked(plane: ControlPlane, namespace: str, name: str) -> subprocess.CompletedProcess[str]:
    """A server-side dry-run create the webhook judges (the InferenceService has an engine)."""
    body = objects.inference_service(name, namespace=namespace, model_name="absent", engine=ENGINE)
    return plane.kubectl("create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(body), check=False)


def test_kill_9_mid_burst_then_restart_replaces_the_stale_registration_and_writes_nothing_twice(
    control_plane: ControlPlane, api_client: Any, namespace: str, cluster_objects: list[tuple[str, str]]
) -> None:
    model = f"{namespace}-llama"
    create(api_client, objects.model(model))
    cluster_objects.append(("ClusterBaseModel", model))
    create(api_client, objects.runtime("rt-1b", namespace=namespace, size_range=("500M", "2B")))
    for name in ISVCS:
        create(api_client, objects.inference_service(name, namespace=namespace, model_name=model))
    instance = f"kill{uuid.uuid4().hex[:6]}"
    registration = f"ome-selector-local-{instance}"
    arguments = ("-n", namespace, "--webhook-bind-address", "127.0.0.1:0", "--instance", instance)

    with operator_process(control_plane, *arguments, name=f"{instance}-first") as first:
        eventually(
            lambda: _reasons(api_client, namespace)["RuntimeSelected"] == len(ISVCS), what="all selected"
        )
        assert registration in _configuration_names(api_client)
        # The burst: every InferenceService turns RuntimeNotFound; kill -9 once some, not all, are written.
        patch(api_client, "ClusterBaseModel", model, {"spec": {"modelParameterSize": "3.21B"}})
        eventually(
            lambda: _reasons(api_client, namespace)["RuntimeNotFound"] >= 3, interval=0.01, what="the burst"
        )
        first.process.kill()
        first.process.wait()
    written_before_the_kill = _reasons(api_client, namespace)["RuntimeNotFound"]

    # The dead operator's registration is still there and blocks the InferenceServices it covers.
    assert registration in _configuration_names(api_client)
    blocked = _create_checked(control_plane, namespace, "blocked")
    assert blocked.returncode == 1
    assert "connection refused" in blocked.stderr, blocked.stderr

    with operator_process(control_plane, *arguments, name=f"{instance}-second"):
        # The same instance replaces its own stale registration: the webhook answers again.
        eventually(
            lambda: (
                "denied the request: model absent not found"
                in _create_checked(control_plane, namespace, "judged").stderr
            ),
            what="the webhook of the restarted operator answering",
        )
        eventually(
            lambda: _reasons(api_client, namespace)["RuntimeNotFound"] == len(ISVCS), what="the burst done"
        )
        eventually(
            lambda: len(_events(api_client, namespace)) >= len(ISVCS) - written_before_the_kill,
            what="the events of the burst",
        )
    events = _events(api_client, namespace)
    # Never two events for one change, whatever the kill interrupted. An event can be lost (SPEC §5: at
    # most once) only for a condition the killed operator wrote: its event may still have been waiting.
    assert set(events.values()) == {1}, events
    assert set(events) <= {(name, "RuntimeNotFound") for name in ISVCS}
    assert len(events) >= len(ISVCS) - written_before_the_kill, events
    assert registration not in _configuration_names(api_client)  # removed on a graceful stop
    print(f"kill -9 after {written_before_the_kill} of {len(ISVCS)} writes")


def test_cleanup_removes_the_stale_registration_of_this_instance_and_no_other(
    control_plane: ControlPlane, api_client: Any, namespace: str
) -> None:
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    other = f"ome-selector-local-other{uuid.uuid4().hex[:6]}"
    admission.create_validating_webhook_configuration(
        {
            "metadata": {
                "name": other,
                "labels": {"ome-selector.ome.io/local": "true"},
                "annotations": {"ome-selector.ome.io/instance": "another-host"},
            }
        }
    )
    # No --instance: the default, a hash of this kubeconfig context and host name, as cleanup computes it.
    mine = f"ome-selector-local-{default_instance(kubeconfig_context(control_plane.kubeconfig))}"
    arguments = ("-n", namespace, "--webhook-bind-address", "127.0.0.1:0")
    with operator_process(control_plane, *arguments, name=f"{namespace}-killed") as killed:
        eventually(
            lambda: mine in _configuration_names(api_client), what="the default instance's registration"
        )
        killed.process.kill()
        killed.process.wait()
    assert mine in _configuration_names(api_client)

    def cleanup(*flags: str) -> subprocess.CompletedProcess[str]:
        command = [
            sys.executable,
            "-m",
            "ome_selector.cli.ome_selector",
            "--kubeconfig",
            str(control_plane.kubeconfig),
        ]
        return subprocess.run(
            [*command, "cleanup", *flags], capture_output=True, text=True, timeout=60, check=False
        )

    removed = cleanup("--webhook-only")
    assert (removed.returncode, removed.stdout) == (0, f"removed validatingwebhookconfiguration {mine}\n")
    assert mine not in _configuration_names(api_client)
    assert other in _configuration_names(api_client)  # another instance's: not this one's to remove
    assert _create_checked(control_plane, namespace, "free").returncode == 0
    listed = cleanup("--webhook-only", "--all-instances", "--dry-run")
    assert f"would remove validatingwebhookconfiguration {other}\n" in listed.stdout
    assert other in _configuration_names(api_client)
    assert cleanup("--webhook-only", "--instance", "another-host").returncode == 0
    assert other not in _configuration_names(api_client)
