"""The webhook server's wrapping of Kopf, without a cluster: readiness, failures, the response shape, the
settings it takes over, its logs and the namespaces a local registration covers."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, cast

import kopf
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram

from ome_selector.api.resources import Kind
from ome_selector.catalog.catalog import Catalog
from ome_selector.kube.connection import ClusterAccess
from ome_selector.webhook.admission import AdmissionHandlers
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.confirming import DirectReader
from ome_selector.webhook.registration import HANDLER_IDS, default_instance
from ome_selector.webhook.review import Review, read_review
from ome_selector.webhook.server import WebhookServer


class Setup:
    """A server over handlers whose catalog the test sets (None: not indexed yet)."""

    def __init__(
        self, namespaces: list[str] | None = None, reader: DirectReader | None = None, **config: Any
    ) -> None:
        self.catalog: Any = None
        self.registry = CollectorRegistry()
        latency = Histogram("latency", "test", ["kind", "allowed"], registry=self.registry)
        malformed = Counter("malformed", "test", ["code"], registry=self.registry)
        webhook = WebhookConfig(**config)
        self.handlers = AdmissionHandlers(
            webhook, catalog=lambda: self.catalog, reader=reader, review_metrics=None
        )
        self.server = WebhookServer(
            webhook,
            self.handlers,
            access=ClusterAccess(),
            latency=latency,
            malformed=malformed,
            namespaces=namespaces,
        )

    def count(self, kind: str, allowed: str) -> float | None:
        return self.registry.get_sample_value("latency_count", {"kind": kind, "allowed": allowed})


def _answer(server: WebhookServer, fn: Any, kind: str = "InferenceService") -> Any:
    """``fn`` (what Kopf would call) as the server wraps it, called with a review of ``kind``."""
    answer = server._answering(fn)

    async def call() -> Any:
        return await answer(_review(kind), HANDLER_IDS[Kind(kind)], {}, None)

    return asyncio.run(call())


def _review(kind: str = "InferenceService", **changes: Any) -> Review:
    plural = Kind(kind).plural
    scope = {"namespace": "ns"} if Kind(kind).namespaced else {}
    request = {
        "uid": "u1",
        "kind": {"group": "ome.io", "version": "v1beta1", "kind": kind},
        "resource": {"group": "ome.io", "version": "v1beta1", "resource": plural},
        "operation": "UPDATE",
        "userInfo": {"username": "someone"},
        "object": {"metadata": {"name": "x", "uid": "object-uid", **scope}},
        "oldObject": {"metadata": {"name": "x", "uid": "object-uid", **scope}},
        **scope,
        **changes,
    }
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return read_review(json.dumps(review).encode())


def test_settings_point_kopf_at_our_server_and_leave_registration_to_us() -> None:
    setup = Setup()
    settings = kopf.OperatorSettings()
    setup.server.configure(settings)
    assert settings.admission.server == setup.server.serve
    assert settings.admission.managed is None


def test_until_indexed_every_request_gets_an_http_error() -> None:
    setup = Setup()

    async def never(*_: Any, **__: Any) -> Any:
        raise AssertionError("not called before the first listing is indexed")

    with pytest.raises(web.HTTPServiceUnavailable):
        _answer(setup.server, never)
    assert setup.count("InferenceService", "error") == 1


def _kopf_calling_the_handler(setup: Setup, model: str) -> Any:
    """What Kopf's dispatcher does with an InferenceService of ``model``: call the handler, turn exceptions
    into a denial."""
    body = kopf.Body(
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"model": {"name": model}, "engine": {}},
        }
    )

    async def kopf_fn(request: Any, **_: Any) -> Any:
        warnings: list[str] = []
        try:
            await setup.handlers._validate_inference_service(body=body, warnings=warnings, operation="CREATE")
        except Exception as error:
            return {"response": {"allowed": False, "status": {"message": str(error), "code": 500}}}
        return {"response": {"allowed": True}}

    return kopf_fn


def test_an_unexpected_failure_is_an_http_error_not_a_denial() -> None:
    setup = Setup()

    class Broken:
        def resolve_model(self, *_: Any) -> Any:
            raise KeyError("index corrupted")

    setup.catalog = Broken()
    kopf_fn = _kopf_calling_the_handler(setup, "m")

    with pytest.raises(web.HTTPInternalServerError) as raised:
        _answer(setup.server, kopf_fn)
    assert raised.value.text == "ome-selector could not check the request: 'index corrupted'"
    assert setup.count("InferenceService", "error") == 1


def test_denials_are_forbidden_and_timed() -> None:
    setup = Setup()
    setup.catalog = Catalog()

    async def deny(request: Any, **_: Any) -> Any:
        return {"response": {"uid": "1", "allowed": False, "status": {"message": "no", "code": 403}}}

    response = _answer(setup.server, deny, "ServingRuntime")
    assert response["response"]["status"] == {"message": "no", "code": 403, "reason": "Forbidden"}
    assert setup.count("ServingRuntime", "false") == 1


def test_kopfs_per_request_lines_for_our_webhooks_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    Setup().server.configure(kopf.OperatorSettings())
    logger = logging.getLogger("kopf.objects")
    with caplog.at_level(logging.INFO, logger="kopf.objects"):
        logger.error("Webhook 'validate-inferenceservices' failed permanently: model m is disabled")
        logger.info("Webhook 'validate-basemodels' succeeded.")
        logger.info("Handler 'watch-basemodels' succeeded.")
    assert [r.getMessage() for r in caplog.records] == ["Handler 'watch-basemodels' succeeded."]


def test_a_namespaced_operator_registers_its_webhook_for_its_namespaces_only() -> None:
    assert Setup(namespaces=["b", "a"]).server._local_config().namespace_selector == {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}]
    }
    chosen = {"matchLabels": {"x": "y"}}
    explicit = Setup(namespaces=["a"], namespace_selector=chosen).server
    assert explicit._local_config() is explicit.config
    assert Setup().server._local_config().namespace_selector is None


def test_kopf_is_handed_the_review_without_object_uids() -> None:
    # Kopf keeps a memory per object uid for every non-CREATE review: the request must not choose it.
    setup = Setup()
    setup.catalog = Catalog()
    seen: list[Any] = []

    async def record(request: Any, **_: Any) -> Any:
        seen.append(request)
        return {"response": {"uid": request["request"]["uid"], "allowed": True}}

    _answer(setup.server, record)
    (request,) = seen
    assert request["request"]["uid"] == "u1"
    assert request["request"]["object"]["metadata"] == {"name": "x", "namespace": "ns"}
    assert request["request"]["oldObject"]["metadata"] == {"name": "x", "namespace": "ns"}
    assert setup.count("InferenceService", "true") == 1


def test_the_local_instance_is_the_flag_else_a_hash_of_context_and_host_never_the_port() -> None:
    assert Setup(instance="laptop").server.instance == "laptop"
    one = WebhookServer(
        WebhookConfig(bind_address=("127.0.0.1", 1)),
        AdmissionHandlers(WebhookConfig(), catalog=lambda: None, reader=None, review_metrics=None),
        access=ClusterAccess(context="kind-dev"),
        latency=Histogram("l1", "t", ["kind", "allowed"], registry=CollectorRegistry()),
        malformed=Counter("m1", "t", ["code"], registry=CollectorRegistry()),
        namespaces=None,
    )
    other_port = WebhookServer(
        WebhookConfig(bind_address=("127.0.0.1", 2)),
        AdmissionHandlers(WebhookConfig(), catalog=lambda: None, reader=None, review_metrics=None),
        access=ClusterAccess(context="kind-dev"),
        latency=Histogram("l2", "t", ["kind", "allowed"], registry=CollectorRegistry()),
        malformed=Counter("m2", "t", ["code"], registry=CollectorRegistry()),
        namespaces=None,
    )
    assert one.instance == other_port.instance == default_instance("kind-dev")
    assert default_instance("kind-dev", "host-a") != default_instance("kind-dev", "host-b")
    assert default_instance("kind-dev", "host-a") != default_instance("kind-prod", "host-a")
    assert len(default_instance("kind-dev")) == 10


async def _not_called(request: Any, **_: Any) -> Any:
    raise AssertionError("Kopf's dispatcher is never reached")


def _answer_review(server: WebhookServer, fn: Any, review: Review, path: str) -> Any:
    answer = server._answering(fn)

    async def call() -> Any:
        return await answer(review, path, {}, None)

    return asyncio.run(call())


@pytest.mark.parametrize(
    ("review", "path", "reason"),
    [
        (
            _review(),
            HANDLER_IDS[Kind.BASE_MODEL],
            "request.kind InferenceService is not the kind of the webhook at this path",
        ),
        (
            _review(object={"metadata": {"name": "x", "namespace": "victim"}}),
            HANDLER_IDS[Kind.INFERENCE_SERVICE],
            "request.object.metadata.namespace is not request.namespace",
        ),
        (
            _review(oldObject={"metadata": {"name": "x", "namespace": "victim"}}),
            HANDLER_IDS[Kind.INFERENCE_SERVICE],
            "request.oldObject.metadata.namespace is not request.namespace",
        ),
        (
            _review(object={"metadata": {"name": "x"}}),
            HANDLER_IDS[Kind.INFERENCE_SERVICE],
            "request.object.metadata.namespace is not request.namespace",
        ),
        (
            _review(namespace=None),
            HANDLER_IDS[Kind.INFERENCE_SERVICE],
            "request.namespace is missing for a namespaced kind",
        ),
        (
            _review("ServingRuntime", object={"metadata": {"name": "x", "namespace": "victim"}}),
            HANDLER_IDS[Kind.SERVING_RUNTIME],
            "request.object.metadata.namespace is not request.namespace",
        ),
    ],
    ids=["other-kinds-path", "object-elsewhere", "old-object-elsewhere", "no-object-namespace",
         "no-request-namespace", "runtime-elsewhere"],
)  # fmt: skip
def test_a_review_the_apiserver_never_sends_gets_400_and_reaches_no_handler(
    review: Review, path: str, reason: str
) -> None:
    """A forged review cannot ask about a namespace other than the one it names, nor send a kind to
    another kind's handler (SPEC §7 robustness)."""
    setup = Setup()
    setup.catalog = Catalog()
    with pytest.raises(web.HTTPBadRequest) as raised:
        _answer_review(setup.server, _not_called, review, path)
    assert raised.value.text == reason
    assert setup.registry.get_sample_value("malformed_total", {"code": "400"}) == 1


