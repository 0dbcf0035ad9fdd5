"""The operator's v5 rules on the real control plane: another writer of RuntimeReady (SPEC §5), the switch
event (SPEC §12), and InferenceServices with ``spec.replicaRefs`` (SPEC §5, §7) on either CRD set — this
module's last test also runs on OME's own CRDs (tests/integration/beside_ome/)."""

from __future__ import annotations

from typing import Any

import yaml
from kubernetes import client

from harness import objects
from harness.kube import create, events_for, eventually, get, patch, runtime_ready
from harness.operator_thread import OperatorThread
from ome_selector.webhook.config import WebhookConfig

OTHER = "ome-manager"
CONFLICT = (
    f"RuntimeReady is also written by {OTHER}; beside OME v1.3 or later run ome-selector with --report-only"
)
#: What OME v1.3's controller writes after a False of its own (SPEC §0).
OME_RESOLVED = {
    "type": "RuntimeReady",
    "status": "True",
    "reason": "RuntimeResolved",
    "message": "",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}
LOCAL = ("127.0.0.1", 0)


def _total(runner: OperatorThread, metric: str, **labels: str) -> float:
    total = 0.0
    for family in runner.operator.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == metric and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def _events(api_client: Any, namespace: str, name: str) -> list[tuple[str, str, str, int]]:
    """(type, reason, message, count) of every event recorded on ``name``."""
    return sorted(
        (event.type, event.reason, event.message, event.count or 1)
        for event in events_for(api_client, namespace, name)
    )


def _write_as(api_client: Any, namespace: str, name: str, manager: str, conditions: list[Any]) -> None:
    """Another controller's status write (as OME's makes them: the whole status), as field manager
    ``manager``."""
    body = get(api_client, "InferenceService", name, namespace)
    body.setdefault("status", {})["conditions"] = conditions
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object_status(
        "ome.io", "v1beta1", namespace, "inferenceservices", name, body, field_manager=manager
    )


