"""The admission webhook of one operator: Kopf registrations, the HTTPS server, registration and re-checks.

- One ``@kopf.on.validate`` handler per kind on the operator's own registry (never the global one). The
  InferenceService handler decides from the controller's live catalog (:mod:`.decisions`); a negative answer
  resting on something absent is confirmed by one direct read (:class:`DirectReader`) before denying.
  The four other kinds get the size and operator warnings (denials with ``--strict-sizes``).
- :meth:`Admission.serve` is ``settings.admission.server``: a ``kopf.WebhookServer`` with certificates from
  a mounted directory or generated here (Kopf's own generator is broken on these machines), wrapped so that
  requests get an HTTP error — the webhook's failurePolicy decides — until the first full listing is indexed
  or when a check fails unexpectedly, and so that every answer's latency lands in
  ``ome_selector_admission_duration_seconds{kind,allowed}``.
- Registration is ours, not Kopf's ``managed`` mode (:mod:`.registration` says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kopf
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from ome_selector.api.loading import LoadError, load_resource
from ome_selector.api.resources import API_GROUP, API_VERSION, Kind, ObjectKey, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.kube.objects import Objects
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.decisions import Decision, Lookup, decide_inference_service, decide_sizes
from ome_selector.webhook.incluster import ObjectRef, SecretCertificates
from ome_selector.webhook.registration import HANDLER_IDS, CaBundleRegistration, LocalRegistration
from ome_selector.webhook.tls import TlsFiles, generate_serving_files, load_cert_dir

if TYPE_CHECKING:
    from ome_selector.operator.app import Operator

__all__ = ["Admission", "DirectReader", "configure_admission", "register_admission"]

logger = logging.getLogger(__name__)

#: Denials answer with 403 Forbidden, as controller-runtime's ``admission.Denied`` does.
DENIED_CODE = 403

# Unexpected failures inside a check, collected per request: the request then gets HTTP 500 (failurePolicy
# decides) instead of the denial Kopf would make of an exception.
_FAILURES: contextvars.ContextVar[list[BaseException] | None] = contextvars.ContextVar(
    "ome_selector_admission_failures", default=None
)

_Handler = Callable[..., Awaitable[None]]


def register_admission(operator: Operator) -> Admission | None:
    """Register the webhook handlers of ``operator`` (None when its config has no webhook)."""
    config = operator.config.webhook
    if config is None:
        return None
    admission = Admission(operator, config)
    admission.register(operator.registry)
    return admission


def configure_admission(settings: kopf.OperatorSettings, admission: Admission | None) -> None:
    """Serve the webhook from this operator (no-op without one)."""
    if admission is not None:
        admission.configure(settings)


class DirectReader:
    """Reads what a :class:`~.decisions.Lookup` names straight from the API, into a fresh catalog."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._objects = Objects(api_client)

    async def catalog_for(self, lookup: Lookup, known: Catalog | None = None) -> Catalog:
        """The model, then the named runtime or every runtime visible from the namespace, as stored now.

        A listed runtime whose resourceVersion equals that of the same runtime in ``known`` (the live catalog)
        is taken from there instead of being parsed again.
        """
        catalog = Catalog()
        model = await self._resolve(
            Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL, lookup.namespace, lookup.model_name
        )
        if model is None:
            return catalog
        catalog.upsert(model)
        if lookup.runtime_name is not None:
            runtime = await self._resolve(
                Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME, lookup.namespace, lookup.runtime_name
            )
            if runtime is not None:
                catalog.upsert(runtime)
            return catalog
        snapshot = await self._objects.list_objects(
            namespaces=[lookup.namespace],
            kinds=(Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME),
        )
        for body in snapshot.bodies:
            resource = _known(known, body) or _load(body)
            if resource is not None:
                catalog.upsert(resource)
        return catalog

    async def _resolve(self, namespaced: Kind, cluster: Kind, namespace: str, name: str) -> Resource | None:
        """SPEC §1 lookup: the namespaced object if there is a readable one, else the cluster-scoped one."""
        for kind, scope in ((namespaced, namespace), (cluster, None)):
            body = await self._objects.get(kind, scope, name)
            resource = _load(body) if body is not None else None
            if resource is not None:
                return resource
        return None


