"""The typed clients of the built-in API groups, built here so that kubernetes_asyncio stays inside kube/.

:class:`~.objects.Objects` makes the calls on the ome.io objects and Events, and
:class:`~.leaderelection.ApiLeaseStore` those on the Lease. For the other built-in objects the webhook, the
cleanup and the CLIs read and write (the certificate Secret, the ValidatingWebhookConfigurations, the
operator's Deployment and pods, the namespaces a completion offers), each gets its API group's client from a
function here, over an :class:`ApiClient` that :meth:`.connection.ClusterAccess.api_client` made (the
caller owns and closes it), and catches :data:`~.objects.ApiError`. An import contract in pyproject.toml
keeps every other package from importing kubernetes_asyncio.

The clients answer with kubernetes_asyncio's model objects; the names re-exported here are those the
callers annotate with.
"""

from __future__ import annotations

from kubernetes_asyncio import client
from kubernetes_asyncio.client import AdmissionregistrationV1Api, ApiClient, V1Pod

__all__ = [
    "AdmissionregistrationV1Api",
    "ApiClient",
    "V1Pod",
    "admission_registration_api",
    "apps_api",
    "coordination_api",
    "core_api",
    "custom_objects_api",
    "preconditioned_deletion",
]


def core_api(api_client: ApiClient) -> client.CoreV1Api:
    """core/v1: Secrets, pods, namespaces."""
    return client.CoreV1Api(api_client)


def apps_api(api_client: ApiClient) -> client.AppsV1Api:
    """apps/v1: Deployments and their scale."""
    return client.AppsV1Api(api_client)


def coordination_api(api_client: ApiClient) -> client.CoordinationV1Api:
    """coordination.k8s.io/v1: Leases."""
    return client.CoordinationV1Api(api_client)


def admission_registration_api(api_client: ApiClient) -> AdmissionregistrationV1Api:
    """admissionregistration.k8s.io/v1: ValidatingWebhookConfigurations."""
    return AdmissionregistrationV1Api(api_client)


def custom_objects_api(api_client: ApiClient) -> client.CustomObjectsApi:
    """The custom-objects API (pick its namespaced or cluster call with :func:`.scope.custom_object_call`)."""
    return client.CustomObjectsApi(api_client)


def preconditioned_deletion(resource_version: str) -> client.V1DeleteOptions:
    """Delete options the apiserver refuses (409) unless the object is still at ``resource_version``."""
    return client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=resource_version))
