"""The chart's opt-in status policy (templates/statuspolicy.yaml) on a real API server: the operator's
ServiceAccount may change only the RuntimeReady condition of an InferenceService's status (SPEC §5).

The chart's ServiceAccount, RBAC and policy are rendered and applied for real; the writes are made as the
ServiceAccount (impersonated by the admin, as the policy sees the account's own requests), in the shape the
operator's writer sends: a merge patch of the whole ``status.conditions`` list carrying the resourceVersion.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from harness import objects
from harness.chart import render
from harness.controlplane import ControlPlane
from harness.kube import create, eventually, get

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
    assert _policies(render(_values(namespace), extra=served)) == ["ome-selector-runtime-ready-only"]
    assert _policies(render(_values(namespace, enabled=False), extra=served)) == []
    assert _policies(render(_values(namespace))) == []  # the cluster does not serve the API
    assert "ome-selector-runtime-ready-only" not in _policies(render({}, extra=served))  # off by default


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

    # A new binding reaches admission a moment after it is created: until then the attempt goes through.
    eventually(
        lambda: denied(patch([READY | {"status": "True"}, RUNTIME_READY])),
        timeout=30,
        interval=0.2,
        what="the status policy to be enforced",
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
