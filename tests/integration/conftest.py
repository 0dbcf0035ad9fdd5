"""Integration fixtures: the operator running in-process against the session's control plane."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config

from harness.admission import wait_until_serving
from harness.controlplane import ControlPlane, running_control_plane
from harness.kube import delete
from harness.operator_thread import OperatorThread
from ome_selector.operator.app import OperatorConfig

StartOperator = Callable[..., OperatorThread]


@pytest.fixture
def cluster_objects(api_client: Any) -> Iterator[list[tuple[str, str]]]:
    """(kind, name) of cluster-scoped objects a test creates; deleted afterwards, because other tests count
    the runtimes they can see (the no-runtime message names how many were checked)."""
    created: list[tuple[str, str]] = []
    yield created
    for kind, name in created:
        try:
            delete(api_client, kind, name)
        except client.ApiException as error:
            if error.status != 404:
                raise


@pytest.fixture
def running_operator(control_plane: ControlPlane, api_client: Any) -> Iterator[StartOperator]:
    """A factory: `running_operator(report_only=True, ...)` starts an operator; all are stopped at the end.

    With `webhook=WebhookConfig(...)` it also waits until the apiserver calls the operator's webhook.
    """
    started: list[OperatorThread] = []

    def start(**overrides: Any) -> OperatorThread:
        defaults: dict[str, Any] = {
            "kubeconfig": control_plane.kubeconfig,
            "health_address": None,
            "resync_seconds": 3600.0,
        }
        webhook = overrides.get("webhook")
        if webhook is not None and webhook.instance is None:
            # Tests share one host and kubeconfig context: without this, every test's operator would have the
            # same default instance, so the same local registration.
            overrides["webhook"] = dataclasses.replace(webhook, instance=f"t{uuid.uuid4().hex[:8]}")
        config = OperatorConfig(**(defaults | overrides))
        runner = OperatorThread(config)
        started.append(runner)
        runner.start()
        if runner.operator.webhook is not None:
            wait_until_serving(runner, api_client)
        return runner

    yield start
    for runner in reversed(started):
        runner.stop()


# A control plane of one test file's own, for tests that restart, pause or reshape it (watch gaps, CRDs
# deleted and recreated): the shared one would carry their faults into other files.
@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    with running_control_plane() as started:
        yield started


@pytest.fixture(scope="module")
def admin(plane: ControlPlane) -> Iterator[Any]:
    """An admin client of :func:`plane`."""
    new_client: Any = config.new_client_from_config  # the official client is untyped
    with new_client(config_file=str(plane.kubeconfig)) as api_client:
        yield api_client
