"""What a platform engineer sees: kubectl columns and describe, health, metrics and `ome-selector cleanup`."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
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


def _cleanup(control_plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ome_selector.cli.ome_selector",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "cleanup",
            *args,
        ],
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
