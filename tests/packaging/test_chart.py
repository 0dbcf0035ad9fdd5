"""The Helm chart rendered with `helm template` in its modes: what must hold of every install.

Also ties the chart to the code: the Deployment's arguments parse with `ome-selector run`, the webhook names
and paths are the ones the code serves, the alert's metric exists, the CRDs equal manifests/crds, and the
plain install (manifests/install.yaml) is what `make manifests` renders now.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import chart
from ome_selector.api.resources import Kind
from ome_selector.cli.ome_selector import _parser
from ome_selector.operator.metrics import Metrics
from ome_selector.webhook.cli import webhook_config_from_args
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.registration import (
    HANDLER_IDS,
    build_configuration,
    delete_webhook_name,
    webhook_name,
)

STANDARD_LABELS = {
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
}
CERT_DIR = "/var/run/ome-selector/webhook-certs"
#: Roles of the hook Jobs and the plugin reader: not the operator's (checked in tests of their own).
HOOK_AND_READER_ROLES = (
    "-plugin-reader",
    "-startupcheck",
    "-cleanup",
    "-cleanup-conditions",
    "-cleanup-webhook",
)


class Rendered:
    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.docs = docs

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [doc for doc in self.docs if doc["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [d for d in self.all(kind) if name is None or d["metadata"]["name"] == name]
        assert len(found) == 1, (kind, name, [d["metadata"]["name"] for d in self.all(kind)])
        return found[0]

    @property
    def container(self) -> dict[str, Any]:
        containers = self.one("Deployment")["spec"]["template"]["spec"]["containers"]
        assert len(containers) == 1
        container: dict[str, Any] = containers[0]
        return container

    @property
    def args(self) -> list[str]:
        return list(self.container["args"])

    def rules(self) -> set[tuple[str, str, str, str, tuple[str, ...]]]:
        """(kind/namespace of the role, apiGroup, resource, verb, resourceNames) of the operator's roles."""
        found = set()
        for doc in self.all("ClusterRole") + self.all("Role"):
            if doc["metadata"]["name"].endswith(HOOK_AND_READER_ROLES):
                continue
            where = doc["metadata"].get("namespace", "")
            for rule in doc["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        for verb in rule["verbs"]:
                            found.add((where, group, resource, verb, tuple(rule.get("resourceNames", ()))))
        return found


@pytest.fixture(scope="module")
def render(helm: Path) -> Any:
    cache: dict[str, Rendered] = {}

    def make(values: dict[str, Any] | None = None, **kwargs: Any) -> Rendered:
        key = json.dumps([values, kwargs], sort_keys=True)
        if key not in cache:
            cache[key] = Rendered(chart.render(values, helm=helm, **kwargs))
        return cache[key]

    return make


def _helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120, check=False)


# --- lint and schema -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sets",
    [
        [],
        ["webhook.certManager.enabled=true"],
        ["watchNamespaces={a,b}", "reportOnly=true", "crds.install=false"],
        [
            "modelMetadata.enabled=true",
            "modelMetadata.tokenSecret.name=hf",
            "modelMetadata.endpoint=https://m",
        ],
        [
            "webhook.enabled=false",
            "metrics.serviceMonitor.enabled=true",
            "metrics.prometheusRule.enabled=true",
        ],
    ],
)
def test_helm_lint_strict_is_clean(helm: Path, sets: list[str]) -> None:
    result = _helm(
        helm,
        "lint",
        "--strict",
        "--kube-version",
        chart.KUBE_VERSION,
        str(chart.CHART_DIR),
        *(f"--set={s}" for s in sets),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout, result.stdout
    assert "[ERROR]" not in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"webhook": {"timeoutSeconds": 31}}, "/webhook/timeoutSeconds"),
        ({"webhook": {"failurePolicy": "Sometimes"}}, "/webhook/failurePolicy"),
        ({"reportOnly": "yes"}, "/reportOnly"),
        ({"runtimeLookup": "v1.2"}, "/runtimeLookup"),
        ({"watchNamespaces": ["Not_A_Namespace"]}, "/watchNamespaces/0"),
        ({"crds": {"instal": True}}, "instal"),
        ({"unknownKey": 1}, "unknownKey"),
        ({"modelMetadata": {"endpoint": "huggingface.co"}}, "/modelMetadata/endpoint"),
        ({"modelMetadata": {"tokenSecret": {"name": "Not_A_Secret"}}}, "/modelMetadata/tokenSecret/name"),
        ({"modelMetadata": {"token": "hf_x"}}, "token"),
        ({"modelMetadata": {"redirectHosts": ["https://x"]}}, "/modelMetadata/redirectHosts/0"),
        ({"modelMetadata": {"allowInsecureEndpoint": "yes"}}, "/modelMetadata/allowInsecureEndpoint"),
        ({"modelMetadata": {"mode": "dry-run"}}, "/modelMetadata/mode"),
        ({"logLevel": "verbose"}, "/logLevel"),
        ({"metrics": {"prometheusRule": {"alerts": {"OmeSelectorDown": {"severity": "page"}}}}}, "severity"),
        ({"metrics": {"prometheusRule": {"alerts": {"OmeSelectorDwn": {}}}}}, "OmeSelectorDwn"),
    ],
)
def test_values_schema_rejects_bad_values(helm: Path, values: dict[str, Any], complaint: str) -> None:
    with pytest.raises(subprocess.CalledProcessError) as failure:
        chart.render(values, helm=helm)
    assert "values don't meet the specifications of the schema" in failure.value.stderr
    assert complaint in failure.value.stderr


# --- every object ------------------------------------------------------------------------------------------


def test_default_install_has_the_expected_objects(render: Any) -> None:
    kinds = sorted(doc["kind"] for doc in render().docs)
    assert kinds == sorted(
        ["ServiceAccount", "ClusterRole", "ClusterRole", "ClusterRoleBinding"]
        + ["Role", "RoleBinding"] * 2  # the webhook certificate Secret, the leader election Lease
        + ["Secret", "Service", "Service", "Deployment", "ValidatingWebhookConfiguration"]
        + ["PodDisruptionBudget", "NetworkPolicy"]
        # the startup check hook (its ClusterRole reads the webhook configuration); no CRDs by default
        + ["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Job"]
        # the uninstall cleanup hook (a ClusterRole for the conditions, one for disarming the webhook)
        + ["ServiceAccount", "Role", "RoleBinding", "Job"]
        + ["ClusterRole", "ClusterRoleBinding"] * 2
        # the caBundle and the configured failurePolicy only; the startup check's dry runs only
        + ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"] * 2
    )


