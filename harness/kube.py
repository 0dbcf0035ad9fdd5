"""Small synchronous helpers over the official client for tests, benchmarks and the demo."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kubernetes import client

from ome_selector.api.resources import Kind

GROUP, VERSION = "ome.io", "v1beta1"
PLURALS = {kind.value: kind.plural for kind in Kind}

T = TypeVar("T")


def create(api_client: Any, body: Mapping[str, Any]) -> dict[str, Any]:
    objects: Any = client.CustomObjectsApi(api_client)
    plural = PLURALS[body["kind"]]
    namespace = body["metadata"].get("namespace")
    if namespace:
        result: dict[str, Any] = objects.create_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, body
        )
    else:
        result = objects.create_cluster_custom_object(GROUP, VERSION, plural, body)
    return result


def get(api_client: Any, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    objects: Any = client.CustomObjectsApi(api_client)
    if namespace:
        result: dict[str, Any] = objects.get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURALS[kind], name
        )
    else:
        result = objects.get_cluster_custom_object(GROUP, VERSION, PLURALS[kind], name)
    return result


def patch(
    api_client: Any, kind: str, name: str, body: Mapping[str, Any], namespace: str | None = None
) -> None:
    objects: Any = client.CustomObjectsApi(api_client)
    if namespace:
        objects.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURALS[kind], name, body)
    else:
        objects.patch_cluster_custom_object(GROUP, VERSION, PLURALS[kind], name, body)


def delete(api_client: Any, kind: str, name: str, namespace: str | None = None) -> None:
    objects: Any = client.CustomObjectsApi(api_client)
    if namespace:
        objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURALS[kind], name)
    else:
        objects.delete_cluster_custom_object(GROUP, VERSION, PLURALS[kind], name)


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