def _known(catalog: Catalog | None, body: Mapping[str, Any]) -> Resource | None:
    """The object of ``catalog`` with the key and resourceVersion of ``body``, if there is one."""
    if catalog is None:
        return None
    metadata = body.get("metadata") or {}
    try:
        kind = Kind(str(body.get("kind")))
    except ValueError:
        return None
    key = ObjectKey(kind, metadata.get("namespace") if kind.namespaced else None, str(metadata.get("name")))
    stored = catalog.get(key)
    version = metadata.get("resourceVersion")
    if stored is None or version is None or stored.resource_version != version:
        return None
    return stored


def _load(body: Mapping[str, Any]) -> Resource | None:
    try:
        return load_resource(body)
    except LoadError:
        return None  # as the controller does: an object our model cannot read is absent


class Admission:
    """The webhook handlers, server and registration of one :class:`~ome_selector.operator.app.Operator`."""

    def __init__(self, operator: Operator, config: WebhookConfig) -> None:
        self.operator = operator
        self.config = config
        #: Set while the webhook configuration points at the listening server (tests wait for it).
        self.registered = asyncio.Event()
        #: The ValidatingWebhookConfiguration in use (per-run name locally, the chart's in static mode).
        self.configuration_name: str | None = None
        #: Where the apiserver reaches the server (local mode).
        self.url: str | None = None
        #: How many negative answers were re-checked with a direct read (tests and logs).
        self.confirmations = 0
        self._reader: DirectReader | None = None
        self._client_config: kopf.WebhookClientConfig | None = None

    # --- Kopf wiring -------------------------------------------------------------------------------------

    def register(self, registry: kopf.OperatorRegistry) -> None:
        for kind, handler_id in HANDLER_IDS.items():
            handler: _Handler = (
                self._validate_inference_service if kind is Kind.INFERENCE_SERVICE else self._sizes(kind)
            )
            kopf.on.validate(
                API_GROUP,
                API_VERSION,
                kind.plural,
                id=handler_id,
                operations=["CREATE", "UPDATE"],
                registry=registry,
            )(handler)

    def configure(self, settings: kopf.OperatorSettings) -> None:
        settings.admission.server = self.serve
        settings.admission.managed = None  # we write the configuration ourselves (see .registration)
        _quiet_kopf_webhook_logs()

    # --- handlers ------------------------------------------------------------------------------------------

    async def _validate_inference_service(
        self,
        *,
        body: kopf.Body,
        warnings: list[str],
        old: kopf.Body | None = None,
        operation: str = "",
        subresource: str | None = None,
        dryrun: bool = False,
        **_: Any,
    ) -> None:
        if self.config.noop or subresource:
            return
        with _collect_failures():
            controller = self.operator.controller
            if controller is None:
                raise RuntimeError("the controller is not running")
            namespace = (body.get("metadata") or {}).get("namespace")
            decision = decide_inference_service(controller.catalog, body, old, operation, namespace=namespace)
            if decision.confirm is not None:
                reader = self._reader
                if reader is None:
                    raise RuntimeError("no API client for the confirming read")
                self.confirmations += 1
                catalog = await reader.catalog_for(decision.confirm, controller.catalog)
                decision = decide_inference_service(
                    catalog, body, old, operation, namespace=namespace, confirmed=True
                )
            self._answer(Kind.INFERENCE_SERVICE, body, decision, warnings, dryrun)

    def _sizes(self, kind: Kind) -> _Handler:
        async def validate_sizes(
            *,
            body: kopf.Body,
            warnings: list[str],
            old: kopf.Body | None = None,
            operation: str = "",
            subresource: str | None = None,
            dryrun: bool = False,
            **_: Any,
        ) -> None:
            if self.config.noop or subresource:
                return
            with _collect_failures():
                decision = decide_sizes(kind, body, old, operation, strict=self.config.strict_sizes)
                self._answer(kind, body, decision, warnings, dryrun)

        return validate_sizes

    def _answer(
        self, kind: Kind, body: kopf.Body, decision: Decision, warnings: list[str], dryrun: bool
    ) -> None:
        warnings.extend(decision.warnings)
        if decision.allowed:
            return
        metadata = body.get("metadata") or {}
        where = f"{metadata.get('namespace')}/" if metadata.get("namespace") else ""
        logger.info(
            "denied %s %s%s%s: %s",
            kind.value,
            where,
            metadata.get("name"),
            " (dry run)" if dryrun else "",
            decision.message,
        )
        raise kopf.AdmissionError(decision.message, code=DENIED_CODE)

    # --- server ------------------------------------------------------------------------------------------

    def _ready(self) -> bool:
        controller = self.operator.controller
        return controller is not None and controller.ready.is_set()

    def _wrap(self, fn: kopf.WebhookFn) -> kopf.WebhookFn:
        metrics = self.operator.metrics

        async def handle(
            request: Any,
            *,
            webhook: str | None = None,
            headers: kopf.Headers | None = None,
            sslpeer: kopf.SSLPeer | None = None,
        ) -> Any:
            started = time.perf_counter()
            payload = request.get("request") if isinstance(request, Mapping) else None
            kind = str(((payload or {}).get("kind") or {}).get("kind") or "unknown")
            if not self._ready():
                # An HTTP error, not a denial: the webhook's failurePolicy decides (SPEC §7).
                metrics.admission_seconds.labels(kind, "error").observe(time.perf_counter() - started)
                raise web.HTTPServiceUnavailable(text="ome-selector has not indexed the cluster yet")
            failures: list[BaseException] = []
            token = _FAILURES.set(failures)
            try:
                response = await fn(request, webhook=webhook, headers=headers, sslpeer=sslpeer)
            finally:
                _FAILURES.reset(token)
            if failures:
                metrics.admission_seconds.labels(kind, "error").observe(time.perf_counter() - started)
                logger.error("admission check for %s failed: %r", kind, failures[0], exc_info=failures[0])
                raise web.HTTPInternalServerError(
                    text=f"ome-selector could not check the request: {failures[0]}"
                )
            allowed = bool(response.get("response", {}).get("allowed"))
            status: Any = response.get("response", {}).get("status")
            if not allowed and isinstance(status, dict) and status.get("code") == DENIED_CODE:
                status.setdefault("reason", "Forbidden")  # kubectl: "Error from server (Forbidden): …"
            metrics.admission_seconds.labels(kind, "true" if allowed else "false").observe(
                time.perf_counter() - started
            )
            return response

        return handle

    async def serve(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        """``settings.admission.server``: listen, (re-)register on every client config, unregister on exit."""
        config = self.config
        with contextlib.ExitStack() as stack:
            await self._secret_certificates(stack)  # in-cluster certificate mode only (.incluster)
            files = self._tls_files(stack)
            addr, port = config.bind_address
            server = kopf.WebhookServer(
                addr=addr,
                port=port or None,
                host=config.host,
                certfile=files.cert_file,
                pkeyfile=files.key_file,
                cafile=files.ca_file,
                file_check_interval=config.file_check_interval,
            )
            api_client = await self.operator.access.api_client()
            self._reader = DirectReader(api_client)
            registration: LocalRegistration | CaBundleRegistration
            if config.configuration_name is not None:
                registration = CaBundleRegistration(api_client, config.configuration_name)
            else:
                registration = LocalRegistration(
                    api_client, self._local_config(), instance=self.operator.config.instance
                )
            keeper: asyncio.Task[None] | None = None
            try:
                async for client_config in server(self._wrap(fn)):
                    if isinstance(registration, CaBundleRegistration):
                        self._client_config = client_config
                        await _apply_logged(registration, client_config)
                        if keeper is None:
                            keeper = asyncio.create_task(self._keep_ca_bundle(registration))
                    else:
                        await registration.apply(client_config)
                    self.configuration_name = registration.name
                    self.url = client_config.get("url")
                    self.registered.set()
                    yield client_config
            finally:
                self.registered.clear()
                if keeper is not None:
                    keeper.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await keeper
                try:
                    await registration.remove()
                except Exception as error:
                    logger.warning(
                        "could not remove the webhook configuration %s: %s", registration.name, error
                    )
                self._reader = None
                await api_client.close()

    async def _keep_ca_bundle(self, registration: CaBundleRegistration) -> None:
        """Static mode: re-apply the bundle now and then (a chart upgrade may have reset it)."""
        while True:
            await asyncio.sleep(self.config.file_check_interval)
            if self._client_config is not None:
                await _apply_logged(registration, self._client_config)

    async def _secret_certificates(self, stack: contextlib.ExitStack) -> None:
        """In-cluster mode: the pair kept in ``cert_secret``, written to ``cert_dir`` and re-checked."""
        config = self.config
        if config.cert_secret is None or config.cert_dir is None:
            return
        api_client = await self.operator.access.api_client()
        certificates = SecretCertificates(
            api_client,
            ObjectRef.parse(config.cert_secret),
            config.cert_dir,
            service=ObjectRef.parse(config.service) if config.service else None,
            hosts=(config.host,),
        )
        try:
            await certificates.ensure()
        except BaseException:
            await api_client.close()
            raise

        async def keep() -> None:
            try:
                await certificates.keep()
            finally:
                await api_client.close()

        stack.callback(asyncio.create_task(keep(), name="webhook-certificates").cancel)

    def _local_config(self) -> WebhookConfig:
        """An operator limited to some namespaces judges only those, unless told otherwise: its catalog
        knows no BaseModel or ServingRuntime elsewhere (one could shadow a cluster-scoped one)."""
        namespaces = self.operator.config.namespaces
        if self.config.namespace_selector is not None or namespaces is None:
            return self.config
        selector = {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(namespaces)}
            ]
        }
        return dataclasses.replace(self.config, namespace_selector=selector)

    def _tls_files(self, stack: contextlib.ExitStack) -> TlsFiles:
        config = self.config
        if config.cert_dir is not None:
            return load_cert_dir(config.cert_dir)
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ome-selector-webhook-")))
        return generate_serving_files(directory, config.host, config.bind_address[0])


