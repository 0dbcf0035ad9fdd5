"""The ValidatingWebhookConfiguration: built here, written through kube/ (not Kopf's ``managed``).

Kopf's managed mode writes ``timeoutSeconds: 30`` and no ``namespaceSelector``, and on exit leaves the
configuration object behind (emptied). SPEC §7 wants failurePolicy, timeout and namespace selection
configurable, ``Fail`` for InferenceServices and ``Ignore`` for the size warnings, and a local configuration
removed on stop — so the operator writes the object itself:

- :class:`LocalRegistration` writes ``<prefix>-local-<instance>`` (SPEC §8; by default
  ``ome-selector-local-<instance>``) with url clientConfigs when the server starts listening — replacing one
  left behind by an earlier run of the same instance, e.g. one killed with ``kill -9`` — updates it when the
  server restarts with a rotated certificate, and deletes it on stop unless someone has replaced it since.
  The instance is stable (:func:`default_instance`: the kubeconfig context and the host, never the port), so
  a restart finds its own; the label ``ome-selector.ome.io/local=true`` lets ``ome-selector cleanup`` find
  them (:func:`remove_local_registrations`);
- :class:`CaBundleRegistration` keeps the ``caBundle`` of a static, chart-installed configuration trusting
  the CA the server uses, and that field only: the chart renders every other field as the operator keeps it
  (the configured failurePolicies included), so a GitOps tool sees no drift but the caBundle (SPEC §7). The
  chart installs the configuration without a caBundle, and a replica **arms** it by filling the bundle in
  once it answers (the catalog indexed); until then the apiserver never reaches an operator that cannot
  judge. A webhook that already carries a bundle is kept current whatever the replica's state (a rotation).
  Replicas share that object and may serve certificates of two CAs during a rollover, so a replica changes
  the bundle only when it lacks the CA of its own certificate (the first in its bundle), and then writes its
  whole bundle (which carries the previous CA too, :mod:`.incluster`): a replica still on the previous pair
  never takes the new CA out. Once a replica's bundle no longer carries the previous CA (the rollover's grace
  is over), it takes out of the caBundle every CA older than its own that its bundle lacks, so an old CA is
  not trusted forever.

Models and runtimes have a second webhook each, for DELETE only (:func:`delete_webhook_name`): always
``failurePolicy: Ignore`` with at most :data:`DELETE_TIMEOUT_SECONDS`, and skipped for the namespace
controller and the garbage collector (:data:`SYSTEM_DELETERS`), so an operator that is down or hangs never
holds up the deletion of a namespace (SPEC §7, §12).

The webhook paths are Kopf's handler ids (:data:`HANDLER_IDS`); a chart's service clientConfig uses them too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import socket
from collections.abc import Mapping
from typing import Any, Literal, cast

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ome_selector.api.resources import API_GROUP, API_VERSION, Kind
from ome_selector.kube.clients import ApiClient, admission_registration_api, preconditioned_deletion
from ome_selector.kube.objects import ApiError
from ome_selector.webhook.config import WebhookConfig

__all__ = [
    "DELETE_TIMEOUT_SECONDS",
    "FIELD_MANAGER",
    "HANDLER_IDS",
    "INSTANCE_ANNOTATION",
    "LOCAL_LABEL",
    "SYSTEM_DELETERS",
    "WEBHOOK_DOMAIN",
    "CaBundleRegistration",
    "LocalRegistration",
    "build_configuration",
    "build_delete_webhook",
    "build_webhook",
    "default_instance",
    "delete_webhook_name",
    "failure_policy",
    "local_configuration_name",
    "remove_local_registrations",
    "webhook_name",
    "webhook_operations",
]

logger = logging.getLogger(__name__)

WEBHOOK_DOMAIN = "ome-selector.ome.io"
#: Kopf handler id of each kind's webhook = the last segment of its URL path, e.g. ``/validate-basemodels``.
HANDLER_IDS: Mapping[Kind, str] = {
    Kind.INFERENCE_SERVICE: "validate-inferenceservices",
    Kind.BASE_MODEL: "validate-basemodels",
    Kind.CLUSTER_BASE_MODEL: "validate-clusterbasemodels",
    Kind.SERVING_RUNTIME: "validate-servingruntimes",
    Kind.CLUSTER_SERVING_RUNTIME: "validate-clusterservingruntimes",
}
_LABELS = {"app.kubernetes.io/name": "ome-selector", "app.kubernetes.io/managed-by": "ome-selector"}
#: The label of every locally registered configuration (SPEC §8), and the annotation naming its instance.
LOCAL_LABEL = f"{WEBHOOK_DOMAIN}/local"
INSTANCE_ANNOTATION = f"{WEBHOOK_DOMAIN}/instance"
#: The field manager of the caBundle the operator keeps in the chart's configuration (docs/gitops.md).
FIELD_MANAGER = "ome-selector"
#: The longest the apiserver waits for a DELETE of a model or runtime (SPEC §7): a webhook that accepts
#: connections and never answers costs a namespace deletion at most this long per object.
DELETE_TIMEOUT_SECONDS = 3
#: Who deletes objects for Kubernetes itself (a namespace being deleted, owners gone): the DELETE webhooks
#: skip them (their matchConditions).
SYSTEM_DELETERS = (
    "system:serviceaccount:kube-system:namespace-controller",
    "system:serviceaccount:kube-system:generic-garbage-collector",
)
#: The DELETE webhooks' matchCondition (CEL): anyone but :data:`SYSTEM_DELETERS`.
DELETE_MATCH_CONDITION = {
    "name": "not-namespace-or-garbage-collection",
    "expression": "!(request.userInfo.username in ["
    + ", ".join(f"'{name}'" for name in SYSTEM_DELETERS)
    + "])",
}


def default_instance(context: str | None, host: str | None = None) -> str:
    """The default ``--instance``: a short hash of the kubeconfig context name and the host name — never of
    the port, so a restarted local operator finds (and replaces) its own registration."""
    host = host if host is not None else socket.gethostname()
    return hashlib.sha256(f"{context or ''}\n{host}".encode()).hexdigest()[:10]


def local_configuration_name(prefix: str, instance: str) -> str:
    """``<prefix>-local-<instance>``: ``ome-selector-local-<instance>`` with the default prefix."""
    return f"{prefix}-local-{instance}"


def webhook_name(kind: Kind) -> str:
    """The name the apiserver quotes in denials: ``admission webhook "<name>" denied the request: …``."""
    return f"{kind.plural}.{WEBHOOK_DOMAIN}"


def delete_webhook_name(kind: Kind) -> str:
    """The name of the DELETE webhook of a model or runtime kind: ``<plural>-delete.ome-selector.ome.io``."""
    return f"{kind.plural}-delete.{WEBHOOK_DOMAIN}"


def failure_policy(kind: Kind, config: WebhookConfig) -> str:
    """The configured failurePolicy of ``kind``'s CREATE and UPDATE webhook (SPEC §7)."""
    return config.failure_policy if kind is Kind.INFERENCE_SERVICE else config.sizes_failure_policy


