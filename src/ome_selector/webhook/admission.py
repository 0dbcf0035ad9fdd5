"""The admission handlers (SPEC §7): what Kopf calls for each validating review, and nothing of serving it.

- One ``@kopf.on.validate`` handler per kind on a given registry (the operator's own, never the global one).
  The InferenceService handler decides from the live catalog (:mod:`.decisions`), handed in as a provider that
  answers None until the first full listing is indexed; a negative answer resting on something absent is
  confirmed by a direct read before denying (:mod:`.confirming`: what is stored now, the live catalog amended
  with it, rate-limited). The four other kinds get the size and operator warnings (denials with
  ``--strict-sizes``).
- An unexpected failure inside a check is recorded (:func:`recording_failures`), not turned into the denial
  Kopf would make of an exception: the server answers such a request with an HTTP error, and the webhook's
  failurePolicy decides.

Serving, TLS and registration are :mod:`.server`'s; the operator composes the two (``operator/app.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import kopf

from ome_selector.api.logfields import log_fields
from ome_selector.api.resources import API_GROUP, API_VERSION, Kind
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.confirming import ConfirmationLimiter, DirectReader
from ome_selector.webhook.decisions import Decision, decide_inference_service, decide_sizes
from ome_selector.webhook.impact import CatalogReviewMetrics, review_catalog_change
from ome_selector.webhook.registration import HANDLER_IDS, webhook_operations

__all__ = [
    "DENIED_CODE",
    "AdmissionHandlers",
    "CatalogProvider",
    "recording_failures",
    "shown_namespaces",
]

logger = logging.getLogger(__name__)

#: Denials answer with 403 Forbidden, as controller-runtime's ``admission.Denied`` does.
DENIED_CODE = 403

#: The live catalog, or None while the operator is starting (nothing indexed yet).
CatalogProvider = Callable[[], Catalog | None]

# Unexpected failures inside a check, collected per request (see recording_failures).
_FAILURES: contextvars.ContextVar[list[BaseException] | None] = contextvars.ContextVar(
    "ome_selector_admission_failures", default=None
)

_Handler = Callable[..., Awaitable[None]]


class AdmissionHandlers:
    """The validating handlers of one webhook configuration."""

    def __init__(
        self,
        config: WebhookConfig,
        catalog: CatalogProvider,
        *,
        reader: DirectReader | None,
        review_metrics: CatalogReviewMetrics | None,
        report_only: bool = False,
        runtime_lookup: RuntimeLookup = RuntimeLookup.V1_3,
    ) -> None:
        """``reader`` makes the confirming reads (None: a review that needs one fails); the server lends it
        its API client while it serves. ``review_metrics`` counts SPEC §12's reviews (None: not counted)."""
        self.config = config
        self._catalog = catalog
        #: SPEC §7: no success warning in report-only mode (OME's own webhook gives it).
        self.report_only = report_only
        self.runtime_lookup = runtime_lookup
        self.reader = reader
        #: How many negative answers were re-checked with a direct read (tests and logs).
        self.confirmations = 0
        self.limiter = ConfirmationLimiter(config.confirmations_per_second, config.confirmation_burst)
        self.review_metrics = review_metrics
        #: SPEC §12: the catalog reviews compute one turn at a time.
        self.review_turns = asyncio.Lock()

    @property
    def ready(self) -> bool:
        """Whether the first full listing is indexed (until then every review gets an HTTP error)."""
        return self._catalog() is not None

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
                operations=list(webhook_operations(kind)),
                registry=registry,
            )(handler)

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
            live = self._catalog()
            if live is None:
                raise RuntimeError("the cluster is not indexed yet")
            namespace = (body.get("metadata") or {}).get("namespace")
            decide = functools.partial(
                decide_inference_service,
                namespace=namespace,
                lookup=self.runtime_lookup,
                report_only=self.report_only,
            )
            decision = decide(live, body, old, operation)
            if decision.confirm is not None:
                reader = self.reader
                if reader is None:
                    raise RuntimeError("no API client for the confirming read")
                await self.limiter.acquire()
                self.confirmations += 1
                catalog = await reader.catalog_for(decision.confirm, live)
                decision = decide(catalog, body, old, operation, confirmed=True)
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
            userinfo: Mapping[str, Any] | None = None,
            sslpeer: Mapping[str, Any] | None = None,
            **_: Any,
        ) -> None:
            if self.config.noop or subresource:
                return
            with _collect_failures():
                decision = decide_sizes(kind, body, old, operation, strict=self.config.strict_sizes)
                live = self._catalog()
                if decision.allowed and live is not None:  # SPEC §12: until indexed, §7 only
                    review = await review_catalog_change(
                        live,
                        kind,
                        body,
                        old,
                        operation=operation,
                        config=self.config,
                        lookup=self.runtime_lookup,
                        metrics=self.review_metrics,
                        username=(userinfo or {}).get("username"),
                        turns=self.review_turns,
                        shown=shown_namespaces(kind, old if operation == "DELETE" else body, sslpeer),
                    )
                    if review is not None:
                        decision = Decision(
                            allowed=review.denial is None,
                            message=review.denial or "",
                            warnings=(*decision.warnings, *review.warnings),
                        )
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
            extra=log_fields(kind=kind, namespace=metadata.get("namespace"), name=metadata.get("name")),
        )
        raise kopf.AdmissionError(decision.message, code=DENIED_CODE)


def shown_namespaces(
    kind: Kind, stored: Mapping[str, Any] | None, sslpeer: Mapping[str, Any] | None
) -> frozenset[str] | None:
    """Whose objects a catalog review's answer may name (SPEC §12): every namespace's (None) for the apiserver
    (a verified client certificate: the endpoint passes ``sslpeer`` only then); otherwise the object's own
    namespace for a namespaced kind, and none for a cluster-scoped one. Anyone may reach the webhook's
    Service and make a review up: only counts of other namespaces' InferenceServices reach them."""
    if sslpeer:
        return None
    namespace = ((stored or {}).get("metadata") or {}).get("namespace") if kind.namespaced else None
    return frozenset({namespace}) if isinstance(namespace, str) and namespace else frozenset()


@contextlib.contextmanager
def recording_failures() -> Iterator[list[BaseException]]:
    """The unexpected failures of the checks run inside (one request): the caller answers with an HTTP error
    when there are any."""
    failures: list[BaseException] = []
    token = _FAILURES.set(failures)
    try:
        yield failures
    finally:
        _FAILURES.reset(token)


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
