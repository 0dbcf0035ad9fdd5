"""Beside OME (SPEC §0): a representative subset of the suite, run on OME's own CRDs (see conftest.py),
and the chart installed on top of them.

The imported tests run here a second time, with this directory's `control_plane` (OME's CRDs): conditions and
events (every §5 row the CRDs can hold), the webhook's denials, the impact of catalog changes (SPEC §12: the
warnings and the protection's denial), explain live against offline (two cases,
conftest.py deselects the others),
`kubectl ome-selector status`, cleanup beside another writer of RuntimeReady, `spec.replicaRefs` (which OME's
CRDs prune), and the samples. A subset: OME's CRDs
cost the control plane seconds to install, and the other tests read nothing the CRDs change.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from harness import chart, objects
from harness.controlplane import ControlPlane
from harness.crds import CRD_NAMES, ome_crd_documents
from harness.kube import create, eventually, get
from harness.ome_data import V13_CRD_PROFILES, OmeSnapshot
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import InferenceService
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.outcome import evaluate
from tests.integration import test_explain_live
from tests.integration.test_catalog_impact import (
    test_create_apply_and_delete_print_the_impact_and_the_new_ambiguity,
    test_protection_denies_until_the_object_is_annotated,
)
from tests.integration.test_operator import test_every_outcome_row_with_its_condition_and_event
from tests.integration.test_operator_surface import (
    test_cleanup_keeps_a_condition_another_writer_owns_and_says_so,
)
from tests.integration.test_operator_v5 import test_an_inference_service_with_replica_refs_on_either_crds
from tests.integration.test_samples_apply import (
    applied,
    test_every_sample_is_accepted_in_file_order,
    test_v13_samples_apply_only_where_the_crds_have_the_fields,
)
from tests.integration.test_status_live import test_status_lists_every_inference_service_on_either_crds
from tests.integration.test_webhook import kubectl, test_denials_carry_the_exact_messages, webhook

__all__ = [
    "applied",
    "kubectl",
    "samples_applied",
    "test_an_inference_service_with_replica_refs_on_either_crds",
    "test_cleanup_keeps_a_condition_another_writer_owns_and_says_so",
    "test_create_apply_and_delete_print_the_impact_and_the_new_ambiguity",
    "test_denials_carry_the_exact_messages",
    "test_every_outcome_row_with_its_condition_and_event",
    "test_every_sample_is_accepted_in_file_order",
    "test_live_equals_offline",
    "test_protection_denies_until_the_object_is_annotated",
    "test_status_lists_every_inference_service_on_either_crds",
    "test_v13_samples_apply_only_where_the_crds_have_the_fields",
    "webhook",
]

CHART_TIMEOUT_S = 120


def _crd_state(control_plane: ControlPlane, snapshot: OmeSnapshot) -> dict[str, dict[str, Any]]:
    """What an install could change on a CRD: its resourceVersion, labels, annotations, its managers, and
    whether its schema is still the one the snapshot publishes."""
    published = _published(snapshot)
    listed = json.loads(control_plane.kubectl("get", "crd", *CRD_NAMES, "-o", "json").stdout)["items"]
    return {
        crd["metadata"]["name"]: {
            "resourceVersion": crd["metadata"]["resourceVersion"],
            "labels": crd["metadata"].get("labels"),
            "annotations": crd["metadata"].get("annotations"),
            "managers": sorted({entry["manager"] for entry in crd["metadata"].get("managedFields", [])}),
            "spec": crd["spec"]["versions"][0]["schema"] == published[crd["metadata"]["name"]],
        }
        for crd in listed
    }


@functools.cache
def _published(snapshot: OmeSnapshot) -> dict[str, Any]:
    documents = ome_crd_documents(snapshot.crds)
    return {doc["metadata"]["name"]: doc["spec"]["versions"][0]["schema"] for doc in documents}


def _helm(control_plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return chart.helm_against(control_plane.kubeconfig, *args, timeout=CHART_TIMEOUT_S)


@pytest.fixture
def release(control_plane: ControlPlane) -> Iterator[list[str]]:
    """(name, namespace) pairs of releases a test installs; uninstalled afterwards."""
    installed: list[str] = []
    yield installed
    for name in installed:  # no controller-manager runs the pre-delete cleanup Job here: without hooks
        _helm(control_plane, "uninstall", name, "--namespace", name, "--wait=false", "--no-hooks")


def test_the_control_plane_has_omes_crds(control_plane: ControlPlane, ome_snapshot: OmeSnapshot) -> None:
    assert all(state["spec"] for state in _crd_state(control_plane, ome_snapshot).values())
    assert (ome_snapshot.crds / "LICENSE").is_file()
    assert ome_snapshot.commit in (ome_snapshot.crds / "README.md").read_text()


def test_helm_install_beside_omes_crds_emits_replaces_relabels_and_adopts_none(
    control_plane: ControlPlane, release: list[str], ome_snapshot: OmeSnapshot
) -> None:
    before = _crd_state(control_plane, ome_snapshot)
    release.append("beside")
    installed = _helm(
        control_plane,
        "install",
        "beside",
        str(chart.CHART_DIR),
        "--namespace=beside",
        "--create-namespace",
        "--set=webhook.startupCheck.enabled=false",  # no kubelet here: its Job would never run
    )
    assert installed.returncode == 0, installed.stderr
    # NOTES say what works with the CRDs installed: OME's have no RuntimeReady column.
    assert "  kubectl ome-selector status -A -o wide  " in installed.stdout
    assert (
        "# OME's InferenceService CRD is installed: `kubectl get inferenceservices` has no RuntimeReady"
        in (installed.stdout)
    )
    assert "kubectl get inferenceservices -A -o wide" not in installed.stdout
    manifest = _helm(control_plane, "get", "manifest", "beside", "--namespace=beside").stdout
    kinds = {doc["kind"] for doc in yaml.safe_load_all(manifest) if doc}
    assert "Deployment" in kinds
    assert "CustomResourceDefinition" not in kinds
    # A second release that asks for CRDs fails, naming the first CRD of OME's it met, and changes nothing.
    release.append("standalone")
    refused = _helm(
        control_plane,
        "install",
        "standalone",
        str(chart.CHART_DIR),
        "--namespace=standalone",
        "--create-namespace",
        "--set=crds.install=true",
        "--set=webhook.startupCheck.enabled=false",
    )
    assert refused.returncode != 0
    assert (
        "CustomResourceDefinition basemodels.ome.io already exists and was not installed by ome-selector"
    ) in refused.stderr
    upgraded = _helm(
        control_plane,
        "upgrade",
        "beside",
        str(chart.CHART_DIR),
        "--namespace=beside",
        "--set=webhook.startupCheck.enabled=false",
        "--set=reportOnly=true",
    )
    assert upgraded.returncode == 0, upgraded.stderr
    uninstalled = _helm(control_plane, "uninstall", "beside", "--namespace=beside")
    assert uninstalled.returncode == 0, uninstalled.stderr
    assert _crd_state(control_plane, ome_snapshot) == before


def test_a_failed_install_leaves_the_webhook_unarmed_and_catalog_writes_pass(
    control_plane: ControlPlane, api_client: Any, namespace: str, release: list[str]
) -> None:
    """No pod ever runs here (no scheduler, no kubelet): `helm install --wait` fails, as an install whose
    image cannot be pulled does. The configuration it leaves is rendered as configured (SPEC §7: no drift for
    GitOps) and unarmed, with no caBundle: model and runtime writes pass (their webhooks are Ignore), an
    InferenceService the webhook judges is refused until a replica serves, and the runbook's first
    break-glass step (a namespace opting out) lets it through."""
    release.append("failed")
    failed = _helm(
        control_plane,
        "install",
        "failed",
        str(chart.CHART_DIR),
        "--namespace=failed",
        "--create-namespace",
        "--wait",
        "--timeout=3s",  # nothing runs a pod here: any wait times out
        # Only this test's namespace: no other test's InferenceService meets the unarmed webhook.
        f"--set=webhook.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name={namespace}",
    )
    assert failed.returncode != 0
    configuration = json.loads(
        control_plane.kubectl(
            "get", "validatingwebhookconfiguration", "failed-ome-selector", "-o", "json"
        ).stdout
    )
    policies = {webhook["name"]: webhook["failurePolicy"] for webhook in configuration["webhooks"]}
    assert policies.pop("inferenceservices.ome-selector.ome.io") == "Fail"
    assert set(policies.values()) == {"Ignore"}
    assert not any(webhook["clientConfig"].get("caBundle") for webhook in configuration["webhooks"])
    create(api_client, objects.runtime("written-rt", namespace=namespace))
    engine = {"minReplicas": 1}  # what the InferenceService webhook judges
    isvc = objects.inference_service("written", namespace=namespace, model_name="x", engine=engine)
    refused = control_plane.kubectl("create", "-f", "-", input=json.dumps(isvc), check=False)
    assert "failed calling webhook" in refused.stderr, refused.stderr
    control_plane.kubectl("label", "namespace", namespace, "ome-selector.ome.io/webhook=disabled")
    eventually(
        lambda: (
            control_plane.kubectl("create", "-f", "-", input=json.dumps(isvc), check=False).returncode == 0
        ),
        what="the InferenceService written once its namespace opted out",
    )


def test_omes_runtime_fields_as_the_cluster_stores_them(
    control_plane: ControlPlane, api_client: Any, namespace: str, crd_profile: str
) -> None:
    """OME's InferenceService CRD since 5e4857e has spec.runtime.autoSync (default true),
    spec.runtime.revision and spec.deploymentMode: the stored objects (with the CRD's defaults) load as the
    product reads them (SPEC §1): absent autoSync is stored true and counts as true, a pinned one with a
    revision is pinned (the advisory not repeated), and revision itself is not read. OME's CRD at cfa05c6
    refuses the fields."""
    model = objects.model("m", namespace=namespace, size="70B")
    runtime = objects.runtime("rt", namespace=namespace, size_range=("1B", "8B"))
    synced = objects.inference_service("synced", namespace=namespace, model_name="m", runtime_name="rt")
    pinned = objects.inference_service(
        "pinned", namespace=namespace, model_name="m", runtime_name="rt", auto_sync=False
    )
    pinned["spec"]["runtime"] |= {"kind": "ServingRuntime", "revision": "rt-5c9d7f"}
    pinned["spec"]["deploymentMode"] = "RawDeployment"
    document = yaml.safe_dump_all([synced, pinned])
    created = control_plane.kubectl("create", "--validate=strict", "-f", "-", input=document, check=False)
    if crd_profile not in V13_CRD_PROFILES:
        assert created.returncode != 0
        assert 'unknown field "spec.runtime.autoSync"' in created.stderr, created.stderr
        assert 'unknown field "spec.runtime.revision"' in created.stderr, created.stderr
        assert 'unknown field "spec.deploymentMode"' in created.stderr, created.stderr
        return
    assert created.returncode == 0, created.stderr
    stored = {name: get(api_client, "InferenceService", name, namespace) for name in ("synced", "pinned")}
    assert stored["synced"]["spec"]["runtime"] == {
        "name": "rt",
        "kind": "ClusterServingRuntime",
        "apiGroup": "ome.io",
        "autoSync": True,
    }
    assert stored["pinned"]["spec"]["runtime"]["revision"] == "rt-5c9d7f"
    catalog = Catalog.from_resources(
        [resource for body in (model, runtime) if (resource := load_resource(body)) is not None]
    )
    synced_isvc, pinned_isvc = load_resource(stored["synced"]), load_resource(stored["pinned"])
    assert isinstance(synced_isvc, InferenceService)
    assert isinstance(pinned_isvc, InferenceService)
    assert (synced_isvc.auto_sync, pinned_isvc.auto_sync) == (True, False)
    assert pinned_isvc.raw_deployment_modes == ("RawDeployment", "RawDeployment")
    unsupported = "model size 70B is outside supported range [1B, 8B]"
    synced_outcome, pinned_outcome = evaluate(catalog, synced_isvc), evaluate(catalog, pinned_isvc)
    assert synced_outcome is not None
    assert pinned_outcome is not None
    message = f"using specified ServingRuntime rt; it does not declare support for model m: {unsupported}"
    assert synced_outcome.message == pinned_outcome.message == message
    advisory = f"runtime rt does not declare support for model m: {unsupported}"
    assert synced_outcome.advisory == pinned_outcome.advisory == advisory
    assert synced_outcome.event is not None  # RuntimeCompatibilityAdvisory
    assert pinned_outcome.event is None  # pinned: not repeated (SPEC §5)


# Collected last (pytest takes a module's tests in the order its names were bound): the module-scoped samples
# stay until the module ends, and their ClusterServingRuntimes would serve the outcome test's model "huge",
# which no runtime may serve there.
samples_applied = test_explain_live.samples_applied
test_live_equals_offline = test_explain_live.test_live_equals_offline
