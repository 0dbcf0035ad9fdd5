"""The chart's opt-in status policy (templates/statuspolicy.yaml) on a real API server: the operator's
ServiceAccount may change only the RuntimeReady condition of an InferenceService's status (SPEC §5).

The chart's ServiceAccount, RBAC and policy are rendered and applied for real; the writes are made as the
ServiceAccount (impersonated by the admin, as the policy sees the account's own requests), in the shape the
operator's writer sends: a merge patch of the whole ``status.conditions`` list carrying the resourceVersion.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from harness import objects
from harness.chart import CHART_DIR, helm_against, render
from harness.controlplane import ControlPlane
from harness.kube import create, eventually, get
from ome_selector.api.resources import Kind
from ome_selector.kube.connection import ClusterAccess
from ome_selector.kube.objects import Objects
from ome_selector.operator.conditions import with_condition
from ome_selector.operator.writer import COMPONENT

VAP_API = "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"
APPLIED = {
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
ONLY = "the ome-selector operator may change only the RuntimeReady condition of an InferenceService's status"
READY = {"type": "Ready", "status": "False", "reason": "ComponentNotReady", "message": "engine not ready"}
RUNTIME_READY = {
    "type": "RuntimeReady",
    "status": "False",
    "reason": "RuntimeNotFound",
    "message": "no runtime supports model m",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}
SELECTED = RUNTIME_READY | {"status": "True", "reason": "RuntimeSelected", "message": "selected rt (score 2)"}


def _values(namespace: str, enabled: bool = True) -> dict[str, Any]:
    return {
        "statusPolicy": {"enabled": enabled},
        "watchNamespaces": [namespace],
        "webhook": {"enabled": False},
        "cleanup": {"enabled": False},
    }


def _policies(docs: list[dict[str, Any]]) -> list[str]:
    return [d["metadata"]["name"] for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]


@pytest.fixture
def installed(control_plane: ControlPlane, namespace: str) -> Iterator[tuple[str, str]]:
    """(the operator's username, the policy's name), the chart's account, RBAC and policy applied."""
    release = f"st{uuid.uuid4().hex[:6]}"
    docs = render(_values(namespace), release=release, namespace=namespace, extra=["--api-versions", VAP_API])
    applied = [doc for doc in docs if doc["kind"] in APPLIED]
    control_plane.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(doc) for doc in applied))
    account = next(doc for doc in applied if doc["kind"] == "ServiceAccount")["metadata"]["name"]
    policy = f"{release}-ome-selector-runtime-ready-only"
    try:
        yield f"system:serviceaccount:{namespace}:{account}", policy
    finally:
        for doc in applied:
            if "namespace" not in doc["metadata"]:
                control_plane.kubectl("delete", doc["kind"], doc["metadata"]["name"], "--ignore-not-found")


def test_the_policy_renders_only_when_enabled_and_served(namespace: str) -> None:
    served = ["--api-versions", VAP_API]
    assert _policies(render(_values(namespace), extra=served)) == [
        "ome-selector-runtime-ready-only",
        "ome-selector-own-events",
    ]
    assert _policies(render(_values(namespace, enabled=False), extra=served)) == []
    assert _policies(render(_values(namespace))) == []  # the cluster does not serve the API
    assert "ome-selector-runtime-ready-only" not in _policies(render({}, extra=served))  # off by default


def test_helm_sees_the_api_on_a_cluster_that_serves_it(control_plane: ControlPlane, namespace: str) -> None:
    """Against the cluster (its discovery: Kubernetes 1.36 serves the API), helm renders the policies."""
    values = ["--set", "statusPolicy.enabled=true", "--set", "crds.install=false", "--namespace", namespace]
    rendered = helm_against(
        control_plane.kubeconfig, "template", "live", str(CHART_DIR), "--validate", *values
    )
    assert rendered.returncode == 0, rendered.stderr
    docs = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    assert {"live-ome-selector-runtime-ready-only", "live-ome-selector-own-events"} <= set(_policies(docs))


def _write_status(api_client: Any, namespace: str, status: dict[str, Any]) -> None:
    """The admin's (another controller's) status write."""
    body = get(api_client, "InferenceService", "svc", namespace)
    body["status"] = status
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object_status(
        "ome.io", "v1beta1", namespace, "inferenceservices", "svc", body
    )