@pytest.mark.parametrize(
    "values",
    [None, {"webhook": {"certManager": {"enabled": True}}}, {"watchNamespaces": ["a", "b"]}],
)
def test_every_object_has_the_standard_labels_and_namespaced_ones_the_release_namespace(
    render: Any, values: dict[str, Any] | None
) -> None:
    for doc in render(values, namespace="ops").docs:
        labels = doc["metadata"].get("labels") or {}
        assert set(labels) >= STANDARD_LABELS, (doc["kind"], doc["metadata"]["name"])
        assert labels["app.kubernetes.io/part-of"] == "ome-selector"
        if doc["kind"] in {"Role", "RoleBinding"} and doc["metadata"]["namespace"] in {"a", "b"}:
            continue  # the per-namespace roles of a namespaced install
        cluster_scoped = {
            "ClusterRole",
            "ClusterRoleBinding",
            "ValidatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "CustomResourceDefinition",
        }
        assert ("namespace" in doc["metadata"]) == (doc["kind"] not in cluster_scoped), doc["kind"]
        if doc["kind"] not in cluster_scoped:
            assert doc["metadata"]["namespace"] == "ops"


def test_no_key_material_is_rendered(render: Any) -> None:
    secret = render().one("Secret")
    assert secret["type"] == "Opaque"
    assert "data" not in secret
    assert "stringData" not in secret
    assert "BEGIN" not in chart.render_text()


# --- the Deployment ----------------------------------------------------------------------------------------


