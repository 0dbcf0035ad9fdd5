"""The chart's RBAC is exactly what the code needs: proved by running with the ServiceAccount's own token.

Each test renders the chart, creates its ServiceAccount, (Cluster)Roles, bindings, certificate Secret and
ValidatingWebhookConfiguration for real, mints a token with TokenRequest (`kubectl create token`), and runs
the operator and its webhook in-process with a kubeconfig holding only that token, configured from the
rendered Deployment's own arguments, through the shared e2e scenario (harness.scenario).
A missing verb fails the scenario or shows up as a 403 in the logs or the API-error metric; a granted verb
without an entry in INTENDED_USES fails the rule comparison, and every entry names the call that needs it.

The one liberty taken: the apiserver cannot reach a Service here (no kube-proxy), so the test (as admin)
points the chart's webhook clientConfigs at the operator's loopback port. The operator itself only touches
the caBundle, exactly as in a cluster.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import re
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hub_standin import Repo, hub_standin

from harness import objects
from harness.chart import render
from harness.controlplane import ControlPlane, free_port
from harness.kube import create, events_for, eventually, get
from harness.model_folders import LLAMA_3_2_1B, decoder_tensors, write_json, write_safetensors
from harness.operator_thread import OperatorThread
from harness.scenario import run_scenario
from ome_selector.cli.ome_selector import _parser, leader_election_from_args
from ome_selector.operator.app import OperatorConfig
from ome_selector.operator.learning import LearningConfig
from ome_selector.webhook.cli import webhook_config_from_args
from ome_selector.webhook.incluster import SecretCertificates

# (apiGroup, resource, verb) → the code that makes the call. The chart grants exactly these (webhook on,
# operator-generated certificates, not report-only); the other modes grant subsets.
INTENDED_USES: dict[tuple[str, str, str], str] = {
    **{
        ("ome.io", plural, "list"): "startup and resync listing (kube/objects.py); Kopf's watch re-lists"
        for plural in (
            "basemodels",
            "clusterbasemodels",
            "servingruntimes",
            "clusterservingruntimes",
            "inferenceservices",
        )
    },
    **{
        ("ome.io", plural, "watch"): "Kopf @kopf.on.event watch streams (operator/app.py)"
        for plural in (
            "basemodels",
            "clusterbasemodels",
            "servingruntimes",
            "clusterservingruntimes",
            "inferenceservices",
        )
    },
    ("ome.io", "basemodels", "get"): "webhook: confirming read of a missing model (webhook/confirming.py)",
    ("ome.io", "clusterbasemodels", "get"): "webhook: confirming read of a missing model",
    ("ome.io", "servingruntimes", "get"): "webhook: confirming read of a named runtime or a changed one",
    (
        "ome.io",
        "clusterservingruntimes",
        "get",
    ): "webhook: confirming read of a named runtime or a changed one",
    ("ome.io", "inferenceservices", "get"): "re-read after a 409 on the status write (operator/writer.py)",
    ("ome.io", "inferenceservices/status", "patch"): "the RuntimeReady condition (operator/writer.py)",
    ("", "events", "create"): "one event per changing write (operator/writer.py)",
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "get"): (
        "read the chart's configuration before setting its caBundle (webhook/registration.py)"
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "update"): (
        "set the caBundle of the chart's configuration (webhook/registration.py)"
    ),
    ("", "secrets", "get"): "read the stored webhook CA and certificate (webhook/incluster.py)",
    ("", "secrets", "update"): "store a new webhook CA and certificate (webhook/incluster.py)",
    ("coordination.k8s.io", "leases", "create"): "create the Lease on first start (kube/leaderelection.py)",
    ("coordination.k8s.io", "leases", "get"): "read the Lease each retry period (kube/leaderelection.py)",
    (
        "coordination.k8s.io",
        "leases",
        "update",
    ): "acquire, renew and release the Lease (kube/leaderelection.py)",
}
#: What `modelMetadata.enabled` adds (operator/learning.py), and nothing else.
INTENDED_WHEN_LEARNING: dict[tuple[str, str, str], str] = {
    ("ome.io", "basemodels", "patch"): "the learned fields a BaseModel lacks (operator/learning.py)",
    ("ome.io", "clusterbasemodels", "patch"): "the learned fields a ClusterBaseModel lacks",
}
#: Rules that must name their objects.
NAMED = {("admissionregistration.k8s.io", "validatingwebhookconfigurations"), ("", "secrets")}
RBAC_KINDS = {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
POLICY_KINDS = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
APPLIED_KINDS = RBAC_KINDS | POLICY_KINDS | {"ServiceAccount", "Secret", "ValidatingWebhookConfiguration"}
#: The verbs a mode does not call, off the default grants (INTENDED_USES).
_CA_BUNDLE = {
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "get"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "update"),
}
_SECRET = {("", "secrets", "get"), ("", "secrets", "update")}
_CONFIRMING_GETS = {
    ("ome.io", plural, "get")
    for plural in ("basemodels", "clusterbasemodels", "servingruntimes", "clusterservingruntimes")
}
_MODEL_GETS = {("ome.io", "basemodels", "get"), ("ome.io", "clusterbasemodels", "get")}
_WRITES = {
    ("ome.io", "inferenceservices", "get"),
    ("ome.io", "inferenceservices/status", "patch"),
    ("", "events", "create"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "update"),
}


def granted(docs: list[dict[str, Any]], release: str) -> dict[tuple[str, str, str], list[str]]:
    """(apiGroup, resource, verb) → resourceNames, over the operator's roles (not the plugin reader's, nor the
    startup check hook's)."""
    rules: dict[tuple[str, str, str], list[str]] = {}
    for doc in docs:
        if doc["kind"] not in {"ClusterRole", "Role"} or doc["metadata"]["name"].endswith(
            ("-plugin-reader", "-startupcheck", "-cleanup", "-cleanup-conditions", "-cleanup-webhook")
        ):
            continue
        assert doc["metadata"]["name"].startswith(release), doc["metadata"]["name"]
        for rule in doc["rules"]:
            assert "nonResourceURLs" not in rule, rule
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        assert "*" not in (group, resource, verb), rule
                        rules[(group, resource, verb)] = list(rule.get("resourceNames") or [])
    return rules


