"""One consistent, paged listing of the five kinds (SPEC §6 live mode; the operator's startup and resync).

The first list fixes a resourceVersion; every later list (other kinds, other pages) is read at exactly that
resourceVersion, so the snapshot is one point in time. Any error fails the whole listing: callers never act on
a partial catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client

from ome_selector.api.resources import Kind

GROUP, VERSION = "ome.io", "v1beta1"
PAGE_SIZE = 500
ALL_KINDS: tuple[Kind, ...] = (
    Kind.CLUSTER_SERVING_RUNTIME,
    Kind.SERVING_RUNTIME,
    Kind.CLUSTER_BASE_MODEL,
    Kind.BASE_MODEL,
    Kind.INFERENCE_SERVICE,
)


@dataclass
class Snapshot:
    """Raw object bodies (with apiVersion and kind filled in) and the resourceVersion they were read at."""

    resource_version: str | None = None
    bodies: list[dict[str, Any]] = field(default_factory=list)


async def list_objects(
    api_client: client.ApiClient,
    *,
    namespaces: Sequence[str] | None = None,
    kinds: Iterable[Kind] = ALL_KINDS,
) -> Snapshot:
    """Every object of `kinds`: namespaced kinds in `namespaces` (all when None), cluster kinds everywhere."""
    objects = client.CustomObjectsApi(api_client)
    snapshot = Snapshot()
    for kind in kinds:
        scopes: Sequence[str | None] = (
            [None] if not kind.namespaced or namespaces is None else list(namespaces)
        )
        for namespace in scopes:
            await _list_into(objects, kind, namespace, snapshot)
    return snapshot


async def _list_into(
    objects: client.CustomObjectsApi, kind: Kind, namespace: str | None, snapshot: Snapshot
) -> None:
    token: str | None = None
    while True:
        arguments: dict[str, Any] = {"limit": PAGE_SIZE}
        if token:
            arguments["_continue"] = token  # a continue token carries the first page's resourceVersion
        elif snapshot.resource_version is not None:
            arguments["resource_version"] = snapshot.resource_version
            arguments["resource_version_match"] = "Exact"
        if namespace is None:
            page = await objects.list_cluster_custom_object(GROUP, VERSION, kind.plural, **arguments)
        else:
            page = await objects.list_namespaced_custom_object(
                GROUP, VERSION, namespace, kind.plural, **arguments
            )
        metadata = page.get("metadata") or {}
        if snapshot.resource_version is None:
            snapshot.resource_version = metadata.get("resourceVersion")
        for item in page.get("items") or []:
            item.setdefault("apiVersion", f"{GROUP}/{VERSION}")
            item.setdefault("kind", kind.value)
            snapshot.bodies.append(item)
        token = metadata.get("continue")
        if not token:
            return
