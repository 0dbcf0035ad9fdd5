"""Small synchronous helpers over the official client for tests, benchmarks and the demo."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client, config

from ome_selector.api.resources import Kind
from ome_selector.kube.scope import Verb, custom_object_call

PLURALS = {kind.value: kind.plural for kind in Kind}

T = TypeVar("T")


@contextmanager
def api_client_for(kubeconfig: Path) -> Iterator[Any]:
    """An ApiClient of the official client for ``kubeconfig``'s cluster, closed afterwards."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with api_client:
        yield api_client


def token_kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig at ``path`` with one context: ``server`` and a bearer token (unit tests' clients)."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def _call(api_client: Any, verb: Verb, kind: str, namespace: str | None) -> Callable[..., Any]:
    return custom_object_call(client.CustomObjectsApi(api_client), verb, Kind(kind), namespace or None)


def create(api_client: Any, body: Mapping[str, Any]) -> dict[str, Any]:
    namespace = body["metadata"].get("namespace")
    result: dict[str, Any] = _call(api_client, "create", body["kind"], namespace)(body)
    return result


def get(api_client: Any, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = _call(api_client, "get", kind, namespace)(name)
    return result


def patch(
    api_client: Any, kind: str, name: str, body: Mapping[str, Any], namespace: str | None = None
) -> None:
    _call(api_client, "patch", kind, namespace)(name, body)


def delete(api_client: Any, kind: str, name: str, namespace: str | None = None) -> None:
    _call(api_client, "delete", kind, namespace)(name)


def list_objects(api_client: Any, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """Every object of ``kind`` (in ``namespace``, else everywhere)."""
    listing: dict[str, Any] = _call(api_client, "list", kind, namespace)()
    return list(listing["items"])


def runtime_ready(api_client: Any, name: str, namespace: str) -> dict[str, Any] | None:
    status = get(api_client, "InferenceService", name, namespace).get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "RuntimeReady":
            return dict(condition)
    return None


def events_for(api_client: Any, namespace: str, name: str) -> list[Any]:
    events = client.CoreV1Api(api_client).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}"
    )
    return list(events.items)


def eventually(
    probe: Callable[[], T | None], *, timeout: float = 30.0, interval: float = 0.1, what: str = ""
) -> T:
    """Poll until `probe` returns something truthy; the last value is in the error otherwise."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or probe}; last value: {last!r}")
