"""Shared fixtures: the real control plane (etcd + kube-apiserver) for integration tests."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.controlplane import (
    ControlPlane,
    ControlPlaneError,
    find_binaries,
    running_control_plane,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
INTEGRATION_DIR = REPO_ROOT / "tests" / "integration"

# Under CI a skipped test fails (the build machine has every prerequisite).
pytest_plugins = ["harness.ci_skips"]


def _binaries_available() -> bool:
    try:
        find_binaries()
    except ControlPlaneError:
        return False
    return True


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with a worker refilled only when it runs dry (harness.xdist_scheduling)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from harness.xdist_scheduling import LastTestFirst

    return LastTestFirst(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration = [item for item in items if INTEGRATION_DIR in Path(str(item.fspath)).parents]
    for item in integration:
        item.add_marker(pytest.mark.integration)
    if not integration or _binaries_available():
        return
    message = (
        "the control-plane binaries (kube-apiserver, etcd, kubectl) are missing; "
        "run `make binaries` or set OME_SELECTOR_BIN_DIR"
    )
    if os.environ.get("CI"):
        raise pytest.UsageError(f"integration tests cannot run under CI: {message}")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    line = f"!!! SKIPPING {len(integration)} INTEGRATION TESTS: {message} !!!"
    if reporter is not None:
        reporter.write_line(line, red=True, bold=True)
    for item in integration:
        item.add_marker(pytest.mark.skip(reason=message))


@pytest.fixture
def sigint_as_in_a_terminal() -> Iterator[None]:
    """Children start with SIGINT at its default, as a terminal's foreground job has it, even when the tests
    run with it ignored: a shell without job control starts a background job (``make test &``) so, and an
    ignored signal stays ignored across exec (Python then installs no KeyboardInterrupt handler). A handler
    set here is reset to the default by exec; an ignore would not be."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def prometheus_bin() -> Path:
    """prometheus and promtool's directory (hack/ensure-prometheus.sh); skipped without, except under CI."""
    from harness.prometheus import PrometheusNotFoundError, find_prometheus

    try:
        return find_prometheus()
    except PrometheusNotFoundError as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def crd_profile() -> str:
    """Whose CRDs the control plane has: "ours", or "ome" (OME's own) under tests/integration/beside_ome/."""
    return "ours"


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    with running_control_plane() as plane:
        yield plane


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> Iterator[Any]:
    from harness.kube import api_client_for

    with api_client_for(control_plane.kubeconfig) as client:
        yield client


@pytest.fixture
def namespace(api_client: Any, request: pytest.FixtureRequest) -> str:
    """A fresh namespace per test; never deleted and never waited for (no controller-manager runs)."""
    from kubernetes import client

    stem = request.node.name.lower().replace("_", "-")
    name = f"t-{''.join(c for c in stem if c.isalnum() or c == '-')[:40].strip('-')}-{uuid.uuid4().hex[:6]}"
    core: Any = client.CoreV1Api(api_client)  # dict bodies: the typed models would only re-encode them
    core.create_namespace({"metadata": {"name": name}})
    return name
