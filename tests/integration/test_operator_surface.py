"""What a platform engineer sees: kubectl columns and describe, health, metrics and `ome-selector cleanup`."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
import uuid
from functools import partial
from typing import Any

from harness import objects
from harness.controlplane import ControlPlane, free_port
from harness.kube import create, eventually, get, runtime_ready


def _scenario(api_client: Any, namespace: str) -> None:
    create(api_client, objects.model("llama", namespace=namespace, size="3.21B"))
    create(api_client, objects.runtime("rt-1b", namespace=namespace, size_range=("500M", "2B")))
    create(api_client, objects.inference_service("chat", namespace=namespace, model_name="llama"))


def test_kubectl_shows_the_verdict_and_the_event(
    api_client: Any, control_plane: ControlPlane, namespace: str, running_operator: Any
) -> None:
    _scenario(api_client, namespace)
    running_operator()
    eventually(lambda: runtime_ready(api_client, "chat", namespace), what="RuntimeReady")
    wide = control_plane.kubectl("get", "isvc", "-n", namespace, "-o", "wide").stdout
    header, row = wide.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "MODEL", "RUNTIME", "RUNTIMEREADY", "REASON"]
    assert "MESSAGE" in header
    assert row.split()[:4] == ["chat", "llama", "False", "RuntimeNotFound"]
    assert "model size 3.21B is outside supported range [500M, 2B]" in row
    narrow = control_plane.kubectl("get", "isvc", "-n", namespace).stdout
    assert "MESSAGE" not in narrow

    def described_with_event() -> str | None:
        out = control_plane.kubectl("describe", "isvc", "chat", "-n", namespace).stdout
        return out if "RuntimeNotFound" in out.split("Events:")[-1] else None

    described = eventually(described_with_event, what="the event in kubectl describe")
    events = described.split("Events:")[-1]
    assert "Warning" in events
    assert "ome-selector" in events
    assert "no runtime supports model llama" in events


def test_health_and_metrics_endpoints(api_client: Any, namespace: str, running_operator: Any) -> None:
    _scenario(api_client, namespace)
    port = free_port()
    runner = running_operator(health_address=("127.0.0.1", port), namespaces=[namespace])
    runner.wait_idle()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
        assert response.status == 200
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    for needle in (
        'ome_selector_evaluations_total{reason="RuntimeNotFound",status="False"} 1.0',
        'ome_selector_inferenceservices{reason="RuntimeNotFound",status="False"} 1.0',
        "ome_selector_evaluation_duration_seconds_bucket",
        "ome_selector_workqueue_depth 0.0",
        'ome_selector_api_writes_total{operation="patch_status"} 1.0',
        'ome_selector_api_writes_total{operation="create_event"} 1.0',
        "ome_selector_events_dropped_total 0.0",
    ):
        assert needle in text, needle


def _cleanup_command(control_plane: ControlPlane, *args: str) -> list[str]:
    kubeconfig = str(control_plane.kubeconfig)
    return [
        sys.executable,
        "-m",
        "ome_selector.cli.ome_selector",
        "--kubeconfig",
        kubeconfig,
        "cleanup",
        *args,
    ]


def _cleanup(control_plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _cleanup_command(control_plane, *args),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _write_status(api_client: Any, namespace: str, name: str, manager: str, **changes: Any) -> None:
    """Another writer's status update (as OME's controller makes them), under its own field manager."""
    from kubernetes import client

    body = get(api_client, "InferenceService", name, namespace)
    status = body.setdefault("status", {})
    for key, value in changes.items():
        status[key] = value(status.get(key)) if callable(value) else value
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object_status(
        "ome.io", "v1beta1", namespace, "inferenceservices", name, body, field_manager=manager
    )


def _plus(condition: dict[str, Any]) -> Any:
    return lambda conditions: [*(conditions or []), condition]


def test_cleanup_removes_only_our_condition(
    api_client: Any, control_plane: ControlPlane, namespace: str, running_operator: Any
) -> None:
    _scenario(api_client, namespace)
    # Another controller's condition and status field first, then the operator's RuntimeReady beside them.
    _write_status(api_client, namespace, "chat", "ome", conditions=[READY], url="http://chat")
    runner = running_operator()
    eventually(lambda: runtime_ready(api_client, "chat", namespace), what="RuntimeReady")
    runner.stop()

    dry = _cleanup(control_plane, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove RuntimeReady from inferenceservice {namespace}/chat" in dry.stdout
    assert runtime_ready(api_client, "chat", namespace) is not None

    done = _cleanup(control_plane)
    assert done.returncode == 0, done.stderr
    assert f"removed RuntimeReady from inferenceservice {namespace}/chat" in done.stdout
    status = get(api_client, "InferenceService", "chat", namespace)["status"]
    assert runtime_ready(api_client, "chat", namespace) is None
    assert status["conditions"] == [READY]
    assert status["url"] == "http://chat"
    again = _cleanup(control_plane)
    assert f"removed RuntimeReady from inferenceservice {namespace}/chat" not in again.stdout


READY = {"type": "Ready", "status": "True", "reason": "Up"}
OMES = {"type": "RuntimeReady", "status": "True", "reason": "RuntimeResolved"}


def test_cleanup_keeps_a_condition_another_writer_owns_and_says_so(
    api_client: Any, control_plane: ControlPlane, namespace: str, running_operator: Any
) -> None:
    """OME v1.3's controller writes RuntimeReady itself (SPEC §0): the managedFields tell whose it is."""
    _scenario(api_client, namespace)
    # "omes": only OME's controller wrote its RuntimeReady (in a namespace the operator does not watch).
    elsewhere = f"{namespace}-ome"
    control_plane.kubectl("create", "namespace", elsewhere)
    create(api_client, objects.model("llama", namespace=elsewhere, size="3.21B"))
    create(api_client, objects.inference_service("omes", namespace=elsewhere, model_name="llama"))
    _write_status(api_client, elsewhere, "omes", "ome-manager", conditions=[OMES])
    # "chat": ours at first, then another writer rewrote the (atomic) list: it owns every entry now.
    runner = running_operator(namespaces=[namespace])
    eventually(lambda: runtime_ready(api_client, "chat", namespace), what="RuntimeReady")
    runner.stop()
    _write_status(api_client, namespace, "chat", "ome-manager", conditions=_plus(READY))

    done = _cleanup(control_plane)
    assert done.returncode == 0, done.stderr
    for where in (f"{namespace}/chat", f"{elsewhere}/omes"):
        assert (
            f"skipped inferenceservice {where}: its RuntimeReady was not written by ome-selector "
            "(status.conditions last written by ome-manager); kept\n"
        ) in done.stdout
    assert f"removed RuntimeReady from inferenceservice {namespace}/" not in done.stdout
    # The count covers the whole cluster, which other tests share.
    assert re.search(
        r"^changed \d+ InferenceService\(s\), skipped \d+ whose RuntimeReady another writer owns "
        r"\(--any-writer removes it too\)\n\Z",
        done.stdout,
        re.MULTILINE,
    ), done.stdout
    assert get(api_client, "InferenceService", "omes", elsewhere)["status"]["conditions"] == [OMES]
    assert runtime_ready(api_client, "chat", namespace) is not None

    forced = _cleanup(control_plane, "--any-writer")
    assert forced.returncode == 0, forced.stderr
    assert f"removed RuntimeReady from inferenceservice {namespace}/chat" in forced.stdout
    assert get(api_client, "InferenceService", "chat", namespace)["status"]["conditions"] == [READY]


