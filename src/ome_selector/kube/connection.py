"""One source of cluster credentials for both clients: Kopf's watcher and kubernetes_asyncio.

A kubeconfig (explicit path or context, else $KUBECONFIG / ~/.kube/config) or, inside a pod, the mounted
service-account token. Tokens never reach the logs.
"""

from __future__ import annotations

import os
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.config import ConfigException

__all__ = [
    "KUBECONFIG_ERRORS",
    "ClusterAccess",
    "Credentials",
    "RequestObserver",
    "UnknownContextError",
    "credentials",
    "environment_proxy",
    "kubeconfig_context",
    "kubeconfig_namespace",
]

#: What a missing, unreadable or malformed kubeconfig raises (the client's own error among them).
KUBECONFIG_ERRORS: tuple[type[Exception], ...] = (
    ConfigException,
    OSError,
    yaml.YAMLError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
)


#: Told of every request an ``api_client()`` makes: method, URL path, HTTP status (None: no answer), seconds.
RequestObserver = Callable[[str, str, int | None, float], None]

#: A request that names no timeout of its own (every one but the watch streams'): connecting, and then waiting
#: for the next bytes of the answer, at most this long. kubernetes_asyncio waits forever by default, so a
#: connection whose peer vanished without closing it would hold a write, and the worker behind it, until the
#: kernel gives up (15 minutes). kube-apiserver answers a request within its own 60 s limit.
REQUEST_CONNECT_SECONDS = 10.0
REQUEST_READ_SECONDS = 70.0


@dataclass(frozen=True)
class ClusterAccess:
    kubeconfig: Path | None = None
    context: str | None = None
    #: Told of each request of every client made here (the operator's API metrics, SPEC §8).
    observer: RequestObserver | None = field(default=None, compare=False)
    #: The whole of each request that names no timeout of its own, in seconds (the CLIs'
    #: ``--request-timeout``); None: the default connect and read bounds below.
    request_timeout: float | None = None

    async def configuration(self) -> client.Configuration:
        configuration = client.Configuration()
        if self.kubeconfig is None and self.context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            path = str(self.kubeconfig) if self.kubeconfig else None
            await config.load_kube_config(
                config_file=path, context=self.context, client_configuration=configuration
            )
        return configuration

    async def api_client(self) -> client.ApiClient:
        configuration = await self.configuration()
        if configuration.proxy is None:
            configuration.proxy = environment_proxy(configuration.host or "")
        api = client.ApiClient(configuration)
        # kubernetes_asyncio's session trusts the environment, so aiohttp looks up the proxy variables and
        # ~/.netrc in a worker thread on every request: two thread hops per call, a third of the operator's
        # CPU in a fan-out. The proxy is resolved once above instead; netrc credentials never applied (the
        # client sends its own Authorization header, and aiohttp refuses both at once). A unit test fails
        # if aiohttp renames the attribute.
        api.rest_client.pool_manager._trust_env = False
        _bound_requests(api.rest_client, self.request_timeout)
        if self.observer is not None:
            _observe_requests(api.rest_client, self.observer)
        return api


def _bound_requests(rest_client: Any, total: float | None = None) -> None:
    """Give each request of one client that names no timeout the default bounds, or ``total`` seconds for
    the whole request."""
    request = rest_client.request

    async def bounded(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("_request_timeout"):
            kwargs["_request_timeout"] = (
                aiohttp.ClientTimeout(total=total)
                if total is not None
                else aiohttp.ClientTimeout(
                    sock_connect=REQUEST_CONNECT_SECONDS, sock_read=REQUEST_READ_SECONDS
                )
            )
        return await request(method, url, *args, **kwargs)

    rest_client.request = bounded


def _observe_requests(rest_client: Any, observer: RequestObserver) -> None:
    """Wrap one client's ``request`` (every generated call and ``call_api`` go through it) so that
    ``observer`` hears of each request once it is answered, or failed without an answer."""
    request = rest_client.request

    async def observed(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        status: int | None = None
        try:
            response = await request(method, url, *args, **kwargs)
            status = response.status
            return response
        except client.ApiException as error:
            status = error.status or None  # 0: the client refused to send it
            raise
        finally:
            observer(method, urllib.parse.urlsplit(url).path, status, time.perf_counter() - started)

    rest_client.request = observed


def environment_proxy(server: str) -> str | None:
    """The proxy that ``HTTPS_PROXY``/``HTTP_PROXY`` (and ``NO_PROXY``) name for ``server``, as client-go
    would use it; None for none."""
    url = urllib.parse.urlsplit(server)
    if not url.hostname or urllib.request.proxy_bypass(url.hostname):
        return None
    return urllib.request.getproxies_environment().get(url.scheme or "https")


@dataclass(frozen=True)
class Credentials:
    """How to reach the apiserver, in the fields of Kopf's ``ConnectionInfo`` (what its login handlers
    return: operator.kopfwiring.kopf_connection). Kopf is not imported here: every ``kubectl ome-selector``
    call imports this module, and Kopf costs it a third of a second."""

    server: str
    ca_path: str | None
    insecure: bool
    certificate_path: str | None
    private_key_path: str | None
    scheme: str | None
    token: str | None


def credentials(configuration: client.Configuration) -> Credentials:
    """The credentials of a client configuration (a bare token is a bearer token)."""
    authorization = (configuration.api_key or {}).get("authorization") or (configuration.api_key or {}).get(
        "BearerToken"
    )
    scheme, token = None, None
    if authorization:
        scheme, _, token = str(authorization).partition(" ")
        if not token:
            scheme, token = "Bearer", scheme
    return Credentials(
        server=str(configuration.host),
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        scheme=scheme,
        token=token,
    )


class UnknownContextError(LookupError):
    """The kubeconfig has no context of the requested name."""


def kubeconfig_namespace(kubeconfig: Path | None = None, context: str | None = None) -> str | None:
    """The namespace of ``context`` (else the current context) in the kubeconfig, as kubectl reads it.

    Raises one of :data:`KUBECONFIG_ERRORS` when the kubeconfig cannot be read, and
    :class:`UnknownContextError` when ``context`` is not in it.
    """
    contexts, active = config.list_kube_config_contexts(str(kubeconfig) if kubeconfig else None)
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else active
    if context and chosen is None:
        raise UnknownContextError(f'context "{context}" does not exist in the kubeconfig')
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else None


def kubeconfig_context(kubeconfig: Path | None = None, context: str | None = None) -> str | None:
    """The name of the context a client of ``ClusterAccess(kubeconfig, context)`` uses: ``context`` if
    given, else the kubeconfig's current context; None inside a pod without a kubeconfig, or when none can be
    read."""
    if context:
        return context
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    try:
        _, active = config.list_kube_config_contexts(str(kubeconfig) if kubeconfig else None)
    except KUBECONFIG_ERRORS:
        return None
    name = (active or {}).get("name")
    return str(name) if name else None