def test_deployment_is_always_available_and_restricted(render: Any) -> None:
    deployment = render().one("Deployment")
    # SPEC §8: two replicas, a rollout that never removes a ready one first, spread over nodes.
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }
    assert deployment["spec"]["minReadySeconds"] > 0
    pod = deployment["spec"]["template"]["spec"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    (preferred,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert preferred["podAffinityTerm"]["labelSelector"]["matchLabels"] == selector
    (spread,) = pod["topologySpreadConstraints"]
    assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
    assert spread["labelSelector"]["matchLabels"] == selector
    # Time to drain the endpoint (preStop), stop writing and release the Lease before the kubelet kills it.
    drain = ["ome-selector", "drain", "--seconds", "5"]
    assert render().container["lifecycle"]["preStop"] == {"exec": {"command": drain}}
    assert pod["terminationGracePeriodSeconds"] >= 15
    assert render().container["readinessProbe"]["failureThreshold"] == 1
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = render().container
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["runAsNonRoot"] is True
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    # No CPU limit (CFS throttling on the API server's write path); memory above the measured 143-145 MiB at
    # 10,000 InferenceServices.
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "192Mi"},
        "limits": {"memory": "512Mi"},
    }
    for probe in ("livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"metrics": 8080, "webhook": 9443}
    # The certificates go to a writable emptyDir (the root filesystem is read-only), as does /tmp.
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    # and the cluster CA the API server's client certificate is checked against (read-only).
    assert mounts == {
        "tmp": "/tmp",
        "webhook-certs": CERT_DIR,
        "webhook-client-ca": "/var/run/ome-selector/webhook-client-ca",
    }
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert "emptyDir" in volumes["webhook-certs"]
    assert "emptyDir" in volumes["tmp"]
    env = {item["name"] for item in container["env"]}
    assert env == {"POD_NAME", "POD_NAMESPACE"}


def _parse(args: list[str]) -> Any:
    return _parser().parse_args(["run", *args])


def test_deployment_arguments_are_understood_by_ome_selector_run(render: Any) -> None:
    rendered = render(release="prod", namespace="ops")
    args = _parse(rendered.args)
    assert args.namespaces is None
    assert args.report_only is False
    assert args.health_bind_address == ("0.0.0.0", 8080)
    webhook = webhook_config_from_args(args)
    assert webhook is not None
    assert webhook.bind_address == ("0.0.0.0", 9443)
    assert str(webhook.cert_dir) == CERT_DIR
    assert webhook.configuration_name == rendered.one("ValidatingWebhookConfiguration")["metadata"]["name"]
    assert webhook.cert_secret == f"ops/{rendered.one('Secret')['metadata']['name']}"
    webhook_service = [s for s in rendered.all("Service") if s["spec"]["ports"][0]["name"] == "webhook"]
    assert webhook.service == f"ops/{webhook_service[0]['metadata']['name']}"
    assert webhook.strict_sizes is False
    assert args.leader_election is True
    assert args.leader_election_namespace == "ops"
    assert args.leader_election_id == "prod-ome-selector"


def test_startup_check_hook_probes_the_webhook_with_a_dry_run_only(render: Any) -> None:
    rendered = render(release="prod", namespace="ops")
    job = rendered.one("Job", "prod-ome-selector-startupcheck")
    hook = job["metadata"]["annotations"]
    assert hook["helm.sh/hook"] == "post-install,post-upgrade"
    assert (
        hook["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    )  # a failed Job's logs stay
    # Its account, Role and RoleBinding go whether the check succeeded or failed.
    for kind in ("ServiceAccount", "Role", "RoleBinding"):
        annotations = rendered.one(kind, "prod-ome-selector-startupcheck")["metadata"]["annotations"]
        assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded,hook-failed"
    # RBAC grants create; the admission policy allows this account dry runs only.
    policy = rendered.one("ValidatingAdmissionPolicy", "prod-ome-selector-startupcheck-dry-run")["spec"]
    account = "system:serviceaccount:ops:prod-ome-selector-startupcheck"
    assert policy["matchConditions"] == [
        {"name": "the-startup-check", "expression": f"request.userInfo.username == '{account}'"}
    ]
    assert policy["validations"][0]["expression"] == "request.dryRun == true"
    binding = rendered.one("ValidatingAdmissionPolicyBinding", "prod-ome-selector-startupcheck-dry-run")
    assert binding["spec"] == {
        "policyName": "prod-ome-selector-startupcheck-dry-run",
        "validationActions": ["Deny"],
    }
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["ome-selector"]
    args = _parser().parse_args(container["args"])
    assert (args.command, args.namespace, args.timeout) == ("check-webhook", "ops", 120.0)
    role = rendered.one("Role", "prod-ome-selector-startupcheck")
    assert role["rules"] == [
        {"apiGroups": ["ome.io"], "resources": ["inferenceservices"], "verbs": ["create"]}
    ]
    assert job["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    # A namespaced install probes a namespace the webhook judges.
    namespaced = render({"watchNamespaces": ["team-a"]}, release="prod", namespace="ops")
    assert (
        "--namespace=team-a"
        in namespaced.one("Job", "prod-ome-selector-startupcheck")["spec"]["template"]["spec"]["containers"][
            0
        ]["args"]
    )
    assert namespaced.one("Role", "prod-ome-selector-startupcheck")["metadata"]["namespace"] == "team-a"
    jobs = render({"webhook": {"startupCheck": {"enabled": False}}}).all("Job")
    assert [job["metadata"]["name"] for job in jobs] == ["ome-selector-cleanup"]


def test_pod_disruption_budget_keeps_a_webhook_endpoint(render: Any) -> None:
    rendered = render(release="prod", namespace="ops")
    budget = rendered.one("PodDisruptionBudget")
    assert budget["spec"]["minAvailable"] == 1
    assert (
        budget["spec"]["selector"]["matchLabels"]
        == rendered.one("Deployment")["spec"]["selector"]["matchLabels"]
    )
    assert not render({"podDisruptionBudget": {"enabled": False}}).all("PodDisruptionBudget")


def test_report_only_runs_without_leader_election(render: Any) -> None:
    rendered = render({"reportOnly": True})
    assert _parse(rendered.args).leader_election is False
    assert "leases" not in {rule[2] for rule in rendered.rules()}


def test_network_policy_admits_only_the_webhook_and_metrics_ports(render: Any) -> None:
    # On by default: only the two ports, the metrics one only from labelled namespaces.
    default = render().one("NetworkPolicy")["spec"]["ingress"]
    assert [rule["ports"][0]["port"] for rule in default] == ["webhook", "metrics"]
    assert "from" not in default[0]  # the API server's address varies: networkPolicy.webhookFrom narrows it
    assert not render({"networkPolicy": {"enabled": False}}).all("NetworkPolicy")
    values = {"networkPolicy": {"enabled": True, "webhookFrom": [{"ipBlock": {"cidr": "10.0.0.0/24"}}]}}
    policy = render(values).one("NetworkPolicy")
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    webhook, metrics = policy["spec"]["ingress"]
    assert webhook == {
        "ports": [{"port": "webhook", "protocol": "TCP"}],
        "from": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
    }
    assert metrics == {
        "ports": [{"port": "metrics", "protocol": "TCP"}],
        "from": [{"namespaceSelector": {"matchLabels": {"ome-selector.ome.io/metrics": "true"}}}],
    }


def test_values_become_arguments(render: Any) -> None:
    values = {"reportOnly": True, "watchNamespaces": ["team-a", "team-b"], "webhook": {"strictSizes": True}}
    args = _parse(render(values).args)
    assert args.report_only is True
    assert args.namespaces == ["team-a", "team-b"]
    webhook = webhook_config_from_args(args)
    assert webhook is not None
    assert webhook.strict_sizes is True
    assert _parse(render({"webhook": {"enabled": False}}).args).webhook_bind_address is None
    assert _parse(render().args).log_level == "info"
    assert _parse(render({"logLevel": "warning"}).args).log_level == "warning"


def _env(rendered: Rendered) -> dict[str, Any]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in rendered.container["env"]}


def test_model_metadata_is_off_by_default_and_opt_in(render: Any) -> None:
    assert _parse(render().args).learn_model_metadata is None
    assert not {"HF_ENDPOINT", "HF_TOKEN", "HF_HOME"} & set(_env(render()))
    values = {
        "modelMetadata": {
            "enabled": True,
            "endpoint": "https://hub.example",
            "tokenSecret": {"name": "hub-token", "key": "hf"},
        }
    }
    rendered = render(values)
    assert _parse(rendered.args).learn_model_metadata == "write"
    assert "--learn-model-metadata=write" in rendered.args
    # SPEC §10: modelMetadata.mode report only warns, writing nothing
    reporting = render({"modelMetadata": {"enabled": True, "mode": "report"}})
    assert _parse(reporting.args).learn_model_metadata == "report"
    env = _env(rendered)
    assert env["HF_ENDPOINT"] == "https://hub.example"
    assert env["HF_TOKEN"] == {"secretKeyRef": {"name": "hub-token", "key": "hf"}}
    assert env["HF_HOME"].startswith("/tmp/")  # the only writable place (read-only root filesystem)
    no_token = _env(render({"modelMetadata": {"enabled": True}}))
    assert "HF_TOKEN" not in no_token
    assert "HF_ENDPOINT" not in no_token


def test_model_metadata_redirect_hosts_and_the_endpoint_scheme(helm: Path, render: Any) -> None:
    """SPEC §10.6: extra redirect hosts reach the reader's environment; an http:// endpoint needs
    allowInsecureEndpoint."""
    values: dict[str, Any] = {
        "modelMetadata": {"enabled": True, "redirectHosts": ["blobs.example", "b.example"]}
    }
    assert _env(render(values))["OME_SELECTOR_REDIRECT_HOSTS"] == "blobs.example,b.example"
    assert "OME_SELECTOR_REDIRECT_HOSTS" not in _env(render({"modelMetadata": {"enabled": True}}))
    insecure = {"modelMetadata": {"enabled": True, "endpoint": "http://mirror.local"}}
    with pytest.raises(subprocess.CalledProcessError) as failure:
        chart.render(insecure, helm=helm)
    assert "modelMetadata.endpoint must be https:// unless modelMetadata.allowInsecureEndpoint is true" in (
        failure.value.stderr
    )
    insecure["modelMetadata"]["allowInsecureEndpoint"] = True
    assert _env(render(insecure))["HF_ENDPOINT"] == "http://mirror.local"


def test_model_metadata_is_never_learned_in_report_only_mode(render: Any) -> None:
    rendered = render({"reportOnly": True, "modelMetadata": {"enabled": True, "tokenSecret": {"name": "t"}}})
    assert _parse(rendered.args).learn_model_metadata is None
    assert "HF_TOKEN" not in _env(rendered)
    assert not {rule for rule in rendered.rules() if rule[3] == "patch"}


# --- RBAC --------------------------------------------------------------------------------------------------

OME = "ome.io"
READ = {"get", "list", "watch"}


def test_cluster_wide_rbac_is_least_privilege(render: Any) -> None:
    rendered = render(release="prod", namespace="ops")
    configuration = ("prod-ome-selector",)
    secret = ("prod-ome-selector-webhook-tls",)
    expected = {
        ("", OME, plural, verb, ())
        for plural in (
            "basemodels",
            "clusterbasemodels",
            "servingruntimes",
            "clusterservingruntimes",
            "inferenceservices",
        )
        for verb in READ
    } | {
        ("", OME, "inferenceservices/status", "patch", ()),
        ("", "", "events", "create", ()),
        ("", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "get", configuration),
        ("", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "update", configuration),
        ("ops", "", "secrets", "get", secret),
        ("ops", "", "secrets", "update", secret),
        # Leader election: create cannot be limited by name; get and update only the release's own Lease.
        ("ops", "coordination.k8s.io", "leases", "create", ()),
        ("ops", "coordination.k8s.io", "leases", "get", configuration),
        ("ops", "coordination.k8s.io", "leases", "update", configuration),
    }
    assert rendered.rules() == expected
    binding = rendered.one("ClusterRoleBinding", "prod-ome-selector")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prod-ome-selector", "namespace": "ops"}
    ]
    # The startup check hook reads only the release's webhook configuration.
    hook = rendered.one("ClusterRole", "prod-ome-selector-startupcheck")
    assert hook["rules"] == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"],
            "resourceNames": ["prod-ome-selector"],
            "verbs": ["get"],
        }
    ]