def webhook_operations(kind: Kind) -> tuple[Literal["CREATE", "UPDATE", "DELETE"], ...]:
    """What ``kind``'s handler judges: CREATE and UPDATE, and for the models and runtimes DELETE too (SPEC
    §12: the impact of a deletion is warned about; DELETE comes through its own webhook entry)."""
    return ("CREATE", "UPDATE") if kind is Kind.INFERENCE_SERVICE else ("CREATE", "UPDATE", "DELETE")


def build_webhook(kind: Kind, client_config: Mapping[str, Any], config: WebhookConfig) -> dict[str, Any]:
    """The CREATE and UPDATE ``webhooks[]`` entry of ``kind`` (never its status), with the configured
    policy."""
    return _entry(
        webhook_name(kind),
        kind,
        client_config,
        config,
        operations=["CREATE", "UPDATE"],
        policy=failure_policy(kind, config),
        timeout=config.timeout_seconds,
    )


def build_delete_webhook(
    kind: Kind, client_config: Mapping[str, Any], config: WebhookConfig
) -> dict[str, Any]:
    """The DELETE ``webhooks[]`` entry of a model or runtime kind: ``Ignore`` whatever is configured, at most
    :data:`DELETE_TIMEOUT_SECONDS`, never for the namespace controller or the garbage collector."""
    webhook = _entry(
        delete_webhook_name(kind),
        kind,
        client_config,
        config,
        operations=["DELETE"],
        policy="Ignore",
        timeout=min(DELETE_TIMEOUT_SECONDS, config.timeout_seconds),
    )
    webhook["matchConditions"] = [dict(DELETE_MATCH_CONDITION)]
    return webhook