def test_an_inference_service_of_an_unwatched_namespace_is_allowed_untouched() -> None:
    """The operator's catalog knows nothing of a namespace it does not watch, and the apiserver is not asked
    to send such a review: the answer names nothing and nothing is read."""
    setup = Setup(namespaces=["a"])
    setup.catalog = Catalog()
    path = HANDLER_IDS[Kind.INFERENCE_SERVICE]
    response = _answer_review(setup.server, _not_called, _review(), path)
    assert response == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u1", "allowed": True},
    }
    assert setup.handlers.confirmations == 0
    assert setup.count("InferenceService", "true") == 1


def test_exhausted_confirmations_are_429_with_retry_after() -> None:
    never_reached = cast(DirectReader, object())  # the bucket is empty
    setup = Setup(confirmations_per_second=1.0, confirmation_burst=1, reader=never_reached)
    setup.catalog = Catalog()
    setup.handlers.limiter.reserve()  # the only token
    setup.handlers.limiter.max_wait = 0.0
    kopf_fn = _kopf_calling_the_handler(setup, "absent")

    with pytest.raises(web.HTTPTooManyRequests) as raised:
        _answer(setup.server, kopf_fn)
    assert raised.value.text == (
        "ome-selector is confirming more than 1 denials per second; the request was not checked"
    )
    assert raised.value.headers["Retry-After"] == "1"
    assert setup.handlers.confirmations == 0
    assert setup.handlers.limiter.refused == 1
