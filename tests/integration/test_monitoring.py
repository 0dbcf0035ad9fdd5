"""Monitoring against a live operator: a real Prometheus evaluating the chart's rules, the metrics table of
docs/monitoring.md, and the dashboard's queries.

Two operators watch the session's control plane, as two replicas would: the first writes (and serves the
webhook), the second only reports (report-only: the same verdict gauges, no writes). A real Prometheus
(Debian's package, hack/ensure-prometheus.sh) on 127.0.0.1 scrapes both every second, labelling them as the
chart's ServiceMonitor would be (namespace, pod, job), and evaluates the chart's rules (their default selector
for that ServiceMonitor) every second, with `for: 1s` on OmeSelectorRuntimeNotReady; the test reads its HTTP
API.
"""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from harness import chart, objects
from harness.controlplane import free_port
from harness.kube import create, delete, eventually, runtime_ready
from harness.operator_thread import OperatorThread
from harness.prometheus import PrometheusServer, dashboard_queries
from ome_selector.webhook.config import WebhookConfig

LOCAL = ("127.0.0.1", 0)
MONITORING_DOC = chart.REPO_ROOT / "docs" / "monitoring.md"
#: Present only with the chart's modelMetadata.enabled (the operator's --learn-model-metadata).
CONDITIONAL = {"ome_selector_model_metadata_total"}
#: Served from the start but without a series until something happens: their labels are not compared.
UNSAMPLED = {"ome_selector_watch_restarts_total"}
ALERT = "OmeSelectorRuntimeNotReady"


@pytest.fixture
def replicas(running_operator: Any, namespace: str) -> list[tuple[OperatorThread, int]]:
    """Two operators of ``namespace`` with their metrics ports: a writer with the webhook, a reporter."""
    found = []
    for overrides in ({"webhook": WebhookConfig(bind_address=LOCAL)}, {"report_only": True}):
        port = free_port()
        runner = running_operator(health_address=("127.0.0.1", port), namespaces=[namespace], **overrides)
        found.append((runner, port))
    return found


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
    return text


def _families(text: str) -> dict[str, tuple[str, set[str]]]:
    """Family name as written in a query (counters with ``_total``) → (type, label names)."""
    found = {}
    for family in text_string_to_metric_families(text):
        name = f"{family.name}_total" if family.type == "counter" else family.name
        labels = {label for sample in family.samples for label in sample.labels} - {"le"}
        found[name] = (family.type, labels)
    return found


def _sample_names(text: str) -> set[str]:
    return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}


def _documented() -> dict[str, tuple[str, set[str]]]:
    table = MONITORING_DOC.read_text().split("| Metric | Type | Labels | Across replicas |", 1)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("| `"):
            break
        name, kind, labels = (cell.strip() for cell in line.strip("|").split("|")[:3])
        rows[name.strip("`")] = (kind, set(re.findall(r"`(\w+)`", labels)))
    return rows


def _scenario(api_client: Any, namespace: str) -> None:
    create(api_client, objects.model("llama", namespace=namespace, size="3.21B"))
    create(api_client, objects.runtime("rt", namespace=namespace, size_range=("1B", "10B")))
    create(api_client, objects.inference_service("chat", namespace=namespace, model_name="llama"))


def _reason(api_client: Any, namespace: str) -> str | None:
    condition = runtime_ready(api_client, "chat", namespace)
    return condition["reason"] if condition else None


def test_metrics_table_is_what_the_operator_serves(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    _scenario(api_client, namespace)
    port = free_port()
    writer = running_operator(
        health_address=("127.0.0.1", port), namespaces=[namespace], webhook=WebhookConfig(bind_address=LOCAL)
    )
    eventually(lambda: _reason(api_client, namespace) == "RuntimeSelected", what="RuntimeSelected")
    writer.wait_idle()
    served = _families(_scrape(port))
    documented = _documented()
    assert set(documented) - set(served) == CONDITIONAL
    assert set(served) == set(documented) - CONDITIONAL
    for name, (kind, labels) in served.items():
        assert documented[name] == (kind, labels) or (name in UNSAMPLED and documented[name][0] == kind), name
    assert "ome_selector_api_requests_total" in served
    assert not [name for name in _sample_names(_scrape(port)) if name.endswith("_created")]


# --- the dashboard ------------------------------------------------------------------------------------------

_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
_KEYWORDS |= {"and", "or", "unless", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers outside strings, label matchers, ranges and
    groupings that are neither keywords nor functions (followed by a parenthesis)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = _GROUPING.sub(" ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        if match.group(0).lower() not in _KEYWORDS and not following.startswith("("):
            names.add(match.group(0))
    return names


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            'max by (status, reason) (ome_selector_inferenceservices{namespace=~".*"})',
            {"ome_selector_inferenceservices"},
        ),
        ('histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="{y}"}[1m])))', {"a_bucket"}),
        ("(min(b) - time()) / 86400", {"b"}),
        ("count by (version) (c) unless on (pod) d", {"c", "d"}),
    ],
)
def test_metric_names_reads_the_names_of_an_expression(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


# --- a real Prometheus --------------------------------------------------------------------------------------


class _Scrape(NamedTuple):
    """The chart's PrometheusRule and the labels its ServiceMonitor's scrape gives the replicas' series."""

    rules: Path
    namespace: str
    job: str
    pods: list[str]


def _chart_scrape(directory: Path) -> _Scrape:
    """The chart rendered with a ServiceMonitor and the PrometheusRule, whose default selector is then the
    ServiceMonitor's job and the release namespace. Prometheus' Kubernetes scrape of a ServiceMonitor labels
    each series with the pod's namespace, the pod's name and, as job, the Service's name."""
    values = {
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "prometheusRule": {
                "enabled": True,
                "alerts": {ALERT: {"enabled": True, "for": "1s", "severity": "warning"}},
            },
        }
    }
    docs = chart.render(values)
    (rule,) = [doc for doc in docs if doc["kind"] == "PrometheusRule"]
    (monitor,) = [doc for doc in docs if doc["kind"] == "ServiceMonitor"]
    (service,) = [
        doc
        for doc in docs
        if doc["kind"] == "Service"
        and all(
            doc["metadata"]["labels"].get(k) == v
            for k, v in monitor["spec"]["selector"]["matchLabels"].items()
        )
    ]
    (deployment,) = [doc for doc in docs if doc["kind"] == "Deployment"]
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump(rule["spec"]))
    name = deployment["metadata"]["name"]
    return _Scrape(
        rules=path,
        namespace=chart.NAMESPACE,
        job=service["metadata"]["name"],
        pods=[f"{name}-6d5f8b7c9d-k2x7p", f"{name}-6d5f8b7c9d-q9w4m"],  # a ReplicaSet's pods
    )


