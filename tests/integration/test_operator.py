"""The operator on the real control plane: SPEC §5 outcomes, triggers, events, idempotence, footprint."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from kubernetes import client

from harness import objects
from harness.kube import (
    create,
    delete,
    events_for,
    eventually,
    get,
    list_objects,
    patch,
    runtime_ready,
)
from harness.ome_data import V13_CRD_PROFILES
from harness.operator_thread import OperatorThread
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import InferenceService
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.outcome import evaluate

Row = tuple[str, str, str, str | None]  # status, reason, message, event reason


def _create_cluster(api_client: Any, created: list[tuple[str, str]], body: dict[str, Any]) -> None:
    create(api_client, body)
    created.append((body["kind"], body["metadata"]["name"]))


def _condition(api_client: Any, namespace: str, name: str, reason: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        condition = runtime_ready(api_client, name, namespace)
        return condition if condition and condition["reason"] == reason else None

    return eventually(probe, what=f"{namespace}/{name} RuntimeReady reason {reason}")


def _event_reasons(api_client: Any, namespace: str, name: str) -> Counter[str]:
    return Counter(event.reason for event in events_for(api_client, namespace, name))


# --- every row of SPEC §5 --------------------------------------------------------------------------------


# The advisory event names the runtime instead of the condition's "using specified" prefix (SPEC §5).
EVENT_MESSAGES = {
    "RuntimeSpecified": "runtime rt-small does not declare support for model llama: "
    "model size 3.21B is outside supported range [500M, 2B]"
}


def _outcome_rows(ns: str) -> dict[str, Row]:
    no_runtime = (
        f"no runtime supports model huge (checked 3 runtimes: 3 namespace-scoped, 0 cluster-scoped): "
        f"{ns}/rt-fit (model size 405B is outside supported range [2B, 4B]); "
        f"{ns}/rt-small (model size 405B is outside supported range [500M, 2B]); "
        f"{ns}/rt-disabled (runtime is disabled)"
    )
    unsupported = "model size 3.21B is outside supported range [500M, 2B]"
    advisory = (
        f"using specified ServingRuntime rt-small; it does not declare support for model llama: {unsupported}"
    )
    return {
        "selected": ("True", "RuntimeSelected", "selected ServingRuntime rt-fit (score 2)", None),
        "specified": ("True", "RuntimeSpecified", "using specified ServingRuntime rt-fit", None),
        "specified-unsupported": (
            "True",
            "RuntimeSpecified",
            advisory,
            "RuntimeCompatibilityAdvisory",
        ),
        "pinned-unsupported": (
            "True",
            "RuntimeSpecified",
            advisory,
            None,
        ),
        "runtime-disabled": (
            "False",
            "RuntimeDisabled",
            "namespace-scoped runtime rt-disabled is disabled",
            "RuntimeDisabled",
        ),
        "runtime-missing": (
            "False",
            "RuntimeNotFound",
            f"runtime nope not found in namespace {ns} or at cluster scope",
            "RuntimeNotFound",
        ),
        "no-runtime": ("False", "RuntimeNotFound", no_runtime, "RuntimeNotFound"),
        "model-missing": (
            "False",
            "ModelNotFound",
            f"model ghost not found: no BaseModel in namespace {ns} and no ClusterBaseModel",
            None,
        ),
        "model-disabled": ("False", "ModelDisabled", "model off is disabled", None),
        "model-pending": (
            "Unknown",
            "ModelMetadataPending",
            "model bare has no modelFormat yet; runtime selection waits for it",
            None,
        ),
    }


def _outcome_objects(ns: str) -> list[dict[str, Any]]:
    isvc = objects.inference_service
    return [
        objects.model("llama", namespace=ns, size="3.21B"),
        objects.model("huge", namespace=ns, size="405B"),
        objects.model("off", namespace=ns, size="3.21B", disabled=True),
        objects.model("bare", namespace=ns, with_format=False),
        objects.runtime("rt-fit", namespace=ns, size_range=("2B", "4B")),
        objects.runtime("rt-small", namespace=ns, size_range=("500M", "2B"), auto_select=False),
        objects.runtime("rt-disabled", namespace=ns, disabled=True),
        isvc("selected", namespace=ns, model_name="llama"),
        isvc("specified", namespace=ns, model_name="llama", runtime_name="rt-fit"),
        isvc("specified-unsupported", namespace=ns, model_name="llama", runtime_name="rt-small"),
        isvc(
            "pinned-unsupported", namespace=ns, model_name="llama", runtime_name="rt-small", auto_sync=False
        ),
        isvc("runtime-disabled", namespace=ns, model_name="llama", runtime_name="rt-disabled"),
        isvc("runtime-missing", namespace=ns, model_name="llama", runtime_name="nope"),
        isvc("no-runtime", namespace=ns, model_name="huge"),
        isvc("model-missing", namespace=ns, model_name="ghost"),
        isvc("model-disabled", namespace=ns, model_name="off"),
        isvc("model-pending", namespace=ns, model_name="bare"),
    ]


# Needs spec.runtime.autoSync, which OME's CRDs before v1.3 reject (tests/integration/beside_ome/, cfa05c6).
NEEDS_V13 = {"pinned-unsupported"}


def test_every_outcome_row_with_its_condition_and_event(
    api_client: Any, namespace: str, running_operator: Any, crd_profile: str
) -> None:
    skipped = set() if crd_profile in V13_CRD_PROFILES else NEEDS_V13
    for body in _outcome_objects(namespace):
        if body["metadata"]["name"] not in skipped:
            create(api_client, body)
    runner: OperatorThread = running_operator()

    rows = {name: row for name, row in _outcome_rows(namespace).items() if name not in skipped}
    for name, (status, reason, message, event_reason) in rows.items():
        condition = _condition(api_client, namespace, name, reason)
        assert (condition["status"], condition["message"]) == (status, message), name
        assert condition["lastTransitionTime"]
        expected_events = Counter({event_reason: 1}) if event_reason else Counter()
        runner.wait_idle()
        assert _event_reasons(api_client, namespace, name) == expected_events, name
        if event_reason:
            (event,) = events_for(api_client, namespace, name)
            assert event.type == "Warning"
            assert event.message == EVENT_MESSAGES.get(reason, message)
            assert event.source.component == "ome-selector"


def test_inference_service_without_model_is_left_alone(
    api_client: Any, control_plane: Any, namespace: str, running_operator: Any
) -> None:
    control_plane.kubectl(
        "apply",
        "-f",
        "-",
        input=(
            "apiVersion: ome.io/v1beta1\nkind: InferenceService\n"
            f"metadata: {{name: modelless, namespace: {namespace}}}\nspec: {{predictor: {{x: 1}}}}\n"
        ),
    )
    # Its own namespace only: objects other test files left on this control plane are not this test's.
    runner = running_operator(namespaces=[namespace])
    runner.wait_idle(settle=1.0)
    body = get(api_client, "InferenceService", "modelless", namespace)
    assert "status" not in body or not body["status"].get("conditions")
    assert _total(runner, "ome_selector_api_writes_total") == 0


# --- triggers -------------------------------------------------------------------------------------------


def test_cluster_model_gaining_a_size_turns_selected_into_not_found_and_back(
    api_client: Any, namespace: str, running_operator: Any, cluster_objects: list[tuple[str, str]]
) -> None:
    model_name = f"{namespace}-llama"
    _create_cluster(api_client, cluster_objects, objects.model(model_name))
    create(api_client, objects.runtime("rt-1b", namespace=namespace, size_range=("500M", "2B")))
    create(api_client, objects.inference_service("chat", namespace=namespace, model_name=model_name))
    runner = running_operator()
    selected = _condition(api_client, namespace, "chat", "RuntimeSelected")
    assert selected["message"] == "selected ServingRuntime rt-1b (score 2)"

    patch(api_client, "ClusterBaseModel", model_name, {"spec": {"modelParameterSize": "3.21B"}})
    not_found = _condition(api_client, namespace, "chat", "RuntimeNotFound")
    assert not_found["status"] == "False"
    assert "model size 3.21B is outside supported range [500M, 2B]" in not_found["message"]
    assert not_found["lastTransitionTime"] >= selected["lastTransitionTime"]
    runner.wait_idle()
    assert _event_reasons(api_client, namespace, "chat") == Counter({"RuntimeNotFound": 1})

    create(api_client, objects.runtime("rt-3b", namespace=namespace, size_range=("2B", "4B")))
    back = _condition(api_client, namespace, "chat", "RuntimeSelected")
    assert back["message"] == "selected ServingRuntime rt-3b (score 2)"
    runner.wait_idle()
    assert _event_reasons(api_client, namespace, "chat") == Counter({"RuntimeNotFound": 1})


def test_model_change_reaches_every_namespace(
    api_client: Any, namespace: str, running_operator: Any, cluster_objects: list[tuple[str, str]]
) -> None:
    other = f"{namespace}-b"
    core: Any = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": other}})
    model_name = f"{namespace}-shared"
    _create_cluster(api_client, cluster_objects, objects.model(model_name))
    for ns in (namespace, other):
        create(api_client, objects.runtime("rt", namespace=ns, size_range=("1B", "8B")))
        create(api_client, objects.inference_service("svc", namespace=ns, model_name=model_name))
    running_operator()
    for ns in (namespace, other):
        _condition(api_client, ns, "svc", "RuntimeSelected")
    patch(api_client, "ClusterBaseModel", model_name, {"spec": {"modelParameterSize": "70B"}})
    for ns in (namespace, other):
        _condition(api_client, ns, "svc", "RuntimeNotFound")
    delete(api_client, "ClusterBaseModel", model_name)
    for ns in (namespace, other):
        _condition(api_client, ns, "svc", "ModelNotFound")


def test_runtime_changes_and_deletions_re_evaluate(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("m", namespace=namespace, size="7B"))
    create(api_client, objects.runtime("a", namespace=namespace, priority=2))
    create(api_client, objects.runtime("b", namespace=namespace, priority=1))
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    running_operator()
    assert _condition(api_client, namespace, "svc", "RuntimeSelected")["message"] == (
        "selected ServingRuntime a (score 4)"
    )
    patch(api_client, "ServingRuntime", "a", {"spec": {"disabled": True}}, namespace)
    eventually(
        lambda: (
            (runtime_ready(api_client, "svc", namespace) or {}).get("message")
            == "selected ServingRuntime b (score 2)"
        ),
        what="switch to runtime b",
    )
    delete(api_client, "ServingRuntime", "b", namespace)
    _condition(api_client, namespace, "svc", "RuntimeNotFound")


def test_a_named_runtime_appearing_later_re_evaluates(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("m", namespace=namespace, size="7B"))
    create(
        api_client, objects.inference_service("svc", namespace=namespace, model_name="m", runtime_name="late")
    )
    running_operator()
    _condition(api_client, namespace, "svc", "RuntimeNotFound")
    create(api_client, objects.runtime("late", namespace=namespace))
    assert _condition(api_client, namespace, "svc", "RuntimeSpecified")["status"] == "True"


def test_status_only_changes_do_not_re_evaluate(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("m", namespace=namespace, size="7B"))
    create(api_client, objects.runtime("rt", namespace=namespace))
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    runner = running_operator()
    _condition(api_client, namespace, "svc", "RuntimeSelected")
    runner.wait_idle()
    evaluations = _total(runner, "ome_selector_evaluations_total")
    objects_api = client.CustomObjectsApi(api_client)
    for index in range(3):
        objects_api.patch_namespaced_custom_object_status(
            "ome.io",
            "v1beta1",
            namespace,
            "inferenceservices",
            "svc",
            {"status": {"url": f"http://x/{index}"}},
        )
    patch(api_client, "InferenceService", "svc", {"metadata": {"labels": {"team": "a"}}}, namespace)
    runner.wait_idle(settle=1.0)
    assert _total(runner, "ome_selector_evaluations_total") == evaluations


# --- writes, idempotence, footprint -----------------------------------------------------------------------


def _total(runner: OperatorThread, metric: str, **labels: str) -> float:
    total = 0.0
    for family in runner.operator.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == metric and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def _metadata_of_everything(api_client: Any, namespace: str) -> dict[str, Any]:
    snapshot: dict[str, Any] = {}
    for kind in ("BaseModel", "ServingRuntime", "InferenceService"):
        listing = list_objects(api_client, kind, namespace)
        for item in listing:
            metadata = item["metadata"]
            snapshot[f"{kind}/{metadata['name']}"] = {
                "annotations": metadata.get("annotations"),
                "labels": metadata.get("labels"),
                "finalizers": metadata.get("finalizers"),
                "generation": metadata.get("generation"),
                "spec": item.get("spec"),
                # Models and runtimes must not be written at all; InferenceServices only in status.
                "resourceVersion": metadata["resourceVersion"] if kind != "InferenceService" else None,
                "managers": sorted(
                    (m["manager"], m.get("subresource", "")) for m in metadata.get("managedFields") or []
                ),
            }
    return snapshot


def test_no_footprint_and_restart_is_idempotent(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    for body in _outcome_objects(namespace):
        create(api_client, body)
    before = _metadata_of_everything(api_client, namespace)
    first = running_operator(namespaces=[namespace])
    for name, (_, reason, _, _) in _outcome_rows(namespace).items():
        _condition(api_client, namespace, name, reason)
    first.wait_idle()
    writes = _total(first, "ome_selector_api_writes_total", operation="patch_status")
    assert writes == len(_outcome_rows(namespace))  # exactly one status write per InferenceService
    after = _metadata_of_everything(api_client, namespace)
    for key, meta in before.items():
        changed = {field for field in meta if meta[field] != after[key][field]}
        if key.startswith("InferenceService/"):
            # The only trace on an InferenceService: the status subresource, owned by our field manager.
            assert after[key]["managers"] == sorted({*meta["managers"], ("ome-selector", "status")}), key
            changed.discard("managers")
        assert not changed, (key, changed)
    versions = {
        name: get(api_client, "InferenceService", name, namespace)["metadata"]["resourceVersion"]
        for name in _outcome_rows(namespace)
    }
    events = len(client.CoreV1Api(api_client).list_namespaced_event(namespace).items)
    # A resync (a full re-listing, as after a watch gap) evaluates everything again (SPEC §5, level-triggered)
    # and, with nothing changed, writes and records nothing either.
    all_writes = _total(first, "ome_selector_api_writes_total")
    evaluations = _total(first, "ome_selector_evaluations_total")
    first.call(first.operator.resync())
    first.wait_idle()
    assert _total(first, "ome_selector_api_writes_total") == all_writes
    assert _total(first, "ome_selector_evaluations_total") >= evaluations + len(_outcome_rows(namespace))
    assert len(client.CoreV1Api(api_client).list_namespaced_event(namespace).items) == events
    first.stop()

    second = running_operator(namespaces=[namespace])
    second.wait_idle(settle=1.0)
    assert _total(second, "ome_selector_evaluations_total") >= len(_outcome_rows(namespace))
    assert _total(second, "ome_selector_api_writes_total") == 0
    assert versions == {
        name: get(api_client, "InferenceService", name, namespace)["metadata"]["resourceVersion"]
        for name in _outcome_rows(namespace)
    }
    assert len(client.CoreV1Api(api_client).list_namespaced_event(namespace).items) == events


def test_report_only_writes_nothing(api_client: Any, namespace: str, running_operator: Any) -> None:
    for body in _outcome_objects(namespace):
        create(api_client, body)
    # Scoped to the test's namespace: the gauges below would otherwise count earlier tests' objects too.
    runner = running_operator(report_only=True, namespaces=[namespace])
    runner.wait_idle(settle=1.0)
    assert _total(runner, "ome_selector_evaluations_total") >= len(_outcome_rows(namespace))
    assert _total(runner, "ome_selector_inferenceservices", status="False", reason="RuntimeNotFound") == 2
    assert _total(runner, "ome_selector_api_writes_total") == 0
    for name in _outcome_rows(namespace):
        assert runtime_ready(api_client, name, namespace) is None
    assert client.CoreV1Api(api_client).list_namespaced_event(namespace).items == []


def test_other_conditions_and_status_fields_survive_a_concurrent_writer(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("m", namespace=namespace, size="7B"))
    create(api_client, objects.runtime("rt", namespace=namespace))
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    objects_api = client.CustomObjectsApi(api_client)
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "Deploying",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    objects_api.patch_namespaced_custom_object_status(
        "ome.io",
        "v1beta1",
        namespace,
        "inferenceservices",
        "svc",
        {"status": {"url": "http://svc", "conditions": [ready]}},
    )
    runner = running_operator()
    _condition(api_client, namespace, "svc", "RuntimeSelected")
    runner.wait_idle()
    controller = runner.operator.controller
    assert controller is not None
    key = next(k for k in controller.catalog.keys(kind=None) if k.name == "svc" and k.namespace == namespace)

    # Another controller writes the status after the operator last saw the object: its cached copy is stale.
    other = {
        "type": "IngressReady",
        "status": "True",
        "reason": "Up",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    body = get(api_client, "InferenceService", "svc", namespace)
    body["status"]["conditions"].append(other)
    body["status"]["address"] = {"url": "http://svc.example"}
    stale = controller._stored[key]
    objects_api.replace_namespaced_custom_object_status(
        "ome.io", "v1beta1", namespace, "inferenceservices", "svc", body
    )
    controller._stored[key] = stale  # as if the watch event had not arrived yet
    patch(api_client, "ServingRuntime", "rt", {"spec": {"disabled": True}}, namespace)

    final = _condition(api_client, namespace, "svc", "RuntimeNotFound")
    assert final["status"] == "False"
    status = get(api_client, "InferenceService", "svc", namespace)["status"]
    types = [c["type"] for c in status["conditions"]]
    assert types.count("RuntimeReady") == 1
    assert {"Ready", "IngressReady"} <= set(types)
    assert status["url"] == "http://svc"
    assert status["address"] == {"url": "http://svc.example"}


def test_a_burst_of_inference_services_costs_one_write_each(
    api_client: Any, namespace: str, running_operator: Any, cluster_objects: list[tuple[str, str]]
) -> None:
    count = 300
    model_name = f"{namespace}-burst"
    _create_cluster(api_client, cluster_objects, objects.model(model_name))
    create(api_client, objects.runtime("rt-1b", namespace=namespace, size_range=("500M", "2B")))
    for index in range(count):
        create(
            api_client, objects.inference_service(f"svc-{index}", namespace=namespace, model_name=model_name)
        )
    runner = running_operator(namespaces=[namespace])
    runner.wait_idle(timeout=120)
    before = _total(runner, "ome_selector_api_writes_total", operation="patch_status")
    patch(api_client, "ClusterBaseModel", model_name, {"spec": {"modelParameterSize": "3.21B"}})
    eventually(
        lambda: (
            _total(runner, "ome_selector_inferenceservices", status="False", reason="RuntimeNotFound")
            == count
        ),
        timeout=120,
        what=f"{count} InferenceServices to turn RuntimeNotFound",
    )
    runner.wait_idle(timeout=120)
    assert _total(runner, "ome_selector_api_writes_total", operation="patch_status") - before == count
    assert _total(runner, "ome_selector_api_writes_total", operation="create_event") == count
    for index in (0, count // 2, count - 1):
        condition = runtime_ready(api_client, f"svc-{index}", namespace)
        assert condition is not None
        assert condition["reason"] == "RuntimeNotFound"


def test_nothing_is_lost_when_the_apiserver_is_briefly_unavailable(
    api_client: Any, control_plane: Any, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("m", namespace=namespace))
    create(api_client, objects.runtime("rt-1b", namespace=namespace, size_range=("500M", "2B")))
    for index in range(20):
        create(api_client, objects.inference_service(f"svc-{index}", namespace=namespace, model_name="m"))
    runner = running_operator(namespaces=[namespace])
    runner.wait_idle()
    patch(api_client, "BaseModel", "m", {"spec": {"modelParameterSize": "3.21B"}}, namespace)
    # Frozen while the operator is re-evaluating: its writes (and possibly the watch event) stall or fail
    # and are retried with backoff once the apiserver answers again.
    with control_plane.apiserver_paused():
        time.sleep(3)
    for index in range(20):
        _condition(api_client, namespace, f"svc-{index}", "RuntimeNotFound")
    runner.wait_idle()
    assert _total(runner, "ome_selector_api_writes_total", operation="patch_status") == 40
    for index in range(20):
        assert _event_reasons(api_client, namespace, f"svc-{index}") == Counter({"RuntimeNotFound": 1})


# --- level-triggered resync (SPEC §5 v3) ------------------------------------------------------------------


def _one_event(api_client: Any, namespace: str) -> None:
    """The event of the first write (recorded right after it) has arrived."""
    eventually(
        lambda: _event_reasons(api_client, namespace, "svc") == Counter({"RuntimeNotFound": 1}),
        what="the RuntimeNotFound event",
    )


def _without_ours(api_client: Any, namespace: str, name: str) -> None:
    """Another writer removes RuntimeReady (and keeps its own condition)."""
    conditions = [{"type": "Ready", "status": "False", "reason": "Deploying", "message": "someone else's"}]
    objects_api: Any = client.CustomObjectsApi(api_client)
    objects_api.patch_namespaced_custom_object_status(
        "ome.io", "v1beta1", namespace, "inferenceservices", name, {"status": {"conditions": conditions}}
    )


def test_a_removed_condition_is_restored_by_the_resync_with_its_event_once_per_removal(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("m", namespace=namespace, size="70B"))
    create(api_client, objects.runtime("rt", namespace=namespace, size_range=("1B", "8B")))
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    runner = running_operator(namespaces=[namespace], resync_seconds=1.0)
    written = _condition(api_client, namespace, "svc", "RuntimeNotFound")
    _one_event(api_client, namespace)
    for removal in (1, 2):
        _without_ours(api_client, namespace, "svc")
        restored = _condition(api_client, namespace, "svc", "RuntimeNotFound")
        assert (restored["status"], restored["message"]) == (written["status"], written["message"])
        stored = get(api_client, "InferenceService", "svc", namespace)["status"]["conditions"]
        assert [c["type"] for c in stored] == ["Ready", "RuntimeReady"]  # the other writer's condition kept
        expected = Counter({"RuntimeNotFound": 1 + removal})
        eventually(
            lambda: _event_reasons(api_client, namespace, "svc") == expected,  # noqa: B023 - called at once
            what="one event for the restore",
        )
    # Resyncs with nothing removed write and record nothing more.
    resyncs, writes = runner.operator.resyncs, _total(runner, "ome_selector_api_writes_total")
    eventually(lambda: runner.operator.resyncs >= resyncs + 2, what="two more resyncs")
    runner.wait_idle()
    assert _total(runner, "ome_selector_api_writes_total") == writes
    assert _event_reasons(api_client, namespace, "svc") == Counter({"RuntimeNotFound": 3})


def test_a_message_changing_only_in_its_runtime_counts_is_written_without_an_event(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("m", namespace=namespace, size="70B"))
    create(api_client, objects.runtime("rt", namespace=namespace, size_range=("1B", "8B")))
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    runner = running_operator(namespaces=[namespace])
    before = _condition(api_client, namespace, "svc", "RuntimeNotFound")
    assert "1 namespace-scoped" in before["message"]
    _one_event(api_client, namespace)
    # A runtime of another format: the message now counts two runtimes, one serving other formats.
    other = objects.with_field(
        objects.runtime("onnx-rt", namespace=namespace),
        "spec.supportedModelFormats.0.modelFormat.name",
        "onnx",
    )
    create(api_client, other)

    def recounted() -> dict[str, Any] | None:
        condition = runtime_ready(api_client, "svc", namespace)
        return condition if condition and "2 namespace-scoped" in condition["message"] else None

    after = eventually(recounted, what="the message with the new counts")
    assert after["message"].endswith("; 1 runtime serves other formats")
    assert after["lastTransitionTime"] == before["lastTransitionTime"]
    # An event is submitted with the write it belongs to, and idle means every submitted event is recorded.
    runner.wait_idle()
    assert _event_reasons(api_client, namespace, "svc") == Counter({"RuntimeNotFound": 1})


def _count_condition_writes(runner: Any) -> Counter[str]:
    """From now on, each condition write of the operator by InferenceService name (the writes still go to the
    apiserver)."""
    writer = runner.operator.controller._writer
    written: Counter[str] = Counter()
    patch_conditions = writer.patch_conditions

    async def counting(namespace: str, name: str, **arguments: Any) -> dict[str, Any]:
        body: dict[str, Any] = await patch_conditions(namespace, name, **arguments)
        written[name] += 1
        return body

    writer.patch_conditions = counting
    return written


def test_a_burst_of_catalog_changes_costs_each_inference_service_at_most_two_condition_writes(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    # SPEC §5 "Bursts": each runtime created changes every message's runtime counts; one pass after the burst
    # writes each condition once (twice if the burst outlasts its longest wait), and the final condition is
    # exactly the one an immediate evaluation of the final catalog gives.
    count, burst = 10, 30
    model_body = objects.model("m", namespace=namespace, size="70B")
    create(api_client, model_body)
    isvcs = [objects.inference_service(f"svc-{i}", namespace=namespace, model_name="m") for i in range(count)]
    for body in isvcs:
        create(api_client, body)
    runner = running_operator(namespaces=[namespace])
    for body in isvcs:
        _condition(api_client, namespace, body["metadata"]["name"], "RuntimeNotFound")
    runner.wait_idle(timeout=120)
    before = _total(runner, "ome_selector_api_writes_total", operation="patch_status")
    written = _count_condition_writes(runner)
    runtimes = [
        objects.runtime(f"rt-{i:02d}", namespace=namespace, size_range=("1B", f"{2 + i}B"))
        for i in range(burst)
    ]
    with ThreadPoolExecutor(8) as pool:  # the runtimes arrive together, as from one `kubectl apply`
        list(pool.map(lambda body: create(api_client, body), runtimes))
    final = [load_resource(b) for b in [model_body, *runtimes, isvcs[0]]]
    assert all(final)
    assert isinstance(final[-1], InferenceService)
    expected = evaluate(Catalog.from_resources(r for r in final if r is not None), final[-1])
    assert expected is not None
    eventually(
        lambda: (runtime_ready(api_client, "svc-0", namespace) or {}).get("message") == expected.message,
        timeout=120,
        what="the message of the final catalog",
    )
    runner.wait_idle(timeout=120)
    assert sum(written.values()) == (
        _total(runner, "ome_selector_api_writes_total", operation="patch_status") - before
    )
    assert set(written) == {body["metadata"]["name"] for body in isvcs}
    assert max(written.values()) <= 2, written
    for body in isvcs:
        name = body["metadata"]["name"]
        condition = runtime_ready(api_client, name, namespace)
        assert condition is not None
        assert (condition["status"], condition["reason"], condition["message"]) == (
            expected.status,
            expected.reason,
            expected.message.replace("svc-0", name),
        )


def test_a_mixed_burst_of_runtimes_and_models_costs_at_most_two_condition_writes(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    # SPEC §5 "Bursts", as a catalog apply makes them: runtimes and models in one burst, one model new (its
    # InferenceServices waited for it), one model resized. A model's change is evaluated at once, the
    # runtimes' after the burst: each InferenceService is written at most twice, and ends exactly where an
    # immediate evaluation of the final catalog puts it.
    resized = objects.model("resized", namespace=namespace, size="70B")
    arriving = objects.model("arriving", namespace=namespace, size="7B")
    create(api_client, resized)
    isvcs = [
        objects.inference_service(f"{model}-{i}", namespace=namespace, model_name=model)
        for model in ("resized", "arriving")
        for i in range(4)
    ]
    for body in isvcs:
        create(api_client, body)
    runner = running_operator(namespaces=[namespace])
    for body in isvcs:
        eventually(
            partial(runtime_ready, api_client, body["metadata"]["name"], namespace), what="a condition"
        )
    runner.wait_idle(timeout=120)
    written = _count_condition_writes(runner)
    runtimes = [
        objects.runtime(f"rt-{i:02d}", namespace=namespace, size_range=("1B", f"{2 + i}B")) for i in range(30)
    ]
    changes: list[Callable[[], object]] = [partial(create, api_client, body) for body in runtimes]
    changes.insert(10, partial(create, api_client, arriving))
    smaller = {"spec": {"modelParameterSize": "8B"}}
    changes.insert(20, partial(patch, api_client, "BaseModel", "resized", smaller, namespace))
    with ThreadPoolExecutor(4) as pool:  # together, as from one `kubectl apply` of a catalog
        list(pool.map(lambda change: change(), changes))
    final = [
        load_resource(get(api_client, kind, name, namespace))
        for kind, name in [("BaseModel", "resized"), ("BaseModel", "arriving")]
        + [("ServingRuntime", body["metadata"]["name"]) for body in runtimes]
    ]
    catalog = Catalog.from_resources(r for r in final if r is not None)
    expected = {}
    for body in isvcs:
        isvc = load_resource(body)
        assert isinstance(isvc, InferenceService)
        outcome = evaluate(catalog, isvc)
        assert outcome is not None
        expected[body["metadata"]["name"]] = (outcome.status, outcome.reason, outcome.message)

    def current() -> dict[str, tuple[Any, Any, Any]]:
        found = {}
        for name in expected:
            condition = runtime_ready(api_client, name, namespace) or {}
            found[name] = (condition.get("status"), condition.get("reason"), condition.get("message"))
        return found

    eventually(lambda: current() == expected or None, timeout=120, what="the final catalog's conditions")
    runner.wait_idle(timeout=120)
    assert current() == expected
    assert set(written) == set(expected), written  # every one of them changed
    assert max(written.values()) <= 2, written
