"""The live object source of `kubectl ome-selector runtime explain`: the cluster of the current kubeconfig
context.

One consistent, paged listing (:meth:`~ome_selector.kube.objects.Objects.list_objects`, as the operator
lists: later lists at the first one's resourceVersion) of the ServingRuntimes, BaseModels and
InferenceServices of the namespace and every cluster-scoped runtime and model. Any failure is a
:class:`SourceError`: explain never prints a table from a partial listing. Only live mode imports this
module, so offline mode (`-f`) never loads the Kubernetes client.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from aiohttp import ClientError

from ome_selector.api.resources import Kind
from ome_selector.cli.sources import DEFAULT_NAMESPACE, RawObject, SourceError
from ome_selector.kube.connection import (
    KUBECONFIG_ERRORS,
    ClusterAccess,
    UnknownContextError,
    kubeconfig_namespace,
)
from ome_selector.kube.objects import ALL_KINDS, ApiError, Objects


@dataclass(frozen=True)
class ClusterSource:
    """Objects read from the cluster; the namespace is `-n`, else the context's, else ``default``.

    With ``all_namespaces`` the namespaced kinds are listed in every namespace (`-A`), not only that one;
    ``kinds`` and ``label_selector`` narrow the listing (`kubectl ome-selector status`: InferenceServices,
    `-l`).
    """

    requested_namespace: str | None = None
    kubeconfig: Path | None = None
    context: str | None = None
    all_namespaces: bool = False
    kinds: tuple[Kind, ...] = ALL_KINDS
    label_selector: str | None = None
    #: ``--request-timeout`` in seconds: the bound of each request (None: the client's defaults).
    request_timeout: float | None = None

    @cached_property
    def namespace(self) -> str:
        if self.requested_namespace:
            return self.requested_namespace
        _check_kubeconfig(self.kubeconfig)
        try:
            return kubeconfig_namespace(self.kubeconfig, self.context) or DEFAULT_NAMESPACE
        except UnknownContextError as error:
            raise SourceError(str(error)) from error
        except KUBECONFIG_ERRORS as error:
            raise SourceError(f"cannot read the kubeconfig: {error}") from error

    def read(self) -> list[RawObject]:
        return asyncio.run(self._read())

    async def _read(self) -> list[RawObject]:
        namespace = self.namespace
        _check_kubeconfig(self.kubeconfig)
        access = ClusterAccess(self.kubeconfig, self.context, request_timeout=self.request_timeout)
        try:
            api_client = await access.api_client()
        except KUBECONFIG_ERRORS as error:
            raise SourceError(f"cannot read the kubeconfig: {error}") from error
        async with api_client:
            try:
                snapshot = await Objects(api_client).list_objects(
                    namespaces=None if self.all_namespaces else [namespace],
                    kinds=self.kinds,
                    label_selector=self.label_selector,
                )
            except ApiError as error:
                raise SourceError(
                    f"cannot list ome.io objects: {error.status} {error.reason}: {_message(error)}"
                ) from error
            except TimeoutError as error:
                raise SourceError(_timed_out(self.request_timeout)) from error
            except (ClientError, OSError) as error:
                raise SourceError(f"cannot reach the cluster: {error}") from error
        origin = f"the cluster (resourceVersion {snapshot.resource_version})"
        return [RawObject(body, origin, from_file=False) for body in snapshot.bodies]


#: What kubectl says when no kubeconfig exists (it then tries http://localhost:8080, SPEC §6).
NO_KUBECONFIG = (
    "The connection to the server localhost:8080 was refused - did you specify the right host or port?"
)


def _check_kubeconfig(kubeconfig: Path | None) -> None:
    """Report a missing kubeconfig as kubectl reports it: ``stat <path>: no such file or directory`` for a
    ``--kubeconfig`` that does not exist; :data:`NO_KUBECONFIG` when neither ``$KUBECONFIG``'s files nor
    ``~/.kube/config`` exist (outside a pod)."""
    if kubeconfig is not None:
        if not kubeconfig.exists():
            raise SourceError(f"stat {kubeconfig}: no such file or directory")
        return
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return
    listed = [path for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path]
    candidates = [Path(path) for path in listed] or [Path("~/.kube/config").expanduser()]
    if not any(path.exists() for path in candidates):
        raise SourceError(NO_KUBECONFIG)


def _timed_out(seconds: float | None) -> str:
    within = f" within the request timeout ({seconds:g}s)" if seconds is not None else ""
    return f"cannot reach the cluster: no answer{within}"


def _message(error: ApiError) -> str:
    body = getattr(error, "body", None)
    try:
        return str(json.loads(body).get("message", body)) if body else ""
    except (ValueError, AttributeError):
        return str(body)
