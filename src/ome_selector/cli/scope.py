"""What `kubectl ome-selector runtime lint` and `what-if` read and which namespaces they judge (SPEC §11).

Both read objects as explain does (:mod:`.sources`, :mod:`.cluster_source`): from files, never touching the
kubeconfig, or from the cluster through one consistent listing. The namespaces:

- ``-n NS``: that namespace (and everything cluster-scoped); with files it is also the namespace of
  namespaced objects that name none;
- ``-A``: every namespace; live, the namespaced kinds are listed in all namespaces;
- neither: live, the context's namespace (else ``default``), as explain; with files, every namespace the files
  hold (objects without one are in ``default``), since the files are the scope.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.sources import DEFAULT_NAMESPACE, FileSource, Kustomization, ObjectSource

__all__ = ["object_source", "views"]


def object_source(paths: Sequence[str | Kustomization], args: argparse.Namespace) -> ObjectSource:
    """The files and kustomizations in ``paths`` (never the kubeconfig), else the cluster of the kubeconfig
    context."""
    if paths:
        return FileSource(tuple(paths), args.namespace or DEFAULT_NAMESPACE)
    from ome_selector.cli.cluster_source import ClusterSource  # noqa: PLC0415 - only live mode loads the client

    return ClusterSource(
        args.namespace,
        args.kubeconfig,
        args.context,
        all_namespaces=args.all_namespaces,
        request_timeout=args.request_timeout,
    )


def views(catalog: Catalog, source: ObjectSource, args: argparse.Namespace) -> list[str]:
    """The namespaces to judge: ``-n``'s, else the source's namespace and every namespace the catalog holds
    (live without ``-A`` the listing holds only the source's namespace)."""
    if args.namespace:
        return [args.namespace]
    held = {resource.namespace for resource in catalog if resource.namespace is not None}
    return sorted(held | {source.namespace})
