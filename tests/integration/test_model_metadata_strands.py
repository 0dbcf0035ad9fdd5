"""Before the learner writes what a model's files say, it evaluates the model's InferenceServices with the
learned values (SPEC §10), on the real apiserver: a learned quantization that no runtime of the model
declares strands an InferenceService that has a runtime today. The learner records a Warning event
`ModelMetadataStrandsInferenceServices` naming it and why, and still writes what it learned; with
`--learn-model-metadata=report` it only reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_standin import HubStandIn, Repo, hub_standin

from harness import objects
from harness.controlplane import ControlPlane
from harness.kube import create, events_for, eventually, get, runtime_ready
from harness.model_folders import LLAMA_3_2_1B, write_json, write_safetensors
from ome_selector.cli.kubectl_ome import run
from ome_selector.operator.learning import STRANDS, LearningConfig


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The stand-in serving ``example/oss``: an MXFP4 checkpoint of one packed U8 tensor (64 parameters)."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    folder = tmp_path / "oss"
    write_json(folder / "config.json", LLAMA_3_2_1B | {"quantization_config": {"quant_method": "mxfp4"}})
    write_safetensors(folder / "model.safetensors", {"model.layers.0.mlp.w": ("U8", [4, 8])})
    with hub_standin() as stand_in:
        stand_in.repos["example/oss"] = Repo(folder)
        yield stand_in


def _reason(api_client: Any, name: str, namespace: str) -> str | None:
    return (runtime_ready(api_client, name, namespace) or {}).get("reason")


def _served_today(api_client: Any, namespace: str) -> None:
    """A model with a format and no size or quantization, a runtime without a quantization that serves it,
    and an InferenceService it serves."""
    model = objects.model("oss", namespace=namespace)
    model["spec"]["storage"]["storageUri"] = "hf://example/oss"
    create(api_client, model)
    create(api_client, objects.runtime("rt-oss", namespace=namespace))
    create(api_client, objects.inference_service("chat", namespace=namespace, model_name="oss"))


def _strand_events(api_client: Any, namespace: str) -> list[Any]:
    return eventually(
        lambda: (
            [event for event in events_for(api_client, namespace, "oss") if event.reason == STRANDS] or None
        ),
        timeout=30,
        what=f"a {STRANDS} event on oss",
    )


def _message(namespace: str) -> str:
    return (
        "Learning modelParameterSize 64, quantization mxfp4, maxTokens 131072 leaves 1 InferenceService "
        f"without a runtime: {namespace}/chat (today ServingRuntime/rt-oss; RuntimeNotFound: model format "
        "'mt:safetensors:1.0.0:LlamaForCausalLM:mxfp4:transformers:4.45.0.dev0' not in supported formats: "
        "model has quantization mxfp4 but runtime has no quantization requirement)"
    )


def test_the_learner_warns_then_still_writes(
    api_client: Any, namespace: str, hub: HubStandIn, running_operator: Any
) -> None:
    _served_today(api_client, namespace)
    running_operator(namespaces=[namespace], model_metadata=LearningConfig(endpoint=hub.url))
    (warning,) = _strand_events(api_client, namespace)
    assert (warning.type, warning.message) == ("Warning", _message(namespace))
    # It never hides the truth: what the files say is written, and the InferenceService loses its runtime.
    eventually(
        lambda: get(api_client, "BaseModel", "oss", namespace)["spec"].get("quantization") == "mxfp4",
        timeout=30,
        what="oss to learn quantization mxfp4",
    )
    eventually(
        lambda: _reason(api_client, "chat", namespace) == "RuntimeNotFound",
        timeout=30,
        what="chat to lose rt-oss",
    )


def test_report_mode_only_reports(
    api_client: Any, namespace: str, hub: HubStandIn, running_operator: Any
) -> None:
    _served_today(api_client, namespace)
    runner = running_operator(
        namespaces=[namespace], model_metadata=LearningConfig(endpoint=hub.url, report_only=True)
    )
    (warning,) = _strand_events(api_client, namespace)
    assert warning.message == _message(namespace)
    eventually(
        lambda: (
            (
                runner.operator.metrics.registry.get_sample_value(
                    "ome_selector_model_metadata_total", {"result": "unchanged"}
                )
                or 0.0
            )
            >= 1.0
        ),  # each attempt of report mode counts so; a busy machine may see a second one
        timeout=120,
        what="the report counted as unchanged",
    )
    spec = get(api_client, "BaseModel", "oss", namespace)["spec"]
    assert ("quantization" not in spec, "modelParameterSize" not in spec) == (True, True)
    assert _reason(api_client, "chat", namespace) == "RuntimeSelected"
    assert [event for event in events_for(api_client, namespace, "oss") if event.reason != STRANDS] == []


def test_inspect_against_the_live_cluster(
    api_client: Any,
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: Path,
    hub: HubStandIn,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`kubectl ome-selector model inspect DIR --against cluster`: the same verdicts, read from the live
    cluster."""
    _served_today(api_client, namespace)
    folder = str(tmp_path / "oss")
    argv = ["model", "inspect", folder, "--against", "cluster", "--model", "oss", "-n", namespace]
    assert run([*argv, "--kubeconfig", str(control_plane.kubeconfig), "-o", "json"]) == 0
    (found,) = json.loads(capsys.readouterr().out)["models"]
    assert (found["kind"], found["namespace"], found["name"]) == ("BaseModel", namespace, "oss")
    assert found["selected"] == {"today": "ServingRuntime/rt-oss", "learned": None}
    assert found["inferenceServices"] == [
        {
            "namespace": namespace,
            "name": "chat",
            "today": {"status": "True", "reason": "RuntimeSelected", "runtime": "ServingRuntime/rt-oss"},
            "learned": {"status": "False", "reason": "RuntimeNotFound", "runtime": None},
            "losesRuntime": True,
        }
    ]
    # Nothing was written.
    assert "quantization" not in get(api_client, "BaseModel", "oss", namespace)["spec"]