def test_the_operator_account_may_change_only_runtime_ready(
    control_plane: ControlPlane, api_client: Any, namespace: str, installed: tuple[str, str]
) -> None:
    operator, policy = installed
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    _write_status(api_client, namespace, {"conditions": [READY, RUNTIME_READY], "url": "http://svc"})

    new_client: Any = config.new_client_from_config  # the official client is untyped
    impersonating: Any = new_client(config_file=str(control_plane.kubeconfig))
    impersonating.set_default_header("Impersonate-User", operator)
    api = client.CustomObjectsApi(impersonating)

    def patch(conditions: list[Any] | None = None, **status: Any) -> str | None:
        """The operator writer's merge patch (SPEC §5), as the operator's ServiceAccount: None when it is
        allowed, else the API server's answer."""
        version = get(api_client, "InferenceService", "svc", namespace)["metadata"]["resourceVersion"]
        body: dict[str, Any] = {"metadata": {"resourceVersion": version}, "status": status}
        if conditions is not None:
            body["status"]["conditions"] = conditions
        try:
            api.patch_namespaced_custom_object_status(
                "ome.io", "v1beta1", namespace, "inferenceservices", "svc", body
            )
        except ApiException as error:
            return f"{error.status} {error.body}"
        return None

    def denied(result: str | None) -> bool:
        expected = f"ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request: {ONLY}"
        return result is not None and result.startswith("403 ") and expected in result

    def flip_ready() -> str | None:
        """A change of the other condition: its status flipped from what is stored."""
        stored = get(api_client, "InferenceService", "svc", namespace)["status"]["conditions"]
        flipped = "True" if stored[0]["status"] == "False" else "False"
        return patch([READY | {"status": flipped}, RUNTIME_READY])

    # A new binding reaches admission a moment after it is created: until then an attempt goes through (and
    # the next one changes it again).
    eventually(
        lambda: denied(flip_ready()), timeout=30, interval=0.2, what="the status policy to be enforced"
    )
    _write_status(api_client, namespace, {"conditions": [READY, RUNTIME_READY], "url": "http://svc"})

    # RuntimeReady itself: changed, removed, added again (anywhere among the others, which keep their order).
    for conditions in ([READY, SELECTED], [READY], [RUNTIME_READY, READY], [READY, RUNTIME_READY]):
        assert patch(conditions) is None
        assert get(api_client, "InferenceService", "svc", namespace)["status"]["conditions"] == conditions

    attempts: list[tuple[list[Any] | None, dict[str, Any]]] = [
        ([READY | {"status": "True"}, SELECTED], {}),  # another condition changed
        ([SELECTED], {}),  # another condition removed
        ([READY, {"type": "Serving", "status": "True"}, SELECTED], {}),  # another condition added
        (None, {"url": "http://attacker.invalid"}),  # another status field changed
        (None, {"url": None}),  # another status field removed
        (None, {"observedGeneration": 7}),  # another status field added
    ]
    for changed, status in attempts:
        assert denied(patch(changed, **status)), (changed, status)
    stored = get(api_client, "InferenceService", "svc", namespace)["status"]
    assert stored == {"conditions": [READY, RUNTIME_READY], "url": "http://svc"}

    # RBAC alone would let every one of them through; anyone else is not bound by the policy.
    can = control_plane.kubectl(
        "auth", "can-i", "patch", "inferenceservices.ome.io", "--subresource=status", f"--as={operator}",
        "-n", namespace, check=False,
    )  # fmt: skip
    assert can.stdout.strip() == "yes"
    _write_status(api_client, namespace, {"conditions": [READY | {"status": "True"}], "url": "http://other"})


EVENTS_ONLY = "the ome-selector operator may record only its own events about ome.io objects"


def test_the_operator_account_may_record_only_its_own_events_and_the_products_writes_pass(
    control_plane: ControlPlane, api_client: Any, namespace: str, installed: tuple[str, str]
) -> None:
    """The product's own calls (kube.objects, as the writer makes them) under the operator's account pass
    both policies; an event about anything else, or reported as another component, is denied."""
    operator, policy = installed
    events_policy = policy.replace("-runtime-ready-only", "-own-events")
    isvc = create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    _write_status(api_client, namespace, {"conditions": [READY], "url": "http://svc"})

    def event(kind: str, api_version: str, component: str) -> dict[str, Any]:
        return {
            "metadata": {"generateName": "probe.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": api_version,
                "kind": kind,
                "name": "svc",
                "namespace": namespace,
            },
            "type": "Warning",
            "reason": "Forged",
            "message": "forged",
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": "x",
        }

    impersonating: Any = config.new_client_from_config(config_file=str(control_plane.kubeconfig))  # type: ignore[no-untyped-call]
    impersonating.set_default_header("Impersonate-User", operator)
    core: Any = client.CoreV1Api(impersonating)  # dict bodies: the typed models would only re-encode them

    def refused(body: dict[str, Any]) -> str | None:
        try:
            core.create_namespaced_event(namespace, body)
        except ApiException as error:
            return f"{error.status} {error.body}"
        return None

    expected = f"ValidatingAdmissionPolicy '{events_policy}' with binding '{events_policy}' denied request: "
    expected += EVENTS_ONLY
    forged = event("Pod", "v1", "ome-selector")
    # Until the new binding reaches admission an attempt may go through: counted, not the later ones.
    eventually(lambda: expected in (refused(forged) or ""), timeout=30, interval=0.2, what="events policy")
    before = _reasons(api_client, namespace)
    for body in (
        event("Node", "v1", "ome-selector"),
        event("InferenceService", "ome.io/v1beta1", "kubelet"),  # another component's name
        {**event("InferenceService", "ome.io/v1beta1", "ome-selector"), "source": {}},
    ):
        assert expected in (refused(body) or ""), body

    async def product_writes() -> None:
        access = ClusterAccess(control_plane.kubeconfig)
        async_client = await access.api_client()
        async_client.set_default_header("Impersonate-User", operator)
        try:
            calls = Objects(async_client)
            body = get(api_client, "InferenceService", "svc", namespace)
            written = with_condition(body["status"]["conditions"], SELECTED)
            patch = {"metadata": {"resourceVersion": body["metadata"]["resourceVersion"]}}
            patch["status"] = {"conditions": written}
            await calls.patch_status(Kind.INFERENCE_SERVICE, namespace, "svc", patch, field_manager=COMPONENT)
            await calls.create_event(
                Kind.INFERENCE_SERVICE,
                isvc,
                type_="Normal",
                reason="RuntimeSelected",
                message=SELECTED["message"],
                component=COMPONENT,
                instance="policy-test",
            )
        finally:
            await async_client.close()

    asyncio.run(product_writes())
    assert get(api_client, "InferenceService", "svc", namespace)["status"]["conditions"] == [READY, SELECTED]
    assert _reasons(api_client, namespace) == [*before, "RuntimeSelected"]


def _reasons(api_client: Any, namespace: str) -> list[str]:
    """The reasons of the events in ``namespace``, in the order they were created."""
    events: list[Any] = client.CoreV1Api(api_client).list_namespaced_event(namespace).items
    return [str(e.reason) for e in sorted(events, key=lambda e: int(e.metadata.resource_version))]
