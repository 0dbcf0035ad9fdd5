"""Serving the admission webhook: our HTTPS endpoint, its certificates, and its registration.

:meth:`WebhookServer.serve` is ``settings.admission.server``: an :class:`~.endpoint.ReviewEndpoint` (not
``kopf.WebhookServer``: the body is read and checked before Kopf sees it, SPEC §7) with certificates from a
mounted directory, kept in a Secret (:mod:`.incluster`) or generated here (:mod:`.tls`; Kopf's own generator
is broken on these machines). Kopf's dispatcher answers every well-formed review, wrapped so that requests get
an HTTP error — the webhook's failurePolicy decides — until the first full listing is indexed or when a check
fails unexpectedly, and so that every answer's latency lands in
``ome_selector_admission_duration_seconds{kind, allowed}`` (``kind`` one of the five kinds; a malformed
request is counted in ``ome_selector_admission_malformed_total{code}`` instead). Registration is ours, not
Kopf's ``managed`` mode (:mod:`.registration` says why).

The transport also bounds who may ask what (SPEC §7 "Robustness"): with ``client_ca_file`` only a client
certificate of that CA (and, if given, of those names) reaches the handlers (:class:`~.endpoint.ClientAuth`);
a review sent to another kind's path, or an InferenceService review whose object names a namespace other
than the request's, gets 400 (the apiserver never sends one); an InferenceService in a namespace this
operator does not watch is allowed untouched, with nothing read and nothing named (the apiserver is not
asked to send one: the registration selects the watched namespaces); and the confirming reads a request may
cause are rate-limited (:class:`~.confirming.ConfirmationLimiter`), past which it gets 429.

The server knows only what it is given: the handlers it serves (:mod:`.admission`), API access, the metrics,
the operator's instance name and the namespaces it watches.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import kopf
from aiohttp import web
from prometheus_client import Counter, Gauge, Histogram

from ome_selector.api.resources import Kind
from ome_selector.kube.connection import ClusterAccess, kubeconfig_context
from ome_selector.kube.objects import ApiError, Objects
from ome_selector.webhook.admission import DENIED_CODE, AdmissionHandlers, recording_failures
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.confirming import ConfirmationsExhaustedError
from ome_selector.webhook.endpoint import Answer, ClientAuth, ReviewEndpoint
from ome_selector.webhook.incluster import ObjectRef, SecretCertificates, SecretMissingError
from ome_selector.webhook.registration import (
    HANDLER_IDS,
    CaBundleRegistration,
    LocalRegistration,
    default_instance,
)
from ome_selector.webhook.review import MalformedReviewError, Review, for_kopf
from ome_selector.webhook.tls import TlsFiles, certificate_expiry, generate_serving_files, load_cert_dir

__all__ = ["WebhookServer"]

logger = logging.getLogger(__name__)

#: How often a missing or unreadable certificate Secret is tried again.
CERT_RETRY_SECONDS = 5.0
#: How often a replica that has not indexed the catalog yet checks whether it may arm the configuration.
ARM_POLL_SECONDS = 0.5


class WebhookServer:
    """Serves one set of admission handlers and keeps the apiserver's webhook configuration pointing at it."""

    def __init__(
        self,
        config: WebhookConfig,
        handlers: AdmissionHandlers,
        *,
        access: ClusterAccess,
        latency: Histogram,
        malformed: Counter,
        namespaces: Sequence[str] | None,
        in_flight: Gauge | None = None,
        on_certificate: Callable[[float], None] | None = None,
    ) -> None:
        """``latency`` is labelled ``kind`` and ``allowed``, ``malformed`` ``code``; ``namespaces`` are those
        watched (None: all). ``in_flight`` counts the reviews being answered; ``on_certificate`` hears when
        the serving certificate expires (seconds since the epoch) each time the listener (re)loads it."""
        self.config = config
        self._handlers = handlers
        self._access = access
        self._latency = latency
        self._malformed = malformed
        self._namespaces = namespaces
        self._in_flight = in_flight
        self._on_certificate = on_certificate
        #: Set while the webhook configuration points at the listening server (tests wait for it).
        self.registered = asyncio.Event()
        #: The ValidatingWebhookConfiguration in use (``<prefix>-local-<instance>`` locally, the chart's in
        #: static mode).
        self.configuration_name: str | None = None
        #: Set when the replica drains before stopping: each answer then closes its connection.
        self.draining = False
        self._client_config: kopf.WebhookClientConfig | None = None

    def configure(self, settings: kopf.OperatorSettings) -> None:
        settings.admission.server = self.serve
        settings.admission.managed = None  # we write the configuration ourselves (see .registration)
        _quiet_kopf_webhook_logs()

    @property
    def instance(self) -> str:
        """The instance of a local registration: ``--instance``, else the kubeconfig context and host name."""
        if self.config.instance is not None:
            return self.config.instance
        return default_instance(kubeconfig_context(self._access.kubeconfig, self._access.context))

    def _answering(self, fn: kopf.WebhookFn) -> Answer:
        """Kopf's dispatcher ``fn`` for well-formed reviews: time every answer, mark denials Forbidden, and
        turn "not indexed yet" and failed checks into HTTP errors (a denial is an answer; an error lets the
        webhook's failurePolicy decide, SPEC §7)."""
        latency = self._latency

        async def answer(
            review: Review, webhook: str, headers: dict[str, str], sslpeer: Any
        ) -> dict[str, Any]:
            if self._in_flight is None:
                return await timed(review, webhook, headers, sslpeer)
            with self._in_flight.track_inprogress():
                return await timed(review, webhook, headers, sslpeer)

        async def timed(
            review: Review, webhook: str, headers: dict[str, str], sslpeer: Any
        ) -> dict[str, Any]:
            started = time.perf_counter()
            kind = review.kind.value  # one of the five: the label never takes a value from the request
            if (refusal := _not_asked_by_the_apiserver(review, webhook)) is not None:
                latency.labels(kind, "error").observe(time.perf_counter() - started)
                self._malformed.labels("400").inc()
                raise web.HTTPBadRequest(text=refusal)
            if not self._serves(review):
                latency.labels(kind, "true").observe(time.perf_counter() - started)
                return _allowed(review)
            if not self._handlers.ready:
                latency.labels(kind, "error").observe(time.perf_counter() - started)
                raise web.HTTPServiceUnavailable(text="ome-selector has not indexed the cluster yet")
            with recording_failures() as failures:
                request: Any = for_kopf(review)  # Kopf types it as its own TypedDict
                response: Any = await fn(request, webhook=webhook, headers=headers, sslpeer=sslpeer)
            if failures and isinstance(failures[0], ConfirmationsExhaustedError):
                latency.labels(kind, "error").observe(time.perf_counter() - started)
                raise web.HTTPTooManyRequests(text=str(failures[0]), headers={"Retry-After": "1"})
            if failures:
                latency.labels(kind, "error").observe(time.perf_counter() - started)
                logger.error("admission check for %s failed: %r", kind, failures[0], exc_info=failures[0])
                raise web.HTTPInternalServerError(
                    text=f"ome-selector could not check the request: {failures[0]}"
                )
            allowed = bool(response.get("response", {}).get("allowed"))
            status: Any = response.get("response", {}).get("status")
            if not allowed and isinstance(status, dict) and status.get("code") == DENIED_CODE:
                status.setdefault("reason", "Forbidden")  # kubectl: "Error from server (Forbidden): …"
            latency.labels(kind, "true" if allowed else "false").observe(time.perf_counter() - started)
            return dict(response)

        return answer

    def _serves(self, review: Review) -> bool:
        """Whether this operator judges the review: every kind but InferenceService always; an
        InferenceService only in a watched namespace (its catalog knows no other namespace's objects)."""
        if review.kind is not Kind.INFERENCE_SERVICE or self._namespaces is None:
            return True
        return review.request.get("namespace") in self._namespaces

    def _count_malformed(self, error: MalformedReviewError) -> None:
        self._malformed.labels(str(error.status)).inc()

    async def serve(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        """``settings.admission.server``: listen, (re-)register on every client config, unregister on exit."""
        config = self.config
        with contextlib.ExitStack() as stack:
            await self._secret_certificates(stack)  # in-cluster certificate mode only (.incluster)
            files = self._tls_files(stack)
            addr, port = config.bind_address
            endpoint = ReviewEndpoint(
                files,
                addr,
                port,
                host=config.host,
                webhook_ids=frozenset(HANDLER_IDS.values()),
                file_check_interval=config.file_check_interval,
                closing=lambda: self.draining,
                client_auth=(
                    ClientAuth(
                        config.client_ca_file,
                        frozenset(config.client_names),
                        optional=config.client_cert_optional,
                    )
                    if config.client_ca_file is not None
                    else None
                ),
            )
            api_client = await self._access.api_client()
            lent = contextlib.ExitStack()  # the handlers' confirming reads use this client while it serves
            if self._handlers.reader is not None:
                lent.enter_context(self._handlers.reader.reading_through(Objects(api_client)))
            registration: LocalRegistration | CaBundleRegistration | InjectedCaBundle
            if config.ca_injected and config.configuration_name is not None:
                registration = InjectedCaBundle(config.configuration_name)
            elif config.configuration_name is not None:
                registration = CaBundleRegistration(api_client, config.configuration_name)
            else:
                registration = LocalRegistration(api_client, self._local_config(), instance=self.instance)
            keeper: asyncio.Task[None] | None = None
            try:
                async for client_config in endpoint.listen(self._answering(fn), self._count_malformed):
                    if self._on_certificate is not None:
                        self._on_certificate(certificate_expiry(files.cert_file))
                    if isinstance(registration, CaBundleRegistration):
                        self._client_config = client_config
                        await _apply_logged(registration, client_config, armed=self._handlers.ready)
                        if keeper is None:
                            keeper = asyncio.create_task(self._keep_ca_bundle(registration))
                    else:
                        await registration.apply(client_config)
                    self.configuration_name = registration.name
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
                lent.close()
                await api_client.close()

    async def _keep_ca_bundle(self, registration: CaBundleRegistration) -> None:
        """Static mode: arm the configuration (fill its caBundle in) as soon as this replica answers (the
        catalog indexed), then re-apply the bundle now and then (someone may have emptied it)."""
        while not self._handlers.ready:
            await asyncio.sleep(ARM_POLL_SECONDS)
        if self._client_config is not None:
            await _apply_logged(registration, self._client_config, armed=True)
        while True:
            await asyncio.sleep(self.config.file_check_interval)
            if self._client_config is not None:
                await _apply_logged(registration, self._client_config, armed=not self.draining)

    async def _secret_certificates(self, stack: contextlib.ExitStack) -> None:
        """In-cluster mode: the pair kept in ``cert_secret``, written to ``cert_dir`` and re-checked."""
        config = self.config
        if config.cert_secret is None or config.cert_dir is None:
            return
        api_client = await self._access.api_client()
        certificates = SecretCertificates(
            api_client,
            ObjectRef.parse(config.cert_secret),
            config.cert_dir,
            service=ObjectRef.parse(config.service) if config.service else None,
            hosts=(config.host,),
        )
        try:
            await self._until_ensured(certificates)
        except BaseException:
            await api_client.close()
            raise

        async def keep() -> None:
            try:
                await certificates.keep()
            finally:
                await api_client.close()

        stack.callback(asyncio.create_task(keep(), name="webhook-certificates").cancel)

    async def _until_ensured(self, certificates: SecretCertificates) -> None:
        """Retry until the pair is in the Secret and in the files: the webhook is not served meanwhile, so
        readiness stays false (a deleted chart Secret comes back with ``helm upgrade``)."""
        said: str | None = None
        while True:
            try:
                await certificates.ensure()
                if said is not None:
                    logger.info("webhook certificate Secret %s is usable again", certificates.secret)
                return
            except (SecretMissingError, ApiError, OSError) as error:
                text = _one_line(error)
                if text != said:  # said once, not at every retry
                    logger.error(
                        "cannot serve the webhook: %s; retrying every %g s", text, CERT_RETRY_SECONDS
                    )
                    said = text
            await asyncio.sleep(CERT_RETRY_SECONDS)

    def _local_config(self) -> WebhookConfig:
        """An operator limited to some namespaces judges only those, unless told otherwise: its catalog
        knows no BaseModel or ServingRuntime elsewhere (one could shadow a cluster-scoped one)."""
        namespaces = self._namespaces
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


class InjectedCaBundle:
    """Static mode with the caBundle injected by someone else (cert-manager's cainjector): the operator never
    reads or writes the configuration, so it needs no RBAC on it."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def apply(self, client_config: kopf.WebhookClientConfig) -> bool:
        return False

    async def remove(self) -> None:
        """The configuration belongs to the chart: nothing to undo."""


def _not_asked_by_the_apiserver(review: Review, webhook: str) -> str | None:
    """Why the apiserver would never send this review to this path; None when it could have.

    The apiserver sends each kind to its own webhook's path, and fills an object's namespace from the
    request's before admission, so a review that breaks either was made up by someone else (and could
    otherwise ask about another namespace's objects than the one it names).
    """
    if webhook != HANDLER_IDS[review.kind]:
        return f"request.kind {review.kind.value} is not the kind of the webhook at this path"
    if not review.kind.namespaced:
        return None
    namespace = review.request.get("namespace")
    if not namespace:
        return "request.namespace is missing for a namespaced kind"
    for name in ("object", "oldObject"):
        body = review.request.get(name)
        if isinstance(body, dict) and (body.get("metadata") or {}).get("namespace") != namespace:
            return f"request.{name}.metadata.namespace is not request.namespace"
    return None


def _allowed(review: Review) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review.uid, "allowed": True},
    }


class _OurWebhookOutcomes(logging.Filter):
    """Drops Kopf's per-request "Webhook '…' succeeded/failed permanently" lines for our handlers: a denial
    is an answer, not an operator error, and is logged once by the handler that denies."""

    _PREFIXES = tuple(f"Webhook {handler_id!r} " for handler_id in HANDLER_IDS.values())

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith(self._PREFIXES))


def _quiet_kopf_webhook_logs() -> None:
    kopf_objects = logging.getLogger("kopf.objects")
    if not any(isinstance(f, _OurWebhookOutcomes) for f in kopf_objects.filters):
        kopf_objects.addFilter(_OurWebhookOutcomes())


async def _apply_logged(
    registration: CaBundleRegistration, client_config: kopf.WebhookClientConfig, *, armed: bool
) -> None:
    try:
        await registration.apply(client_config, armed=armed)
    except (ApiError, OSError) as error:
        logger.warning("could not update caBundle of %s: %s", registration.name, error)


def _one_line(error: BaseException) -> str:
    if isinstance(error, ApiError):  # its str() carries the whole HTTP response
        return f"reading the certificate Secret: HTTP {error.status} {error.reason}"
    return str(error)
