"""Client-certificate verification on the webhook port, with the real apiserver presenting its certificate.

The session's control plane gives kube-apiserver a client certificate for webhooks (harness/controlplane.py:
an AdmissionConfiguration whose kubeconfig names it for every host), as a cluster configured for
`webhook.clientAuth` does. With verification on, the apiserver's reviews are answered; a client without a
certificate, or with one of the same CA but another name (the admin's), is refused before any review is read.
"""

from __future__ import annotations

import json
import socket
import ssl
from typing import Any

import yaml
from kubernetes import client

from harness import objects
from harness.controlplane import WEBHOOK_CLIENT, ControlPlane
from harness.kube import eventually
from harness.operator_thread import OperatorThread
from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.webhook.config import WebhookConfig


def _post(url: str, context: ssl.SSLContext) -> bytes:
    """POST ``{}`` to the webhook's InferenceService path; the whole answer (empty when dropped)."""
    host, port = url.removeprefix("https://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as raw, context.wrap_socket(raw) as tls:
        tls.sendall(
            b"POST /validate-inferenceservices HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
            b"Connection: close\r\n\r\n{}"
        )
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
        return answer


def _client(cert: tuple[str, str] | None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if cert is not None:
        context.load_cert_chain(*cert)
    return context


def test_only_the_apiserver_certificate_reaches_the_webhook(
    control_plane: ControlPlane, api_client: Any, namespace: str, running_operator: Any
) -> None:
    pki = control_plane.pki_dir
    webhook = WebhookConfig(
        bind_address=("127.0.0.1", 0), client_ca_file=pki / "ca.crt", client_names=(WEBHOOK_CLIENT,)
    )
    # running_operator waits until the apiserver's dry-run probes are answered: its certificate passes.
    runner: OperatorThread = running_operator(webhook=webhook)
    probe = objects.inference_service(
        "probe", namespace=namespace, model_name="absent", engine={"minReplicas": 1}
    )
    result = control_plane.kubectl(
        "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(probe), check=False
    )
    assert "denied the request:" in result.stderr, result.stderr  # our answer, through the apiserver
    assert runner.operator.webhook is not None
    name = runner.operator.webhook.configuration_name
    assert name is not None
    api: Any = client.AdmissionregistrationV1Api(api_client)
    url = str(api.read_validating_webhook_configuration(name).webhooks[0].client_config.url).rsplit("/", 1)[0]
    # The admin's certificate: the same CA, another name.
    admin = _post(url, _client((str(pki / "admin.crt"), str(pki / "admin.key"))))
    assert admin.startswith(b"HTTP/1.1 403 "), admin
    assert admin.endswith(b"client certificate (admin) is not one of the accepted names")
    # No certificate at all: the handshake fails (TLS 1.3 reports it at the first read).
    try:
        anonymous = _post(url, _client(None))
    except (ssl.SSLError, ConnectionError):
        anonymous = b""
    assert anonymous == b""
    # The apiserver's own certificate is answered (a malformed body: 400, past TLS and the name check).
    apiserver = _post(url, _client((str(pki / "webhook-client.crt"), str(pki / "webhook-client.key"))))
    assert apiserver.startswith(b"HTTP/1.1 400 "), apiserver


# --- SPEC §12: who is told names ---------------------------------------------------------------------------

CSR_DELETE = "clusterservingruntimes-delete.ome-selector.ome.io"


def _review_of(operation: str, body: dict[str, Any]) -> dict[str, Any]:
    """An AdmissionReview as anyone who reaches the webhook's Service can write one."""
    kind = body["kind"]
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "forged-0001",
            "kind": {"group": "ome.io", "version": "v1beta1", "kind": kind},
            "resource": {"group": "ome.io", "version": "v1beta1", "resource": f"{kind.lower()}s"},
            "name": body["metadata"]["name"],
            "operation": operation,
            "userInfo": {"username": "system:serviceaccount:tenant:curious"},
            "object": None if operation == "DELETE" else body,
            "oldObject": body if operation == "DELETE" else None,
            "dryRun": True,
        },
    }


