"""Credentials as Kopf takes them (kube/connection.py, operator/kopfwiring.py), and the kubeconfig's namespace
as kubectl reads it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client

from harness.kube import token_kubeconfig
from ome_selector.kube import connection
from ome_selector.kube.connection import (
    KUBECONFIG_ERRORS,
    ClusterAccess,
    UnknownContextError,
    credentials,
    environment_proxy,
    kubeconfig_namespace,
)
from ome_selector.operator.kopfwiring import kopf_connection


def _configuration(api_key: dict[str, str] | None = None) -> client.Configuration:
    configuration = client.Configuration()
    configuration.host = "https://apiserver:6443"
    configuration.ssl_ca_cert = "/ca.crt"
    configuration.cert_file = "/admin.crt"
    configuration.key_file = "/admin.key"
    configuration.api_key = api_key or {}
    return configuration


def test_client_certificates_pass_through() -> None:
    info = kopf_connection(credentials(_configuration()))
    assert (info.server, info.ca_path, info.insecure) == ("https://apiserver:6443", "/ca.crt", False)
    assert (info.certificate_path, info.private_key_path) == ("/admin.crt", "/admin.key")
    assert (info.scheme, info.token) == (None, None)


@pytest.mark.parametrize(
    ("api_key", "scheme", "token"),
    [
        ({"authorization": "Bearer abc"}, "Bearer", "abc"),
        ({"BearerToken": "Bearer xyz"}, "Bearer", "xyz"),
        ({"authorization": "abc"}, "Bearer", "abc"),  # a bare token is a bearer token
    ],
)
def test_tokens_split_into_scheme_and_token(api_key: dict[str, str], scheme: str, token: str) -> None:
    info = kopf_connection(credentials(_configuration(api_key)))
    assert (info.scheme, info.token) == (scheme, token)


def _kubeconfig(tmp_path: Path, current: str = "a") -> Path:
    path = tmp_path / "kubeconfig"
    contexts = [
        {"name": "a", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
        {"name": "b", "context": {"cluster": "c", "user": "u"}},
    ]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": contexts,
                "current-context": current,
            }
        )
    )
    return path


def test_namespace_of_the_current_or_named_context(tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path)
    assert kubeconfig_namespace(kubeconfig) == "team-a"
    assert kubeconfig_namespace(kubeconfig, "b") is None
    assert kubeconfig_namespace(_kubeconfig(tmp_path, current="b")) is None


def test_unknown_context_and_unreadable_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(UnknownContextError, match='context "nope" does not exist'):
        kubeconfig_namespace(_kubeconfig(tmp_path), "nope")
    with pytest.raises(KUBECONFIG_ERRORS):
        kubeconfig_namespace(tmp_path / "missing")
    (tmp_path / "broken").write_text("{not yaml: [")
    with pytest.raises(KUBECONFIG_ERRORS):
        kubeconfig_namespace(tmp_path / "broken")


@pytest.mark.parametrize(
    ("environment", "server", "proxy"),
    [
        ({}, "https://apiserver:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://apiserver:6443", "http://proxy:3128"),
        ({"https_proxy": "http://proxy:3128", "NO_PROXY": "apiserver"}, "https://apiserver:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": ".cluster.local"}, "https://k.cluster.local", None),
        ({"HTTP_PROXY": "http://proxy:3128"}, "https://apiserver:6443", None),  # only the scheme's own
    ],
)
def test_the_proxy_is_resolved_from_the_environment_once(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], server: str, proxy: str | None
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert environment_proxy(server) == proxy


def test_api_clients_do_not_consult_the_environment_per_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp's per-request proxy and netrc lookups (two worker-thread hops per call) are off; the proxy
    still comes from the environment, once."""
    kubeconfig = token_kubeconfig(tmp_path / "kubeconfig", "https://apiserver:6443")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    async def scenario() -> tuple[bool, str | None]:
        async with await ClusterAccess(kubeconfig).api_client() as api:
            return api.rest_client.pool_manager.trust_env, api.rest_client.proxy

    assert asyncio.run(scenario()) == (False, "http://proxy:3128")


def test_a_request_to_an_apiserver_that_never_answers_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection whose peer stopped answering without closing it: kubernetes_asyncio's default is to wait
    forever, which would hold a write and its worker. A call that names a timeout keeps its own."""

    async def scenario() -> list[str]:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read()  # takes the request, never answers

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        ended: list[str] = []
        async with (
            server,
            await ClusterAccess(
                token_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
            ).api_client() as api,
        ):
            core = client.CoreV1Api(api)
            async with asyncio.timeout(10):  # the test's own bound: a wait that never ends fails it
                for default, own in ((0.3, None), (60.0, 0.2)):
                    monkeypatch.setattr(connection, "REQUEST_READ_SECONDS", default)
                    with pytest.raises(TimeoutError):
                        await core.list_namespace(_request_timeout=own)
                    ended.append(f"ended ({own})")
        return ended

    assert asyncio.run(scenario()) == ["ended (None)", "ended (0.2)"]
