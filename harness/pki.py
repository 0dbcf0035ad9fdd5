"""Throw-away PKI for local control planes and webhooks: one CA, serving and client certificates.

The CA itself lives in :mod:`ome_selector.webhook.tls` (the webhook generates its local certificates with it);
this module adds what only the control plane needs. Nothing here is meant for production keys (those come from
cert-manager or the operator's own Secret).
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ome_selector.webhook.tls import CertificateAuthority, KeyPair, private_key_pem

__all__ = ["CertificateAuthority", "KeyPair", "service_account_signing_key", "write_pair"]


def write_pair(pair: KeyPair, directory: Path, stem: str) -> tuple[Path, Path]:
    """``<stem>.crt`` and ``<stem>.key`` (owner-only) in ``directory``."""
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_path.write_bytes(pair.cert_pem)
    key_path.touch(mode=0o600)
    key_path.chmod(0o600)
    key_path.write_bytes(pair.key_pem)
    return cert_path, key_path


def service_account_signing_key() -> tuple[bytes, bytes]:
    """An RSA key pair for kube-apiserver's service-account token signing: (private PEM, public PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private_key_pem(key), public
