"""The webhook's Kopf wiring without a cluster: registrations, readiness, failures, the response shape."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf
import pytest
from aiohttp import web

from harness import objects
from ome_selector.api.loading import load_resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.operator.app import Operator, OperatorConfig
from ome_selector.webhook.admission import Admission, _known
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.registration import HANDLER_IDS


class _Controller:
    def __init__(self, catalog: Any = None) -> None:
        self.catalog = catalog if catalog is not None else Catalog()
        self.ready = asyncio.Event()
        self.ready.set()


def _admission(**config: Any) -> tuple[Operator, Admission]:
    operator = Operator(OperatorConfig(health_address=None, webhook=WebhookConfig(**config)))
    assert operator.admission is not None
    return operator, operator.admission


def _review(kind: str = "InferenceService") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"kind": {"kind": kind}},
    }


def _count(operator: Operator, kind: str, allowed: str) -> float | None:
    return operator.metrics.registry.get_sample_value(
        "ome_selector_admission_duration_seconds_count", {"kind": kind, "allowed": allowed}
    )


def test_no_webhook_without_config() -> None:
    operator = Operator(OperatorConfig(health_address=None))
    assert operator.admission is None
    assert operator.registry._webhooks.get_all_handlers() == []


def test_one_validating_handler_per_kind_on_the_operators_own_registry() -> None:
    operator, _ = _admission()
    handlers = operator.registry._webhooks.get_all_handlers()
    assert sorted(h.id for h in handlers) == sorted(HANDLER_IDS.values())
    assert all(h.operations == ["CREATE", "UPDATE"] and h.subresource is None for h in handlers)
    assert kopf.get_default_registry()._webhooks.get_all_handlers() == []


def test_settings_point_kopf_at_our_server_and_leave_registration_to_us() -> None:
    _, admission = _admission()
    settings = kopf.OperatorSettings()
    admission.configure(settings)
    assert settings.admission.server == admission.serve
    assert settings.admission.managed is None


def test_until_indexed_every_request_gets_an_http_error() -> None:
    operator, admission = _admission()

    async def never(*_: Any, **__: Any) -> Any:
        raise AssertionError("not called before the first listing is indexed")

    handle = admission._wrap(never)
    with pytest.raises(web.HTTPServiceUnavailable):
        asyncio.run(handle(_review()))
    operator.controller = _Controller()  # type: ignore[assignment]
    operator.controller.ready.clear()
    with pytest.raises(web.HTTPServiceUnavailable):
        asyncio.run(handle(_review()))
    assert _count(operator, "InferenceService", "error") == 2


def test_an_unexpected_failure_is_an_http_error_not_a_denial() -> None:
    operator, admission = _admission()

    class Broken:
        def resolve_model(self, *_: Any) -> Any:
            raise KeyError("index corrupted")

    operator.controller = _Controller(Broken())  # type: ignore[assignment]
    body = kopf.Body(
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"model": {"name": "m"}, "engine": {}},
        }
    )

    async def kopf_fn(request: Any, **_: Any) -> Any:
        # What Kopf does: call the handler, turn exceptions into a denial.
        warnings: list[str] = []
        try:
            await admission._validate_inference_service(body=body, warnings=warnings, operation="CREATE")
        except Exception as error:
            return {"response": {"allowed": False, "status": {"message": str(error), "code": 500}}}
        return {"response": {"allowed": True}}

    with pytest.raises(web.HTTPInternalServerError) as raised:
        asyncio.run(admission._wrap(kopf_fn)(_review()))
    assert raised.value.text == "ome-selector could not check the request: 'index corrupted'"
    assert _count(operator, "InferenceService", "error") == 1


def test_denials_are_forbidden_and_timed() -> None:
    operator, admission = _admission()
    operator.controller = _Controller()  # type: ignore[assignment]

    async def deny(request: Any, **_: Any) -> Any:
        return {"response": {"uid": "1", "allowed": False, "status": {"message": "no", "code": 403}}}

    response = asyncio.run(admission._wrap(deny)(_review("ServingRuntime")))
    assert response["response"]["status"] == {"message": "no", "code": 403, "reason": "Forbidden"}
    assert _count(operator, "ServingRuntime", "false") == 1


def test_noop_mode_never_looks() -> None:
    _, admission = _admission(noop=True)
    warnings: list[str] = []
    body = kopf.Body(
        {"metadata": {"name": "svc", "namespace": "ns"}, "spec": {"model": {"name": "m"}, "engine": {}}}
    )
    asyncio.run(admission._validate_inference_service(body=body, warnings=warnings, operation="CREATE"))
    assert warnings == []


def test_kopfs_per_request_lines_for_our_webhooks_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    _, admission = _admission()
    admission.configure(kopf.OperatorSettings())
    logger = logging.getLogger("kopf.objects")
    with caplog.at_level(logging.INFO, logger="kopf.objects"):
        logger.error("Webhook 'validate-inferenceservices' failed permanently: model m is disabled")
        logger.info("Webhook 'validate-basemodels' succeeded.")
        logger.info("Handler 'watch-basemodels' succeeded.")
    assert [r.getMessage() for r in caplog.records] == ["Handler 'watch-basemodels' succeeded."]


def test_a_namespaced_operator_registers_its_webhook_for_its_namespaces_only() -> None:
    config = WebhookConfig()
    scoped = Operator(OperatorConfig(health_address=None, namespaces=["b", "a"], webhook=config))
    assert scoped.admission is not None
    assert scoped.admission._local_config().namespace_selector == {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}]
    }
    chosen = WebhookConfig(namespace_selector={"matchLabels": {"x": "y"}})
    explicit = Operator(OperatorConfig(health_address=None, namespaces=["a"], webhook=chosen))
    assert explicit.admission is not None
    assert explicit.admission._local_config() is chosen
    _, everywhere = _admission()
    assert everywhere._local_config().namespace_selector is None


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