def token_kubeconfig(control_plane: ControlPlane, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig with only the ServiceAccount's TokenRequest token (server and CA from the admin's)."""
    token = control_plane.kubectl("create", "token", account, "-n", namespace, "--duration=1h").stdout.strip()
    admin = yaml.safe_load(control_plane.kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": cluster}],
                "users": [{"name": account, "user": {"token": token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "local", "user": account}}],
                "current-context": "sa",
            }
        )
    )
    path.chmod(0o600)
    return path


class Installed:
    """The chart's RBAC, ServiceAccount, Secret and webhook configuration, applied for real."""

    def __init__(self, control_plane: ControlPlane, namespace: str, values: dict[str, Any]) -> None:
        self.control_plane = control_plane
        self.namespace = namespace
        self.release = f"rbac{uuid.uuid4().hex[:6]}"
        values = {
            # Only this test's namespace: other tests' InferenceServices never reach this webhook.
            "webhook": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                # The hook's Job needs a pod; the e2e suite runs it in a real cluster.
                "startupCheck": {"enabled": False},
            },
            # Its own test below runs the uninstall hook's command with the hook's token.
            "cleanup": {"enabled": False},
            **values,
        }
        self.docs = render(values, release=self.release, namespace=namespace)
        self.port = free_port()
        applied = []
        for doc in self.docs:
            if doc["kind"] not in APPLIED_KINDS:
                continue
            if doc["kind"] == "ValidatingWebhookConfiguration":
                for webhook in doc["webhooks"]:
                    path = webhook["clientConfig"].pop("service")["path"]
                    webhook["clientConfig"]["url"] = f"https://127.0.0.1:{self.port}{path}"
            applied.append(doc)
        self.cluster_scoped = [
            (doc["kind"], doc["metadata"]["name"]) for doc in applied if "namespace" not in doc["metadata"]
        ]
        control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(applied))

    def one(self, kind: str, suffix: str = "") -> dict[str, Any]:
        found = [doc for doc in self.docs if doc["kind"] == kind and doc["metadata"]["name"].endswith(suffix)]
        assert len(found) == 1, (kind, found)
        return found[0]

    def operator_overrides(self, kubeconfig: Path, cert_dir: Path) -> dict[str, Any]:
        """OperatorConfig fields from the rendered Deployment's arguments, parsed by `ome-selector run`."""
        container = self.one("Deployment")["spec"]["template"]["spec"]["containers"][0]
        args = _parser().parse_args(["run", *container["args"]])
        webhook = webhook_config_from_args(args)
        assert webhook is not None
        assert webhook.cert_dir is not None
        # The pod's emptyDir and Service become a temporary directory and the loopback port here, and its
        # mounted kube-root-ca.crt (the cluster CA, for the API server's client certificate) the session's CA.
        client_ca = self.control_plane.pki_dir / "ca.crt" if webhook.client_ca_file is not None else None
        webhook = type(webhook)(
            **{
                **vars(webhook),
                "bind_address": ("127.0.0.1", self.port),
                "cert_dir": cert_dir,
                "client_ca_file": client_ca,
            }
        )
        return {
            "kubeconfig": kubeconfig,
            "namespaces": args.namespaces,
            "report_only": args.report_only,
            "webhook": webhook,
            "leader_election": leader_election_from_args(args),
        }

    def delete_cluster_scoped(self) -> None:
        for kind, name in self.cluster_scoped:
            self.control_plane.kubectl("delete", kind, name, "--ignore-not-found", check=False)


@dataclass
class Env:
    control_plane: ControlPlane
    api_client: Any
    namespace: str
    running_operator: Any
    tmp_path: Path
    caplog: pytest.LogCaptureFixture
    installed: list[Installed] = field(default_factory=list)

    def install(self, values: dict[str, Any]) -> Installed:
        self.installed.append(Installed(self.control_plane, self.namespace, values))
        return self.installed[-1]