def _deployment_and_pod(api_client: Any, namespace: str) -> None:
    from kubernetes import client

    labels = {"app": "op"}
    apps: Any = client.AppsV1Api(api_client)  # dict bodies: the typed models would only re-encode them
    core: Any = client.CoreV1Api(api_client)
    coordination: Any = client.CoordinationV1Api(api_client)
    apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "op"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "op", "image": "op"}]},
                },
            },
        },
    )
    # No controller-manager runs here: this pod stands for a replica that is still terminating.
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "op-1", "labels": labels},
            "spec": {"containers": [{"name": "op", "image": "op"}]},
        },
    )
    # A hook Job's pod with the same labels (the cleanup's own, say) is never waited for.
    job_owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "hook",
        "uid": str(uuid.uuid4()),
        "controller": True,
    }
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "hook", "labels": labels, "ownerReferences": [job_owner]},
            "spec": {"containers": [{"name": "hook", "image": "op"}]},
        },
    )
    coordination.create_namespaced_lease(
        namespace, {"metadata": {"name": "op"}, "spec": {"holderIdentity": "op-1"}}
    )


class _ArmedConfiguration:
    """A chart-like ValidatingWebhookConfiguration with both webhooks armed (failurePolicy Fail); its rules
    name a resource nothing writes, so it blocks no other test."""

    def __init__(self, api_client: Any, name: str) -> None:
        from kubernetes import client

        self.api: Any = client.AdmissionregistrationV1Api(api_client)
        self.name = name

    def arm(self) -> None:
        body = self.api.read_validating_webhook_configuration(self.name)
        for webhook in body.webhooks:
            webhook.failure_policy = "Fail"
        self.api.replace_validating_webhook_configuration(self.name, body)

    def delete(self) -> None:
        self.api.delete_validating_webhook_configuration(self.name)