def _entry(
    name: str,
    kind: Kind,
    client_config: Mapping[str, Any],
    config: WebhookConfig,
    *,
    operations: list[str],
    policy: str,
    timeout: int,
) -> dict[str, Any]:
    url = client_config.get("url")
    clientconfig: dict[str, Any] = {}
    if url is not None:
        clientconfig["url"] = f"{str(url).rstrip('/')}/{HANDLER_IDS[kind]}"
    if client_config.get("caBundle"):
        clientconfig["caBundle"] = client_config["caBundle"]
    webhook: dict[str, Any] = {
        "name": name,
        "clientConfig": clientconfig,
        "rules": [
            {
                "apiGroups": [API_GROUP],
                "apiVersions": [API_VERSION],
                "operations": operations,
                "resources": [kind.plural],
                "scope": "Namespaced" if kind.namespaced else "Cluster",
            }
        ],
        "failurePolicy": policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",  # so server-side dry-run requests are checked too
        "timeoutSeconds": timeout,
        "admissionReviewVersions": ["v1"],
    }
    if config.namespace_selector:
        webhook["namespaceSelector"] = dict(config.namespace_selector)
    return webhook


WEBHOOK_KINDS: tuple[Kind, ...] = (
    Kind.INFERENCE_SERVICE,
    Kind.BASE_MODEL,
    Kind.CLUSTER_BASE_MODEL,
    Kind.SERVING_RUNTIME,
    Kind.CLUSTER_SERVING_RUNTIME,
)


def build_configuration(
    name: str,
    client_config: Mapping[str, Any],
    config: WebhookConfig,
    *,
    instance: str = "",
    local: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": dict(_LABELS) | ({LOCAL_LABEL: "true"} if local else {}),
    }
    if instance:
        metadata["annotations"] = {INSTANCE_ANNOTATION: instance}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": metadata,
        "webhooks": [
            webhook
            for kind in WEBHOOK_KINDS
            for webhook in (
                (build_webhook(kind, client_config, config),)
                if kind is Kind.INFERENCE_SERVICE
                else (
                    build_webhook(kind, client_config, config),
                    build_delete_webhook(kind, client_config, config),
                )
            )
        ],
    }


class LocalRegistration:
    """The local ValidatingWebhookConfiguration of one instance, with url clientConfigs (SPEC §8)."""

    def __init__(self, api_client: ApiClient, config: WebhookConfig, *, instance: str) -> None:
        self._api = admission_registration_api(api_client)
        self._config = config
        self._instance = instance
        self.name = local_configuration_name(config.managed_name, instance)
        #: The resourceVersion this run last wrote; None until it wrote one.
        self._written: str | None = None

    async def apply(self, client_config: Mapping[str, Any]) -> None:
        body = build_configuration(
            self.name, client_config, self._config, instance=self._instance, local=True
        )
        url = client_config.get("url")
        if self._written is None:
            try:
                created = await self._api.create_validating_webhook_configuration(cast(Any, body))
            except ApiError as error:
                if error.status != 409:
                    raise
                # Left behind by an earlier run of this instance (killed before it could remove it): ours.
                await self._replace(body)
                logger.warning("replaced ValidatingWebhookConfiguration %s left by an earlier run", self.name)
            else:
                self._written = created.metadata.resource_version
            logger.info("registered ValidatingWebhookConfiguration %s at %s", self.name, url)
            return
        await self._replace(body)
        logger.info("updated ValidatingWebhookConfiguration %s at %s", self.name, url)

    async def _replace(self, body: dict[str, Any]) -> None:
        current = await self._api.read_validating_webhook_configuration(self.name)
        body["metadata"]["resourceVersion"] = current.metadata.resource_version
        replaced = await self._api.replace_validating_webhook_configuration(self.name, cast(Any, body))
        self._written = replaced.metadata.resource_version

    async def remove(self) -> None:
        """Delete the configuration, unless another process of the same instance has replaced it since."""
        if self._written is None:
            return
        options = preconditioned_deletion(self._written)
        try:
            await self._api.delete_validating_webhook_configuration(self.name, body=options)
        except ApiError as error:
            if error.status == 409:
                logger.info("left ValidatingWebhookConfiguration %s: another run has replaced it", self.name)
            elif error.status != 404:
                raise
        else:
            logger.info("removed ValidatingWebhookConfiguration %s", self.name)
        self._written = None


