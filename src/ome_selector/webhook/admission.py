"""The admission handlers (SPEC §7): what Kopf calls for each validating review, and nothing of serving it.

- One ``@kopf.on.validate`` handler per kind on a given registry (the operator's own, never the global one).
  The InferenceService handler decides from the live catalog (:mod:`.decisions`), handed in as a provider that
  answers None until the first full listing is indexed; a negative answer resting on something absent is
  confirmed by one direct read (:class:`DirectReader`) before denying. The four other kinds get the size and
  operator warnings (denials with ``--strict-sizes``).
- An unexpected failure inside a check is recorded (:func:`recording_failures`), not turned into the denial
  Kopf would make of an exception: the server answers such a request with an HTTP error, and the webhook's
  failurePolicy decides.

Serving, TLS and registration are :mod:`.server`'s; the operator composes the two (``operator/app.py``).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import kopf

from ome_selector.api.bounds import oversized
from ome_selector.api.loading import LoadError, key_of, load_resource
from ome_selector.api.resources import API_GROUP, API_VERSION, Kind, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.kube.objects import Objects
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.decisions import Decision, Lookup, decide_inference_service, decide_sizes
from ome_selector.webhook.registration import HANDLER_IDS

__all__ = ["DENIED_CODE", "AdmissionHandlers", "CatalogProvider", "DirectReader", "recording_failures"]

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


class DirectReader:
    """Reads what a :class:`~.decisions.Lookup` names straight from the API, into a fresh catalog."""

    def __init__(self, objects: Objects) -> None:
        self._objects = objects

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
        namespaced = [lookup.namespace] if _could_be_a_name(lookup.namespace, 63) else []
        snapshot = await self._objects.list_objects(
            namespaces=namespaced, kinds=(Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME)
        )
        for body in snapshot.bodies:
            resource = _known(known, body) or _load(body)
            if resource is not None:
                catalog.upsert(resource)
        return catalog

    async def _resolve(self, namespaced: Kind, cluster: Kind, namespace: str, name: str) -> Resource | None:
        """SPEC §1 lookup: the namespaced object if there is a readable one, else the cluster-scoped one."""
        if not _could_be_a_name(name, 253):
            return None  # no object can have it (the API server would answer an error, not "not found")
        for kind, scope in ((namespaced, namespace), (cluster, None)):
            if scope is not None and not _could_be_a_name(scope, 63):
                continue
            body = await self._objects.get(kind, scope, name)
            resource = _load(body) if body is not None else None
            if resource is not None:
                return resource
        return None


_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def _could_be_a_name(text: str, longest: int) -> bool:
    """Whether an object (a DNS subdomain, as the API server checks custom resource names) or a namespace
    (a DNS label, ``longest`` 63) can be named ``text``."""
    return len(text) <= longest and _NAME.fullmatch(text) is not None and (longest > 63 or "." not in text)


def _known(catalog: Catalog | None, body: Mapping[str, Any]) -> Resource | None:
    """The object of ``catalog`` with the key and resourceVersion of ``body``, if there is one."""
    if catalog is None:
        return None
    key = key_of(body)
    if key is None:
        return None
    stored = catalog.get(key)
    version = (body.get("metadata") or {}).get("resourceVersion")
    if stored is None or version is None or stored.resource_version != version:
        return None
    return stored


def _load(body: Mapping[str, Any]) -> Resource | None:
    """As the controller reads it: an object our model cannot read, or one too large to read, is absent."""
    if oversized(body) is not None:
        return None
    try:
        return load_resource(body)
    except LoadError:
        return None


class AdmissionHandlers:
    """The validating handlers of one webhook configuration."""

    def __init__(self, config: WebhookConfig, catalog: CatalogProvider) -> None:
        self.config = config
        self._catalog = catalog
        #: The confirming reads; set by the server while it runs (it owns the API client).
        self.reader: DirectReader | None = None
        #: How many negative answers were re-checked with a direct read (tests and logs).
        self.confirmations = 0

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
                operations=["CREATE", "UPDATE"],
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
            decision = decide_inference_service(live, body, old, operation, namespace=namespace)
            if decision.confirm is not None:
                reader = self.reader
                if reader is None:
                    raise RuntimeError("no API client for the confirming read")
                self.confirmations += 1
                catalog = await reader.catalog_for(decision.confirm, live)
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
