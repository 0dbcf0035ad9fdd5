"""The in-cluster certificate mode (webhook/incluster.py) against the real apiserver.

The RBAC test shows the chart's path (an empty Secret filled with get/update only); these cases cover the
rest: creating a missing Secret, reusing a stored pair, and replacing one that expires soon, names other
hosts or cannot be read.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from cryptography import x509
from kubernetes import client

from harness.controlplane import ControlPlane
from ome_selector.kube.connection import ClusterAccess
from ome_selector.webhook.incluster import (
    PREVIOUS_CA_GRACE,
    RENEW_BEFORE,
    ObjectRef,
    SecretCertificates,
    service_dns_names,
)
from ome_selector.webhook.registration import CaBundleRegistration

T = TypeVar("T")
NOW = datetime.datetime.now(datetime.UTC)


def _with_certificates(
    control_plane: ControlPlane,
    namespace: str,
    cert_dir: Path,
    action: Callable[[SecretCertificates], Awaitable[T]],
    service: str = "webhook",
) -> T:
    async def run() -> T:
        api_client = await ClusterAccess(control_plane.kubeconfig).api_client()
        async with api_client:
            certificates = SecretCertificates(
                api_client,
                ObjectRef(namespace, "webhook-tls"),
                cert_dir,
                service=ObjectRef(namespace, service),
            )
            return await action(certificates)

    return asyncio.run(run())


def _stored(api_client: Any, namespace: str) -> dict[str, bytes]:
    secret = client.CoreV1Api(api_client).read_namespaced_secret("webhook-tls", namespace)
    return {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}


def _sans(pem: bytes) -> set[str]:
    cert = x509.load_pem_x509_certificate(pem)
    return set(
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName
        )
    )


def test_missing_secret_is_created_and_the_files_verify_for_the_service(
    control_plane: ControlPlane, api_client: Any, namespace: str, tmp_path: Path
) -> None:
    files = _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure())
    stored = _stored(api_client, namespace)
    assert set(stored) == {"ca.crt", "tls.crt", "tls.key"}
    assert files.cert_file.read_bytes() == stored["tls.crt"]
    assert files.key_file.read_bytes() == stored["tls.key"]
    assert files.key_file.stat().st_mode & 0o777 == 0o600
    assert files.ca_file is not None
    assert files.ca_file.read_bytes() == stored["ca.crt"]
    assert _sans(stored["tls.crt"]) >= set(service_dns_names(ObjectRef(namespace, "webhook")))
    # Issued by the stored CA, and the pair loads into a TLS server context.
    x509.load_pem_x509_certificate(stored["tls.crt"]).verify_directly_issued_by(
        x509.load_pem_x509_certificate(stored["ca.crt"])
    )
    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(files.cert_file, files.key_file)


def test_a_stored_pair_is_reused_and_the_files_are_not_rewritten(
    control_plane: ControlPlane, api_client: Any, namespace: str, tmp_path: Path
) -> None:
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure())
    first = _stored(api_client, namespace)
    mtime = (tmp_path / "tls.crt").stat().st_mtime_ns
    _with_certificates(control_plane, namespace, tmp_path / "restarted", lambda c: c.ensure())
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure())
    assert _stored(api_client, namespace) == first
    assert (tmp_path / "restarted" / "ca.crt").read_bytes() == first["ca.crt"]
    assert (tmp_path / "tls.crt").stat().st_mtime_ns == mtime


def test_a_pair_that_expires_soon_names_other_hosts_or_is_unreadable_is_replaced(
    control_plane: ControlPlane, api_client: Any, namespace: str, tmp_path: Path
) -> None:
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure())
    original = _stored(api_client, namespace)
    # Renewal: seen from a moment when less than RENEW_BEFORE is left.
    expiry = x509.load_pem_x509_certificate(original["tls.crt"]).not_valid_after_utc
    later = expiry - RENEW_BEFORE + datetime.timedelta(days=1)
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure(now=later))
    renewed = _stored(api_client, namespace)
    assert renewed["ca.crt"] != original["ca.crt"]
    assert (tmp_path / "ca.crt").read_bytes() == renewed["ca.crt"]
    # The new CA first, then the one it replaces: a replica still serving the old pair stays trusted.
    new_ca, previous_ca = x509.load_pem_x509_certificates(renewed["ca.crt"])
    assert previous_ca == x509.load_pem_x509_certificate(original["ca.crt"])
    x509.load_pem_x509_certificate(renewed["tls.crt"]).verify_directly_issued_by(new_ca)
    # Reused as it is by the next check (the bundle is not mistaken for a foreign CA).
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure())
    assert _stored(api_client, namespace) == renewed
    # Another Service name (a renamed release): a certificate for the new name.
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure(), service="renamed")
    renamed = _stored(api_client, namespace)
    assert f"renamed.{namespace}.svc" in _sans(renamed["tls.crt"])
    # Only the CA before carries over: the bundle never grows beyond two.
    assert x509.load_pem_x509_certificates(renamed["ca.crt"])[1:] == [new_ca]
    # Garbage in the Secret.
    client.CoreV1Api(api_client).patch_namespaced_secret(
        "webhook-tls", namespace, {"data": {"tls.crt": base64.b64encode(b"not a certificate").decode()}}
    )
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure(), service="renamed")
    repaired = _stored(api_client, namespace)
    assert repaired["tls.crt"].startswith(b"-----BEGIN CERTIFICATE-----")
    assert (tmp_path / "tls.crt").read_bytes() == repaired["tls.crt"]


def _configuration(api_client: Any, name: str, bundle: bytes) -> None:
    webhook = {
        "name": "rollover.ome-selector.ome.io",
        "clientConfig": {
            "url": "https://127.0.0.1:9/never-called",
            "caBundle": base64.b64encode(bundle).decode(),
        },
        "rules": [
            {
                "apiGroups": ["example.invalid"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["x"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Ignore",
    }
    api: Any = client.AdmissionregistrationV1Api(api_client)  # dict bodies
    api.create_validating_webhook_configuration(
        {"metadata": {"name": name}, "webhooks": [webhook, {**webhook, "name": "second.ome-selector.ome.io"}]}
    )


def _apply(control_plane: ControlPlane, name: str, bundle: bytes, *, armed: bool = False) -> bool:
    """What a replica serving with ``bundle`` does to configuration ``name`` (True: it changed it); ``armed``:
    the replica answers (its catalog indexed)."""

    async def run() -> bool:
        async with await ClusterAccess(control_plane.kubeconfig).api_client() as api:
            registration = CaBundleRegistration(api, name)
            return await registration.apply({"caBundle": base64.b64encode(bundle).decode()}, armed=armed)

    return asyncio.run(run())


def _bundles(api_client: Any, name: str) -> list[list[x509.Certificate]]:
    api: Any = client.AdmissionregistrationV1Api(api_client)
    found = api.read_validating_webhook_configuration(name)
    return [
        x509.load_pem_x509_certificates(base64.b64decode(w.client_config.ca_bundle))
        if w.client_config.ca_bundle
        else []
        for w in found.webhooks
    ]


def test_in_a_rollover_no_replica_takes_the_other_replicas_ca_out_of_the_bundle(
    control_plane: ControlPlane, api_client: Any, namespace: str, tmp_path: Path
) -> None:
    """Replica A renews the pair; replica B, still serving the previous one, re-applies its own bundle (as it
    does every minute): the configuration must keep trusting both until B has moved on too."""
    name = f"rollover-{namespace}"
    _with_certificates(control_plane, namespace, tmp_path / "a", lambda c: c.ensure())
    previous = (tmp_path / "a" / "ca.crt").read_bytes()
    _configuration(api_client, name, previous)
    expiry = x509.load_pem_x509_certificate((tmp_path / "a" / "tls.crt").read_bytes()).not_valid_after_utc
    later = expiry - RENEW_BEFORE + datetime.timedelta(days=1)
    _with_certificates(control_plane, namespace, tmp_path / "a", lambda c: c.ensure(now=later))
    rolled = (tmp_path / "a" / "ca.crt").read_bytes()

    def apply(bundle: bytes) -> bool:
        return _apply(control_plane, name, bundle)

    new_ca, old_ca = x509.load_pem_x509_certificates(rolled)
    assert apply(rolled) is True  # A: the configuration lacks its CA
    assert _bundles(api_client, name) == [[new_ca, old_ca]] * 2
    assert apply(previous) is False  # B, on the previous pair: its CA is trusted, nothing to change
    assert _bundles(api_client, name) == [[new_ca, old_ca]] * 2
    assert apply(rolled) is False  # and A again: unchanged
    # A configuration without a bundle (as the chart installs it, or emptied) is armed only by a replica that
    # answers: one still indexing leaves it, so the apiserver never reaches a replica that cannot judge.
    api: Any = client.AdmissionregistrationV1Api(api_client)
    found = api.read_validating_webhook_configuration(name)
    for webhook in found.webhooks:
        webhook.client_config.ca_bundle = None
    api.replace_validating_webhook_configuration(name, found)
    assert apply(previous) is False
    assert _bundles(api_client, name) == [[]] * 2
    assert _apply(control_plane, name, previous, armed=True) is True
    assert _bundles(api_client, name) == [[old_ca]] * 2
    api.delete_validating_webhook_configuration(name)


def test_after_the_grace_the_previous_ca_leaves_the_secret_and_the_bundle(
    control_plane: ControlPlane, api_client: Any, namespace: str, tmp_path: Path
) -> None:
    """An old CA is not trusted forever: PREVIOUS_CA_GRACE after the rollover, the first check stores the
    current CA alone (the certificate and key stay), and the replica's next bundle takes the previous CA out
    of the configuration. The pair lives under two years."""
    name = f"grace-{namespace}"
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure())
    first = _stored(api_client, namespace)
    ca = x509.load_pem_x509_certificate(first["ca.crt"])
    cert = x509.load_pem_x509_certificate(first["tls.crt"])
    for made in (ca, cert):  # under two years, whatever the constant says
        assert made.not_valid_after_utc - made.not_valid_before_utc < datetime.timedelta(days=2 * 365)
    expiry = cert.not_valid_after_utc
    later = expiry - RENEW_BEFORE + datetime.timedelta(days=1)
    # Certificate times have one-second resolution, and a CA made in the same second as another is never
    # taken for the older one: let a second pass, as months do between real renewals.
    time.sleep(1.1)
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure(now=later))
    rolled = _stored(api_client, namespace)
    new_ca, old_ca = x509.load_pem_x509_certificates(rolled["ca.crt"])
    _configuration(api_client, name, rolled["ca.crt"])
    within = new_ca.not_valid_before_utc + PREVIOUS_CA_GRACE  # made 5 minutes after its notBefore
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure(now=within))
    assert _stored(api_client, namespace) == rolled  # still within the grace
    past = within + datetime.timedelta(minutes=6)
    _with_certificates(control_plane, namespace, tmp_path, lambda c: c.ensure(now=past))
    trimmed = _stored(api_client, namespace)
    assert x509.load_pem_x509_certificates(trimmed["ca.crt"]) == [new_ca]
    assert (trimmed["tls.crt"], trimmed["tls.key"]) == (rolled["tls.crt"], rolled["tls.key"])
    assert (tmp_path / "ca.crt").read_bytes() == trimmed["ca.crt"]

    def apply(bundle: bytes) -> bool:
        return _apply(control_plane, name, bundle)

    assert _bundles(api_client, name) == [[new_ca, old_ca]] * 2
    assert apply(trimmed["ca.crt"]) is True  # its bundle lacks the older CA: out of the configuration
    assert _bundles(api_client, name) == [[new_ca]] * 2
    assert apply(trimmed["ca.crt"]) is False
    client.AdmissionregistrationV1Api(api_client).delete_validating_webhook_configuration(name)
