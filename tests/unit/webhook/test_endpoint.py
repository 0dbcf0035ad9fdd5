"""The webhook's HTTPS endpoint over a real TLS socket: against slow clients (a body that does not arrive gets
408, a connection that never completes its headers is closed: SPEC §7 robustness, §8 bounded resources), and
through a certificate change (the new bundle is announced while the old certificate still serves)."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ome_selector.webhook.endpoint import ClientAuth, ReviewEndpoint, server_context
from ome_selector.webhook.review import MalformedReviewError, Review
from ome_selector.webhook.tls import CertificateAuthority, KeyPair, generate_serving_files

#: Short timeouts for the endpoint under test; the client waits far longer than these before giving up.
SERVER_TIMEOUT = 0.3
CLIENT_PATIENCE = 20.0


async def _never_called(review: Review, webhook: str, headers: dict[str, str], peer: Any) -> dict[str, Any]:
    raise AssertionError("no well-formed review is sent in these tests")


@asynccontextmanager
async def _serving(
    tmp_path: Path, refused: list[MalformedReviewError], closing: Callable[[], bool] = lambda: False
) -> AsyncIterator[int]:
    files = generate_serving_files(tmp_path / "tls", "127.0.0.1")
    endpoint = ReviewEndpoint(
        files,
        "127.0.0.1",
        0,
        None,
        ["validate"],
        body_timeout=SERVER_TIMEOUT,
        idle_timeout=SERVER_TIMEOUT,
        linger_timeout=SERVER_TIMEOUT,
        closing=closing,
    )
    configs = endpoint.listen(_never_called, refused.append)
    config = await anext(configs)
    port = int(str(config["url"]).rsplit(":", 1)[1])
    try:
        yield port
    finally:
        await configs.aclose()


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return await asyncio.open_connection("127.0.0.1", port, ssl=context)


def test_a_body_that_stops_arriving_gets_408_and_the_connection_closes(tmp_path: Path) -> None:
    async def scenario() -> tuple[bytes, list[MalformedReviewError]]:
        refused: list[MalformedReviewError] = []
        async with _serving(tmp_path, refused) as port:
            reader, writer = await _connect(port)
            writer.write(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"{" * 10)
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), CLIENT_PATIENCE)  # until the server closes
            writer.close()
        return answer, refused

    answer, refused = asyncio.run(scenario())
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert answer.endswith(b"the request body did not arrive within 0.3 seconds")
    assert [error.status for error in refused] == [408]


def test_a_connection_that_never_completes_its_headers_is_closed(tmp_path: Path) -> None:
    async def scenario() -> bytes:
        async with _serving(tmp_path, []) as port:
            reader, writer = await _connect(port)
            writer.write(b"POST /validate HTTP/1.1\r\nHost: x\r\n")  # and nothing more
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), CLIENT_PATIENCE)
            writer.close()
        return answer

    assert asyncio.run(scenario()) == b""  # closed without an answer


def test_a_client_that_keeps_its_body_coming_is_answered(tmp_path: Path) -> None:
    """The timeout bounds the whole body, and a complete body inside it is read as usual (here: not JSON)."""

    async def scenario() -> bytes:
        async with _serving(tmp_path, []) as port:
            reader, writer = await _connect(port)
            writer.write(
                b"POST /validate HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 4\r\n\r\nno"
            )
            await writer.drain()
            writer.write(b"pe")
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), CLIENT_PATIENCE)
            writer.close()
        return answer

    assert asyncio.run(scenario()).startswith(b"HTTP/1.1 400 ")


async def _answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One HTTP answer read off a connection: its head and its body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CLIENT_PATIENCE)
    fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
    length = int({name.lower(): value for name, value in fields.items()}[b"content-length"])
    return head, await asyncio.wait_for(reader.readexactly(length), CLIENT_PATIENCE)


def test_a_draining_endpoint_closes_each_connection_after_its_answer(tmp_path: Path) -> None:
    """Until the replica drains, a connection carries one request after another; from then on, the answer
    says ``Connection: close`` and the connection ends, so the apiserver keeps none for later."""
    draining = [False]

    async def scenario() -> tuple[bytes, bytes, bytes]:
        async with _serving(tmp_path, [], closing=lambda: draining[0]) as port:
            reader, writer = await _connect(port)
            request = b"POST /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
            writer.write(request)
            before, _ = await _answer(reader)
            draining[0] = True
            writer.write(request)  # the same connection: still open
            after, _ = await _answer(reader)
            rest = await asyncio.wait_for(reader.read(), CLIENT_PATIENCE)  # until the server closes
            writer.close()
        return before, after, rest

    before, after, rest = asyncio.run(scenario())
    assert before.startswith(b"HTTP/1.1 404 ")
    assert b"connection: close" not in before.lower()
    assert after.startswith(b"HTTP/1.1 404 ")
    assert b"connection: close" in after.lower()
    assert rest == b""


async def _served_certificate(port: int) -> bytes:
    _, writer = await _connect(port)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    return bytes(der)


def _der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


def test_new_files_are_announced_before_their_certificate_is_served(tmp_path: Path) -> None:
    """The caller (the registration) hears of the new bundle while the previous certificate still serves, and
    only then does the listener restart with the new one (on the same port)."""

    async def scenario() -> None:
        files = generate_serving_files(tmp_path / "tls", "127.0.0.1")
        old_cert = files.cert_file.read_bytes()
        endpoint = ReviewEndpoint(files, "127.0.0.1", 0, None, ["validate"], file_check_interval=0.02)
        configs = endpoint.listen(_never_called, lambda error: None)
        first = await anext(configs)
        port = int(str(first["url"]).rsplit(":", 1)[1])
        generate_serving_files(tmp_path / "tls", "127.0.0.1")  # a rotated Secret
        new_cert, new_ca = files.cert_file.read_bytes(), files.ca_file.read_bytes() if files.ca_file else b""
        announced = await anext(configs)
        assert base64.b64decode(str(announced["caBundle"])) == new_ca
        assert await _served_certificate(port) == _der(old_cert)  # not switched yet
        restarted = await anext(configs)
        assert restarted["url"] == first["url"]
        assert await _served_certificate(port) == _der(new_cert)
        await configs.aclose()

    asyncio.run(scenario())


# --- TLS: ciphers and client certificates ---------------------------------------------------------------


def _pem_files(directory: Path, name: str, pair: KeyPair) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    return cert, key


@asynccontextmanager
async def _serving_with(tmp_path: Path, client_auth: ClientAuth | None) -> AsyncIterator[int]:
    files = generate_serving_files(tmp_path / "tls", "127.0.0.1")
    endpoint = ReviewEndpoint(files, "127.0.0.1", 0, None, ["validate"], client_auth=client_auth)
    configs = endpoint.listen(_never_called, lambda error: None)
    config = await anext(configs)
    try:
        yield int(str(config["url"]).rsplit(":", 1)[1])
    finally:
        await configs.aclose()


async def _post(port: int, context: ssl.SSLContext) -> bytes:
    """POST ``{}`` and read the whole answer (an empty answer when the server drops the connection)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        writer.write(
            b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        )
        await writer.drain()
        return await asyncio.wait_for(reader.read(), CLIENT_PATIENCE)
    finally:
        writer.close()


