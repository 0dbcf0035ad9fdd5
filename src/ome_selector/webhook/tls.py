"""Certificates for the admission webhook, made with `cryptography` (never Kopf's self-signed generator).

Two sources, both ending as three PEM files in one directory, named as cert-manager and the kubelet's Secret
volume name them (``tls.crt``, ``tls.key``, ``ca.crt``):

- :func:`load_cert_dir`: a mounted Secret (cert-manager or hand-made). The webhook endpoint (:mod:`.endpoint`)
  re-reads the files every ``file_check_interval`` seconds and restarts its listener when they change, so a
  rotated certificate is picked up without a restart.
- :func:`generate_serving_files`: a throw-away CA and a serving certificate for local runs (tests, the demo),
  with every host the apiserver may dial as a SAN (Go's TLS ignores the common name).

:class:`CertificateAuthority` also serves the test harness's local control plane (``harness/pki.py``).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "BACKDATE",
    "CA_FILE",
    "CERT_FILE",
    "KEY_FILE",
    "CertificateAuthority",
    "KeyPair",
    "TlsFiles",
    "certificate_expiry",
    "generate_serving_files",
    "load_cert_dir",
    "private_key_pem",
    "serving_hosts",
]

CERT_FILE, KEY_FILE, CA_FILE = "tls.crt", "tls.key", "ca.crt"
_VALIDITY = datetime.timedelta(days=365)
#: How far before the moment it is made a certificate becomes valid (clocks differ a little).
BACKDATE = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes


def _private_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def private_key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    """A private key as unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


class CertificateAuthority:
    """A self-signed CA that issues serving and client certificates."""

    def __init__(
        self, common_name: str = "ome-selector-local-ca", *, validity: datetime.timedelta = _VALIDITY
    ) -> None:
        self._key = _private_key()
        self._validity = validity
        now = datetime.datetime.now(datetime.UTC)
        self._name = _name(common_name)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + validity)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def issue(
        self,
        common_name: str,
        *,
        organization: str | None = None,
        dns_names: Iterable[str] = (),
        ip_addresses: Iterable[str] = (),
        server: bool = False,
        client: bool = False,
    ) -> KeyPair:
        key = _private_key()
        now = datetime.datetime.now(datetime.UTC)
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organization))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + self._validity)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        # Go's TLS stack ignores the CN: serving certificates must carry every host as a SAN.
        sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), private_key_pem(key))


@dataclass(frozen=True)
class TlsFiles:
    """The serving certificate, its key, and the CA bundle the apiserver verifies it with (``caBundle``).

    ``ca_file`` is None when the directory has no ``ca.crt`` (a certificate the apiserver already trusts, or a
    self-signed one): the serving certificate itself then goes into ``caBundle``.
    """

    cert_file: Path
    key_file: Path
    ca_file: Path | None


def load_cert_dir(directory: Path) -> TlsFiles:
    """The files of a mounted TLS Secret: ``tls.crt`` and ``tls.key`` required, ``ca.crt`` optional."""
    cert_file, key_file, ca_file = directory / CERT_FILE, directory / KEY_FILE, directory / CA_FILE
    missing = [path.name for path in (cert_file, key_file) if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"webhook certificate directory {directory} has no {' or '.join(missing)}")
    return TlsFiles(cert_file, key_file, ca_file if ca_file.is_file() else None)


def certificate_expiry(cert_file: Path) -> float:
    """When the (first) certificate in ``cert_file`` expires, in seconds since the epoch."""
    return x509.load_pem_x509_certificate(cert_file.read_bytes()).not_valid_after_utc.timestamp()


def serving_hosts(*hosts: str | None) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) for a serving certificate: the given hosts plus ``localhost`` and loopback.

    Unspecified addresses (``0.0.0.0``, ``::``) are dropped: nobody dials them.
    """
    dns: dict[str, None] = {"localhost": None}
    ips: dict[str, None] = {"127.0.0.1": None}
    for host in hosts:
        if not host:
            continue
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            dns[host] = None
            continue
        if not address.is_unspecified:
            ips[str(address)] = None
    return list(dns), list(ips)


def generate_serving_files(
    directory: Path, *hosts: str | None, common_name: str = "ome-selector-webhook"
) -> TlsFiles:
    """A fresh CA and a serving certificate for ``hosts`` (and localhost), written into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    authority = CertificateAuthority(f"{common_name}-ca")
    dns_names, ip_addresses = serving_hosts(*hosts)
    pair = authority.issue(common_name, dns_names=dns_names, ip_addresses=ip_addresses, server=True)
    cert_file, key_file, ca_file = directory / CERT_FILE, directory / KEY_FILE, directory / CA_FILE
    # The CA first, then the key, then the certificate: a reader polling the files sees a complete set last.
    ca_file.write_bytes(authority.cert_pem)
    key_file.touch(mode=0o600)
    key_file.chmod(0o600)
    key_file.write_bytes(pair.key_pem)
    cert_file.write_bytes(pair.cert_pem)
    return TlsFiles(cert_file, key_file, ca_file)