def test_namespaced_install_has_roles_per_namespace_and_a_cluster_role_only_for_cluster_kinds(
    render: Any,
) -> None:
    rendered = render({"watchNamespaces": ["team-a", "team-b"]}, release="prod", namespace="ops")
    rules = rendered.rules()
    cluster = {rule[1:] for rule in rules if rule[0] == ""}
    assert {(group, resource) for group, resource, *_ in cluster} == {
        (OME, "clusterbasemodels"),
        (OME, "clusterservingruntimes"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    }
    for namespace in ("team-a", "team-b"):
        scoped = {rule[1:4] for rule in rules if rule[0] == namespace}
        assert scoped == {
            (OME, plural, verb)
            for plural in ("basemodels", "servingruntimes", "inferenceservices")
            for verb in READ
        } | {(OME, "inferenceservices/status", "patch"), ("", "events", "create")}
    bindings = [b for b in rendered.all("RoleBinding") if b["metadata"]["name"] == "prod-ome-selector"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    assert not rendered.all("ClusterRoleBinding")[0]["metadata"]["name"].endswith("ome-selector")


def test_model_metadata_adds_only_patch_on_the_two_model_kinds(render: Any) -> None:
    enabled = {"modelMetadata": {"enabled": True}}
    for values in ({}, {"watchNamespaces": ["team-a", "team-b"]}):
        before = render(values, release="prod", namespace="ops").rules()
        after = render(values | enabled, release="prod", namespace="ops").rules()
        added = after - before
        assert before <= after
        assert {(group, resource, verb, names) for _, group, resource, verb, names in added} == {
            (OME, "basemodels", "patch", ()),
            (OME, "clusterbasemodels", "patch", ()),
        }
        if values:  # namespaced install: basemodels per watched namespace, clusterbasemodels cluster-wide
            assert {(where, resource) for where, _, resource, *_ in added} == {
                ("team-a", "basemodels"),
                ("team-b", "basemodels"),
                ("", "clusterbasemodels"),
            }


def test_report_only_grants_no_writes(render: Any) -> None:
    for values in ({"reportOnly": True}, {"reportOnly": True, "watchNamespaces": ["a"]}):
        verbs = {(rule[2], rule[3]) for rule in render(values).rules()}
        assert ("inferenceservices/status", "patch") not in verbs
        assert ("events", "create") not in verbs
        assert "leases" not in {rule[2] for rule in render(values).rules()}


def test_cert_manager_mode_grants_no_secret_access(render: Any) -> None:
    rendered = render({"webhook": {"certManager": {"enabled": True}}})
    resources = {rule[2] for rule in rendered.rules()}
    assert "secrets" not in resources
    # cainjector keeps the caBundle: no right on the configuration, and the operator is told so.
    assert "validatingwebhookconfigurations" not in resources
    webhook = webhook_config_from_args(_parse(rendered.args))
    assert webhook is not None
    assert webhook.ca_injected is True
    policies = [doc["metadata"]["name"] for doc in rendered.all("ValidatingAdmissionPolicy")]
    assert policies == ["ome-selector-startupcheck-dry-run"]  # no caBundle policy: nothing left to narrow
    roles = render({"webhook": {"enabled": False}}).all("Role")
    names = [
        role["metadata"]["name"]
        for role in roles
        if not role["metadata"]["name"].endswith(HOOK_AND_READER_ROLES)
    ]
    assert names == ["ome-selector-leader-election"]


def test_plugin_reader_cluster_role_is_read_only(render: Any) -> None:
    reader = render(release="prod").one("ClusterRole", "prod-ome-selector-plugin-reader")
    assert reader["rules"] == [
        {
            "apiGroups": ["ome.io"],
            "resources": [
                "basemodels",
                "clusterbasemodels",
                "servingruntimes",
                "clusterservingruntimes",
                "inferenceservices",
            ],
            "verbs": ["get", "list", "watch"],
        }
    ]
    aggregated = render({"rbac": {"pluginReader": {"aggregateToView": True}}}, release="prod")
    labels = aggregated.one("ClusterRole", "prod-ome-selector-plugin-reader")["metadata"]["labels"]
    assert labels["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert not [
        r
        for r in render({"rbac": {"pluginReader": {"create": False}}}).all("ClusterRole")
        if "reader" in r["metadata"]["name"]
    ]


# --- webhook -----------------------------------------------------------------------------------------------


def test_webhook_configuration_matches_the_code_and_spec(render: Any) -> None:
    rendered = render(release="prod", namespace="ops")
    configuration = rendered.one("ValidatingWebhookConfiguration")
    service = rendered.one("Service", "prod-ome-selector-webhook")
    assert service["spec"]["ports"] == [
        {"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
    ]
    webhooks = {webhook["name"]: webhook for webhook in configuration["webhooks"]}
    catalog = [kind for kind in Kind if kind is not Kind.INFERENCE_SERVICE]
    assert set(webhooks) == {webhook_name(kind) for kind in Kind} | {delete_webhook_name(k) for k in catalog}
    # Rendered as the operator registers locally (names, order, rules, policies, conditions): only the
    # clientConfig differs (a Service here, a URL there) and the caBundle, the operator's one field.
    code = build_configuration("x", {"url": "https://h"}, WebhookConfig())["webhooks"]
    assert [w["name"] for w in configuration["webhooks"]] == [w["name"] for w in code]
    for mine, theirs in zip(configuration["webhooks"], code, strict=True):
        local = theirs["name"].startswith("inferenceservices.")  # has-engine: the chart's alone
        drop = ("clientConfig", "namespaceSelector", *(("matchConditions",) if local else ()))
        assert {k: v for k, v in mine.items() if k not in drop} == {
            k: v for k, v in theirs.items() if k not in drop
        }
    for catalog_kind in catalog:
        deleting = webhooks[delete_webhook_name(catalog_kind)]
        # SPEC §7, §12: Ignore within 3 s whatever is configured, never for Kubernetes' own deleters.
        assert (deleting["failurePolicy"], deleting["timeoutSeconds"]) == ("Ignore", 3)
        assert deleting["rules"][0]["operations"] == ["DELETE"]
        assert deleting["matchConditions"] == [
            {
                "name": "not-namespace-or-garbage-collection",
                "expression": "!(request.userInfo.username in "
                "['system:serviceaccount:kube-system:namespace-controller', "
                "'system:serviceaccount:kube-system:generic-garbage-collector'])",
            }
        ]
        assert deleting["clientConfig"] == webhooks[webhook_name(catalog_kind)]["clientConfig"]
        assert ("namespaceSelector" in deleting) == catalog_kind.namespaced
    for kind in Kind:
        webhook = webhooks[webhook_name(kind)]
        assert webhook["clientConfig"] == {
            "service": {
                "name": "prod-ome-selector-webhook",
                "namespace": "ops",
                "port": 443,
                "path": f"/{HANDLER_IDS[kind]}",
            }
        }
        assert webhook["rules"] == [
            {
                "apiGroups": ["ome.io"],
                "apiVersions": ["v1beta1"],
                # SPEC §12: DELETE of the models and runtimes through their own entries.
                "operations": ["CREATE", "UPDATE"],
                "resources": [kind.plural],  # never the status subresource
                "scope": "Namespaced" if kind.namespaced else "Cluster",
            }
        ]
        assert webhook["sideEffects"] == "None"
        assert webhook["admissionReviewVersions"] == ["v1"]
        assert webhook["timeoutSeconds"] == 10
        # The configured policies, as the operator keeps them (SPEC §7: no drift under GitOps).
        assert webhook["failurePolicy"] == ("Fail" if kind is Kind.INFERENCE_SERVICE else "Ignore")
        assert "caBundle" not in webhook["clientConfig"]  # the operator's one field: filled in once it serves
        assert ("namespaceSelector" in webhook) == kind.namespaced
        if kind is Kind.INFERENCE_SERVICE:
            assert webhook["matchConditions"] == [
                {
                    "name": "has-engine",
                    "expression": "object != null && has(object.spec) && has(object.spec.engine)",
                }
            ]
        else:
            assert "matchConditions" not in webhook
    assert "annotations" not in configuration["metadata"]  # the operator fills the caBundle


def test_webhook_policies_timeout_and_namespaces_are_values(render: Any) -> None:
    values = {
        "watchNamespaces": ["team-a"],
        "webhook": {"failurePolicy": "Ignore", "sizesFailurePolicy": "Fail", "timeoutSeconds": 5},
    }
    rendered = render(values)
    webhooks = {w["name"]: w for w in rendered.one("ValidatingWebhookConfiguration")["webhooks"]}
    isvc = webhooks[webhook_name(Kind.INFERENCE_SERVICE)]
    # The policies are rendered as configured (and reach the operator); DELETE entries stay Ignore.
    assert {n: w["failurePolicy"] for n, w in webhooks.items() if "-delete." not in n} == {
        webhook_name(kind): "Ignore" if kind is Kind.INFERENCE_SERVICE else "Fail" for kind in Kind
    }
    assert {w["failurePolicy"] for n, w in webhooks.items() if "-delete." in n} == {"Ignore"}
    assert {"--webhook-failure-policy=Ignore", "--webhook-sizes-failure-policy=Fail"} <= set(rendered.args)
    job = rendered.one("Job", "ome-selector-startupcheck")["spec"]["template"]["spec"]["containers"][0]
    assert "--failure-policy=Ignore" in job["args"]
    assert {"--webhook-failure-policy=Fail", "--webhook-sizes-failure-policy=Ignore"} <= set(render().args)
    assert {n: w["timeoutSeconds"] for n, w in webhooks.items()} == {
        n: 3 if "-delete." in n else 5 for n in webhooks
    }
    assert isvc["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "ome-selector.ome.io/webhook", "operator": "NotIn", "values": ["disabled"]},
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]},
        ]
    }
    # The default values must not be changed by the namespaced merge (deepCopy in the helper).
    default = render().one("ValidatingWebhookConfiguration")["webhooks"][0]["namespaceSelector"]
    assert len(default["matchExpressions"]) == 1


