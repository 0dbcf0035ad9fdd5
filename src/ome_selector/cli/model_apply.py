"""`kubectl ome-selector model inspect ... --apply KIND/NAME`: write the learned fields a model lacks (SPEC
§10).

The model is read first; the patch holds only the learned fields its spec lacks (:func:`fill_patch`) and is a
JSON merge patch under the field manager ``ome-selector``, guarded by the resourceVersion that was read. When
someone else changed the model meanwhile, the apiserver answers 409 and the model is read again and the patch
recomputed, so a value written concurrently is never overwritten either. Only ``--apply`` imports this module,
so plain `model inspect` never loads the Kubernetes client.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import ClientError

from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.kube.connection import (
    KUBECONFIG_ERRORS,
    ClusterAccess,
    UnknownContextError,
    kubeconfig_namespace,
)
from ome_selector.kube.objects import ApiError, ConflictError, GoneError, Objects
from ome_selector.modelfiles import ModelMetadata, fill_patch

__all__ = ["FIELD_MANAGER", "MAX_CONFLICTS", "Applied", "ApplyError", "apply_metadata"]

FIELD_MANAGER = "ome-selector"
#: Write conflicts tolerated before giving up (each one means the model changed while we wrote).
MAX_CONFLICTS = 5
DEFAULT_NAMESPACE = "default"


class ApplyError(Exception):
    """The model could not be read or patched; ``str()`` is the one-line message for stderr."""

    def __init__(self, message: str) -> None:
        # One line, whatever a kubeconfig parser or the apiserver put into the message.
        super().__init__(" ".join(message.split()))


@dataclass(frozen=True, slots=True)
class Applied:
    """What ``--apply`` did to one model: ``fields`` is the ``spec`` merge patch sent (empty: nothing)."""

    key: ObjectKey
    fields: dict[str, Any]


def _namespace(kind: Kind, requested: str | None, kubeconfig: Path | None, context: str | None) -> str | None:
    """A BaseModel's namespace: ``-n``, else the context's, else ``default``; None for a ClusterBaseModel."""
    if not kind.namespaced:
        return None
    if requested:
        return requested
    try:
        return kubeconfig_namespace(kubeconfig, context) or DEFAULT_NAMESPACE
    except UnknownContextError as error:
        raise ApplyError(str(error)) from error
    except KUBECONFIG_ERRORS as error:
        raise ApplyError(f"cannot read the kubeconfig: {error}") from error


def _api_message(error: ApiError) -> str:
    body = getattr(error, "body", None)
    try:
        message = json.loads(body).get("message", body) if body else ""
    except (ValueError, AttributeError):
        message = body
    return f"{error.status} {error.reason}" + (f": {message}" if message else "")


async def _apply(objects: Objects, key: ObjectKey, metadata: ModelMetadata) -> Applied:
    for _ in range(MAX_CONFLICTS):
        body = await objects.get(key.kind, key.namespace, key.name)
        if body is None:
            raise ApplyError(f"{key} not found")
        fields = fill_patch(body.get("spec"), metadata)
        if not fields:
            return Applied(key, {})
        guard = {"resourceVersion": body.get("metadata", {}).get("resourceVersion")}
        try:
            await objects.patch(
                key.kind,
                key.namespace,
                key.name,
                {"metadata": guard, "spec": fields},
                field_manager=FIELD_MANAGER,
            )
        except ConflictError:
            continue  # changed since it was read: read it again and recompute
        except GoneError as error:
            raise ApplyError(f"{key} not found") from error
        return Applied(key, fields)
    raise ApplyError(f"{key} kept changing while it was patched ({MAX_CONFLICTS} conflicts); try again")


async def _apply_with_client(
    key: ObjectKey, metadata: ModelMetadata, kubeconfig: Path | None, context: str | None
) -> Applied:
    try:
        api_client = await ClusterAccess(kubeconfig, context).api_client()
    except KUBECONFIG_ERRORS as error:
        raise ApplyError(f"cannot read the kubeconfig: {error}") from error
    async with api_client:
        try:
            return await _apply(Objects(api_client), key, metadata)
        except ApiError as error:
            raise ApplyError(f"cannot patch {key}: {_api_message(error)}") from error
        except (ClientError, OSError, TimeoutError) as error:
            raise ApplyError(f"cannot reach the cluster: {error}") from error


def apply_metadata(
    kind: Kind,
    name: str,
    metadata: ModelMetadata,
    *,
    namespace: str | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
) -> Applied:
    """Set the learned fields model ``kind``/``name`` lacks; ApplyError when it cannot be read or patched."""
    key = ObjectKey(kind, _namespace(kind, namespace, kubeconfig, context), name)
    return asyncio.run(_apply_with_client(key, metadata, kubeconfig, context))