class _OurWebhookOutcomes(logging.Filter):
    """Drops Kopf's per-request "Webhook '…' succeeded/failed permanently" lines for our handlers: a denial
    is an answer, not an operator error, and is logged once by :meth:`Admission._answer`."""

    _PREFIXES = tuple(f"Webhook {handler_id!r} " for handler_id in HANDLER_IDS.values())

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith(self._PREFIXES))


def _quiet_kopf_webhook_logs() -> None:
    kopf_objects = logging.getLogger("kopf.objects")
    if not any(isinstance(f, _OurWebhookOutcomes) for f in kopf_objects.filters):
        kopf_objects.addFilter(_OurWebhookOutcomes())


async def _apply_logged(registration: CaBundleRegistration, client_config: kopf.WebhookClientConfig) -> None:
    try:
        await registration.apply(client_config)
    except (ApiException, OSError) as error:
        logger.warning("could not update caBundle of %s: %s", registration.name, error)


@contextlib.contextmanager
def _collect_failures() -> Any:
    """Turn an unexpected exception in a check into an HTTP error (see :data:`_FAILURES`), not a denial."""
    try:
        yield
    except kopf.AdmissionError:
        raise
    except Exception as error:
        failures = _FAILURES.get()
        if failures is None:
            raise
        failures.append(error)