def test_cert_manager_mode(render: Any) -> None:
    rendered = render({"webhook": {"certManager": {"enabled": True}}}, release="prod", namespace="ops")
    certificate = rendered.one("Certificate", "prod-ome-selector-webhook")
    assert certificate["apiVersion"] == "cert-manager.io/v1"
    assert certificate["spec"]["secretName"] == "prod-ome-selector-webhook-tls"
    assert certificate["spec"]["dnsNames"] == [
        "prod-ome-selector-webhook.ops.svc",
        "prod-ome-selector-webhook.ops.svc.cluster.local",
    ]
    assert "isCA" not in certificate["spec"]
    # The chain: self-signed Issuer -> CA Certificate -> CA Issuer -> serving Certificate, so a renewal of the
    # serving certificate keeps the CA that cainjector put into the caBundle.
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": "prod-ome-selector-webhook-ca"}
    issuers = {issuer["metadata"]["name"]: issuer["spec"] for issuer in rendered.all("Issuer")}
    assert issuers == {
        "prod-ome-selector-selfsigned": {"selfSigned": {}},
        "prod-ome-selector-webhook-ca": {"ca": {"secretName": "prod-ome-selector-webhook-ca"}},
    }
    ca = rendered.one("Certificate", "prod-ome-selector-webhook-ca")["spec"]
    assert ca == {
        "isCA": True,
        "commonName": "prod-ome-selector-webhook-ca",
        "secretName": "prod-ome-selector-webhook-ca",
        "duration": "43800h",
        "renewBefore": "8760h",
        "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Never"},
        "issuerRef": {"kind": "Issuer", "name": "prod-ome-selector-selfsigned"},
    }
    annotations = rendered.one("ValidatingWebhookConfiguration")["metadata"]["annotations"]
    assert annotations == {"cert-manager.io/inject-ca-from": f"ops/{certificate['metadata']['name']}"}
    assert not rendered.all("Secret")
    volume = next(
        v
        for v in rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]
        if v["name"] == "webhook-certs"
    )
    assert volume == {"name": "webhook-certs", "secret": {"secretName": "prod-ome-selector-webhook-tls"}}
    webhook = webhook_config_from_args(_parse(rendered.args))
    assert webhook is not None
    assert webhook.cert_secret is None
    assert str(webhook.cert_dir) == CERT_DIR
    external = render(
        {
            "webhook": {
                "certManager": {"enabled": True, "issuerRef": {"kind": "ClusterIssuer", "name": "corp-ca"}}
            }
        }
    )
    assert not external.all("Issuer")
    assert external.one("Certificate")["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "corp-ca"}
    assert external.one("Certificate")["metadata"]["name"] == "ome-selector-webhook"


def test_webhook_disabled_renders_no_webhook_objects(render: Any) -> None:
    rendered = render({"webhook": {"enabled": False}})
    assert not rendered.all("ValidatingWebhookConfiguration")
    assert not rendered.all("Secret")
    assert [s["metadata"]["name"] for s in rendered.all("Service")] == ["ome-selector-metrics"]
    assert not any(arg.startswith("--webhook") for arg in rendered.args)


# --- metrics -----------------------------------------------------------------------------------------------


def test_service_monitor_and_prometheus_rule(render: Any) -> None:
    """(Every alert's rule: tests/packaging/test_monitoring.py.)"""
    rendered = render(
        {"metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}},
        namespace="ops",
    )
    monitor = rendered.one("ServiceMonitor")
    metrics_service = rendered.one("Service", "ome-selector-metrics")
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= metrics_service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == metrics_service["spec"]["ports"][0]["name"] == "metrics"
    rules = rendered.one("PrometheusRule")["spec"]["groups"][0]["rules"]
    (rule,) = [rule for rule in rules if rule["alert"] == "OmeSelectorRuntimeNotReady"]
    assert rule["for"] == "10m"
    assert rule["expr"] == (
        'max by (reason) (ome_selector_inferenceservices{job="ome-selector-metrics",namespace="ops",'
        'status="False"}) > 0'
    )
    gauges = {family.name for family in Metrics().registry.collect()}
    assert "ome_selector_inferenceservices" in gauges
    assert not render().all("ServiceMonitor")
    assert not render().all("PrometheusRule")


# --- CRDs and the plain install ----------------------------------------------------------------------------


def test_no_crds_by_default_and_never_in_a_render_that_cannot_see_the_cluster(render: Any) -> None:
    """SPEC §1: static renders (Argo CD, Flux, `helm template | kubectl apply`) must never replace OME's CRDs.
    With crds.install=true the chart needs `lookup`, which `helm template` cannot do: it fails instead.
    tests/integration/test_chart.py renders them against a cluster."""
    assert not render().all("CustomResourceDefinition")
    with pytest.raises(subprocess.CalledProcessError) as failed:
        render({"crds": {"install": True}})
    assert (
        "crds.install=true needs the cluster, to check that no CRD of OME's is replaced, and "
        "`helm template` (or a GitOps render) cannot read it. For a static render keep crds.install=false "
        "and create the CRDs once with `kubectl create -f manifests/crds/` (create never replaces an "
        "existing CRD); beside OME, install none."
    ) in failed.value.stderr


def test_chart_crd_copies_and_install_manifest_are_in_sync(helm: Path) -> None:
    stale = [
        str(path.relative_to(chart.REPO_ROOT))
        for path, content in chart.expected_files(helm).items()
        if not path.is_file() or path.read_bytes() != content
    ]
    extra = {p.name for p in chart.CHART_CRDS.glob("*.yaml")} - {
        p.name for p in chart.CRD_SOURCE.glob("*.yaml")
    }
    assert not stale + sorted(extra), f"out of date: {stale + sorted(extra)}; run `make manifests`"


def test_install_manifest_is_the_default_render_plus_its_namespace() -> None:
    docs = [doc for doc in yaml.safe_load_all(chart.INSTALL_MANIFEST.read_text()) if doc]
    assert docs[0] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "ome-selector",
            "labels": {"app.kubernetes.io/name": "ome-selector", "app.kubernetes.io/part-of": "ome-selector"},
        },
    }
    kinds = {doc["kind"] for doc in docs}
    assert kinds >= {"Deployment", "ValidatingWebhookConfiguration"}
    assert "CustomResourceDefinition" not in kinds  # never OME's replaced by `kubectl apply` (SPEC §1)


