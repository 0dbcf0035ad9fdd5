"""In-cluster webhook certificates kept in a Secret: the chart's default certificate mode.

The operator generates a CA and a serving certificate for its webhook Service (with :mod:`.tls`, never
Kopf's generator), stores them in one Secret (``tls.crt``, ``tls.key``, ``ca.crt``, as cert-manager names
them) so every restart serves the same CA, and writes the three files into the certificate directory (an
emptyDir: the root filesystem is read-only). The static configuration's ``caBundle`` is then kept current by
:class:`~.registration.CaBundleRegistration` from ``ca.crt``, as for a mounted cert-manager Secret.

Least privilege: only ``get`` and ``update`` on that one Secret (the chart creates it empty, so RBAC can name
it with ``resourceNames``); ``create`` is used only when it is missing (local runs with broad rights). When it
is missing and may not be created — someone deleted the chart's Secret — :class:`SecretMissingError` says so
and what recreates it (``helm upgrade``); the server retries until the Secret exists again.

A stored pair is reused while it is readable, matches its key, names every host the apiserver may dial, and
has more than :data:`RENEW_BEFORE` left; otherwise a new CA and certificate replace it (optimistic
concurrency on the Secret's resourceVersion). :meth:`SecretCertificates.keep` re-checks every minute, so a
long-running pod renews before expiry and every replica picks up a pair another one stored.

Replicas switch to a new pair at different moments, so the rollover keeps both trusted: ``ca.crt`` is a
bundle of the new CA followed by the previous one. The caBundle is set from it before the endpoint serves the
new certificate (:mod:`.endpoint`), and a replica still serving the previous pair never takes the new CA out
of the caBundle (:class:`~.registration.CaBundleRegistration`). The previous CA is trusted only for
:data:`PREVIOUS_CA_GRACE` after the rollover (every replica has switched within two check intervals): then
the first replica to re-check stores ``ca.crt`` with the current CA alone, every replica's files follow, and
the caBundle drops the previous CA. The CA and the certificate live :data:`CERT_VALIDITY` (one year), renewed
with :data:`RENEW_BEFORE` left.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from ome_selector.kube.clients import ApiClient, core_api
from ome_selector.kube.objects import ApiError, read_or_absent
from ome_selector.webhook.tls import (
    BACKDATE,
    CA_FILE,
    CERT_FILE,
    KEY_FILE,
    CertificateAuthority,
    TlsFiles,
    serving_hosts,
)

__all__ = [
    "CERT_VALIDITY",
    "PREVIOUS_CA_GRACE",
    "RENEW_BEFORE",
    "ObjectRef",
    "SecretCertificates",
    "SecretMissingError",
    "service_dns_names",
]

logger = logging.getLogger(__name__)

#: Validity of the generated CA and serving certificate (under two years: a leaked key is useful for a year
#: at most).
CERT_VALIDITY = datetime.timedelta(days=365)
#: A stored certificate with less than this left is replaced.
RENEW_BEFORE = datetime.timedelta(days=120)
#: How long after a rollover the previous CA stays in ``ca.crt`` (and so in the caBundle).
PREVIOUS_CA_GRACE = datetime.timedelta(hours=1)
#: How often a running operator re-checks the stored certificate (one GET of the Secret): a replica serves a
#: pair another one stored within this long.
CHECK_INTERVAL_SECONDS = 60.0
_KEYS = (CA_FILE, KEY_FILE, CERT_FILE)  # write order: a reader polling the files sees a complete set last


@dataclass(frozen=True)
class ObjectRef:
    """A namespaced object named ``NAMESPACE/NAME`` on the command line."""

    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> ObjectRef:
        namespace, _, name = text.partition("/")
        if not namespace or not name or "/" in name:
            raise ValueError(f"expected NAMESPACE/NAME, got {text!r}")
        return cls(namespace, name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def service_dns_names(service: ObjectRef) -> list[str]:
    """Every name the apiserver may use for a Service (it dials ``<name>.<namespace>.svc``)."""
    base = f"{service.name}.{service.namespace}"
    return [service.name, base, f"{base}.svc", f"{base}.svc.cluster.local"]


class SecretMissingError(RuntimeError):
    """The certificate Secret does not exist, and this identity may not create it."""

    def __init__(self, secret: ObjectRef) -> None:
        super().__init__(
            f"the webhook certificate Secret {secret} is missing and this service account may not create it "
            "(the chart grants only get and update on it); `helm upgrade` recreates it"
        )


class SecretCertificates:
    """The webhook's CA and serving certificate, kept in ``secret`` and mirrored as files in ``cert_dir``."""

    def __init__(
        self,
        api_client: ApiClient,
        secret: ObjectRef,
        cert_dir: Path,
        *,
        service: ObjectRef | None = None,
        hosts: Iterable[str | None] = (),
        validity: datetime.timedelta = CERT_VALIDITY,
        renew_before: datetime.timedelta = RENEW_BEFORE,
        previous_ca_grace: datetime.timedelta = PREVIOUS_CA_GRACE,
    ) -> None:
        self._client = api_client
        self._core: Any = core_api(api_client)
        self.secret = secret
        self.cert_dir = cert_dir
        service_names = service_dns_names(service) if service is not None else []
        dns_names, ip_addresses = serving_hosts(*service_names, *hosts)
        self.dns_names = dns_names
        self.ip_addresses = ip_addresses
        self._validity = validity
        self._renew_before = renew_before
        self._previous_ca_grace = previous_ca_grace
        # The common name is informational (Go's TLS checks only the SANs) and limited to 64 characters.
        self._common_name = (service_names[2] if service_names else "ome-selector-webhook")[:60]

    async def ensure(self, *, now: datetime.datetime | None = None) -> TlsFiles:
        """Reuse or (re)generate the stored pair, write the files where they differ, and name them."""
        now = now or datetime.datetime.now(datetime.UTC)
        current = await self._read()
        data = _decoded(current)
        if not self._usable(data, now):
            data = await self._store(current, now)
        elif current is not None and self._previous_ca_expired(data, now):
            data = await self._drop_previous_ca(current, data, now)
        self._write_files(data)
        return TlsFiles(self.cert_dir / CERT_FILE, self.cert_dir / KEY_FILE, self.cert_dir / CA_FILE)

    async def keep(self, interval: float = CHECK_INTERVAL_SECONDS) -> None:
        """Re-check forever (run as a task); failures are logged and retried at the next interval."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self.ensure()
            except (ApiError, OSError, ValueError, SecretMissingError) as error:
                logger.warning("could not check the webhook certificate in Secret %s: %s", self.secret, error)

    # --- internals ---------------------------------------------------------------------------------------

    async def _read(self) -> dict[str, Any] | None:
        secret = await read_or_absent(
            self._core.read_namespaced_secret(self.secret.name, self.secret.namespace)
        )
        if secret is None:
            return None
        body: dict[str, Any] = self._client.sanitize_for_serialization(secret)
        return body

    def _usable(self, data: Mapping[str, bytes], now: datetime.datetime) -> bool:
        if any(not data.get(key) for key in _KEYS):
            return False
        try:
            cert = x509.load_pem_x509_certificate(data[CERT_FILE])
            ca = x509.load_pem_x509_certificates(data[CA_FILE])[0]  # the current CA comes first
            key = serialization.load_pem_private_key(data[KEY_FILE], password=None)
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except (ValueError, TypeError, UnsupportedAlgorithm, x509.ExtensionNotFound) as error:
            logger.info(
                "the certificate in Secret %s is unreadable (%s); generating a new one", self.secret, error
            )
            return False
        public = serialization.PublicFormat.SubjectPublicKeyInfo
        same_key = key.public_key().public_bytes(
            serialization.Encoding.PEM, public
        ) == cert.public_key().public_bytes(serialization.Encoding.PEM, public)
        names = set(sans.get_values_for_type(x509.DNSName))
        addresses = {str(address) for address in sans.get_values_for_type(x509.IPAddress)}
        reasons = []
        if not same_key:
            reasons.append("its key does not match")
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            reasons.append("it was not issued by the stored CA")
        if not set(self.dns_names) <= names or not set(self.ip_addresses) <= addresses:
            reasons.append("it does not name every host of the webhook Service")
        if min(cert.not_valid_after_utc, ca.not_valid_after_utc) - now < self._renew_before:
            reasons.append("it expires soon")
        if cert.not_valid_before_utc > now:
            reasons.append("it is not valid yet")
        if reasons:
            logger.info("replacing the certificate in Secret %s: %s", self.secret, ", ".join(reasons))
            return False
        return True

    async def _store(self, current: dict[str, Any] | None, now: datetime.datetime) -> dict[str, bytes]:
        authority = CertificateAuthority("ome-selector-webhook-ca", validity=self._validity)
        pair = authority.issue(
            self._common_name, dns_names=self.dns_names, ip_addresses=self.ip_addresses, server=True
        )
        bundle = authority.cert_pem + _previous_ca(_decoded(current), now)
        data = {CA_FILE: bundle, KEY_FILE: pair.key_pem, CERT_FILE: pair.cert_pem}
        if current is None:
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": self.secret.name,
                    "namespace": self.secret.namespace,
                    "labels": {
                        "app.kubernetes.io/name": "ome-selector",
                        "app.kubernetes.io/component": "webhook",
                    },
                },
                "type": "Opaque",
                "data": _encoded(data),
            }
            try:
                await self._core.create_namespaced_secret(self.secret.namespace, body)
            except ApiError as error:
                if error.status == 403:
                    raise SecretMissingError(self.secret) from None
                if error.status != 409:
                    raise
                return await self._winner(now)
        elif (winner := await self._replace(current, data, now)) is not None:
            return winner
        logger.info(
            "stored a new webhook CA and certificate (valid until %s) in Secret %s",
            (now + self._validity).date().isoformat(),
            self.secret,
        )
        return data

    def _previous_ca_expired(self, data: Mapping[str, bytes], now: datetime.datetime) -> bool:
        """Whether ``ca.crt`` still carries a previous CA past the grace after the current one was made."""
        authorities = x509.load_pem_x509_certificates(data[CA_FILE])
        made = authorities[0].not_valid_before_utc + BACKDATE
        return len(authorities) > 1 and now - made >= self._previous_ca_grace

    async def _drop_previous_ca(
        self, current: dict[str, Any], data: Mapping[str, bytes], now: datetime.datetime
    ) -> dict[str, bytes]:
        """Store ``ca.crt`` with the current CA alone (the certificate and key stay)."""
        authority = x509.load_pem_x509_certificates(data[CA_FILE])[0]
        trimmed = {**data, CA_FILE: authority.public_bytes(serialization.Encoding.PEM)}
        if (winner := await self._replace(current, trimmed, now)) is not None:
            return winner
        logger.info("the previous webhook CA is no longer trusted (Secret %s)", self.secret)
        return trimmed

    async def _replace(
        self, current: dict[str, Any], data: Mapping[str, bytes], now: datetime.datetime
    ) -> dict[str, bytes] | None:
        """Store ``data`` over the Secret as read (``current``), guarded by its resourceVersion: a concurrent
        writer makes it fail instead of being overwritten. None when stored, else the other writer's pair."""
        body = dict(current)
        body["data"] = _encoded(data)
        try:
            await self._core.replace_namespaced_secret(self.secret.name, self.secret.namespace, body)
        except ApiError as error:
            if error.status != 409:
                raise
            return await self._winner(now)
        return None

    async def _winner(self, now: datetime.datetime) -> dict[str, bytes]:
        """Another writer stored a pair at the same time: use theirs if it fits."""
        data = _decoded(await self._read())
        if not self._usable(data, now):
            raise RuntimeError(f"Secret {self.secret} changed while storing the webhook certificate")
        return data

    def _write_files(self, data: Mapping[str, bytes]) -> None:
        """Write only what differs (the endpoint restarts its listener when the files change)."""
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        for key in _KEYS:
            path = self.cert_dir / key
            if path.is_file() and path.read_bytes() == data[key]:
                continue
            temporary = self.cert_dir / f".{key}.tmp"
            temporary.unlink(missing_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if key == KEY_FILE else 0o644)
            with os.fdopen(fd, "wb") as file:
                file.write(data[key])
            temporary.replace(path)


def _encoded(data: Mapping[str, bytes]) -> dict[str, str]:
    return {key: base64.b64encode(value).decode("ascii") for key, value in data.items()}


def _decoded(secret: Mapping[str, Any] | None) -> dict[str, bytes]:
    raw = (secret or {}).get("data") or {}
    data: dict[str, bytes] = {}
    for key in _KEYS:
        value = raw.get(key)
        if isinstance(value, str):
            try:
                data[key] = base64.b64decode(value, validate=True)
            except ValueError:
                continue
    return data


def _previous_ca(data: Mapping[str, bytes], now: datetime.datetime) -> bytes:
    """The CA of the pair being replaced, as PEM, while it is valid (a replica may still serve a certificate
    it issued); nothing when there is none or it cannot be read."""
    try:
        current = x509.load_pem_x509_certificates(data.get(CA_FILE) or b"")[0]
    except (ValueError, IndexError):
        return b""
    if not current.not_valid_before_utc <= now < current.not_valid_after_utc:
        return b""
    return current.public_bytes(serialization.Encoding.PEM)
