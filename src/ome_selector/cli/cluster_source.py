"""The live object source of `kubectl ome runtime explain`: the cluster of the current kubeconfig context.

One consistent, paged listing (the operator's own `list_objects`: later lists at the first one's
resourceVersion) of the ServingRuntimes, BaseModels and InferenceServices of the namespace and every
cluster-scoped runtime and model. Any failure is a :class:`SourceError`: explain never prints a table from
a partial listing. The Kubernetes client is imported only here, so offline mode (`-f`) never loads it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import yaml

from ome_selector.cli.sources import DEFAULT_NAMESPACE, RawObject, SourceError

# What a missing, unreadable or malformed kubeconfig raises besides the client's own ConfigException.
_KUBECONFIG_ERRORS = (OSError, yaml.YAMLError, ValueError, TypeError, KeyError, AttributeError)


@dataclass(frozen=True)
class ClusterSource:
    """Objects read from the cluster; the namespace is `-n`, else the context's, else ``default``.

    With ``all_namespaces`` the namespaced kinds are listed in every namespace (`-A`), not only that one.
    """

    requested_namespace: str | None = None
    kubeconfig: Path | None = None
    context: str | None = None
    all_namespaces: bool = False

    @cached_property
    def namespace(self) -> str:
        if self.requested_namespace:
            return self.requested_namespace
        from kubernetes_asyncio.config import ConfigException, list_kube_config_contexts  # noqa: PLC0415

        try:
            contexts, active = list_kube_config_contexts(str(self.kubeconfig) if self.kubeconfig else None)
        except (ConfigException, *_KUBECONFIG_ERRORS) as error:
            raise SourceError(f"cannot read the kubeconfig: {error}") from error
        chosen = (
            next((c for c in contexts if c.get("name") == self.context), None) if self.context else active
        )
        if self.context and chosen is None:
            raise SourceError(f'context "{self.context}" does not exist in the kubeconfig')
        namespace = ((chosen or {}).get("context") or {}).get("namespace")
        return str(namespace) if namespace else DEFAULT_NAMESPACE

    def read(self) -> list[RawObject]:
        return asyncio.run(self._read())

    async def _read(self) -> list[RawObject]:
        from aiohttp import ClientError  # noqa: PLC0415
        from kubernetes_asyncio.client.exceptions import ApiException  # noqa: PLC0415
        from kubernetes_asyncio.config import ConfigException  # noqa: PLC0415

        from ome_selector.operator.connection import ClusterAccess  # noqa: PLC0415
        from ome_selector.operator.listing import list_objects  # noqa: PLC0415

        namespace = self.namespace
        try:
            api_client = await ClusterAccess(self.kubeconfig, self.context).api_client()
        except (ConfigException, *_KUBECONFIG_ERRORS) as error:
            raise SourceError(f"cannot read the kubeconfig: {error}") from error
        async with api_client:
            try:
                snapshot = await list_objects(
                    api_client, namespaces=None if self.all_namespaces else [namespace]
                )
            except ApiException as error:
                raise SourceError(
                    f"cannot list ome.io objects: {error.status} {error.reason}: {_message(error)}"
                ) from error
            except (ClientError, OSError, TimeoutError) as error:
                raise SourceError(f"cannot reach the cluster: {error}") from error
        origin = f"the cluster (resourceVersion {snapshot.resource_version})"
        return [RawObject(body, origin) for body in snapshot.bodies]


def _message(error: object) -> str:
    import json  # noqa: PLC0415

    body = getattr(error, "body", None)
    try:
        return str(json.loads(body).get("message", body)) if body else ""
    except (ValueError, AttributeError):
        return str(body)