# --- image, hooks, reachability, proxies, budget (README of the chart) ------------------------------------


def _pod(rendered: Rendered, kind: str = "Deployment", name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = rendered.one(kind, name)["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ({}, "ghcr.io/ome-selector/ome-selector:0.1.0"),
        ({"tag": "0.2.0"}, "ghcr.io/ome-selector/ome-selector:0.2.0"),
        (
            {"registry": "mirror.example:5000", "tag": "dev"},
            "mirror.example:5000/ome-selector/ome-selector:dev",
        ),
        ({"registry": "", "repository": "localhost/ome-selector"}, "localhost/ome-selector:0.1.0"),
        (
            {"tag": "0.2.0", "digest": "sha256:" + "a" * 64},
            "ghcr.io/ome-selector/ome-selector@sha256:" + "a" * 64,
        ),
    ],
)
def test_image_reference_and_a_digest_over_the_tag(render: Any, image: dict[str, str], expected: str) -> None:
    rendered = render({"image": image})
    images = {
        container["image"]
        for kind in ("Deployment", "Job")
        for doc in rendered.all(kind)
        for container in doc["spec"]["template"]["spec"]["containers"]
    }
    assert images == {expected}  # the operator and both hook Jobs run the same image


def test_bad_image_digest_is_refused(helm: Path) -> None:
    with pytest.raises(subprocess.CalledProcessError) as failure:
        chart.render({"image": {"digest": "latest"}}, helm=helm)
    assert "/image/digest" in failure.value.stderr


