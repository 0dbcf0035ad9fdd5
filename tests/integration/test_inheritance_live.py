"""SPEC v4 on the real control plane: the RuntimeReady rows of broken chains, of runtimes found by kind and
of InferenceServices without a model; a parent's edit and an annotation change (the generation stays)
reaching the InferenceServices of a child; the webhook's v4 texts through `kubectl`."""

from __future__ import annotations

import subprocess
from collections import Counter
from typing import Any

import pytest
import yaml

from harness import objects
from harness.controlplane import ControlPlane
from harness.kube import create, events_for, eventually, get, patch, runtime_ready
from harness.operator_thread import OperatorThread
from ome_selector.webhook.config import WebhookConfig

ISVC_WEBHOOK = "inferenceservices.ome-selector.ome.io"


def child(name: str, namespace: str, parent: str, **spec: Any) -> dict[str, Any]:
    """A ServingRuntime that inherits from ``parent`` and sets only ``spec``."""
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"ome.io/inherit-from": parent}},
        "spec": spec,
    }


def isvc(name: str, namespace: str, *, model: str | None = "llama", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if model is not None:
        body["model"] = {"name": model}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def _condition(api_client: Any, namespace: str, name: str, reason: str, message: str | None = None) -> Any:
    def probe() -> dict[str, Any] | None:
        condition = runtime_ready(api_client, name, namespace)
        if not condition or condition["reason"] != reason:
            return None
        return condition if message is None or condition["message"] == message else None

    return eventually(probe, what=f"{namespace}/{name} RuntimeReady {reason} {message or ''}")


def test_the_v4_rows_with_their_conditions_and_events(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    ns = namespace
    broken = 'inherit-from parent "gone" not found (chain so far: [child-broken])'
    for body in (
        objects.model("llama", namespace=ns, size="3.21B"),
        objects.runtime("rt-fit", namespace=ns, size_range=("2B", "4B")),
        objects.runtime("base-off", namespace=ns, disabled=True),
        child("child-broken", ns, "gone"),
        child("child-off", ns, "base-off"),
        isvc("broken", ns, runtime={"name": "child-broken"}),
        isvc("broken-pinned", ns, runtime={"name": "child-broken", "autoSync": False}),
        isvc("inherited-disabled", ns, runtime={"name": "child-off"}),
        isvc("kind-serving-runtime", ns, runtime={"name": "nope", "kind": "ServingRuntime"}),
        isvc("modelless", ns, model=None, runtime={"name": "rt-fit"}),
        isvc("modelless-missing", ns, model=None, runtime={"name": "nope"}),
    ):
        create(api_client, body)
    runner: OperatorThread = running_operator()
    rows = {
        "broken": (
            "False",
            "RuntimeInheritanceError",
            f"runtime child-broken cannot be resolved: {broken}",
            "RuntimeInheritanceError",
        ),
        "broken-pinned": (
            "True",
            "RuntimeSpecified",
            f"using specified ServingRuntime child-broken; live runtime cannot be resolved: {broken}",
            None,
        ),
        "inherited-disabled": (
            "False",
            "RuntimeDisabled",
            "namespace-scoped runtime child-off is disabled",
            "RuntimeDisabled",
        ),
        "kind-serving-runtime": (
            "False",
            "RuntimeNotFound",
            f"ServingRuntime nope not found in namespace {ns}",
            "RuntimeNotFound",
        ),
        "modelless": ("True", "RuntimeSpecified", "using specified ServingRuntime rt-fit", None),
        "modelless-missing": (
            "False",
            "RuntimeNotFound",
            f"runtime nope not found in namespace {ns} or at cluster scope",
            "RuntimeNotFound",
        ),
    }
    for name, (status, reason, message, _) in rows.items():
        condition = _condition(api_client, ns, name, reason)
        assert (condition["status"], condition["message"]) == (status, message), name
    runner.wait_idle()
    for name, (_, _, message, event_reason) in rows.items():
        events = events_for(api_client, ns, name)
        assert Counter(e.reason for e in events) == (
            Counter({event_reason: 1}) if event_reason else Counter()
        )
        for event in events:
            assert (event.type, event.message) == ("Warning", message), name
    # SPEC §8: the reason label gains RuntimeInheritanceError (the InferenceService with the broken chain).
    reasons = [
        sample.labels
        for family in runner.operator.metrics.registry.collect()
        for sample in family.samples
        if sample.name == "ome_selector_inferenceservices" and sample.value
    ]
    assert {"status": "False", "reason": "RuntimeInheritanceError"} in reasons


def test_a_parent_edit_and_an_annotation_change_reach_the_children(
    api_client: Any, namespace: str, running_operator: Any
) -> None:
    ns = namespace
    create(api_client, objects.model("llama", namespace=ns, size="3.21B"))
    create(api_client, objects.runtime("base", namespace=ns, size_range=("2B", "4B"), auto_select=False))
    create(api_client, child("tuned", ns, "base"))
    create(api_client, isvc("svc", ns, runtime={"name": "tuned"}))
    running_operator()
    # The child has no formats of its own: named, it is judged on what it inherits.
    _condition(api_client, ns, "svc", "RuntimeSpecified", "using specified ServingRuntime tuned")
    patch(
        api_client, "ServingRuntime", "base", {"spec": {"modelSizeRange": {"min": "500M", "max": "2B"}}}, ns
    )
    _condition(
        api_client,
        ns,
        "svc",
        "RuntimeSpecified",
        "using specified ServingRuntime tuned; it does not declare support for model llama: "
        "model size 3.21B is outside supported range [500M, 2B]",
    )
    before = get(api_client, "ServingRuntime", "tuned", ns)["metadata"]["generation"]
    patch(
        api_client,
        "ServingRuntime",
        "tuned",
        {"metadata": {"annotations": {"ome.io/inherit-from": "gone"}}},
        ns,
    )
    assert get(api_client, "ServingRuntime", "tuned", ns)["metadata"]["generation"] == before
    _condition(
        api_client,
        ns,
        "svc",
        "RuntimeInheritanceError",
        'runtime tuned cannot be resolved: inherit-from parent "gone" not found (chain so far: [tuned])',
    )
    create(api_client, objects.runtime("gone", namespace=ns, size_range=("2B", "4B"), auto_select=False))
    _condition(api_client, ns, "svc", "RuntimeSpecified", "using specified ServingRuntime tuned")


# --- the webhook --------------------------------------------------------------------------------------------


def _kubectl(
    plane: ControlPlane, *docs: dict[str, Any], verb: str = "create"
) -> subprocess.CompletedProcess[str]:
    return plane.kubectl(verb, "-f", "-", input=yaml.safe_dump_all(list(docs)), check=False)


def _warnings(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [
        line.removeprefix("Warning: ") for line in result.stderr.splitlines() if line.startswith("Warning: ")
    ]


def _denied(result: subprocess.CompletedProcess[str], text: str) -> bool:
    return result.returncode == 1 and result.stderr.endswith(
        f'admission webhook "{ISVC_WEBHOOK}" denied the request: {text}\n'
    )


@pytest.mark.parametrize("report_only", [False, True])
def test_the_webhook_texts_of_v4(
    control_plane: ControlPlane, namespace: str, running_operator: Any, report_only: bool
) -> None:
    ns = namespace
    engine = {"minReplicas": 1}
    setup = _kubectl(
        control_plane,
        objects.model("llama", namespace=ns, size="3.21B"),
        objects.runtime("rt-fit", namespace=ns, size_range=("2B", "4B")),
        child("child-broken", ns, "gone"),
        objects.runtime("base-off", namespace=ns, disabled=True),
        child("child-off", ns, "base-off"),
    )
    assert setup.returncode == 0, setup.stderr
    running_operator(webhook=WebhookConfig(bind_address=("127.0.0.1", 0)), report_only=report_only)
    broken = (
        "runtime child-broken cannot be resolved: "
        'inherit-from parent "gone" not found (chain so far: [child-broken])'
    )

    auto = _kubectl(control_plane, isvc("auto", ns, engine=engine))
    assert auto.returncode == 0, auto.stderr
    assert _warnings(auto) == (
        [] if report_only else ["runtime rt-fit will be auto-selected for model llama"]
    )

    assert _denied(
        _kubectl(control_plane, isvc("b", ns, engine=engine, runtime={"name": "child-broken"})), broken
    )
    pinned = _kubectl(
        control_plane, isvc("p", ns, engine=engine, runtime={"name": "child-broken", "autoSync": False})
    )
    assert (pinned.returncode, _warnings(pinned)) == (0, [broken])
    kind = _kubectl(
        control_plane, isvc("k", ns, engine=engine, runtime={"name": "nope", "kind": "ServingRuntime"})
    )
    assert _denied(kind, f"ServingRuntime nope not found in namespace {ns}")

    modelless = _kubectl(control_plane, isvc("m1", ns, model=None, engine=engine, runtime={"name": "nope"}))
    assert (modelless.returncode, _warnings(modelless)) == (0, [])
    off = _kubectl(control_plane, isvc("m2", ns, model=None, engine=engine, runtime={"name": "child-off"}))
    assert _denied(off, "namespace-scoped runtime child-off is disabled")

    modes: dict[str, Any] = {
        "deploymentMode": "OMENative",
        "decoder": {"annotations": {"ome.io/deploymentMode": "RawDeployment"}},
    }
    mode = _kubectl(control_plane, isvc("mode", ns, engine={**engine, "runner": {"image": "x"}}, **modes))
    assert (mode.returncode, _warnings(mode)) == (
        0,
        [
            "spec.engine and spec.decoder ask for different deployment modes (OMENative, RawDeployment); "
            "OME denies this: InvalidDeploymentModeCombination"
        ],
    )

    # A parent applied together with the child's InferenceService is found by the confirming read.
    together = _kubectl(
        control_plane,
        objects.runtime("gone", namespace=ns, size_range=("2B", "4B"), auto_select=False),
        isvc("b", ns, engine=engine, runtime={"name": "child-broken"}),
    )
    assert together.returncode == 0, together.stderr
