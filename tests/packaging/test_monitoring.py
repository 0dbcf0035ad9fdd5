"""The chart's monitoring: alerts checked and unit-tested with the real promtool, monitors, dashboard.

`promtool check rules` and `promtool test rules` run on the PrometheusRule the chart renders (Debian's
prometheus package, provided by hack/ensure-prometheus.sh). tests/data/monitoring/alerts-test.yaml holds the
cases; every alert has a firing and a quiet one and a runbook section in docs/runbooks.md. The dashboard's
queries parse (promtool, as recording rules); tests/integration/test_monitoring.py checks that the metrics
they name are the ones a running operator exports.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import chart
from harness.prometheus import DASHBOARD, dashboard_queries, promtool

DATA = chart.REPO_ROOT / "tests" / "data" / "monitoring"
RUNBOOKS = chart.REPO_ROOT / "docs" / "runbooks.md"
RUNBOOK_BASE = "https://github.com/ome-selector/ome-selector/blob/main/docs/runbooks.md"
#: The values the unit tests' rules are rendered with: every alert present, series of job "ome-selector".
TESTED = {
    "modelMetadata": {"enabled": True},
    "metrics": {"prometheusRule": {"enabled": True, "selector": 'job="ome-selector"'}},
}
EXTRA_RULE = {"record": "ome:verdicts:max", "expr": "max(ome_selector_inferenceservices)"}
WEBHOOK_ALERTS = {
    "OmeSelectorAdmissionErrors",
    "OmeSelectorAdmissionSlow",
    "OmeSelectorWebhookCertificateExpiring",
}
ALL_ALERTS = {
    "OmeSelectorDown",
    "OmeSelectorReplicaDown",
    "OmeSelectorNoLeader",
    "OmeSelectorRuntimeNotReady",
    "OmeSelectorAdmissionErrors",
    "OmeSelectorAdmissionSlow",
    "OmeSelectorApiErrors",
    "OmeSelectorEventsDropped",
    "OmeSelectorConditionConflicts",
    "OmeSelectorEventLoopLag",
    "OmeSelectorWatchEnded",
    "OmeSelectorWebhookCertificateExpiring",
    "OmeSelectorModelMetadataFailing",
}


def _render(helm: Path, values: dict[str, Any]) -> list[dict[str, Any]]:
    return chart.render(values, helm=helm)


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [doc for doc in docs if doc["kind"] == kind]
    assert len(found) == 1, (kind, len(found))
    return found[0]


def _rules(helm: Path, values: dict[str, Any]) -> list[dict[str, Any]]:
    (group,) = _one(_render(helm, values), "PrometheusRule")["spec"]["groups"]
    assert group["name"] == "ome-selector"
    rules: list[dict[str, Any]] = group["rules"]
    return rules


def _alerts(helm: Path, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in _rules(helm, values) if "alert" in rule}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = _merge(merged[key], value) if isinstance(merged.get(key), dict) else value
    return merged


def _rule_file(directory: Path, rules: list[dict[str, Any]]) -> Path:
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "ome-selector", "rules": rules}]}, sort_keys=False))
    return path


# --- promtool ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        TESTED,
        {"metrics": {"prometheusRule": {"enabled": True}}},
        {"metrics": {"prometheusRule": {"enabled": True}, "serviceMonitor": {"enabled": True}}},
        {"metrics": {"prometheusRule": {"enabled": True}, "podMonitor": {"enabled": True}}},
        {"reportOnly": True, "webhook": {"enabled": False}, "metrics": {"prometheusRule": {"enabled": True}}},
    ],
)
def test_promtool_check_rules_accepts_the_rendered_rules(
    helm: Path, prometheus_bin: Path, tmp_path: Path, values: dict[str, Any]
) -> None:
    result = promtool(prometheus_bin, "check", "rules", str(_rule_file(tmp_path, _rules(helm, values))))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_unit_tests_of_every_alert_pass(helm: Path, prometheus_bin: Path, tmp_path: Path) -> None:
    _rule_file(tmp_path, _rules(helm, TESTED))
    shutil.copy(DATA / "alerts-test.yaml", tmp_path)
    result = promtool(prometheus_bin, "test", "rules", "alerts-test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_unit_tests_fail_against_the_old_per_replica_alert(
    helm: Path, prometheus_bin: Path, tmp_path: Path
) -> None:
    """The cases can fail: with the alert summed by pod as before, two replicas give two alerts."""
    rules = _rules(helm, TESTED)
    for rule in rules:
        if rule.get("alert") == "OmeSelectorRuntimeNotReady":
            rule["expr"] = 'sum by (instance, reason) (ome_selector_inferenceservices{status="False"}) > 0'
    _rule_file(tmp_path, rules)
    shutil.copy(DATA / "alerts-test.yaml", tmp_path)
    result = promtool(prometheus_bin, "test", "rules", "alerts-test.yaml", cwd=tmp_path)
    assert result.returncode != 0
    assert "alertname: OmeSelectorRuntimeNotReady" in result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_quiet_case_and_a_runbook(helm: Path) -> None:
    alerts = _alerts(helm, TESTED)
    assert set(alerts) == ALL_ALERTS
    cases = yaml.safe_load((DATA / "alerts-test.yaml").read_text())["tests"]
    firing = {c["alertname"] for t in cases for c in t["alert_rule_test"] if c["exp_alerts"]}
    quiet = {c["alertname"] for t in cases for c in t["alert_rule_test"] if not c["exp_alerts"]}
    assert firing == quiet == ALL_ALERTS
    sections = set(re.findall(r"^## (\w+)$", RUNBOOKS.read_text(), flags=re.MULTILINE))
    assert sections == ALL_ALERTS
    for name, rule in alerts.items():
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}, name
        assert rule["annotations"]["runbook_url"] == f"{RUNBOOK_BASE}#{name.lower()}"
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}
        assert 'job="ome-selector"' in rule["expr"], name


# --- values -------------------------------------------------------------------------------------------------


def test_each_alert_can_be_turned_off_and_overridden(helm: Path) -> None:
    values = _merge(
        TESTED,
        {
            "metrics": {
                "prometheusRule": {
                    "additionalLabels": {"team": "ml-platform"},
                    "runbookBaseUrl": "https://wiki.example/ome-selector",
                    "alerts": {
                        "OmeSelectorEventLoopLag": {"enabled": False},
                        "OmeSelectorRuntimeNotReady": {
                            "for": "30s",
                            "severity": "critical",
                            "labels": {"page": "yes", "team": "serving"},
                        },
                    },
                    "extraRules": [
                        {"record": "ome:verdicts:max", "expr": "max(ome_selector_inferenceservices)"}
                    ],
                }
            }
        },
    )
    rules = _rules(helm, values)
    alerts = {rule["alert"]: rule for rule in rules if "alert" in rule}
    assert set(alerts) == ALL_ALERTS - {"OmeSelectorEventLoopLag"}
    overridden = alerts["OmeSelectorRuntimeNotReady"]
    assert overridden["for"] == "30s"
    assert overridden["labels"] == {"severity": "critical", "page": "yes", "team": "serving"}
    assert alerts["OmeSelectorDown"]["labels"] == {"severity": "critical", "team": "ml-platform"}
    assert alerts["OmeSelectorDown"]["for"] == "5m"
    assert (
        overridden["annotations"]["runbook_url"]
        == "https://wiki.example/ome-selector#omeselectorruntimenotready"
    )
    assert rules[-1] == EXTRA_RULE


@pytest.mark.parametrize(
    ("values", "absent"),
    [
        ({"reportOnly": True}, {"OmeSelectorNoLeader", "OmeSelectorModelMetadataFailing"}),
        (
            {"webhook": {"enabled": False}},
            {
                "OmeSelectorAdmissionErrors",
                "OmeSelectorAdmissionSlow",
                "OmeSelectorWebhookCertificateExpiring",
            },
        ),
        ({"modelMetadata": {"enabled": False}}, {"OmeSelectorModelMetadataFailing"}),
    ],
)
def test_alerts_that_cannot_apply_are_left_out(helm: Path, values: dict[str, Any], absent: set[str]) -> None:
    assert set(_alerts(helm, _merge(TESTED, values))) == ALL_ALERTS - absent


def test_down_alert_tells_of_the_fail_closed_webhook_only_when_it_fails_closed(helm: Path) -> None:
    def description(values: dict[str, Any]) -> str:
        text: str = _alerts(helm, _merge(TESTED, values))["OmeSelectorDown"]["annotations"]["description"]
        return text

    assert "fails closed" in description({})
    assert description({"webhook": {"failurePolicy": "Ignore"}}) == (
        "No replica of ome-selector in namespace ome-selector can be scraped."
    )


@pytest.mark.parametrize(
    ("metrics", "selector"),
    [
        ({}, 'namespace="ome-selector",pod=~"ome-selector-.+"'),
        ({"serviceMonitor": {"enabled": True}}, 'job="ome-selector-metrics",namespace="ome-selector"'),
        ({"podMonitor": {"enabled": True}}, 'job="ome-selector/ome-selector",namespace="ome-selector"'),
        ({"podMonitor": {"enabled": True, "namespace": "monitoring"}}, 'job="monitoring/ome-selector"'),
    ],
)
def test_the_rules_select_the_series_the_scrape_gives(
    helm: Path, metrics: dict[str, Any], selector: str
) -> None:
    values = {"metrics": {"prometheusRule": {"enabled": True}, **metrics}}
    assert f"absent(up{{{selector}" in _alerts(helm, values)["OmeSelectorDown"]["expr"]


def test_service_monitor_pod_monitor_or_scrape_annotations(helm: Path) -> None:
    monitor_values = {
        "namespace": "monitoring",
        "interval": "15s",
        "scrapeTimeout": "5s",
        "labels": {"release": "kube-prometheus"},
        "annotations": {"owner": "platform"},
        "honorLabels": True,
        "relabelings": [{"action": "replace", "targetLabel": "cluster", "replacement": "prod"}],
        "metricRelabelings": [{"action": "drop", "regex": "process_virtual_memory_bytes"}],
    }
    for kind, key, endpoints in (
        ("ServiceMonitor", "serviceMonitor", "endpoints"),
        ("PodMonitor", "podMonitor", "podMetricsEndpoints"),
    ):
        docs = _render(helm, {"metrics": {key: {"enabled": True, **monitor_values}}})
        monitor = _one(docs, kind)
        assert monitor["metadata"]["namespace"] == "monitoring"
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
        assert monitor["metadata"]["annotations"] == {"owner": "platform"}
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["ome-selector"]}
        (endpoint,) = monitor["spec"][endpoints]
        assert endpoint == {
            "port": "metrics",
            "path": "/metrics",
            "interval": "15s",
            "scrapeTimeout": "5s",
            "honorLabels": True,
            "relabelings": monitor_values["relabelings"],
            "metricRelabelings": monitor_values["metricRelabelings"],
        }
        pod = _one(docs, "Deployment")["spec"]["template"]
        assert not any(k.startswith("prometheus.io/") for k in pod["metadata"].get("annotations", {}))
        selected = monitor["spec"]["selector"]["matchLabels"]
        target = _one([d for d in docs if d["metadata"]["name"] == "ome-selector-metrics"], "Service")
        labels = target["metadata"]["labels"] if kind == "ServiceMonitor" else pod["metadata"]["labels"]
        assert selected.items() <= labels.items()
    annotated = _one(_render(helm, {"podAnnotations": {"a": "b"}}), "Deployment")["spec"]["template"]
    assert annotated["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "8080",
        "prometheus.io/path": "/metrics",
        "a": "b",
    }
    quiet = _one(_render(helm, {"metrics": {"scrapeAnnotations": False}}), "Deployment")["spec"]["template"]
    assert "annotations" not in quiet["metadata"]


def test_service_monitor_and_pod_monitor_are_mutually_exclusive(helm: Path) -> None:
    both = {"metrics": {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}}}
    with pytest.raises(subprocess.CalledProcessError) as failure:
        _render(helm, both)
    assert "metrics.serviceMonitor.enabled and metrics.podMonitor.enabled: choose one" in failure.value.stderr


# --- dashboard ---------------------------------------------------------------------------------------------


def test_dashboard_config_map_is_the_json_behind_a_toggle(helm: Path) -> None:
    assert not [d for d in _render(helm, {}) if d["kind"] == "ConfigMap"]
    docs = _render(
        helm, {"metrics": {"dashboard": {"enabled": True, "annotations": {"grafana_folder": "ML"}}}}
    )
    config_map = _one(docs, "ConfigMap")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "ML"}
    assert json.loads(config_map["data"]["ome-selector.json"]) == json.loads(DASHBOARD.read_text())


def test_dashboard_has_the_panels_a_platform_team_needs() -> None:
    titles = [title for title, _ in dashboard_queries()]
    for needed in (
        "InferenceServices by RuntimeReady reason",
        "Selection latency",
        "Admission latency",
        "Admission outcomes",
        "Catalog change reviews",  # SPEC §12: the impact and the denials
        "InferenceServices moved by catalog changes",
        "Work queue depth",
        "API writes and errors",
        "Leader",
        "Event loop lag",
        "Memory (RSS)",
    ):
        assert needed in titles


def test_every_dashboard_query_parses(prometheus_bin: Path, tmp_path: Path) -> None:
    rules = [
        {"record": f"dashboard:query:{i}", "expr": expr} for i, (_, expr) in enumerate(dashboard_queries())
    ]
    result = promtool(prometheus_bin, "check", "rules", str(_rule_file(tmp_path, rules)))
    assert result.returncode == 0, result.stdout + result.stderr