@pytest.fixture
def env(
    control_plane: ControlPlane,
    api_client: Any,
    namespace: str,
    running_operator: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> Iterator[Env]:
    bundle = Env(control_plane, api_client, namespace, running_operator, tmp_path, caplog)
    yield bundle
    for item in bundle.installed:
        item.delete_cluster_scoped()


def test_intended_uses_are_exactly_the_default_grants() -> None:
    rules = granted(render(), "ome-selector")
    assert set(rules) == set(INTENDED_USES), {
        "granted without an intended use": sorted(set(rules) - set(INTENDED_USES)),
        "intended but not granted": sorted(set(INTENDED_USES) - set(rules)),
    }
    for (group, resource, verb), names in rules.items():
        by_name = (group, resource) in NAMED or (group == "coordination.k8s.io" and verb != "create")
        assert bool(names) == by_name, (group, resource, verb, names)


def test_learning_model_metadata_adds_exactly_its_intended_uses() -> None:
    for values in ({}, {"watchNamespaces": ["a", "b"]}):
        rules = granted(render(values | {"modelMetadata": {"enabled": True}}), "ome-selector")
        assert set(rules) == set(INTENDED_USES) | set(INTENDED_WHEN_LEARNING)
        assert all(not rules[use] for use in INTENDED_WHEN_LEARNING)  # any model may need it: no names
    report_only = {"reportOnly": True, "modelMetadata": {"enabled": True}}
    assert not set(granted(render(report_only), "ome-selector")) & set(INTENDED_WHEN_LEARNING)


@pytest.mark.parametrize(
    ("values", "not_called"),
    [
        ({"webhook": {"certManager": {"enabled": True}}}, _CA_BUNDLE | _SECRET),
        ({"reportOnly": True}, _WRITES),
        ({"webhook": {"enabled": False}}, _CA_BUNDLE | _SECRET | _CONFIRMING_GETS),
        (
            {"webhook": {"enabled": False}, "modelMetadata": {"enabled": True}},
            _CA_BUNDLE | _SECRET | (_CONFIRMING_GETS - _MODEL_GETS),
        ),
        (
            {"reportOnly": True, "webhook": {"enabled": False}},
            _WRITES | _CA_BUNDLE | _SECRET | _CONFIRMING_GETS,
        ),
    ],
    ids=["cert-manager", "report-only", "no-webhook", "no-webhook-learning", "report-only-no-webhook"],
)  # fmt: skip
def test_each_mode_grants_only_what_it_calls(values: dict[str, Any], not_called: set[Any]) -> None:
    """cert-manager's cainjector keeps the caBundle, so the operator gets no right on its configuration;
    without the webhook nothing confirms, so no get on models and runtimes; report-only writes nothing."""
    learning = set(INTENDED_WHEN_LEARNING) if values.get("modelMetadata") else set()
    for extra in ({}, {"watchNamespaces": ["a", "b"]}):
        rules = granted(render(values | extra), "ome-selector")
        assert set(rules) == (set(INTENDED_USES) | learning) - not_called, values


def _learned_events(api_client: Any, namespace: str, name: str) -> list[Any]:
    return [e for e in events_for(api_client, namespace, name) if e.reason == "ModelMetadataLearned"]


#: How long a cluster-wide learner may take to reach this test's models (see the test).
LEARNING_BACKLOG_TIMEOUT_S = 180.0


def test_learning_model_metadata_runs_with_its_own_token(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """With modelMetadata.enabled the operator learns a BaseModel and a ClusterBaseModel, records their
    events, and meets no 403, using only the chart's grants (and under its admission policies). The Hub
    token serves the ClusterBaseModel and the namespaces of modelMetadata.tokenNamespaces only: this
    namespace's BaseModels are read anonymously, so a private repository reads as one that is missing."""
    control_plane, api_client, namespace = env.control_plane, env.api_client, env.namespace
    installed = env.install({"modelMetadata": {"enabled": True, "tokenNamespaces": ["trusted-team"]}})
    account = installed.one("ServiceAccount")["metadata"]["name"]
    kubeconfig = token_kubeconfig(control_plane, namespace, account, env.tmp_path / "token.kubeconfig")
    overrides = installed.operator_overrides(kubeconfig, env.tmp_path / "certs")
    container = installed.one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    args = _parser().parse_args(["run", *container["args"]])
    assert args.learn_model_metadata == "write"
    assert args.token_namespace == ["trusted-team"]
    folder = env.tmp_path / "llama"
    write_json(folder / "config.json", LLAMA_3_2_1B)
    write_safetensors(folder / "model.safetensors", decoder_tensors(LLAMA_3_2_1B))
    cluster_model = f"{installed.release}-llama"
    uris = {"llama": "hf://meta/llama", "private": "hf://meta/private", "absent": "hf://meta/absent"}
    for name, uri in uris.items():
        model = objects.model(name, namespace=namespace, with_format=False)
        model["spec"]["storage"]["storageUri"] = uri
        create(api_client, model)
    cluster = objects.model(cluster_model, with_format=False)
    cluster["spec"]["storage"]["storageUri"] = "hf://meta/private"
    create(api_client, cluster)
    installed.cluster_scoped.append(("ClusterBaseModel", cluster_model))
    env.caplog.set_level(logging.INFO)
    monkeypatch.setenv("HF_HOME", str(env.tmp_path / "hf-home"))  # no saved login
    monkeypatch.setenv("HF_TOKEN", HUB_TOKEN)
    with hub_standin() as hub:
        hub.repos["meta/llama"] = Repo(folder)
        hub.repos["meta/private"] = Repo(folder, token=HUB_TOKEN)
        learning = LearningConfig(endpoint=hub.url, token_namespaces=frozenset(args.token_namespace))
        runner = env.running_operator(**overrides, model_metadata=learning)
        # A cluster-wide operator learns every model that lacks a size, one read at a time (SPEC §10.7): the
        # models this worker's earlier test files left behind come first (14 of them, about 2 s each on a
        # saturated machine, in a run that timed out after 30 s).
        backlog = LEARNING_BACKLOG_TIMEOUT_S
        for kind, name, where in (
            ("BaseModel", "llama", namespace),
            ("ClusterBaseModel", cluster_model, "default"),
        ):
            eventually(
                functools.partial(_learned_events, api_client, where, name),
                timeout=backlog,
                what=f"the ModelMetadataLearned event of {kind} {name}",
            )
            scope = where if kind == "BaseModel" else None
            assert get(api_client, kind, name, scope)["spec"]["modelParameterSize"] == "1.24B"
        texts = {}
        for name in ("private", "absent"):
            (event, *_) = eventually(
                functools.partial(_unavailable_events, api_client, namespace, name),
                timeout=backlog,
                what=f"the ModelMetadataUnavailable event of BaseModel {name}",
            )
            texts[name] = event.message.replace(uris[name], "<uri>")
        runner.wait_idle()
        tenant_reads = [r for r in hub.requests if "/meta/private/" in r.path and r.authorization is None]
        token_reads = [r for r in hub.requests if r.authorization == f"Bearer {HUB_TOKEN}"]
    # One text for the private repository and the missing one: the event is no oracle.
    assert (
        texts["private"]
        == texts["absent"]
        == (
            "Cannot read the model's files: <uri>: not found or not public (read without the Hub token); "
            "next attempt in 30s"
        )
    )
    assert tenant_reads  # the tenant's BaseModel asked without the token
    assert token_reads  # the ClusterBaseModel with it
    assert "modelParameterSize" not in get(api_client, "BaseModel", "private", namespace)["spec"]
    assert _forbidden(env.caplog.records) == []
    assert _api_errors(runner) == {}


def _unavailable_events(api_client: Any, namespace: str, name: str) -> list[Any]:
    return [e for e in events_for(api_client, namespace, name) if e.reason == "ModelMetadataUnavailable"]


HUB_TOKEN = "hf_cluster_token"


def _forbidden(records: list[logging.LogRecord]) -> list[str]:
    # "403" only as an HTTP status ("(403)", "HTTP 403"), never a count such as "indexed 403 objects".
    pattern = re.compile(r"forbidden|\(403\)|\bHTTP 403\b|\b403 \w*forbidden", re.IGNORECASE)
    return [record.getMessage() for record in records if pattern.search(record.getMessage())]


def _api_errors(runner: Any) -> dict[str, float]:
    errors: dict[str, float] = {}
    for family in runner.operator.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "ome_selector_api_errors_total" and sample.value:
                errors[sample.labels["operation"]] = sample.value
    return errors


def _wait_until_the_webhook_denies(control_plane: ControlPlane, namespace: str) -> None:
    """The apiserver has the caBundle and calls the operator: a dry-run of an unservable request is denied."""
    probe = objects.inference_service(
        "probe", namespace=namespace, model_name="absent", engine={"minReplicas": 1}
    )

    def denied() -> bool:
        result = control_plane.kubectl(
            "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(probe), check=False
        )
        return "denied the request: model absent not found" in result.stderr

    eventually(
        denied, timeout=30, interval=0.1, what="the chart's webhook configuration to reach the operator"
    )


def _run_with_token(env: Env, installed: Installed) -> Any:
    control_plane, api_client, namespace = env.control_plane, env.api_client, env.namespace
    tmp_path, caplog = env.tmp_path, env.caplog
    account = installed.one("ServiceAccount")["metadata"]["name"]
    kubeconfig = token_kubeconfig(control_plane, namespace, account, tmp_path / "token.kubeconfig")
    caplog.set_level(logging.INFO)
    runner = env.running_operator(**installed.operator_overrides(kubeconfig, tmp_path / "certs"))
    _wait_until_the_webhook_denies(control_plane, namespace)
    report = run_scenario(api_client, control_plane.kubectl, namespace)
    assert len(report.steps) == 6, report.steps
    runner.wait_idle()
    assert _forbidden(caplog.records) == []
    assert _api_errors(runner) == {}
    # Evidence for the grants that the scenario does not show by itself.
    secret = installed.one("Secret")["metadata"]["name"]
    stored = yaml.safe_load(
        control_plane.kubectl("get", "secret", secret, "-n", namespace, "-o", "yaml").stdout
    )
    assert set(stored["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    configuration = installed.one("ValidatingWebhookConfiguration")["metadata"]["name"]
    live = yaml.safe_load(
        control_plane.kubectl("get", "validatingwebhookconfiguration", configuration, "-o", "yaml").stdout
    )
    assert {w["clientConfig"].get("caBundle") for w in live["webhooks"]} == {stored["data"]["ca.crt"]}
    return runner


def _cannot(
    control_plane: ControlPlane, account: str, home: str, namespace: str, *checks: tuple[str, ...]
) -> None:
    """The ServiceAccount ``home/account`` may do none of ``checks`` in ``namespace``."""
    subject = f"--as=system:serviceaccount:{home}:{account}"
    for check in checks:
        result = control_plane.kubectl("auth", "can-i", *check, subject, "-n", namespace, check=False)
        assert result.stdout.strip() == "no", (check, result.stdout, result.stderr)


def test_cluster_wide_install_runs_the_scenario_with_its_own_token(env: Env) -> None:
    control_plane, namespace = env.control_plane, env.namespace
    installed = env.install({})
    _run_with_token(env, installed)
    account = installed.one("ServiceAccount")["metadata"]["name"]
    _cannot(
        control_plane,
        account,
        namespace,
        namespace,
        ("list", "secrets"),
        ("get", "secrets/some-other-secret"),
        ("create", "secrets"),
        ("update", "validatingwebhookconfigurations/someone-elses"),
        ("patch", "inferenceservices.ome.io"),
        ("update", "inferenceservices.ome.io/status"),
        ("delete", "inferenceservices.ome.io"),
        ("create", "servingruntimes.ome.io"),
        ("list", "namespaces"),
        ("list", "customresourcedefinitions.apiextensions.k8s.io"),
        ("update", "leases.coordination.k8s.io/someone-elses"),
        ("list", "leases.coordination.k8s.io"),
    )


def test_plugin_reader_role_is_enough_for_kubectl_ome_runtime_explain(env: Env) -> None:
    """A user bound to <release>-plugin-reader explains from the live cluster; nothing less is needed."""
    control_plane, namespace = env.control_plane, env.namespace
    installed = env.install({"webhook": {"enabled": False}})
    reader = installed.one("ClusterRole", "-plugin-reader")["metadata"]["name"]
    control_plane.kubectl("create", "serviceaccount", "explainer", "-n", namespace)
    binding = f"{installed.release}-explainer"
    installed.cluster_scoped.append(("ClusterRoleBinding", binding))
    control_plane.kubectl(
        "create", "clusterrolebinding", binding, f"--clusterrole={reader}",
        f"--serviceaccount={namespace}:explainer",
    )  # fmt: skip
    kubeconfig = token_kubeconfig(control_plane, namespace, "explainer", env.tmp_path / "reader.kubeconfig")
    control_plane.kubectl(
        "create", "-f", "-",
        input=yaml.safe_dump_all(
            [
                objects.model("llama", namespace=namespace, size="3.21B"),
                objects.runtime("rt-3b", namespace=namespace, size_range=("2B", "4B")),
            ]
        ),
    )  # fmt: skip
    explain = [sys.executable, "-m", "ome_selector.cli.kubectl_ome", "runtime", "explain", "--model", "llama"]
    result = subprocess.run(
        [*explain, "-n", namespace, "-o", "json", f"--kubeconfig={kubeconfig}"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["selected"] == {
        "kind": "ServingRuntime",
        "name": "rt-3b",
        "namespace": namespace,
        "decidedBy": "only",
        "message": "selected ServingRuntime rt-3b (score 2)",
    }


def test_namespaced_install_runs_the_scenario_with_its_own_token(env: Env) -> None:
    control_plane, namespace = env.control_plane, env.namespace
    installed = env.install({"watchNamespaces": [namespace]})
    assert {d["kind"] for d in installed.docs if d["kind"] in RBAC_KINDS} == RBAC_KINDS
    rules = granted(installed.docs, installed.release)
    assert set(rules) == set(INTENDED_USES)  # the same calls, split into Roles and a ClusterRole
    runner = _run_with_token(env, installed)
    assert runner.operator.config.namespaces == [namespace]
    account = installed.one("ServiceAccount")["metadata"]["name"]
    _cannot(
        control_plane,
        account,
        namespace,
        "default",
        ("list", "inferenceservices.ome.io"),
        ("create", "events"),
    )
    _cannot(
        control_plane, account, namespace, namespace, ("list", "servingruntimes.ome.io", "--all-namespaces")
    )


def test_a_deleted_webhook_secret_keeps_readiness_false_until_helm_recreates_it(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chart grants no ``create`` on Secrets (only get and update on its own): an operator whose Secret
    was deleted says so in one line, stays unready and retries until the Secret exists again."""
    tried: list[None] = []  # attempts to use the Secret that have ended
    ensure = SecretCertificates.ensure

    async def counted(self: SecretCertificates, **kwargs: Any) -> Any:
        try:
            return await ensure(self, **kwargs)
        finally:
            tried.append(None)

    monkeypatch.setattr(SecretCertificates, "ensure", counted)
    control_plane, namespace = env.control_plane, env.namespace
    installed = env.install({"watchNamespaces": [namespace]})
    secret = installed.one("Secret")
    control_plane.kubectl("delete", "secret", secret["metadata"]["name"], "-n", namespace)
    account = installed.one("ServiceAccount")["metadata"]["name"]
    kubeconfig = token_kubeconfig(control_plane, namespace, account, env.tmp_path / "token.kubeconfig")
    env.caplog.set_level(logging.INFO)
    health = free_port()
    overrides = installed.operator_overrides(kubeconfig, env.tmp_path / "certs")
    runner = OperatorThread(
        OperatorConfig(**overrides, health_address=("127.0.0.1", health), resync_seconds=3600.0)
    ).start()
    try:

        def readiness() -> tuple[int, str]:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=5) as answer:
                    return answer.status, answer.read().decode()
            except urllib.error.HTTPError as error:
                return error.code, error.read().decode()

        missing = f"the webhook certificate Secret {namespace}/{secret['metadata']['name']} is missing"
        eventually(lambda: any(missing in r.getMessage() for r in env.caplog.records), what="the error")
        assert readiness() == (503, "webhook not registered yet")
        # Two retries ended (so the first retry's error was handled): still unready, and said once.
        eventually(lambda: len(tried) >= 3, timeout=60, what="two retries of the missing Secret")
        assert readiness() == (503, "webhook not registered yet")
        said = [r for r in env.caplog.records if missing in r.getMessage()]
        assert len(said) == 1
        assert said[0].getMessage().endswith("`helm upgrade` recreates it; retrying every 5 s")
        assert "\n" not in said[0].getMessage()

        control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(secret))  # what `helm upgrade` does
        eventually(lambda: readiness() == (200, "ok"), timeout=30, what="ready once the Secret is back")
        _wait_until_the_webhook_denies(control_plane, namespace)
    finally:
        runner.stop()


# --- the ValidatingAdmissionPolicies, under the chart's ServiceAccounts ----------------------------------


def _as(control_plane: ControlPlane, subject: str, *args: str, body: Any = None) -> Any:
    """kubectl as ``subject`` (impersonated by the admin); the result, not checked."""
    return control_plane.kubectl(
        *args, f"--as={subject}", input=None if body is None else json.dumps(body), check=False
    )


def _until_enforced(attempt: Callable[[], Any], undo: Callable[[], object] = lambda: None) -> Any:
    """A new policy binding reaches the apiserver's admission a moment after it is created: repeat
    ``attempt`` (a request the policy denies) until it is refused, undoing any that got through first."""

    def refused() -> Any:
        result = attempt()
        if result.returncode == 0:
            undo()
            return None
        return result

    return eventually(refused, timeout=30, interval=0.2, what="the admission policy to be enforced")


def _denied_by_policy(result: Any, policy: str, message: str) -> None:
    """Denied by the API server's ValidatingAdmissionPolicy (not by RBAC, not by our webhook)."""
    assert result.returncode != 0, result.stdout
    expected = f"ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request: {message}"
    assert expected in result.stderr, result.stderr


def test_the_operator_account_may_change_only_the_ca_bundle_of_its_own_configuration(env: Env) -> None:
    control_plane, namespace = env.control_plane, env.namespace
    installed = env.install({})
    operator = f"system:serviceaccount:{namespace}:{installed.one('ServiceAccount')['metadata']['name']}"
    name = installed.one("ValidatingWebhookConfiguration")["metadata"]["name"]
    policy = f"{installed.release}-ome-selector-webhook-ca-bundle"
    assert installed.one("ValidatingAdmissionPolicy", "-webhook-ca-bundle")["metadata"]["name"] == policy

    def stored() -> dict[str, Any]:
        read = control_plane.kubectl("get", "validatingwebhookconfiguration", name, "-o", "json")
        body: dict[str, Any] = json.loads(read.stdout)
        return body

    def replace(change: Callable[[dict[str, Any]], None], *, dry_run: bool = False) -> Any:
        """A PUT of the changed object as the operator makes it (`--raw`: kubectl adds nothing)."""
        body = stored()
        change(body)
        path = f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{name}"
        path += "?dryRun=All" if dry_run else ""
        return _as(control_plane, operator, "replace", "--raw", path, "-f", "-", body=body)

    _until_enforced(lambda: replace(lambda body: body["webhooks"][0].update(timeoutSeconds=3), dry_run=True))

    bundle = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()

    def set_bundle(body: dict[str, Any]) -> None:
        for webhook in body["webhooks"]:
            webhook["clientConfig"]["caBundle"] = bundle

    allowed = replace(set_bundle)
    assert allowed.returncode == 0, allowed.stderr
    assert {w["clientConfig"]["caBundle"] for w in stored()["webhooks"]} == {bundle}
    only = "the ome-selector operator may change only the caBundle of its webhooks"
    # The chart renders the configured policies (SPEC §7): the operator may change neither.
    assert stored()["webhooks"][0]["name"] == "inferenceservices.ome-selector.ome.io"
    assert stored()["webhooks"][0]["failurePolicy"] == "Fail"
    changes: list[tuple[Callable[[dict[str, Any]], None], str]] = [
        # It cannot make the webhook fail open; nor a warning webhook (configured Ignore) fail closed.
        (lambda body: body["webhooks"][0].update(failurePolicy="Ignore"), only),
        (lambda body: body["webhooks"][1].update(failurePolicy="Fail"), only),
        (lambda body: body["webhooks"][0]["clientConfig"].update(url="https://attacker.invalid/"), only),
        (lambda body: body["webhooks"][1]["rules"][0].update(resources=["*"]), only),
        (lambda body: body["webhooks"][0].update(namespaceSelector={}), only),
        (lambda body: body["webhooks"].pop(), only),
        (
            lambda body: body["metadata"].setdefault("labels", {}).update(mine="yes"),
            "the ome-selector operator may not change the labels, annotations, owners or finalizers of its "
            "webhook configuration",
        ),
    ]
    for change, message in changes:
        _denied_by_policy(replace(change), policy, message)
    # RBAC alone would have let every one of them through: the update verb on this object is granted.
    can = control_plane.kubectl(
        "auth", "can-i", "update", f"validatingwebhookconfigurations/{name}", f"--as={operator}", check=False
    )
    assert can.stdout.strip() == "yes"
    # Anyone else (the admin here, helm in a cluster) is not bound by the policy.
    body = stored()
    body["webhooks"][0]["timeoutSeconds"] = 7
    control_plane.kubectl("replace", "-f", "-", input=json.dumps(body))


ELSEWHERE = "hf://attacker/weights"


def test_the_operator_account_may_only_add_absent_learnable_fields_to_models(env: Env) -> None:
    control_plane, namespace, api_client = env.control_plane, env.namespace, env.api_client
    installed = env.install({"modelMetadata": {"enabled": True}})
    operator = f"system:serviceaccount:{namespace}:{installed.one('ServiceAccount')['metadata']['name']}"
    policy = f"{installed.release}-ome-selector-learned-fields"
    cluster_name = f"{installed.release}-cluster-llama"
    tenant = objects.model("llama", namespace=namespace, with_format=False)
    tenant["spec"]["modelFormat"] = {"version": "1.0.0"}  # a version without a name: the name is absent
    create(api_client, tenant)
    create(api_client, objects.model(cluster_name, with_format=False))
    installed.cluster_scoped.append(("ClusterBaseModel", cluster_name))

    def patch(kind: str, name: str, patch: dict[str, Any], scope: str | None = namespace) -> Any:
        where = ["-n", scope] if scope else []
        return _as(
            control_plane, operator, "patch", kind, name, *where, "--type=merge", "-p", json.dumps(patch)
        )

    moved = {"spec": {"storage": {"storageUri": ELSEWHERE}}}
    _until_enforced(lambda: _as(control_plane, operator, "patch", "basemodel", "llama", "-n", namespace,
                                "--type=merge", "-p", json.dumps(moved), "--dry-run=server"))  # fmt: skip
    learned = {
        "spec": {"modelParameterSize": "1.24B", "maxTokens": 131072, "modelFormat": {"name": "safetensors"}}
    }
    for kind, name, scope in (("basemodel", "llama", namespace), ("clusterbasemodel", cluster_name, None)):
        result = patch(kind, name, learned, scope)
        assert result.returncode == 0, result.stderr
    spec = get(api_client, "BaseModel", "llama", namespace)["spec"]
    assert spec["modelFormat"]["name"] == "safetensors"
    assert spec["modelFormat"]["version"] == "1.0.0"
    only = (
        "the ome-selector operator may only add the learnable fields a model lacks (modelParameterSize, "
        "modelFormat, modelArchitecture, modelFramework, quantization, maxTokens)"
    )
    attempts: list[tuple[str, str, str | None, dict[str, Any], str]] = [
        ("basemodel", "llama", namespace, {"spec": {"storage": {"storageUri": ELSEWHERE}}}, only),
        ("clusterbasemodel", cluster_name, None, {"spec": {"storage": {"storageUri": ELSEWHERE}}}, only),
        ("basemodel", "llama", namespace, {"spec": {"storage": None}}, only),
        ("basemodel", "llama", namespace, {"spec": {"modelParameterSize": "405B"}}, only),  # set: not absent
        ("basemodel", "llama", namespace, {"spec": {"modelFormat": {"version": "2.0.0"}}}, only),
        ("basemodel", "llama", namespace, {"spec": {"disabled": True}}, only),
        ("basemodel", "llama", namespace, {"spec": {"somethingElse": "x"}}, only),
        (
            "basemodel", "llama", namespace, {"metadata": {"labels": {"mine": "yes"}}},
            "the ome-selector operator may not change the labels, annotations, owners or finalizers of a "
            "model",
        ),
    ]  # fmt: skip
    for kind, name, scope, change, message in attempts:
        _denied_by_policy(patch(kind, name, change, scope), policy, message)
    assert get(api_client, "BaseModel", "llama", namespace)["spec"]["storage"] == tenant["spec"]["storage"]
    can = control_plane.kubectl(
        "auth", "can-i", "patch", "basemodels.ome.io", f"--as={operator}", "-n", namespace
    )
    assert can.stdout.strip() == "yes"  # RBAC alone lets every patch through


def test_the_startup_check_account_may_only_dry_run(env: Env) -> None:
    control_plane, namespace = env.control_plane, env.namespace
    installed = env.install({"webhook": {"startupCheck": {"enabled": True}}})
    account = installed.one("ServiceAccount", "-startupcheck")["metadata"]["name"]
    subject = f"system:serviceaccount:{namespace}:{account}"
    policy = f"{installed.release}-ome-selector-startupcheck-dry-run"
    # No spec.engine: the webhook (pointed at a port nobody serves here) is not called, only the policy.
    probe = objects.inference_service("probe", namespace=namespace, model_name="absent")
    probe["spec"].pop("engine", None)
    dry = _as(control_plane, subject, "create", "--dry-run=server", "-f", "-", body=probe)
    assert dry.returncode == 0, dry.stderr
    real = _until_enforced(
        lambda: _as(control_plane, subject, "create", "-f", "-", body=probe),
        lambda: control_plane.kubectl("delete", "inferenceservice", "probe", "-n", namespace),
    )
    _denied_by_policy(real, policy, "the ome-selector startup check may only make dry-run requests")
    assert control_plane.kubectl("get", "inferenceservices", "-n", namespace, "-o", "name").stdout == ""


def test_the_uninstall_hook_cleans_up_with_its_own_token(env: Env) -> None:
    """The pre-delete Job's command, with the hook's ServiceAccount token only: it stops the Deployment,
    removes RuntimeReady and deletes the Lease; nothing else is within its reach."""
    control_plane, namespace, api_client = env.control_plane, env.namespace, env.api_client
    installed = env.install({"watchNamespaces": [namespace], "cleanup": {"enabled": True}})
    fullname = installed.one("Deployment")["metadata"]["name"]
    job = installed.one("Job", "-cleanup")["spec"]["template"]["spec"]
    account = job["serviceAccountName"]
    # The operator's Deployment (no controller-manager here: no pods) and Lease, and a condition to remove.
    deployment = installed.one("Deployment")
    control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(deployment))
    control_plane.kubectl("create", "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": fullname, "namespace": namespace}, "spec": {"holderIdentity": "x"}}
    ))  # fmt: skip
    create(api_client, objects.inference_service("chat", namespace=namespace, model_name="llama"))
    body = get(api_client, "InferenceService", "chat", namespace)
    condition = {"type": "RuntimeReady", "status": "True", "reason": "RuntimeSelected", "message": "m"}
    body["status"] = {"conditions": [{**condition, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    from kubernetes import client

    # Written as the operator writes it (its field manager): the cleanup removes only that (SPEC §8).
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object_status(
        "ome.io", "v1beta1", namespace, "inferenceservices", "chat", body, field_manager="ome-selector"
    )
    # Armed as a serving replica arms it (no server here: nothing this test writes goes through it).
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    configuration = installed.one("ValidatingWebhookConfiguration")["metadata"]["name"]
    armed = admission.read_validating_webhook_configuration(configuration)
    for webhook in armed.webhooks:
        webhook.failure_policy = "Fail"
    admission.replace_validating_webhook_configuration(configuration, armed)
    kubeconfig = token_kubeconfig(control_plane, namespace, account, env.tmp_path / "cleanup.kubeconfig")
    (container,) = job["containers"]
    result = subprocess.run(
        [sys.executable, "-m", "ome_selector.cli.ome_selector", f"--kubeconfig={kubeconfig}",
         *container["args"]],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"set failurePolicy Ignore on validatingwebhookconfiguration {configuration}",
        f"scaled deployment {namespace}/{fullname} to 0",
        f"no pod of deployment {namespace}/{fullname} is left",
        f"removed RuntimeReady from inferenceservice {namespace}/chat",
        "changed 1 InferenceService(s)",
        f"deleted lease {namespace}/{fullname}",
    ]
    status = get(api_client, "InferenceService", "chat", namespace).get("status") or {}
    assert [c for c in status.get("conditions") or [] if c["type"] == "RuntimeReady"] == []
    disarmed = admission.read_validating_webhook_configuration(configuration).webhooks
    assert {webhook.failure_policy for webhook in disarmed} == {"Ignore"}
    _cannot(
        control_plane,
        account,
        namespace,
        namespace,
        ("delete", "deployments.apps"),
        ("create", "leases.coordination.k8s.io"),
        ("get", "secrets"),
        ("patch", "inferenceservices.ome.io"),
    )
    _cannot(control_plane, account, namespace, "default", ("list", "inferenceservices.ome.io"))