def _client(pair: KeyPair | None, directory: Path, name: str) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if pair is not None:
        cert, key = _pem_files(directory, name, pair)
        context.load_cert_chain(cert, key)
    return context


def test_with_client_verification_only_the_expected_certificate_is_answered(tmp_path: Path) -> None:
    """The apiserver's client certificate reaches the handlers; no certificate, one of another CA, or one of
    another name does not (the handshake fails, or 403 before the body is read)."""
    apiserver_ca, other_ca = CertificateAuthority("apiserver-client-ca"), CertificateAuthority("other-ca")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(apiserver_ca.cert_pem)
    apiserver = apiserver_ca.issue("kube-apiserver-webhook-client", client=True)
    intruder = apiserver_ca.issue("someone-else", client=True)
    forged = other_ca.issue("kube-apiserver-webhook-client", client=True)
    auth = ClientAuth(ca_file, frozenset({"kube-apiserver-webhook-client"}))
    clients = tmp_path / "clients"

    async def scenario() -> None:
        async with _serving_with(tmp_path, auth) as port:
            answered = await _post(port, _client(apiserver, clients, "apiserver"))
            assert answered.startswith(b"HTTP/1.1 400 "), answered  # past TLS and the name: the body is read
            assert answered.endswith(b"apiVersion is not admission.k8s.io/v1")
            refused = await _post(port, _client(intruder, clients, "intruder"))
            assert refused.startswith(b"HTTP/1.1 403 "), refused
            assert refused.endswith(b"client certificate (someone-else) is not one of the accepted names")
            for pair, name in ((None, "none"), (forged, "forged")):
                try:
                    dropped = await _post(port, _client(pair, clients, name))
                except (ssl.SSLError, ConnectionError):
                    continue  # the handshake failed
                assert dropped == b"", (name, dropped)  # TLS 1.3: the alert comes after the client's side

    asyncio.run(scenario())


