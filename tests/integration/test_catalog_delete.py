"""Deleting models and runtimes while every replica is stopped (SPEC §7, §12): their DELETE goes through
webhook entries of its own, `failurePolicy: Ignore` with at most 3 s, which Kubernetes' own deleters (the
namespace controller, the garbage collector) skip. So a webhook that is unreachable, or that accepts
connections and never answers, never keeps a namespace full of catalog objects from being deleted.

No controller-manager runs here: the namespace controller's part is played under its own identity, as it
does it — every object of the namespace deleted, then the namespace finalized.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from harness import objects
from harness.controlplane import ControlPlane, free_port
from harness.kube import eventually
from ome_selector.api.resources import Kind
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.registration import build_configuration, delete_webhook_name

NAMESPACE_CONTROLLER = "system:serviceaccount:kube-system:namespace-controller"
CATALOG = [kind for kind in Kind if kind is not Kind.INFERENCE_SERVICE]


class _Silent:
    """A listener that accepts every connection and never answers (counts them), or (``listen=False``) a
    port where nothing listens."""

    def __init__(self, *, listen: bool) -> None:
        self.port = free_port()
        self.connections = 0
        self._held: list[socket.socket] = []
        self._server: socket.socket | None = None
        if listen:
            self._server = socket.create_server(("127.0.0.1", self.port))
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            self._held.append(connection)  # open, and never a byte back

    @property
    def listening(self) -> bool:
        return self._server is not None

    def close(self) -> None:
        for connection in self._held:
            connection.close()
        if self._server is not None:
            self._server.close()


@pytest.fixture(params=["hanging", "unreachable"])
def silent(request: pytest.FixtureRequest) -> Iterator[_Silent]:
    listener = _Silent(listen=request.param == "hanging")
    yield listener
    listener.close()


def _kubectl_as(plane: ControlPlane, user: str, *args: str) -> Any:
    return plane.kubectl(f"--as={user}", *args, check=False)


def test_a_namespace_full_of_catalog_objects_is_deleted_while_no_replica_answers(
    control_plane: ControlPlane, api_client: Any, namespace: str, silent: _Silent
) -> None:
    doomed = f"{namespace[:50]}-gone"
    core: Any = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": doomed}})
    docs = [
        *(objects.model(f"m{i}", namespace=doomed, size="7B") for i in range(5)),
        *(objects.runtime(f"r{i}", namespace=doomed) for i in range(5)),
    ]
    created = control_plane.kubectl("create", "-f", "-", input=yaml.safe_dump_all(docs), check=False)
    assert created.returncode == 0, created.stderr

    # The chart's webhooks as a stopped operator leaves them: armed, pointing at a replica that is gone; the
    # catalog's CREATE and UPDATE configured to fail closed, to show that DELETE never is.
    name = f"stopped-{namespace}"[:63]
    config = WebhookConfig(
        sizes_failure_policy="Fail",
        timeout_seconds=30,
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": doomed}},
    )
    body = build_configuration(name, {"url": f"https://127.0.0.1:{silent.port}"}, config)
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    admission.create_validating_webhook_configuration(body)
    try:
        stored = {w.name: w for w in admission.read_validating_webhook_configuration(name).webhooks}
        for kind in CATALOG:
            deleting = stored[delete_webhook_name(kind)]
            assert deleting.failure_policy == "Ignore"
            assert deleting.timeout_seconds <= 3
            assert deleting.rules[0].operations == ["DELETE"]

        # A tenant deletes one runtime: the webhook is asked (and never answers, or cannot be reached), and
        # the deletion goes through all the same.
        gone = control_plane.kubectl("delete", "servingruntime", "r0", "-n", doomed, check=False)
        assert gone.returncode == 0, gone.stderr
        if silent.listening:
            assert silent.connections >= 1  # it was asked
        asked = silent.connections

        # `kubectl delete namespace`: the namespace controller deletes what is left, and is never held up.
        deleting_ns = control_plane.kubectl("delete", "namespace", doomed, "--wait=false", check=False)
        assert deleting_ns.returncode == 0, deleting_ns.stderr
        for kind in CATALOG:
            if kind.namespaced:
                swept = _kubectl_as(
                    control_plane, NAMESPACE_CONTROLLER, "delete", kind.plural, "--all", "-n", doomed
                )
                assert swept.returncode == 0, swept.stderr
        assert silent.connections == asked  # the namespace controller's deletions skip the webhook
        left = control_plane.kubectl(
            "get", "basemodels,servingruntimes", "-n", doomed, "-o", "name", check=False
        )
        assert left.stdout.strip() == "", left.stdout
        namespace_body = json.loads(control_plane.kubectl("get", "namespace", doomed, "-o", "json").stdout)
        namespace_body["spec"]["finalizers"] = []
        finalized = control_plane.kubectl(
            f"--as={NAMESPACE_CONTROLLER}",
            "replace",
            "--raw",
            f"/api/v1/namespaces/{doomed}/finalize",
            "-f",
            "-",
            input=json.dumps(namespace_body),
            check=False,
        )
        assert finalized.returncode == 0, finalized.stderr

        def absent() -> bool:
            return control_plane.kubectl("get", "namespace", doomed, check=False).returncode != 0

        eventually(absent, what=f"namespace {doomed} deleted")
    finally:
        admission.delete_validating_webhook_configuration(name)
