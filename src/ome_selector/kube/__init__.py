"""The product's one Kubernetes client layer (kubernetes_asyncio), beside Kopf's own watching.

- :mod:`.connection`: credentials from a kubeconfig or the pod's service account, for both clients.
- :mod:`.objects`: the ome.io objects and Events: paged consistent listing, get, status patch, event create.
- :mod:`.scope`: the one place that picks the namespaced or the cluster-wide call for a kind.
- :mod:`.clients`: the typed clients of the built-in API groups (Secrets, webhook configurations, Deployments,
  pods, Leases, namespaces), for the packages above, which never import kubernetes_asyncio themselves.

The operator, the webhook, ``ome-selector cleanup`` and ``kubectl ome-selector`` all reach the API through
here.
"""