def test_without_client_verification_any_client_is_answered(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _serving_with(tmp_path, None) as port:
            answered = await _post(port, _client(None, tmp_path, "none"))
            assert answered.startswith(b"HTTP/1.1 400 ")

    asyncio.run(scenario())


def test_the_listener_offers_no_cbc_cipher_and_nothing_below_tls_1_2(tmp_path: Path) -> None:
    files = generate_serving_files(tmp_path / "tls", "127.0.0.1")
    context = server_context(files.cert_file, files.key_file)
    names = [cipher["name"] for cipher in context.get_ciphers()]
    assert names
    assert all("GCM" in name or "CHACHA20" in name for name in names), names
    assert context.minimum_version is ssl.TLSVersion.TLSv1_2

    def tls12(ciphers: str) -> ssl.SSLContext:
        client = _client(None, tmp_path, "none")
        client.maximum_version = ssl.TLSVersion.TLSv1_2
        client.set_ciphers(ciphers)
        return client

    async def scenario() -> None:
        async with _serving_with(tmp_path, None) as port:
            with pytest.raises((ssl.SSLError, ConnectionResetError)):  # no common cipher: no handshake
                await _post(port, tls12("ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384:AES128-SHA"))
            answered = await _post(port, tls12("ECDHE-ECDSA-AES128-GCM-SHA256"))
            assert answered.startswith(b"HTTP/1.1 400 ")

    asyncio.run(scenario())


_REVIEW = (
    b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u",'
    b' "kind": {"group": "ome.io", "version": "v1beta1", "kind": "ClusterBaseModel"},'
    b' "resource": {"group": "ome.io", "version": "v1beta1", "resource": "clusterbasemodels"},'
    b' "operation": "CREATE", "userInfo": {"username": "anyone"}, "object": {"metadata": {"name": "m"}}}}'
)


def test_with_an_optional_certificate_every_caller_is_answered_and_only_the_accepted_one_is_verified(
    tmp_path: Path,
) -> None:
    """SPEC §7 "Who is told names": the answer hears the peer certificate only when it is verified and of an
    accepted name; a caller without one, or of another name, is answered as unverified (an empty peer); one of
    another CA still fails the handshake."""
    apiserver_ca, other_ca = CertificateAuthority("apiserver-client-ca"), CertificateAuthority("other-ca")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(apiserver_ca.cert_pem)
    apiserver = apiserver_ca.issue("kube-apiserver-webhook-client", client=True)
    intruder = apiserver_ca.issue("someone-else", client=True)
    forged = other_ca.issue("kube-apiserver-webhook-client", client=True)
    auth = ClientAuth(ca_file, frozenset({"kube-apiserver-webhook-client"}), optional=True)
    heard: list[Any] = []

    async def answer(review: Review, webhook: str, headers: dict[str, str], peer: Any) -> dict[str, Any]:
        heard.append(peer)
        return {"response": {"uid": review.uid, "allowed": True}}

    async def ask(port: int, context: ssl.SSLContext) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        try:
            writer.write(
                b"POST /validate-clusterbasemodels HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                + f"Content-Length: {len(_REVIEW)}\r\n\r\n".encode()
                + _REVIEW
            )
            await writer.drain()
            return await asyncio.wait_for(reader.read(), CLIENT_PATIENCE)
        finally:
            writer.close()

    async def scenario() -> None:
        files = generate_serving_files(tmp_path / "tls", "127.0.0.1")
        endpoint = ReviewEndpoint(
            files, "127.0.0.1", 0, None, ["validate-clusterbasemodels"], client_auth=auth
        )
        configs = endpoint.listen(answer, lambda error: None)
        config = await anext(configs)
        port = int(str(config["url"]).rsplit(":", 1)[1])
        clients = tmp_path / "clients"
        try:
            for pair, name in ((apiserver, "apiserver"), (intruder, "intruder"), (None, "none")):
                answered = await ask(port, _client(pair, clients, name))
                assert answered.startswith(b"HTTP/1.1 200 "), (name, answered)
            try:
                dropped = await ask(port, _client(forged, clients, "forged"))
            except (ssl.SSLError, ConnectionError):
                dropped = b""
            assert dropped == b""
        finally:
            await configs.aclose()

    asyncio.run(scenario())
    assert len(heard) == 3
    assert ("commonName", "kube-apiserver-webhook-client") in heard[0]["subject"][0]
    assert heard[1:] == [{}, {}]
    assert (
        server_context(
            generate_serving_files(tmp_path / "ctx", "127.0.0.1").cert_file,
            tmp_path / "ctx" / "tls.key",
            auth,
        ).verify_mode
        == ssl.CERT_OPTIONAL
    )