def _armed_configuration(api_client: Any, name: str) -> _ArmedConfiguration:
    configuration = _ArmedConfiguration(api_client, name)
    webhook = {
        "clientConfig": {"service": {"namespace": "nowhere", "name": "nothing", "path": "/validate"}},
        "rules": [
            {
                "apiGroups": ["ome.io"],
                "apiVersions": ["v1beta1"],
                "operations": ["CREATE"],
                "resources": ["nothingwritesthese"],
            }
        ],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    configuration.api.create_validating_webhook_configuration(
        {
            "metadata": {"name": name},
            "webhooks": [{**webhook, "name": f"{kind}.armed.test"} for kind in ("first", "second")],
        }
    )
    return configuration


def _failure_policies(configuration: _ArmedConfiguration) -> list[str]:
    current = configuration.api.read_validating_webhook_configuration(configuration.name)
    return [webhook.failure_policy for webhook in current.webhooks]


def test_cleanup_in_the_cluster_stops_the_operator_first_and_deletes_its_lease(
    api_client: Any, control_plane: ControlPlane, namespace: str, running_operator: Any
) -> None:
    from kubernetes import client

    core: Any = client.CoreV1Api(api_client)
    apps: Any = client.AppsV1Api(api_client)
    other = f"{namespace[:50]}-other"
    core.create_namespace({"metadata": {"name": other}})
    _scenario(api_client, namespace)
    _scenario(api_client, other)
    runner = running_operator()
    for where in (namespace, other):
        eventually(partial(runtime_ready, api_client, "chat", where), what="RuntimeReady")
    runner.stop()
    _deployment_and_pod(api_client, namespace)
    webhooks = _armed_configuration(api_client, f"{namespace[:40]}-armed")
    hook = [
        "--conditions-only",
        f"--disarm-webhook={namespace[:40]}-armed",
        f"--stop-deployment={namespace}/op",
        f"--delete-lease={namespace}/op",
        f"--namespace={namespace}",
    ]

    # The pod never goes: the cleanup gives up and changes nothing (the operator could still write).
    stuck = _cleanup(control_plane, *hook, "--dry-run", "--timeout=1")
    assert stuck.returncode == 0, stuck.stderr
    assert _failure_policies(webhooks) == ["Fail", "Fail"]  # a dry run changes nothing
    stuck = _cleanup(control_plane, *hook, "--timeout=1")
    assert stuck.returncode == 1
    # Disarmed first: an operator that will not stop leaves no fail-closed webhook behind it either.
    assert _failure_policies(webhooks) == ["Ignore", "Ignore"]
    webhooks.arm()
    assert stuck.stderr == (
        f"ome-selector cleanup: cannot stop deployment {namespace}/op: 1 pod(s) still there after 1 s\n"
    )
    assert runtime_ready(api_client, "chat", namespace) is not None
    assert apps.read_namespaced_deployment("op", namespace).spec.replicas == 0

    dry = _cleanup(control_plane, *hook, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == [
        f"would set failurePolicy Ignore on validatingwebhookconfiguration {namespace[:40]}-armed",
        f"would scale deployment {namespace}/op to 0",
        f"would remove RuntimeReady from inferenceservice {namespace}/chat",
        "would change 1 InferenceService(s)",
        f"would delete lease {namespace}/op",
    ]

    apps.patch_namespaced_deployment_scale("op", namespace, {"spec": {"replicas": 2}})
    with subprocess.Popen(
        _cleanup_command(control_plane, *hook),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        eventually(
            lambda: apps.read_namespaced_deployment("op", namespace).spec.replicas == 0 or None,
            what="the Deployment scaled to 0",
        )
        assert process.poll() is None  # waiting for the pod
        assert runtime_ready(api_client, "chat", namespace) is not None
        # A replica that had not begun to drain arms it again: once the pods are gone it is disarmed again.
        webhooks.arm()
        core.delete_namespaced_pod("op-1", namespace, grace_period_seconds=0)
        out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert out.splitlines() == [
        f"set failurePolicy Ignore on validatingwebhookconfiguration {namespace[:40]}-armed",
        f"scaled deployment {namespace}/op to 0",
        f"no pod of deployment {namespace}/op is left",
        f"set failurePolicy Ignore on validatingwebhookconfiguration {namespace[:40]}-armed",
        f"removed RuntimeReady from inferenceservice {namespace}/chat",
        "changed 1 InferenceService(s)",
        f"deleted lease {namespace}/op",
    ]
    assert runtime_ready(api_client, "chat", namespace) is None
    assert runtime_ready(api_client, "chat", other) is not None  # not a namespace it was given
    coordination: Any = client.CoordinationV1Api(api_client)
    leases = coordination.list_namespaced_lease(namespace).items
    assert [lease.metadata.name for lease in leases] == []
    # Run again (a retried hook): nothing left to do, and a missing Deployment or Lease is no error.
    assert _failure_policies(webhooks) == ["Ignore", "Ignore"]
    apps.delete_namespaced_deployment("op", namespace)
    webhooks.delete()
    again = _cleanup(control_plane, *hook)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        f"validatingwebhookconfiguration {namespace[:40]}-armed is absent",
        f"deployment {namespace}/op is absent",
        "changed 0 InferenceService(s)",
    ]
