"""Webhook set-up without a cluster: certificates, the configuration object, flags and label selectors."""

from __future__ import annotations

import argparse
import ipaddress
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from ome_selector.api.resources import Kind
from ome_selector.webhook import impact
from ome_selector.webhook.cli import add_webhook_arguments, webhook_config_from_args
from ome_selector.webhook.config import WebhookConfig, parse_label_selector
from ome_selector.webhook.registration import (
    SYSTEM_DELETERS,
    build_configuration,
    delete_webhook_name,
    local_configuration_name,
    webhook_name,
)
from ome_selector.webhook.tls import generate_serving_files, load_cert_dir, serving_hosts

# --- certificates -------------------------------------------------------------------------------------------


def test_generated_files_are_a_verifiable_chain_with_every_host_as_san(tmp_path: Path) -> None:
    files = generate_serving_files(tmp_path, "webhook.example", "10.1.2.3", "0.0.0.0")
    assert (files.cert_file.name, files.key_file.name) == ("tls.crt", "tls.key")
    assert files.ca_file is not None
    assert files.ca_file.name == "ca.crt"
    assert files.key_file.stat().st_mode & 0o777 == 0o600
    cert = x509.load_pem_x509_certificate(files.cert_file.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {"localhost", "webhook.example"}
    assert set(sans.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("10.1.2.3"),
    }
    # The pair loads into a server context, and a client trusting ca.crt accepts the chain.
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(files.cert_file, files.key_file)
    store = ssl.create_default_context(cafile=str(files.ca_file))
    assert store.get_ca_certs()[0]["subject"] == ((("commonName", "ome-selector-webhook-ca"),),)


def test_serving_hosts_drop_unspecified_addresses_and_keep_order() -> None:
    assert serving_hosts("::", None, "svc.ns.svc", "::1", "[fe80::1]") == (
        ["localhost", "svc.ns.svc"],
        ["127.0.0.1", "::1", "fe80::1"],
    )


def test_cert_dir_needs_cert_and_key_and_takes_ca_when_present(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"has no tls\.crt or tls\.key"):
        load_cert_dir(tmp_path)
    generate_serving_files(tmp_path)
    assert load_cert_dir(tmp_path).ca_file == tmp_path / "ca.crt"
    (tmp_path / "ca.crt").unlink()
    assert load_cert_dir(tmp_path).ca_file is None


# --- the ValidatingWebhookConfiguration ---------------------------------------------------------------------


def test_configuration_defaults() -> None:
    body = build_configuration(
        "ome-selector-abc", {"url": "https://127.0.0.1:9443", "caBundle": "Q0E="}, WebhookConfig()
    )
    webhooks = {w["name"]: w for w in body["webhooks"]}
    catalog = [kind for kind in Kind if kind is not Kind.INFERENCE_SERVICE]
    assert set(webhooks) == {webhook_name(kind) for kind in Kind} | {delete_webhook_name(k) for k in catalog}
    isvc = webhooks["inferenceservices.ome-selector.ome.io"]
    assert isvc == {
        "name": "inferenceservices.ome-selector.ome.io",
        "clientConfig": {"url": "https://127.0.0.1:9443/validate-inferenceservices", "caBundle": "Q0E="},
        "rules": [
            {
                "apiGroups": ["ome.io"],
                "apiVersions": ["v1beta1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["inferenceservices"],
                "scope": "Namespaced",
            }
        ],
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": 10,
        "admissionReviewVersions": ["v1"],
    }
    runtimes = webhooks["clusterservingruntimes.ome-selector.ome.io"]
    assert runtimes["failurePolicy"] == "Ignore"
    assert runtimes["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert runtimes["rules"][0]["scope"] == "Cluster"
    assert runtimes["clientConfig"]["url"].endswith("/validate-clusterservingruntimes")
    assert "matchConditions" not in runtimes
    # SPEC §7, §12: DELETE through its own entry, Ignore within 3 s, never for Kubernetes' own deleters.
    deleting = webhooks["clusterservingruntimes-delete.ome-selector.ome.io"]
    assert deleting == {
        "name": "clusterservingruntimes-delete.ome-selector.ome.io",
        "clientConfig": {
            "url": "https://127.0.0.1:9443/validate-clusterservingruntimes",
            "caBundle": "Q0E=",
        },
        "rules": [
            {
                "apiGroups": ["ome.io"],
                "apiVersions": ["v1beta1"],
                "operations": ["DELETE"],
                "resources": ["clusterservingruntimes"],
                "scope": "Cluster",
            }
        ],
        "failurePolicy": "Ignore",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": 3,
        "admissionReviewVersions": ["v1"],
        "matchConditions": [
            {
                "name": "not-namespace-or-garbage-collection",
                "expression": "!(request.userInfo.username in "
                "['system:serviceaccount:kube-system:namespace-controller', "
                "'system:serviceaccount:kube-system:generic-garbage-collector'])",
            }
        ],
    }
    assert set(SYSTEM_DELETERS) == set(impact.SYSTEM_DELETERS)  # the review's exemption, the same accounts
    # In the chart's order: each kind's entry, then its DELETE entry.
    assert [w["name"] for w in body["webhooks"]] == [
        "inferenceservices.ome-selector.ome.io",
        *(name for kind in catalog for name in (webhook_name(kind), delete_webhook_name(kind))),
    ]


def test_configuration_honours_policy_timeout_and_namespace_selector() -> None:
    selector = {"matchLabels": {"ome": "on"}}
    config = WebhookConfig(
        failure_policy="Ignore", sizes_failure_policy="Fail", timeout_seconds=3, namespace_selector=selector
    )
    body = build_configuration("x", {"url": "https://h:1/"}, config)
    for webhook in body["webhooks"]:
        assert webhook["timeoutSeconds"] == 3
        assert webhook["namespaceSelector"] == selector
        deleting = webhook["name"].endswith("-delete.ome-selector.ome.io")
        expected = "Ignore" if webhook["name"].startswith("inferenceservices.") or deleting else "Fail"
        assert webhook["failurePolicy"] == expected
        assert webhook["clientConfig"] == {
            "url": f"https://h:1/{webhook['clientConfig']['url'].rsplit('/', 1)[1]}"
        }


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout_seconds": 0},
        {"timeout_seconds": 31},
        {"failure_policy": "Deny"},
        {"managed_name": "Bad_Name"},
        {"instance": "Laptop"},
        {"instance": "a.b"},
        {"instance": "x" * 64},
    ],
)
def test_invalid_config_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"."):
        WebhookConfig(**kwargs)