async def remove_local_registrations(
    api_client: ApiClient, *, instance: str | None, dry_run: bool = False
) -> list[str]:
    """Delete the local registrations (label ``ome-selector.ome.io/local=true``) of ``instance``, or of every
    instance when None; the names removed (or, with ``dry_run``, that would be)."""
    api = admission_registration_api(api_client)
    listing = await api.list_validating_webhook_configuration(label_selector=f"{LOCAL_LABEL}=true")
    removed: list[str] = []
    for item in listing.items:
        annotations = item.metadata.annotations or {}
        if instance is not None and annotations.get(INSTANCE_ANNOTATION) != instance:
            continue
        if not dry_run:
            try:
                await api.delete_validating_webhook_configuration(item.metadata.name)
            except ApiError as error:
                if error.status != 404:
                    raise
        removed.append(item.metadata.name)
    return removed


class CaBundleRegistration:
    """Keeps ``caBundle`` of every webhook in a static (chart-installed) configuration current — the one field
    the operator manages there — and fills it in (arms the configuration) once the server answers."""

    def __init__(self, api_client: ApiClient, name: str) -> None:
        self._client = api_client
        self._api = admission_registration_api(api_client)
        self.name = name

    async def apply(self, client_config: Mapping[str, Any], *, armed: bool = False) -> bool:
        """Set the bundle where it does not trust our CA: in every webhook when ``armed`` (the server
        answers), else only in those that carry a bundle already. True when the object was changed. A missing
        object is logged."""
        bundle = client_config.get("caBundle")
        if not bundle:
            return False
        mine = _certificates(bundle)
        ours = mine[:1]
        try:
            current = await self._api.read_validating_webhook_configuration(self.name)
        except ApiError as error:
            if error.status == 404:
                logger.warning("ValidatingWebhookConfiguration %s not found; caBundle not set", self.name)
                return False
            raise
        body = self._client.sanitize_for_serialization(current)
        bundled = armed_now = False
        for webhook in body.get("webhooks") or []:
            clientconfig = webhook.setdefault("clientConfig", {})
            current = clientconfig.get("caBundle")
            if not current and not armed:
                continue  # not armed yet: the apiserver reaches no replica before one answers
            present = _certificates(current)
            trusted = bool(ours) and set(ours) <= set(present)
            if not trusted and current != bundle:
                clientconfig["caBundle"] = bundle
                bundled = True
                armed_now = armed_now or not current
            elif trusted and (kept := _without_older(present, mine)) != present:
                clientconfig["caBundle"] = _bundle_of(kept)
                bundled = True
        if not bundled:
            return False
        # Under its own field manager: a GitOps tool can leave exactly this manager's field alone.
        await self._api.replace_validating_webhook_configuration(
            self.name, cast(Any, body), field_manager=FIELD_MANAGER
        )
        if armed_now:
            logger.info("armed ValidatingWebhookConfiguration %s: caBundle filled in", self.name)
        else:
            logger.info("set caBundle of ValidatingWebhookConfiguration %s", self.name)
        return True

    async def remove(self) -> None:
        """The configuration belongs to the chart: nothing to undo."""


def _without_older(present: list[bytes], mine: list[bytes]) -> list[bytes]:
    """``present`` without the CAs this replica's bundle ``mine`` no longer carries that are older than its
    own CA (``mine[0]``): those of a finished rollover. A CA newer than its own is another replica's, a step
    ahead, and stays."""
    own = x509.load_der_x509_certificate(mine[0]).not_valid_before_utc
    return [
        der
        for der in present
        if der in mine or x509.load_der_x509_certificate(der).not_valid_before_utc >= own
    ]


def _bundle_of(certificates: list[bytes]) -> str:
    pem = b"".join(
        x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM) for der in certificates
    )
    return base64.b64encode(pem).decode("ascii")


def _certificates(bundle: object) -> list[bytes]:
    """The certificates (DER) of a base64 PEM ``caBundle``, in order; none when it cannot be read."""
    if not isinstance(bundle, str):
        return []
    try:
        certificates = x509.load_pem_x509_certificates(base64.b64decode(bundle, validate=True))
    except (ValueError, binascii.Error):
        return []
    return [certificate.public_bytes(serialization.Encoding.DER) for certificate in certificates]