def _ours(api_client: Any, namespace: str, name: str, message: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        condition = runtime_ready(api_client, name, namespace)
        return condition if condition and condition["message"] == message else None

    return eventually(probe, what=f"RuntimeReady {message!r}")


def _condition_managers(api_client: Any, namespace: str, name: str) -> set[str]:
    return {
        entry["manager"]
        for entry in get(api_client, "InferenceService", name, namespace)["metadata"]["managedFields"]
        if "f:conditions" in entry.get("fieldsV1", {}).get("f:status", {})
    }


def test_another_writer_is_reported_once_counted_once_and_left_alone_until_it_agrees_or_is_gone(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    """SPEC §5 "Another writer": from the finding on, the product writes nothing to that RuntimeReady (the
    resyncs of every second would otherwise write it back each time), until the other writer's condition is
    gone or equals the verdict; a restart finds the other writer from the managed fields."""
    create(api_client, objects.model("m", namespace=namespace, size="7B"))
    create(api_client, objects.runtime("rt", namespace=namespace))
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    runner: OperatorThread = running_operator(namespaces=[namespace], resync_seconds=1.0)
    selected = "selected ServingRuntime rt (score 2)"
    ours = _ours(api_client, namespace, "svc", selected)
    assert _total(runner, "ome_selector_condition_conflicts_total") == 0

    # OME v1.3 beside a standalone ome-selector: its controller writes RuntimeReady too.
    _write_as(api_client, namespace, "svc", OTHER, [OME_RESOLVED])
    eventually(lambda: _total(runner, "ome_selector_condition_conflicts_total") == 1, what="one conflict")
    eventually(lambda: len(_events(api_client, namespace, "svc")) == 1, what="the conflict event")
    assert _events(api_client, namespace, "svc") == [("Warning", "RuntimeReadyConflict", CONFLICT, 1)]
    # Resyncs go on evaluating it: nothing is written, counted or reported again.
    writes = _total(runner, "ome_selector_api_writes_total", operation="patch_status")
    resyncs = runner.operator.resyncs
    eventually(lambda: runner.operator.resyncs >= resyncs + 2, what="two more resyncs")
    runner.wait_idle()
    assert runtime_ready(api_client, "svc", namespace) == OME_RESOLVED
    assert _condition_managers(api_client, namespace, "svc") == {OTHER}
    assert _total(runner, "ome_selector_api_writes_total", operation="patch_status") == writes
    assert _total(runner, "ome_selector_condition_conflicts_total") == 1
    assert _total(runner, "ome_selector_inferenceservices", status="True", reason="RuntimeSelected") == 1

    # A restart finds the other writer from the managed fields: still left alone, reported once again.
    runner.stop()
    restarted: OperatorThread = running_operator(namespaces=[namespace], resync_seconds=1.0)
    eventually(lambda: _total(restarted, "ome_selector_condition_conflicts_total") == 1, what="found again")
    resyncs = restarted.operator.resyncs
    eventually(lambda: restarted.operator.resyncs >= resyncs + 2, what="two resyncs after the restart")
    restarted.wait_idle()
    assert runtime_ready(api_client, "svc", namespace) == OME_RESOLVED
    assert _total(restarted, "ome_selector_api_writes_total", operation="patch_status") == 0

    # The other writer agrees with the verdict: the condition is the product's again, and a change of the
    # verdict is written (over a condition the other writer wrote last).
    _write_as(api_client, namespace, "svc", OTHER, [{**ours, "lastTransitionTime": "2026-01-02T00:00:00Z"}])
    resyncs = restarted.operator.resyncs
    eventually(lambda: restarted.operator.resyncs >= resyncs + 2, what="two resyncs after it agreed")
    create(api_client, objects.runtime("better", namespace=namespace, priority=5))

    def moved() -> dict[str, Any] | None:
        condition = runtime_ready(api_client, "svc", namespace)
        return condition if condition and "better" in condition["message"] else None

    better = eventually(moved, what="RuntimeReady naming the better runtime")
    assert better["reason"] == "RuntimeSelected"
    assert _condition_managers(api_client, namespace, "svc") == {"ome-selector"}

    # Yielding again, then the other writer's condition is removed: restored as usual.
    _write_as(api_client, namespace, "svc", OTHER, [OME_RESOLVED])
    eventually(lambda: _total(restarted, "ome_selector_condition_conflicts_total") == 2, what="a new finding")
    _write_as(api_client, namespace, "svc", OTHER, [])
    restored = _ours(api_client, namespace, "svc", better["message"])
    assert restored["status"] == "True"


def test_a_switch_of_the_selected_runtime_records_one_normal_event(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("m", namespace=namespace, size="7B"))
    create(api_client, objects.runtime("a", namespace=namespace, priority=2))
    create(api_client, objects.runtime("b", namespace=namespace, priority=1))
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    runner: OperatorThread = running_operator(namespaces=[namespace])
    _ours(api_client, namespace, "svc", "selected ServingRuntime a (score 4)")
    patch(api_client, "ServingRuntime", "a", {"spec": {"disabled": True}}, namespace)
    _ours(api_client, namespace, "svc", "selected ServingRuntime b (score 2)")
    switched = "selected runtime changed from ServingRuntime a to ServingRuntime b (score 2)"
    eventually(
        lambda: _events(api_client, namespace, "svc") == [("Normal", "RuntimeSelectionChanged", switched, 1)],
        what="the switch event",
    )
    evaluations = runner.evaluations()
    runner.call(runner.operator.resync())
    # The resync evaluated svc again (a write and its event would come of that evaluation), and idle means
    # every write done and every event submitted with one recorded.
    runner.wait_idle()
    assert runner.evaluations() > evaluations
    assert _events(api_client, namespace, "svc") == [("Normal", "RuntimeSelectionChanged", switched, 1)]


def test_report_only_records_no_switch_event(api_client: Any, namespace: str, running_operator: Any) -> None:
    create(api_client, objects.model("m", namespace=namespace, size="7B"))
    create(api_client, objects.runtime("a", namespace=namespace, priority=2))
    create(api_client, objects.runtime("b", namespace=namespace, priority=1))
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    # As OME would have left it: selected a (the product only reads it in report-only mode).
    selected_a = {
        "type": "RuntimeReady",
        "status": "True",
        "reason": "RuntimeSelected",
        "message": "selected ServingRuntime a (score 4)",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    _write_as(api_client, namespace, "svc", OTHER, [selected_a])
    runner: OperatorThread = running_operator(namespaces=[namespace], report_only=True)
    runner.wait_idle()
    patch(api_client, "ServingRuntime", "a", {"spec": {"disabled": True}}, namespace)
    eventually(
        lambda: _total(runner, "ome_selector_evaluations_total", reason="RuntimeSelected") >= 2,
        what="the re-evaluation",
    )
    runner.wait_idle()
    assert runtime_ready(api_client, "svc", namespace) == selected_a
    assert _events(api_client, namespace, "svc") == []


REPLICA_REFS = [{"name": "replica-a"}, {"name": "replica-b"}]


def test_an_inference_service_with_replica_refs_on_either_crds(
    api_client: Any, control_plane: Any, namespace: str, running_operator: Any, crd_profile: str
) -> None:
    """Our CRD keeps unknown fields under spec, so spec.replicaRefs is stored and the InferenceService is left
    alone: allowed untouched, no condition, no event, no metric row. OME's CRDs of tests/data/ome-crds (before
    its replicaRefs) do not know the field: kubectl's strict field validation refuses the object, and without
    it the apiserver prunes the field and stores an InferenceService that is evaluated like any other — the
    product cannot see a field the cluster's CRD drops."""
    create(api_client, objects.model("m", namespace=namespace, size="7B"))
    create(api_client, objects.runtime("rt", namespace=namespace))
    runner: OperatorThread = running_operator(
        namespaces=[namespace], webhook=WebhookConfig(bind_address=LOCAL)
    )
    fronting = objects.inference_service("fronting", namespace=namespace, model_name="m", engine={})
    fronting["spec"]["replicaRefs"] = REPLICA_REFS
    # Mixed modes that OME denies: the mode warning, unless the InferenceService is left alone.
    fronting["spec"]["engine"] = {"annotations": {"ome.io/deploymentMode": "OMENative"}}
    fronting["spec"]["decoder"] = {"annotations": {"ome.io/deploymentMode": "RawDeployment"}}
    document = yaml.safe_dump(fronting)
    created = control_plane.kubectl("create", "-f", "-", input=document, check=False)
    if crd_profile == "ours":
        assert created.returncode == 0, created.stderr
        assert [line for line in created.stderr.splitlines() if line.startswith("Warning: ")] == []
        runner.wait_idle(settle=1.0)
        assert (
            get(api_client, "InferenceService", "fronting", namespace)["spec"]["replicaRefs"] == REPLICA_REFS
        )
        assert runtime_ready(api_client, "fronting", namespace) is None
        assert _events(api_client, namespace, "fronting") == []
        assert _total(runner, "ome_selector_inferenceservices") == 0
        assert _total(runner, "ome_selector_api_writes_total") == 0
        return
    assert created.returncode == 1
    assert 'strict decoding error: unknown field "spec.replicaRefs"' in created.stderr
    created = control_plane.kubectl("create", "--validate=false", "-f", "-", input=document, check=False)
    assert created.returncode == 0, created.stderr
    assert "replicaRefs" not in get(api_client, "InferenceService", "fronting", namespace)["spec"]
    assert [line for line in created.stderr.splitlines() if line.startswith("Warning: ")] == [
        "Warning: runtime rt will be auto-selected for model m",
        "Warning: spec.engine and spec.decoder ask for different deployment modes (OMENative, "
        "RawDeployment); OME denies this: InvalidDeploymentModeCombination",
    ]
    _ours(api_client, namespace, "fronting", "selected ServingRuntime rt (score 2)")
    runner.wait_idle()
    assert _total(runner, "ome_selector_inferenceservices", status="True") == 1