def _ask(url: str, context: ssl.SSLContext, review: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """POST ``review`` to the ClusterServingRuntime webhook: the raw answer and its AdmissionReview."""
    host, port = url.removeprefix("https://").split(":")
    payload = json.dumps(review).encode()
    with socket.create_connection((host, int(port)), timeout=20) as raw, context.wrap_socket(raw) as tls:
        tls.sendall(
            b"POST /validate-clusterservingruntimes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
            + payload
        )
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    text = answer.decode()
    assert text.startswith("HTTP/1.1 200 "), text
    return text, json.loads(text.split("\r\n\r\n", 1)[1])["response"]


def _own_format(body: dict[str, Any], fmt: str) -> dict[str, Any]:
    """``body`` with a model format of its own: no other test's InferenceService moves with it."""
    if body["kind"].endswith("BaseModel"):
        body["spec"]["modelFormat"]["name"] = fmt
    else:
        body["spec"]["supportedModelFormats"][0]["modelFormat"]["name"] = fmt
    return body


def test_a_forged_review_learns_no_other_namespace_and_the_apiserver_learns_all(
    control_plane: ControlPlane, api_client: Any, namespace: str, running_operator: Any
) -> None:
    pki = control_plane.pki_dir
    webhook = WebhookConfig(
        bind_address=("127.0.0.1", 0),
        client_ca_file=pki / "ca.crt",
        client_names=(WEBHOOK_CLIENT,),
        client_cert_optional=True,  # the chart's default: asked for, not required
        protect_inference_services=True,
    )
    runner: OperatorThread = running_operator(webhook=webhook)
    fmt = f"fmt-{namespace[-6:]}"
    other = f"{namespace[:50]}-b"
    core: Any = client.CoreV1Api(api_client)  # dict bodies
    core.create_namespace({"metadata": {"name": other}})
    model = _own_format(objects.model(f"weights-{fmt}"), fmt)
    only = _own_format(objects.runtime(f"only-{fmt}"), fmt)
    tenants = [
        objects.inference_service("a", namespace=namespace, model_name=model["metadata"]["name"]),
        objects.inference_service("b", namespace=other, model_name=model["metadata"]["name"]),
    ]
    applied = control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([model, only, *tenants]))
    assert applied.returncode == 0, applied.stderr

    def held() -> bool:
        live = runner.operator.indexed_catalog()
        keys = [
            ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, only["metadata"]["name"]),
            ObjectKey(Kind.INFERENCE_SERVICE, namespace, "a"),
            ObjectKey(Kind.INFERENCE_SERVICE, other, "b"),
        ]
        return live is not None and all(key in live for key in keys)

    eventually(held, what="the catalog holding the runtime and both tenants' InferenceServices")
    annotate = (
        '; annotate the ClusterServingRuntime with ome-selector.ome.io/allow-disruption: "true" to apply '
        "it anyway"
    )
    see = "; see kubectl ome-selector runtime what-if"

    # The apiserver's own call (its certificate verified): every name, as SPEC §12 writes them.
    deleted = control_plane.kubectl(
        "delete", "clusterservingruntime", only["metadata"]["name"], "--dry-run=server", check=False
    )
    assert deleted.returncode != 0
    assert f'admission webhook "{CSR_DELETE}" denied the request: ' in deleted.stderr, deleted.stderr
    reason = deleted.stderr.split(f"{namespace}/a (", 1)[1].split(")", 1)[0]
    assert (
        f"this change leaves 2 InferenceService(s) without a runtime: {namespace}/a ({reason}); "
        f"{other}/b ({reason}){annotate}"
    ) in deleted.stderr
    assert (
        "Warning: this change moves 2 InferenceService(s): 2 lose their runtime "
        f"(e.g. {namespace}/a: ClusterServingRuntime/{only['metadata']['name']} → none){see}"
    ) in deleted.stderr

    # The same review forged by a plain client, then by one with a certificate of the same CA but another
    # name (the admin's): counts only, no namespace and no InferenceService named.
    operator = runner.operator.webhook
    assert operator is not None
    assert operator.configuration_name is not None
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    hooks = admission.read_validating_webhook_configuration(operator.configuration_name).webhooks
    url = str(hooks[0].client_config.url).rsplit("/", 1)[0]
    forged = _review_of("DELETE", only)
    for context in (_client(None), _client((str(pki / "admin.crt"), str(pki / "admin.key")))):
        raw, answer = _ask(url, context, forged)
        assert namespace not in raw
        assert other not in raw
        assert answer["allowed"] is False
        assert answer["status"]["message"] == (
            "this change leaves 2 InferenceService(s) without a runtime: "
            f"2 (names withheld from an unverified caller){annotate}"
        )
        assert answer["warnings"] == [
            "this change moves 2 InferenceService(s): 2 lose their runtime "
            f"(names withheld from an unverified caller){see}"
        ]
    # With the apiserver's certificate the same review is answered in full.
    raw, answer = _ask(
        url, _client((str(pki / "webhook-client.crt"), str(pki / "webhook-client.key"))), forged
    )
    assert f"{namespace}/a" in answer["status"]["message"]
    assert f"{other}/b" in answer["status"]["message"]
    control_plane.kubectl("delete", "-f", "-", input=yaml.safe_dump_all([only, model, *tenants]), check=False)
