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

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ome_selector.webhook.endpoint import ReviewEndpoint
from ome_selector.webhook.review import MalformedReviewError, Review
from ome_selector.webhook.tls import generate_serving_files

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
