"""The webhook's HTTPS endpoint: where an admission request's bytes are read, before Kopf sees any of them.

In place of ``kopf.WebhookServer``, whose request handler decodes and parses the body itself (invalid UTF-8,
deep nesting or a body that is not an object become HTTP 500 with a traceback), this endpoint reads the body
with :func:`~.review.read_review` (SPEC §7: 400 with a one-line reason, 413 over 1 MiB) and hands Kopf's
dispatcher only a well-formed review. Like Kopf's server it serves ``POST /<webhook id>`` with the given
certificate files, and restarts its listener — on the same port — when the files change (a rotated Secret).

A slow client cannot hold a connection for long: a request whose headers have not arrived within
:data:`IDLE_TIMEOUT` of the connection opening (or of the previous answer) is dropped, and one whose body has
not arrived within :data:`BODY_TIMEOUT` gets 408 (and its connection is closed after at most
:data:`LINGER_TIMEOUT`).

A draining replica (``closing``: it is about to stop) closes each connection after its answer: the apiserver
reuses a connection it keeps alive without looking at the Service again, so one kept to a replica whose
listener closes can meet the close with a request on it (an EOF, which the apiserver does not retry).

TLS is 1.2 or newer with forward-secret AEAD ciphers only (ECDHE with AES-GCM or ChaCha20-Poly1305; TLS 1.3's
suites are all AEAD): no CBC suite, no static RSA key exchange. With :class:`ClientAuth` the endpoint also
asks for a client certificate during the handshake and refuses one not issued by its CA (the handshake
fails) or, when names are given, one whose subject common name or DNS names are none of them (HTTP 403, the
body unread): the apiserver presents such a certificate when its admission configuration names one for
webhooks, and nobody else can then ask the webhook anything. With ``ClientAuth.optional`` the certificate is
asked for but not required: a caller without one (or with another name) is answered as an unverified caller.
The answer hears the peer certificate only when it is verified and accepted (else an empty one), so a
handler can tell the apiserver from anyone else (SPEC §12: names of other namespaces' objects only to it).

Malformed requests are logged as one line at most once a minute, with how many came since: those refused
here, and those aiohttp itself refuses before any handler runs (a bad request line, headers over 8 KiB, a
client gone mid-body), which it would otherwise log each with a traceback.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import ipaddress
import logging
import ssl
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kopf
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from ome_selector.webhook.review import MAX_BODY_BYTES, MalformedReviewError, Review, read_review
from ome_selector.webhook.tls import TlsFiles

__all__ = ["CIPHERS", "Answer", "ClientAuth", "ReviewEndpoint", "server_context"]

logger = logging.getLogger(__name__)

#: What answers one well-formed review: (review, webhook id, request headers, peer certificate) → response.
#: The peer certificate is empty unless verified and accepted by :class:`ClientAuth`.
Answer = Callable[[Review, str, dict[str, str], Any], Awaitable[dict[str, Any]]]
#: Called for every request that is not a well-formed review (the metrics count it).
OnMalformed = Callable[[MalformedReviewError], None]

#: A malformed request is logged at most this often (with the number since the last line): a flood of them
#: must not become a flood of log lines.
MALFORMED_LOG_INTERVAL = 60.0
#: The apiserver gives up on a webhook call after its timeoutSeconds (at most 30 s): a body still arriving
#: then is answered 408 and its connection closed.
BODY_TIMEOUT = 30.0
#: A connection without a complete request line and headers for this long is closed (aiohttp's default is
#: an hour). Longer than the apiserver's idle-connection timeout (Go's 90 s), so that a connection it keeps
#: for reuse is closed by the apiserver first and never in the middle of its next request.
IDLE_TIMEOUT = 120.0
#: After answering a request whose body was not read (408, 413), the rest is read and dropped for at most
#: this long before the connection closes: the client sees the answer, not a reset (aiohttp's default: 10 s).
LINGER_TIMEOUT = 2.0


#: TLS 1.2 suites offered (OpenSSL names): forward-secret key exchange and AEAD only, never CBC.
CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


@dataclass(frozen=True)
class ClientAuth:
    """Which client certificates the endpoint accepts: issued by a CA in ``ca_file`` and, when ``names`` is
    not empty, with one of them as subject common name or DNS subject alternative name."""

    ca_file: Path
    names: frozenset[str] = frozenset()
    #: Ask for a certificate without requiring one (the handshake succeeds without; one presented must still
    #: chain to the CA).
    optional: bool = False

    def refusal(self, peer: Any) -> str | None:
        """Why a verified peer certificate (``getpeercert()``'s dict) is not accepted; None when it is."""
        if not self.names:
            return None
        presented = _peer_names(peer)
        if presented & self.names:
            return None
        shown = ", ".join(sorted(presented)[:4]) or "no name"
        return f"client certificate ({shown}) is not one of the accepted names"


def _peer_names(peer: Any) -> set[str]:
    names: set[str] = set()
    if not isinstance(peer, dict):
        return names
    for rdn in peer.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                names.add(str(value))
    for key, value in peer.get("subjectAltName") or ():
        if key == "DNS":
            names.add(str(value))
    return names


def _never() -> bool:
    return False


@dataclass
class ReviewEndpoint:
    files: TlsFiles
    address: str
    port: int  # 0: a free one, kept across certificate restarts
    host: str | None  # what the apiserver dials; default: the address (loopback for "any")
    webhook_ids: Collection[str]
    file_check_interval: float = 60.0
    body_timeout: float = BODY_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    linger_timeout: float = LINGER_TIMEOUT
    #: Whether the replica is draining (about to stop): each answer then closes its connection, so that the
    #: apiserver keeps no connection to this replica for a request that would meet the listener closing.
    closing: Callable[[], bool] = _never
    #: Client certificates required (None: any client may connect, as without the option).
    client_auth: ClientAuth | None = None

    async def listen(
        self, answer: Answer, on_malformed: OnMalformed
    ) -> AsyncGenerator[kopf.WebhookClientConfig, None]:
        """Serve until cancelled; yield the client config each time the listener (re)starts, and once more
        with the new files' bundle just before a restart."""
        malformed = _MALFORMED
        _quiet_aiohttp_request_errors()

        async def handle(request: web.Request) -> web.Response:
            response = await answer_one(request)
            if self.closing():
                response.force_close()  # "Connection: close", and the connection ends after this answer
            return response

        async def answer_one(request: web.Request) -> web.Response:
            peer = request.transport.get_extra_info("peercert") if request.transport else None
            verified: dict[str, Any] = {}
            if self.client_auth is not None:
                refusal = self.client_auth.refusal(peer) if peer else "no client certificate"
                if refusal is None and isinstance(peer, dict):
                    verified = dict(peer)
                elif refusal is not None and not self.client_auth.optional:
                    malformed.note(refusal)
                    return web.Response(status=403, text=refusal, headers={"Connection": "close"})
            try:
                webhook = request.match_info["id"]
                if webhook not in self.webhook_ids:
                    raise MalformedReviewError("no webhook at this path", 404)
                if (request.content_length or 0) > MAX_BODY_BYTES:  # said up front: no need to read it
                    raise MalformedReviewError(f"request body is larger than {MAX_BODY_BYTES} bytes", 413)
                try:
                    async with asyncio.timeout(self.body_timeout):
                        body = await request.read()
                except TimeoutError:
                    raise MalformedReviewError(
                        f"the request body did not arrive within {self.body_timeout:g} seconds", 408
                    ) from None
                except ConnectionError:
                    raise MalformedReviewError(
                        "the client closed the connection before the body ended"
                    ) from None
                except web.HTTPRequestEntityTooLarge:
                    raise MalformedReviewError(
                        f"request body is larger than {MAX_BODY_BYTES} bytes", 413
                    ) from None
                review = read_review(body)
            except MalformedReviewError as error:
                on_malformed(error)
                malformed.note(error.reason)
                # A body cut short leaves the connection mid-request: it cannot carry another one.
                headers = {"Connection": "close"} if error.status == 408 else None
                return web.Response(status=error.status, text=error.reason, headers=headers)
            response = await answer(review, webhook, dict(request.headers), verified)
            return web.json_response(response)

        port = self.port
        while True:
            # Off the loop: the default context loads the system's CA store (tens of milliseconds).
            context = await asyncio.to_thread(
                server_context, self.files.cert_file, self.files.key_file, self.client_auth
            )
            digest = self._digest()
            app = web.Application(client_max_size=MAX_BODY_BYTES)
            app.router.add_post("/{id}", handle)
            runner = web.AppRunner(
                app,
                access_log=None,
                handle_signals=False,
                keepalive_timeout=self.idle_timeout,
                lingering_time=self.linger_timeout,
            )
            await runner.setup()
            try:
                site = web.TCPSite(runner, self.address, port, ssl_context=context, reuse_address=True)
                await site.start()
                port = port or _bound_port(runner)
                url = f"https://{_url_host(self.host or _dialable(self.address))}:{port}"
                logger.debug("serving admission reviews at %s", url)
                yield {"url": url, "caBundle": self._bundle()}
                while self._digest() == digest:
                    await asyncio.sleep(self.file_check_interval)
                logger.info("the webhook certificate files changed; restarting the listener")
                # The new bundle first, while this certificate still serves: in a rollover the bundle trusts
                # the previous CA too (.incluster), so the apiserver trusts this listener before and after.
                yield {"url": url, "caBundle": self._bundle()}
            finally:
                await runner.cleanup()

    def _bundle(self) -> str:
        """The ``caBundle`` for the current files: the CA file, else the (self-signed) certificate."""
        return base64.b64encode((self.files.ca_file or self.files.cert_file).read_bytes()).decode("ascii")

    def _digest(self) -> str:
        hasher = hashlib.sha256()
        client_ca = self.client_auth.ca_file if self.client_auth is not None else None
        for path in (self.files.cert_file, self.files.key_file, self.files.ca_file, client_ca):
            if path is not None:
                hasher.update(path.read_bytes())
        return hasher.hexdigest()


class _Throttled:
    """Logs the first malformed request, then at most one line per interval with how many came since."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._last: float | None = None
        self._count = 0

    def note(self, reason: str) -> None:
        self._count += 1
        now = time.monotonic()
        if self._last is not None and now - self._last < self._interval:
            return
        logger.warning("refused %d malformed admission request(s); the latest: %s", self._count, reason)
        self._last, self._count = now, 0


_MALFORMED = _Throttled(MALFORMED_LOG_INTERVAL)


class _OneLineRequestErrors(logging.Filter):
    """aiohttp logs a request it cannot parse, or one whose client vanished, with a traceback each: counted
    into the once-a-minute line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            _MALFORMED.note(f"HTTP {error.code} {type(error).__name__} (a request aiohttp cannot read)")
            return False
        if isinstance(error, ConnectionError):
            _MALFORMED.note("the client closed the connection before the request ended")
            return False
        return True


def _quiet_aiohttp_request_errors() -> None:
    server = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _OneLineRequestErrors) for f in server.filters):
        server.addFilter(_OneLineRequestErrors())


def _bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError("the webhook listener has no TCP address")


def _dialable(address: str) -> str:
    """A listening address the apiserver can dial: loopback for "any interface"."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if parsed.is_unspecified:
        return "::1" if parsed.version == 6 else "127.0.0.1"
    return address


def _url_host(host: str) -> str:
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def server_context(cert_file: Path, key_file: Path, client_auth: ClientAuth | None = None) -> ssl.SSLContext:
    """The listener's TLS: 1.2 or newer, :data:`CIPHERS` only, and the client certificate checked when
    ``client_auth`` is given (the handshake fails without one issued by its CA, or, when optional, with one
    not issued by it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(CIPHERS)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE | ssl.OP_NO_RENEGOTIATION
    context.load_cert_chain(cert_file, key_file)
    if client_auth is not None:
        context.load_verify_locations(cafile=client_auth.ca_file)
        context.verify_mode = ssl.CERT_OPTIONAL if client_auth.optional else ssl.CERT_REQUIRED
    return context