# --- flags and label selectors ------------------------------------------------------------------------------


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_webhook_arguments(parser)
    return parser.parse_args(argv)


def test_webhook_is_off_without_a_bind_address() -> None:
    assert webhook_config_from_args(_parse("--strict-sizes")) is None


def test_flags_make_the_config(tmp_path: Path) -> None:
    config = webhook_config_from_args(
        _parse(
            "--webhook-bind-address=:9443",
            f"--webhook-cert-dir={tmp_path}",
            "--webhook-host=10.0.0.5",
            "--webhook-managed-name=dev",
            "--instance=laptop-1",
            "--webhook-failure-policy=Ignore",
            "--webhook-sizes-failure-policy=Fail",
            "--webhook-timeout-seconds=5",
            "--webhook-namespace-selector=team in (a, b),!legacy",
            "--strict-sizes",
        )
    )
    assert config == WebhookConfig(
        bind_address=("0.0.0.0", 9443),
        host="10.0.0.5",
        cert_dir=tmp_path,
        managed_name="dev",
        instance="laptop-1",
        failure_policy="Ignore",
        sizes_failure_policy="Fail",
        timeout_seconds=5,
        namespace_selector={
            "matchExpressions": [
                {"key": "team", "operator": "In", "values": ["a", "b"]},
                {"key": "legacy", "operator": "DoesNotExist"},
            ]
        },
        strict_sizes=True,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--webhook-bind-address=9443"],
        ["--webhook-timeout-seconds=31"],
        ["--webhook-namespace-selector=a in ()"],
        ["--webhook-bind-address=:9443", "--instance=Not_A_Label"],
    ],
)
def test_bad_flags_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        _parse(*argv)


@pytest.mark.parametrize(
    ("text", "selector"),
    [
        ("", None),
        ("a=b", {"matchLabels": {"a": "b"}}),
        ("a==b, c", {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "Exists"}]}),
        (
            "kubernetes.io/metadata.name!=kube-system",
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
                ]
            },
        ),
        (
            "env notin (dev,test)",
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev", "test"]}]},
        ),
    ],
)
def test_label_selectors(text: str, selector: dict[str, Any] | None) -> None:
    assert parse_label_selector(text) == selector


@pytest.mark.parametrize("text", ["a=b=c", "in (a)", "a in b", "=x"])
def test_unreadable_label_selectors(text: str) -> None:
    with pytest.raises(ValueError, match="label selector"):
        parse_label_selector(text)


def test_a_local_configuration_is_named_after_its_instance_and_labelled_local() -> None:
    local = build_configuration(
        local_configuration_name("ome-selector", "ab12"),
        {"url": "https://127.0.0.1:9443"},
        WebhookConfig(),
        instance="ab12",
        local=True,
    )
    assert local["metadata"]["name"] == "ome-selector-local-ab12"
    assert local["metadata"]["labels"]["ome-selector.ome.io/local"] == "true"
    assert local["metadata"]["annotations"] == {"ome-selector.ome.io/instance": "ab12"}
    static = build_configuration("chart", {"url": "https://x"}, WebhookConfig())
    assert "ome-selector.ome.io/local" not in static["metadata"]["labels"]


@pytest.mark.parametrize(("configured", "deleting"), [(10, 3), (3, 3), (2, 2), (1, 1)])
def test_a_delete_webhook_never_waits_longer_than_3_seconds(configured: int, deleting: int) -> None:
    config = WebhookConfig(timeout_seconds=configured, sizes_failure_policy="Fail")
    body = build_configuration("x", {"url": "https://h:1/"}, config)
    for webhook in body["webhooks"]:
        if webhook["name"].endswith("-delete.ome-selector.ome.io"):
            assert (webhook["timeoutSeconds"], webhook["failurePolicy"]) == (deleting, "Ignore")
        else:
            assert webhook["timeoutSeconds"] == configured
