"""The namespaced-or-cluster choice of the custom-objects API, made in one place for every kind.

The official clients name the two variants ``<verb>_namespaced_custom_object`` (group, version, namespace,
plural) and ``<verb>_cluster_custom_object`` (group, version, plural). :func:`custom_object_call` binds the
right one. It only looks the method up by name, so it serves kubernetes_asyncio and the synchronous client
of the test harness alike; the group and version are :mod:`ome_selector.api.resources`'.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

from ome_selector.api.resources import API_GROUP, API_VERSION, Kind

__all__ = ["Verb", "custom_object_call"]

Verb = Literal["get", "list", "create", "replace", "patch", "delete"]


def custom_object_call(
    objects: Any, verb: Verb, kind: Kind, namespace: str | None, *, status: bool = False
) -> Callable[..., Any]:
    """``objects``' call for ``verb`` on ``kind``, bound up to the plural; the caller adds the rest.

    With a namespace: the namespaced call (a cluster-scoped kind has none, so that is a ``ValueError``).
    Without: the cluster-wide call, which for a namespaced kind spans every namespace (``list``).
    ``status=True`` picks the ``/status`` subresource variant.
    """
    suffix = "_status" if status else ""
    if namespace is None:
        method = getattr(objects, f"{verb}_cluster_custom_object{suffix}")
        return functools.partial(method, API_GROUP, API_VERSION, kind.plural)
    if not kind.namespaced:
        raise ValueError(f"{kind.value} is cluster-scoped; it has no namespace {namespace!r}")
    method = getattr(objects, f"{verb}_namespaced_custom_object{suffix}")
    return functools.partial(method, API_GROUP, API_VERSION, namespace, kind.plural)
