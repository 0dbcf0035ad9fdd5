"""The admission handlers without a cluster or an operator: registrations, the catalog provider, failures."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf
import pytest

from harness import objects
from ome_selector.api.loading import load_resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.webhook.admission import AdmissionHandlers, _known, recording_failures
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.registration import HANDLER_IDS

SERVICE: kopf.RawBody = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "svc", "namespace": "ns"},
    "spec": {"model": {"name": "m"}, "engine": {}},
}


def _handlers(catalog: Any = None, **config: Any) -> AdmissionHandlers:
    return AdmissionHandlers(WebhookConfig(**config), catalog=lambda: catalog)


def _validate(handlers: AdmissionHandlers, body: kopf.RawBody) -> list[str]:
    warnings: list[str] = []
    asyncio.run(
        handlers._validate_inference_service(body=kopf.Body(body), warnings=warnings, operation="CREATE")
    )
    return warnings


def test_one_validating_handler_per_kind_on_the_given_registry() -> None:
    registry = kopf.OperatorRegistry()
    _handlers().register(registry)
    handlers = registry._webhooks.get_all_handlers()
    assert sorted(h.id for h in handlers) == sorted(HANDLER_IDS.values())
    assert all(h.operations == ["CREATE", "UPDATE"] and h.subresource is None for h in handlers)
    assert kopf.get_default_registry()._webhooks.get_all_handlers() == []


def test_ready_once_the_provider_has_a_catalog() -> None:
    catalog: list[Catalog | None] = [None]
    handlers = AdmissionHandlers(WebhookConfig(), catalog=lambda: catalog[0])
    assert not handlers.ready
    catalog[0] = Catalog()
    assert handlers.ready


def test_a_denial_from_the_live_catalog_is_confirmed_by_a_direct_read_first() -> None:
    # The model is missing from the live catalog: that rests on something absent, so the handler wants a
    # direct read before denying, and without the server's reader that is an unexpected failure.
    handlers = _handlers(Catalog())
    with recording_failures() as failures:
        _validate(handlers, SERVICE)
    assert [str(f) for f in failures] == ["no API client for the confirming read"]
    assert handlers.confirmations == 0


def test_an_unexpected_failure_is_recorded_not_a_denial() -> None:
    class Broken:
        def resolve_model(self, *_: Any) -> Any:
            raise KeyError("index corrupted")

    with recording_failures() as failures:
        _validate(_handlers(Broken()), SERVICE)
    assert [repr(f) for f in failures] == ["KeyError('index corrupted')"]


def test_before_indexing_the_handler_fails_instead_of_deciding() -> None:
    with recording_failures() as failures:
        _validate(_handlers(None), SERVICE)
    assert [str(f) for f in failures] == ["the cluster is not indexed yet"]


def test_outside_a_recorded_request_a_failure_propagates() -> None:
    with pytest.raises(RuntimeError, match="not indexed yet"):
        _validate(_handlers(None), SERVICE)


def test_noop_mode_never_looks() -> None:
    assert _validate(_handlers(None, noop=True), SERVICE) == []


def test_a_listed_runtime_unchanged_since_the_watch_saw_it_is_not_parsed_again() -> None:
    body = objects.runtime("rt", namespace="ns")
    body["metadata"]["resourceVersion"] = "7"
    stored = load_resource(body)
    assert stored is not None
    live = Catalog.from_resources([stored])
    assert _known(live, body) is stored
    assert _known(live, {**body, "metadata": {**body["metadata"], "resourceVersion": "8"}}) is None
    assert _known(live, {**body, "metadata": {"name": "other", "namespace": "ns"}}) is None
    assert _known(None, body) is None
    assert _known(live, {**body, "kind": "Pod"}) is None