HOOK_SCHEDULING = {
    "nodeSelector": {"pool": "system"},
    "tolerations": [{"key": "pool", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
    "priorityClassName": "hooks",
    "podLabels": {"team": "ml"},
    "podAnnotations": {"example.com/note": "hook"},
}


def test_hook_pods_are_scheduled_by_their_values_and_kept_sidecar_free(render: Any) -> None:
    default = render(release="prod", namespace="ops")
    for job in ("prod-ome-selector-startupcheck", "prod-ome-selector-cleanup"):
        template = default.one("Job", job)["spec"]["template"]
        # No sidecar injection by default: a sidecar that never exits keeps the Job from completing.
        assert template["metadata"]["labels"]["sidecar.istio.io/inject"] == "false"
        assert template["metadata"]["annotations"] == {"linkerd.io/inject": "disabled"}
        pod = template["spec"]
        assert not {"nodeSelector", "tolerations", "affinity", "priorityClassName"} & set(pod)
        assert pod["containers"][0]["resources"] == {
            "requests": {"cpu": "10m", "memory": "64Mi"},
            "limits": {"memory": "128Mi"},
        }
    # Not the operator's selector labels: its Services, budget and the cleanup's wait would count the pod.
    selector = default.one("Deployment")["spec"]["selector"]["matchLabels"]
    for job in default.all("Job"):
        labels = job["spec"]["template"]["metadata"]["labels"]
        assert not selector.items() <= labels.items(), job["metadata"]["name"]
        assert labels["app.kubernetes.io/instance"] == "prod"
    scheduled = render({"hooks": HOOK_SCHEDULING, "imagePullSecrets": [{"name": "pull"}]}, release="prod")
    for job in ("prod-ome-selector-startupcheck", "prod-ome-selector-cleanup"):
        template = scheduled.one("Job", job)["spec"]["template"]
        pod = template["spec"]
        assert pod["nodeSelector"] == {"pool": "system"}
        assert pod["tolerations"] == HOOK_SCHEDULING["tolerations"]
        assert pod["affinity"] == HOOK_SCHEDULING["affinity"]
        assert pod["priorityClassName"] == "hooks"
        assert pod["imagePullSecrets"] == [{"name": "pull"}]
        labels = template["metadata"]["labels"]
        assert labels["team"] == "ml"
        assert labels["sidecar.istio.io/inject"] == "false"  # the default map merges with the value
        assert template["metadata"]["annotations"] == {
            "linkerd.io/inject": "disabled",
            "example.com/note": "hook",
        }
    # The operator's pods are not affected by hooks.*.
    assert "nodeSelector" not in _pod(scheduled)


def test_hook_pods_fall_back_to_the_operators_placement(render: Any) -> None:
    values = {
        "nodeSelector": {"pool": "ops"},
        "tolerations": [{"key": "ops", "operator": "Exists"}],
        "priorityClassName": "system-cluster-critical",
    }
    for job in render(values).all("Job"):
        pod = job["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"pool": "ops"}
        assert pod["tolerations"] == [{"key": "ops", "operator": "Exists"}]
        assert pod["priorityClassName"] == "system-cluster-critical"


def test_cleanup_hook_runs_ome_selector_cleanup_with_just_the_rights_it_needs(render: Any) -> None:
    rendered = render(release="prod", namespace="ops")
    job = rendered.one("Job", "prod-ome-selector-cleanup")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-delete"
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == render().container["image"]
    assert container["command"] == ["ome-selector"]
    args = _parser().parse_args(container["args"])
    assert args.command == "cleanup"
    assert args.conditions_only is True
    assert args.stop_deployment == ("ops", rendered.one("Deployment")["metadata"]["name"])
    # First of all: the release's webhooks fail open, so no fail-closed webhook outlives the operator.
    (configuration,) = rendered.all("ValidatingWebhookConfiguration")
    assert args.disarm_webhook == configuration["metadata"]["name"]
    assert args.delete_lease == ("ops", _parse(rendered.args).leader_election_id)
    assert args.namespaces is None
    assert args.timeout == 120.0
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "prod-ome-selector-cleanup"
    for doc in rendered.docs:
        if doc["metadata"]["name"].startswith("prod-ome-selector-cleanup"):
            assert doc["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete", doc["kind"]
    own = ("prod-ome-selector",)
    assert rendered.one("Role", "prod-ome-selector-cleanup")["rules"] == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": list(own), "verbs": ["get"]},
        {
            "apiGroups": ["apps"],
            "resources": ["deployments/scale"],
            "resourceNames": list(own),
            "verbs": ["patch"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": list(own),
            "verbs": ["delete"],
        },
    ]
    conditions = [
        {"apiGroups": ["ome.io"], "resources": ["inferenceservices"], "verbs": ["get", "list"]},
        {"apiGroups": ["ome.io"], "resources": ["inferenceservices/status"], "verbs": ["patch"]},
    ]
    assert rendered.one("ClusterRole", "prod-ome-selector-cleanup")["rules"] == conditions
    assert rendered.one("ClusterRole", "prod-ome-selector-cleanup-webhook")["rules"] == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"],
            "resourceNames": [configuration["metadata"]["name"]],
            "verbs": ["get", "update"],
        }
    ]
    binding = rendered.one("ClusterRoleBinding", "prod-ome-selector-cleanup-webhook")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prod-ome-selector-cleanup", "namespace": "ops"}
    ]
    # Without a webhook there is nothing to disarm, and no right to do it.
    unhooked = render({"webhook": {"enabled": False}}, release="prod", namespace="ops")
    unhooked_args = unhooked.one("Job", "prod-ome-selector-cleanup")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert _parser().parse_args(unhooked_args["args"]).disarm_webhook is None
    assert not [r for r in unhooked.all("ClusterRole") if r["metadata"]["name"].endswith("-cleanup-webhook")]
    # A namespaced install: the conditions per watched namespace, no cluster-wide right.
    namespaced = render({"watchNamespaces": ["team-a", "team-b"]}, release="prod", namespace="ops")
    args = _parser().parse_args(
        namespaced.one("Job", "prod-ome-selector-cleanup")["spec"]["template"]["spec"]["containers"][0][
            "args"
        ]
    )
    assert args.namespaces == ["team-a", "team-b"]
    assert not [r for r in namespaced.all("ClusterRole") if r["metadata"]["name"].endswith("-cleanup")]
    roles = [
        r for r in namespaced.all("Role") if r["metadata"]["name"] == "prod-ome-selector-cleanup-conditions"
    ]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    assert all(r["rules"] == conditions for r in roles)
    # Off by value; and report-only writes neither conditions nor a Lease, so there is nothing to clean.
    for values in ({"cleanup": {"enabled": False}}, {"reportOnly": True}):
        assert not [
            d
            for d in render(values).docs
            if d["metadata"]["name"].endswith(("-cleanup", "-cleanup-conditions", "-cleanup-webhook"))
        ]


@pytest.mark.parametrize(("values", "lookup"), [({}, "v1.3"), ({"runtimeLookup": "legacy"}, "legacy")])
def test_the_runtime_lookup_value_is_the_flag(render: Any, values: dict[str, Any], lookup: str) -> None:
    # SPEC §8: the chart value runtimeLookup is `ome-selector run --runtime-lookup` (default v1.3).
    assert _parse(render(values).args).runtime_lookup == lookup


def test_client_certificates_and_confirmation_rate_become_arguments(render: Any) -> None:
    values = {
        "webhook": {
            "clientAuth": {
                "mode": "required",
                "allowedNames": ["kube-apiserver-webhook-client", "apiserver"],
            },
            "confirmations": {"perSecond": 5, "burst": 8},
        }
    }
    rendered = render(values)
    webhook = webhook_config_from_args(_parse(rendered.args))
    assert webhook is not None
    assert str(webhook.client_ca_file) == "/var/run/ome-selector/webhook-client-ca/ca.crt"
    assert webhook.client_names == ("kube-apiserver-webhook-client", "apiserver")
    assert webhook.client_cert_optional is False
    assert (webhook.confirmations_per_second, webhook.confirmation_burst) == (5.0, 8)
    spec = rendered.one("Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in spec["volumes"] if v["name"] == "webhook-client-ca")
    assert volume["configMap"] == {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}
    mount = next(m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "webhook-client-ca")
    assert mount["mountPath"] == "/var/run/ome-selector/webhook-client-ca"
    assert mount["readOnly"] is True
    # By default the certificate is asked for, not required: verified, the API server is told every name;
    # anyone else only counts for other namespaces (SPEC §12).
    default = webhook_config_from_args(_parse(render().args))
    assert default is not None
    assert str(default.client_ca_file) == "/var/run/ome-selector/webhook-client-ca/ca.crt"
    assert (default.client_names, default.client_cert_optional) == (("kube-apiserver-kubelet-client",), True)
    assert (default.confirmations_per_second, default.confirmation_burst) == (20.0, 40)
    off = render({"webhook": {"clientAuth": {"mode": "off"}}})
    unverified = webhook_config_from_args(_parse(off.args))
    assert unverified is not None
    assert (unverified.client_ca_file, unverified.client_names) == (None, ())
    volumes = off.one("Deployment")["spec"]["template"]["spec"]["volumes"]
    assert "webhook-client-ca" not in {v["name"] for v in volumes}


def test_admission_policies_bind_only_the_operator_account(render: Any) -> None:
    rendered = render({"modelMetadata": {"enabled": True}}, release="prod", namespace="ops")
    names = sorted(doc["metadata"]["name"] for doc in rendered.all("ValidatingAdmissionPolicy"))
    assert names == [
        "prod-ome-selector-learned-fields",
        "prod-ome-selector-startupcheck-dry-run",
        "prod-ome-selector-webhook-ca-bundle",
    ]
    bindings = {doc["spec"]["policyName"] for doc in rendered.all("ValidatingAdmissionPolicyBinding")}
    assert bindings == set(names)
    operator = "request.userInfo.username == 'system:serviceaccount:ops:prod-ome-selector'"
    for name in ("prod-ome-selector-learned-fields", "prod-ome-selector-webhook-ca-bundle"):
        spec = rendered.one("ValidatingAdmissionPolicy", name)["spec"]
        assert spec["matchConditions"] == [{"name": "the-operator", "expression": operator}]
        assert spec["failurePolicy"] == "Fail"
        assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["UPDATE"]
    ca_bundle = rendered.one("ValidatingAdmissionPolicy", "prod-ome-selector-webhook-ca-bundle")["spec"]
    assert ca_bundle["matchConstraints"]["resourceRules"][0]["resourceNames"] == ["prod-ome-selector"]
    assert not render({"rbac": {"admissionPolicy": {"enabled": False}}}).all("ValidatingAdmissionPolicy")
    report_only = render({"modelMetadata": {"enabled": True}, "reportOnly": True})
    assert "ome-selector-learned-fields" not in {
        doc["metadata"]["name"] for doc in report_only.all("ValidatingAdmissionPolicy")
    }


def test_token_namespaces_become_arguments(render: Any) -> None:
    values = {"modelMetadata": {"enabled": True, "tokenNamespaces": ["team-a", "team-b"]}}
    assert _parse(render(values).args).token_namespace == ["team-a", "team-b"]
    assert _parse(render({"modelMetadata": {"enabled": True}}).args).token_namespace == []


def test_webhook_port_host_network_and_dns_policy(render: Any) -> None:
    rendered = render({"webhook": {"port": 10250}})
    ports = {port["name"]: port["containerPort"] for port in rendered.container["ports"]}
    assert ports["webhook"] == 10250
    webhook = webhook_config_from_args(_parse(rendered.args))
    assert webhook is not None
    assert webhook.bind_address == ("0.0.0.0", 10250)
    # The Service still listens on 443 and forwards to the named port.
    service = rendered.one("Service", "ome-selector-webhook")
    assert service["spec"]["ports"][0]["targetPort"] == "webhook"
    assert not {"hostNetwork", "dnsPolicy"} & set(_pod(render()))
    host = _pod(render({"hostNetwork": True, "webhook": {"port": 10260}, "metrics": {"port": 10261}}))
    assert host["hostNetwork"] is True
    assert host["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert _pod(render({"hostNetwork": True, "dnsPolicy": "Default"}))["dnsPolicy"] == "Default"


def test_proxy_values_keep_the_api_server_direct(render: Any) -> None:
    assert not {"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"} & set(_env(render()))
    env = _env(render({"proxy": {"httpsProxy": "http://proxy:3128", "noProxy": ".corp,10.0.0.0/8"}}))
    assert env["HTTPS_PROXY"] == "http://proxy:3128"
    assert "HTTP_PROXY" not in env
    # $(KUBERNETES_SERVICE_HOST) is expanded by the kubelet: the in-cluster API server address.
    assert (
        env["NO_PROXY"]
        == "$(KUBERNETES_SERVICE_HOST),.svc,.cluster.local,localhost,127.0.0.1,.corp,10.0.0.0/8"
    )


def test_model_metadata_ca_bundle_and_extra_env_and_volumes(render: Any) -> None:
    values = {
        "modelMetadata": {"enabled": True, "caBundle": {"configMapName": "corp-ca", "key": "bundle.pem"}},
        "extraEnv": [{"name": "HF_HUB_ETAG_TIMEOUT", "value": "30"}],
        "extraVolumes": [{"name": "scratch", "emptyDir": {}}],
        "extraVolumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    }
    rendered = render(values)
    env = _env(rendered)
    assert env["SSL_CERT_FILE"] == "/etc/ome-selector/model-metadata-ca/bundle.pem"
    assert env["HF_HUB_ETAG_TIMEOUT"] == "30"
    mounts = {mount["name"]: mount for mount in rendered.container["volumeMounts"]}
    assert mounts["model-metadata-ca"] == {
        "name": "model-metadata-ca",
        "mountPath": "/etc/ome-selector/model-metadata-ca",
        "readOnly": True,
    }
    assert mounts["scratch"] == {"name": "scratch", "mountPath": "/scratch"}
    volumes = {volume["name"]: volume for volume in _pod(rendered)["volumes"]}
    assert volumes["model-metadata-ca"]["configMap"] == {
        "name": "corp-ca",
        "items": [{"key": "bundle.pem", "path": "bundle.pem"}],
    }
    assert volumes["scratch"] == {"name": "scratch", "emptyDir": {}}
    # Without learning (or in report-only mode) there is no Hub client to trust the bundle.
    off = render({"modelMetadata": {"caBundle": {"configMapName": "corp-ca"}}})
    assert "SSL_CERT_FILE" not in _env(off)
    assert "model-metadata-ca" not in {volume["name"] for volume in _pod(off)["volumes"]}


def test_pod_disruption_budget_only_when_it_can_be_satisfied(render: Any, helm: Path) -> None:
    assert not render({"replicaCount": 1}).all("PodDisruptionBudget")
    budget = render({"replicaCount": 3, "podDisruptionBudget": {"maxUnavailable": 1}}).one(
        "PodDisruptionBudget"
    )
    assert budget["spec"]["maxUnavailable"] == 1
    assert "minAvailable" not in budget["spec"]
    percent = render({"replicaCount": 3, "podDisruptionBudget": {"maxUnavailable": "50%"}})
    assert percent.one("PodDisruptionBudget")["spec"]["maxUnavailable"] == "50%"
    with pytest.raises(subprocess.CalledProcessError) as failure:
        chart.render({"replicaCount": 2, "podDisruptionBudget": {"minAvailable": 2}}, helm=helm)
    assert (
        "podDisruptionBudget.minAvailable (2) must be below replicaCount (2): "
        "no node running a replica could be drained" in failure.value.stderr
    )