def _alerts(server: PrometheusServer, state: str) -> list[dict[str, Any]]:
    return [alert for alert in server.alerts(ALERT) if alert["state"] == state]


def test_real_prometheus_fires_the_alert_once_and_resolves_it_and_runs_every_dashboard_query(
    api_client: Any,
    namespace: str,
    replicas: list[tuple[OperatorThread, int]],
    prometheus_bin: Path,
    tmp_path: Path,
) -> None:
    _scenario(api_client, namespace)
    eventually(lambda: _reason(api_client, namespace) == "RuntimeSelected", what="RuntimeSelected")
    targets = [f"127.0.0.1:{port}" for _, port in replicas]
    scrape = _chart_scrape(tmp_path)
    with PrometheusServer(
        prometheus_bin,
        tmp_path,
        targets=targets,
        rule_files=[scrape.rules],
        job=scrape.job,
        labels={"namespace": scrape.namespace},
        pods=scrape.pods,
    ) as server:
        eventually(
            lambda: len(server.query(f'up{{job="{scrape.job}",namespace="{scrape.namespace}"}} == 1')) == 2,
            what="both replicas scraped",
            timeout=60,
        )
        assert server.alerts(ALERT) == []

        # Every dashboard query evaluates, and reads only metrics the operator exports. The dashboard's
        # variables are what a person picking this release's namespace and job would have.
        queries = dashboard_queries(namespace=scrape.namespace, job=scrape.job)
        exported = _sample_names(_scrape(replicas[0][1])) | _sample_names(_scrape(replicas[1][1]))
        for title, expr in queries:
            server.query(expr)  # raises on a query Prometheus refuses
            names = metric_names(expr)
            assert names, (title, expr)
            assert names <= exported, (title, names - exported)

        # The InferenceService loses its runtime: one alert, though both replicas export the verdict.
        delete(api_client, "ServingRuntime", "rt", namespace)
        eventually(lambda: _reason(api_client, namespace) == "RuntimeNotFound", what="RuntimeNotFound")
        (firing,) = eventually(lambda: _alerts(server, "firing"), what=f"{ALERT} firing", timeout=60)
        assert firing["labels"] == {"alertname": ALERT, "reason": "RuntimeNotFound", "severity": "warning"}
        assert len(server.alerts(ALERT)) == 1  # none pending for the other replica either
        assert firing["annotations"]["description"] == (
            "1 InferenceService(s) have RuntimeReady=False with reason RuntimeNotFound. Find them with "
            "kubectl get isvc -A -o wide."
        )
        assert (
            len(server.query('ome_selector_inferenceservices{status="False",reason="RuntimeNotFound"} > 0'))
            == 2
        )

        # Fixed: the runtime is back, the verdict is RuntimeSelected again, and the alert resolves.
        create(api_client, objects.runtime("rt", namespace=namespace, size_range=("1B", "10B")))
        eventually(lambda: _reason(api_client, namespace) == "RuntimeSelected", what="RuntimeSelected again")
        eventually(lambda: not server.alerts(ALERT), what=f"{ALERT} resolved", timeout=60)
        assert server.query(f'ALERTS{{alertname="{ALERT}"}}') == []

        # After that activity (evaluations, admissions, condition writes), every panel shows data with the
        # exact labels: a wrong label matcher would leave it empty.
        _assert_panels_have_data(server, queries)


def _empty_panels(server: PrometheusServer, queries: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(title, expr) for title, expr in queries if not server.query(expr)]


def _assert_panels_have_data(server: PrometheusServer, queries: list[tuple[str, str]]) -> None:
    """Every panel, none excepted: the writer's webhook is registered with the apiserver (so admissions are
    timed), its generated certificate's expiry is exported, and the counters never incremented here
    (malformed requests, API errors, retries, dropped events) are exported at 0 from the start."""
    deadline = time.monotonic() + 30  # a rate needs two scrapes of a new series
    while (empty := _empty_panels(server, queries)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not empty, empty
