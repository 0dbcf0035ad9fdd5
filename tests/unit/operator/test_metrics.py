"""The operator's metrics: fixed label sets, no ``_created`` series, the series present only once known, API
requests counted by verb and code as a real client makes them, and the log fields."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import kopf
import pytest
from aiohttp import web
from kopf._core.actions.loggers import make_formatter  # what kopf.configure() uses
from kubernetes_asyncio import client
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from harness import objects
from harness.kube import token_kubeconfig
from ome_selector.api.loading import load_resource
from ome_selector.api.logfields import log_fields
from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.ome_selector import _parser
from ome_selector.kube.connection import ClusterAccess
from ome_selector.operator.metrics import API_CODES, Metrics, api_code, api_operation


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [
        ("GET", "/apis/ome.io/v1beta1/namespaces/a/inferenceservices", "list"),
        ("GET", "/apis/ome.io/v1beta1/inferenceservices", "list"),
        ("GET", "/apis/ome.io/v1beta1/clusterbasemodels", "list"),
        ("GET", "/apis/ome.io/v1beta1/namespaces/a/inferenceservices/chat", "get"),
        ("GET", "/apis/ome.io/v1beta1/clusterbasemodels/llama", "get"),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/ops/leases/ome-selector", "get"),
        ("GET", "/api/v1/namespaces/ops/secrets/tls", "get"),
        ("GET", "/api/v1/namespaces", "list"),
        ("GET", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/x", "get"),
        ("PATCH", "/apis/ome.io/v1beta1/namespaces/a/inferenceservices/chat/status", "patch"),
        ("POST", "/api/v1/namespaces/a/events", "create"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/ops/leases/ome-selector", "update"),
        ("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/x", "delete"),
        ("get", "/api/v1/namespaces/a/events", "list"),
    ],
)
def test_the_operation_is_the_kubernetes_verb(method: str, path: str, operation: str) -> None:
    assert api_operation(method, path) == operation


@pytest.mark.parametrize(
    ("status", "code"),
    [(200, "200"), (403, "403"), (429, "429"), (418, "other"), (599, "other"), (None, "error")],
)
def test_the_code_is_from_a_fixed_set(status: int | None, code: str) -> None:
    assert api_code(status) == code
    assert code in API_CODES


def test_no_created_series_and_build_info_and_process_metrics() -> None:
    samples = _samples(Metrics())
    names = {name for name, _ in samples}
    assert not [name for name in names if name.endswith("_created")]
    assert samples[("ome_selector_build_info", (("version", "0.1.0"),))] == 1.0
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds"} <= names
    # Every fixed label value exists from the start, at 0.
    assert samples[("ome_selector_api_errors_total", (("operation", "patch_status"),))] == 0.0
    assert samples[("ome_selector_api_writes_total", (("operation", "create_event"),))] == 0.0
    assert samples[("ome_selector_admission_malformed_total", (("code", "413"),))] == 0.0


def test_certificate_expiry_and_catalog_sizes_appear_once_known() -> None:
    metrics = Metrics()
    names = {name for name, _ in _samples(metrics)}
    assert "ome_selector_webhook_certificate_expiry_timestamp_seconds" not in names
    assert "ome_selector_catalog_objects" not in names
    metrics.set_certificate_expiry(1_900_000_000.0)
    bodies = [objects.inference_service(name, namespace="a", model_name="m") for name in ("x", "y", "z")]
    resources = [load_resource(body) for body in [*bodies, objects.model("m")]]
    catalog = Catalog.from_resources(resource for resource in resources if resource is not None)
    catalog.remove(ObjectKey(Kind.INFERENCE_SERVICE, "a", "z"))
    catalog.remove(ObjectKey(Kind.INFERENCE_SERVICE, "a", "z"))  # gone already: counted once
    y = catalog.get(ObjectKey(Kind.INFERENCE_SERVICE, "a", "y"))
    assert y is not None
    catalog.upsert(y)  # replaced, not added
    metrics.catalog_counts = catalog.counts
    samples = _samples(metrics)
    assert samples[("ome_selector_webhook_certificate_expiry_timestamp_seconds", ())] == 1_900_000_000.0
    by_kind = {dict(labels)["kind"]: value for (name, labels), value in samples.items() if "catalog" in name}
    assert by_kind == {
        "InferenceService": 2.0,
        "ClusterBaseModel": 1.0,
        "BaseModel": 0.0,
        "ServingRuntime": 0.0,
        "ClusterServingRuntime": 0.0,
    }


def test_every_request_of_a_client_is_counted_by_verb_and_code(tmp_path: Path) -> None:
    """A real client against a real (tiny) HTTP server: answered, refused and unanswered requests."""
    metrics = Metrics()

    async def scenario() -> None:
        async def namespaces(_: web.Request) -> web.Response:
            return web.json_response({"kind": "NamespaceList", "apiVersion": "v1", "items": []})

        async def forbidden(_: web.Request) -> web.Response:
            return web.json_response({"kind": "Status", "code": 403}, status=403)

        app = web.Application()
        app.router.add_get("/api/v1/namespaces", namespaces)
        app.router.add_get("/api/v1/namespaces/{name}", forbidden)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            access = ClusterAccess(
                token_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}"),
                observer=metrics.observe_api_request,
            )
            async with await access.api_client() as api:
                core = client.CoreV1Api(api)
                await core.list_namespace()
                with pytest.raises(client.ApiException):
                    await core.read_namespace("a")
        finally:
            await runner.cleanup()
        # Nothing listens any more: no answer.
        async with await access.api_client() as api:
            with pytest.raises(Exception):  # noqa: B017, PT011 - aiohttp's connection error, whichever it is
                await client.CoreV1Api(api).list_namespace(_request_timeout=5)

    asyncio.run(scenario())
    samples = _samples(metrics)
    requests = {
        labels: value
        for (name, labels), value in samples.items()
        if name == "ome_selector_api_requests_total"
    }
    assert requests == {
        (("code", "200"), ("operation", "list")): 1.0,
        (("code", "403"), ("operation", "get")): 1.0,
        (("code", "error"), ("operation", "list")): 1.0,
    }
    assert samples[("ome_selector_api_request_duration_seconds_count", (("operation", "list"),))] == 2.0


# --- logs ---------------------------------------------------------------------------------------------------


def test_log_fields_are_json_fields() -> None:
    formatter = make_formatter(kopf.LogFormat.JSON, log_refkey="k8s")  # as `ome-selector run` configures it
    key = ObjectKey(Kind.INFERENCE_SERVICE, "team-a", "chat")
    record = logging.LogRecord("ome_selector.operator.controller", logging.INFO, __file__, 1, "m", (), None)
    extra = log_fields(key, reason="RuntimeNotFound", status="False", duration=0.0123456789)
    record.__dict__.update(extra)
    line = json.loads(formatter.format(record))
    assert {k: line[k] for k in extra} == {
        "object": "chat",
        "kind": "InferenceService",
        "namespace": "team-a",
        "reason": "RuntimeNotFound",
        "status": "False",
        "duration": 0.012346,
    }
    assert line["message"] == "m"
    assert log_fields(kind=Kind.CLUSTER_BASE_MODEL, name="m") == {"object": "m", "kind": "ClusterBaseModel"}


@pytest.mark.parametrize(
    ("args", "level"),
    [
        ([], "info"),
        (["--log-level", "warning"], "warning"),
        (["--log-level=debug"], "debug"),
        (["-v"], "info"),
    ],
)
def test_log_level_argument(args: list[str], level: str) -> None:
    parsed = _parser().parse_args(["run", *args])
    assert parsed.log_level == level


def test_log_level_rejects_unknown_levels(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["run", "--log-level", "loud"])
    assert "invalid choice: 'loud'" in capsys.readouterr().err
