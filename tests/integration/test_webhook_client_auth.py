"""Client-certificate verification on the webhook port, with the real apiserver presenting its certificate.

The session's control plane gives kube-apiserver a client certificate for webhooks (harness/controlplane.py:
an AdmissionConfiguration whose kubeconfig names it for every host), as a cluster configured for
`webhook.clientAuth` does. With verification on, the apiserver's reviews are answered; a client without a
certificate, or with one of the same CA but another name (the admin's), is refused before any review is read.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

import yaml
from kubernetes import client

from harness import objects
from harness.controlplane import WEBHOOK_CLIENT, ControlPlane
from harness.operator_thread import OperatorThread
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
