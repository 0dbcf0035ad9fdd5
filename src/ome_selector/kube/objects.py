"""The ome.io objects and core/v1 Events through kubernetes_asyncio: list, get, patch, create events.

:meth:`Objects.list_objects` is one consistent, paged listing (SPEC §6 live mode; the operator's startup and
resync): the first list fixes a resourceVersion and every later list (other kinds, other pages) is read at
exactly that resourceVersion, so the snapshot is one point in time. Any error fails the whole listing:
callers never act on a partial catalog.

Bodies are plain dicts with ``apiVersion`` and ``kind`` always filled in. Status (and a model's learned
fields, SPEC §10) is written with a JSON merge patch; the caller guards it with ``metadata.resourceVersion``,
so a concurrent writer's change makes the apiserver answer 409 (:class:`ConflictError`) instead of being
overwritten.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from ome_selector.api.resources import API_GROUP_VERSION, Kind
from ome_selector.kube.scope import custom_object_call

__all__ = [
    "ALL_KINDS",
    "EVENT_MESSAGE_LIMIT",
    "EVENT_NAMESPACE_OF_CLUSTER_OBJECTS",
    "PAGE_SIZE",
    "ApiError",
    "ConflictError",
    "GoneError",
    "Objects",
    "Snapshot",
    "now_rfc3339",
]

#: Any failed API call (status, reason and body as the apiserver answered).
ApiError = ApiException

PAGE_SIZE = 500
ALL_KINDS: tuple[Kind, ...] = (
    Kind.CLUSTER_SERVING_RUNTIME,
    Kind.SERVING_RUNTIME,
    Kind.CLUSTER_BASE_MODEL,
    Kind.BASE_MODEL,
    Kind.INFERENCE_SERVICE,
)
#: The apiserver's limit on an event message (longer ones are cut, not rejected).
EVENT_MESSAGE_LIMIT = 1024
#: Where the events of cluster-scoped objects go (client-go's choice).
EVENT_NAMESPACE_OF_CLUSTER_OBJECTS = "default"
_MERGE_PATCH = "application/merge-patch+json"


class ConflictError(Exception):
    """The object changed since it was read (HTTP 409)."""


class GoneError(Exception):
    """The object no longer exists (HTTP 404)."""


@dataclass
class Snapshot:
    """Raw object bodies (with apiVersion and kind filled in) and the resourceVersion they were read at."""

    resource_version: str | None = None
    bodies: list[dict[str, Any]] = field(default_factory=list)


def now_rfc3339() -> str:
    """The current time as Kubernetes writes timestamps (UTC, whole seconds)."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _complete(body: dict[str, Any], kind: Kind) -> dict[str, Any]:
    body.setdefault("apiVersion", API_GROUP_VERSION)
    body.setdefault("kind", kind.value)
    return body


class Objects:
    """The API calls the product makes, over one ``ApiClient`` (which the caller owns and closes)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        # Typed as Any: the bundled stubs omit `_content_type`, and bodies are plain dicts on purpose.
        self._custom: Any = client.CustomObjectsApi(api_client)
        self._core: Any = client.CoreV1Api(api_client)

    async def list_objects(
        self, *, namespaces: Sequence[str] | None = None, kinds: Iterable[Kind] = ALL_KINDS
    ) -> Snapshot:
        """Every object of `kinds`: namespaced kinds in `namespaces` (all when None), cluster kinds all."""
        snapshot = Snapshot()
        for kind in kinds:
            scopes: Sequence[str | None] = (
                [None] if not kind.namespaced or namespaces is None else list(namespaces)
            )
            for namespace in scopes:
                await self._list_into(kind, namespace, snapshot)
        return snapshot

    async def _list_into(self, kind: Kind, namespace: str | None, snapshot: Snapshot) -> None:
        list_page = custom_object_call(self._custom, "list", kind, namespace)
        token: str | None = None
        while True:
            arguments: dict[str, Any] = {"limit": PAGE_SIZE}
            if token:
                arguments["_continue"] = token  # a continue token carries the first page's resourceVersion
            elif snapshot.resource_version is not None:
                arguments["resource_version"] = snapshot.resource_version
                arguments["resource_version_match"] = "Exact"
            page = await list_page(**arguments)
            metadata = page.get("metadata") or {}
            if snapshot.resource_version is None:
                snapshot.resource_version = metadata.get("resourceVersion")
            for item in page.get("items") or []:
                snapshot.bodies.append(_complete(item, kind))
            token = metadata.get("continue")
            if not token:
                return

    async def get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object as stored now; None when there is none (404)."""
        try:
            body = await custom_object_call(self._custom, "get", kind, namespace)(name)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return _complete(dict(body), kind)

    async def patch_status(
        self, kind: Kind, namespace: str | None, name: str, patch: Mapping[str, Any], *, field_manager: str
    ) -> dict[str, Any]:
        """A merge patch of the status subresource; the object as stored afterwards.

        Raises :class:`ConflictError` when ``patch`` names an outdated ``metadata.resourceVersion`` and
        :class:`GoneError` when the object is gone.
        """
        return await self.patch(kind, namespace, name, patch, field_manager=field_manager, status=True)

    async def patch(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        *,
        field_manager: str,
        status: bool = False,
    ) -> dict[str, Any]:
        """A merge patch of the object (or, with ``status``, of its status subresource); the object as stored
        afterwards.

        Raises :class:`ConflictError` when ``patch`` names an outdated ``metadata.resourceVersion`` and
        :class:`GoneError` when the object is gone.
        """
        call = custom_object_call(self._custom, "patch", kind, namespace, status=status)
        try:
            body = await call(name, dict(patch), field_manager=field_manager, _content_type=_MERGE_PATCH)
        except ApiException as error:
            where = f"{namespace}/{name}" if namespace else name
            if error.status == 409:
                raise ConflictError(where) from error
            if error.status == 404:
                raise GoneError(where) from error
            raise
        return _complete(dict(body), kind)

    async def create_event(
        self,
        kind: Kind,
        involved: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        message: str,
        component: str,
        instance: str,
    ) -> None:
        """A new core/v1 Event on ``involved`` (a body of ``kind``), reported as ``component``.

        The event of a cluster-scoped object is recorded in ``default``, as client-go's recorder does
        (``kubectl describe`` finds it there).
        """
        metadata = involved.get("metadata", {})
        namespace, name = metadata.get("namespace"), metadata.get("name")
        event_namespace = namespace or EVENT_NAMESPACE_OF_CLUSTER_OBJECTS
        now = now_rfc3339()
        event = {
            "metadata": {"generateName": f"{name}.", "namespace": event_namespace},
            "involvedObject": {
                "apiVersion": API_GROUP_VERSION,
                "kind": kind.value,
                "name": name,
                "namespace": namespace,
                "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "type": type_,
            "reason": reason,
            "message": message[:EVENT_MESSAGE_LIMIT],
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": instance,
        }
        await self._core.create_namespaced_event(event_namespace, event, field_manager=component)
