"""Learning a model's metadata from its files, written to the real apiserver (SPEC §10).

`kubectl ome-selector model inspect --apply` and the operator's `--learn-model-metadata` against the session's
kube-apiserver; the operator reads `hf://` models from the tests' local Hub stand-in (the real
`huggingface_hub` client over HTTP). What anyone set stays, what is missing is filled, events tell what
happened, failures back off, the opt-out annotation and report-only mode write nothing, and the size written
re-evaluates the InferenceServices of the model.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hub_standin import HubStandIn, Repo, hub_standin

from harness import objects
from harness.admission import PROBE_KIND, admission_count, wait_until_called
from harness.controlplane import ControlPlane
from harness.hostile_models import HOSTILE, write_hostile
from harness.kube import create, events_for, eventually, get, patch, runtime_ready
from harness.model_folders import LLAMA_3_2_1B, decoder_tensors, write_json, write_safetensors
from harness.operator_thread import OperatorThread
from harness.quantized_models import QUANTIZED_MODELS, write_quantized
from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.cli import model_apply
from ome_selector.cli.kubectl_ome import run
from ome_selector.kube.objects import Objects
from ome_selector.operator.app import LeaderElectionConfig
from ome_selector.operator.learning import OME_SKIP_ANNOTATION, SKIP_ANNOTATION, LearningConfig
from ome_selector.webhook.config import WebhookConfig

#: What Llama 3.2 1B's files give (its published config.json and tensor shapes).
LEARNED: dict[str, Any] = {
    "modelParameterSize": "1.24B",
    "modelFormat": {"name": "safetensors", "version": "1.0.0"},
    "modelArchitecture": "LlamaForCausalLM",
    "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
    "maxTokens": 131072,
}
LEARNED_TEXT = (
    "modelParameterSize 1.24B, modelFormat safetensors 1.0.0, modelArchitecture LlamaForCausalLM, "
    "modelFramework transformers 4.45.0.dev0, maxTokens 131072"
)
TOKEN = "hf_private_token"
#: Short retry delays, so a test sees the backoff in seconds.
FAST = (1.0, 2.0, 3.0)


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("Llama-3.2-1B")
    write_json(folder / "config.json", LLAMA_3_2_1B)
    write_safetensors(folder / "model.safetensors", decoder_tensors(LLAMA_3_2_1B), {"format": "pt"})
    return folder


@pytest.fixture
def hub(llama_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandIn]:
    """The stand-in serving ``meta/llama`` (public) and ``meta/private`` (needs TOKEN); no HF_TOKEN set."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(llama_folder.parent / "hf-home"))
    with hub_standin() as stand_in:
        stand_in.repos["meta/llama"] = Repo(llama_folder)
        stand_in.repos["meta/private"] = Repo(llama_folder, token=TOKEN)
        yield stand_in


def _unique(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:6]}"


def _spec(api_client: Any, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = get(api_client, kind, name, namespace)["spec"]
    return spec


def _managed_by_us(body: dict[str, Any]) -> set[str]:
    """The spec fields the field manager ome-selector owns."""
    owned: set[str] = set()
    for entry in body["metadata"].get("managedFields") or []:
        if entry["manager"] == "ome-selector":
            owned |= {key.removeprefix("f:") for key in entry["fieldsV1"].get("f:spec", {})}
    return owned


def _requests_for(hub: HubStandIn, repo: str) -> int:
    return sum(1 for path in hub.served_paths() if path.startswith(f"/api/models/{repo}/"))


# --- kubectl ome-selector model inspect --apply
# --------------------------------------------------------------------


def test_apply_fills_only_what_the_model_lacks(
    api_client: Any,
    control_plane: ControlPlane,
    namespace: str,
    llama_folder: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    user_set = {
        "modelParameterSize": "1B",
        "modelFramework": {"name": "vllm"},  # a framework without a version: set, never completed
        "storage": {"storageUri": "hf://meta/llama"},
    }
    stored = create(
        api_client,
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "BaseModel",
            "metadata": {"name": "llama", "namespace": namespace},
            "spec": user_set,
        },
    )
    kubeconfig = str(control_plane.kubeconfig)
    argv = ["model", "inspect", str(llama_folder), "--apply", "basemodel/llama", "-n", namespace]
    assert run([*argv, "--kubeconfig", kubeconfig]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out == (
        f"BaseModel {namespace}/llama: set modelFormat safetensors 1.0.0, "
        "modelArchitecture LlamaForCausalLM, maxTokens 131072\n"
    )
    body = get(api_client, "BaseModel", "llama", namespace)
    assert body["spec"] == stored["spec"] | {
        "modelFormat": {"name": "safetensors", "version": "1.0.0", "operator": "Equal", "weight": 1},
        "modelArchitecture": "LlamaForCausalLM",
        "maxTokens": 131072,
    }
    assert _managed_by_us(body) == {"modelFormat", "modelArchitecture", "maxTokens"}

    # Again: nothing is missing any more, nothing is written (-o json for scripts).
    version = body["metadata"]["resourceVersion"]
    assert run([*argv, "--kubeconfig", kubeconfig, "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {"kind": "BaseModel", "namespace": namespace, "name": "llama", "set": {}}
    assert get(api_client, "BaseModel", "llama", namespace)["metadata"]["resourceVersion"] == version


def test_apply_to_a_cluster_model_in_any_case(
    api_client: Any,
    control_plane: ControlPlane,
    llama_folder: Path,
    cluster_objects: list[tuple[str, str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = _unique("llama")
    create(api_client, objects.model(name, with_format=False))
    cluster_objects.append(("ClusterBaseModel", name))
    argv = ["model", "inspect", str(llama_folder), "--apply", f"ClusterBaseModel/{name}", "-o", "yaml"]
    assert run([*argv, "--kubeconfig", str(control_plane.kubeconfig)]) == 0
    assert f"kind: ClusterBaseModel\nnamespace: null\nname: {name}\nset:\n" in capsys.readouterr().out
    spec = _spec(api_client, "ClusterBaseModel", name)
    assert {key: spec[key] for key in LEARNED} == LEARNED | {
        "modelFormat": LEARNED["modelFormat"] | {"operator": "Equal", "weight": 1},
        "modelFramework": LEARNED["modelFramework"] | {"operator": "Equal", "weight": 1},
    }


def test_apply_recomputes_after_a_concurrent_write(
    api_client: Any,
    control_plane: ControlPlane,
    namespace: str,
    llama_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Someone sets the size between our read and our patch: the apiserver answers 409, the model is read
    again, and the patch no longer names the size."""
    create(api_client, objects.model("raced", namespace=namespace, with_format=False))
    reads: list[str] = []

    class RacingObjects(Objects):
        async def get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None:
            body = await super().get(kind, namespace, name)
            reads.append(name)
            if len(reads) == 1:
                patch(api_client, "BaseModel", name, {"spec": {"modelParameterSize": "2B"}}, namespace)
            return body

    monkeypatch.setattr(model_apply, "Objects", RacingObjects)
    argv = ["model", "inspect", str(llama_folder), "--apply", "BASEMODEL/raced", "-n", namespace]
    assert run([*argv, "--kubeconfig", str(control_plane.kubeconfig)]) == 0
    assert reads == ["raced", "raced"]
    assert "modelParameterSize" not in capsys.readouterr().out
    assert _spec(api_client, "BaseModel", "raced", namespace)["modelParameterSize"] == "2B"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("basemodel/ghost", "BaseModel {namespace}/ghost not found"),
        ("clusterbasemodel/ghost-{namespace}", "ClusterBaseModel ghost-{namespace} not found"),
    ],
)
def test_apply_to_a_missing_model_exits_1(
    control_plane: ControlPlane,
    namespace: str,
    llama_folder: Path,
    target: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["model", "inspect", str(llama_folder), "--apply", target.format(namespace=namespace)]
    assert run([*argv, "-n", namespace, "--kubeconfig", str(control_plane.kubeconfig)]) == 1
    assert capsys.readouterr() == ("", f"error: {message.format(namespace=namespace)}\n")


def test_apply_uses_the_contexts_namespace(
    api_client: Any,
    control_plane: ControlPlane,
    namespace: str,
    llama_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    create(api_client, objects.model("ctx", namespace=namespace, size="5B"))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(control_plane.kubeconfig.read_text())
    control_plane.kubectl(
        "config", "set-context", "--current", f"--namespace={namespace}", f"--kubeconfig={kubeconfig}"
    )
    assert (
        run(
            [
                "model",
                "inspect",
                str(llama_folder),
                "--apply",
                "basemodel/ctx",
                "--kubeconfig",
                str(kubeconfig),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == f"BaseModel {namespace}/ctx: set maxTokens 131072\n"


# --- the operator -------------------------------------------------------------------------------------------


def _events(api_client: Any, namespace: str, name: str, reason: str) -> list[Any]:
    return [event for event in events_for(api_client, namespace, name) if event.reason == reason]


def _wait_event(api_client: Any, namespace: str, name: str, reason: str, count: int = 1) -> list[Any]:
    return eventually(
        lambda: found if len(found := _events(api_client, namespace, name, reason)) >= count else None,
        timeout=30,
        what=f"{count} {reason} event(s) on {name}",
    )


def _result(runner: OperatorThread, result: str) -> float:
    value = runner.operator.metrics.registry.get_sample_value(
        "ome_selector_model_metadata_total", {"result": result}
    )
    return value or 0.0


def test_the_operator_learns_what_models_lack_and_the_size_re_evaluates(
    api_client: Any,
    namespace: str,
    hub: HubStandIn,
    llama_folder: Path,
    running_operator: Any,
    cluster_objects: list[tuple[str, str]],
) -> None:
    hub.repos["meta/served"] = Repo(llama_folder)
    # A namespaced model whose format someone set, opted out for now, used by an InferenceService that a
    # runtime for 2B-4B models serves while the model has no size.
    served = objects.model("served", namespace=namespace)
    served["spec"]["storage"]["storageUri"] = "hf://meta/served"
    served["metadata"]["annotations"] = {SKIP_ANNOTATION: "true"}
    create(api_client, served)
    create(api_client, objects.runtime("rt-3b", namespace=namespace, size_range=("2B", "4B")))
    create(api_client, objects.inference_service("chat", namespace=namespace, model_name="served"))
    # A cluster model with nothing but its storage.
    bare = _unique("bare")
    hub.repos[f"meta/{bare}"] = Repo(llama_folder)
    body = objects.model(bare, with_format=False)
    body["spec"]["storage"]["storageUri"] = f"hf://meta/{bare}"
    create(api_client, body)
    cluster_objects.append(("ClusterBaseModel", bare))

    # Only this namespace: other tests' BaseModels are not this test's business (cluster models are seen).
    runner: OperatorThread = running_operator(
        namespaces=[namespace], model_metadata=LearningConfig(endpoint=hub.url)
    )

    (cluster_event,) = _wait_event(api_client, "default", bare, "ModelMetadataLearned")
    assert (cluster_event.type, cluster_event.source.component) == ("Normal", "ome-selector")
    assert cluster_event.message == f"Learned from hf://meta/{bare}: {LEARNED_TEXT}"
    assert cluster_event.involved_object.kind == "ClusterBaseModel"
    bare_body = get(api_client, "ClusterBaseModel", bare)
    assert bare_body["spec"]["modelParameterSize"] == "1.24B"
    assert _managed_by_us(bare_body) == set(LEARNED)

    # The opted-out model was neither read nor written; its InferenceService is served.
    assert (runtime_ready(api_client, "chat", namespace) or {}).get("reason") == "RuntimeSelected"
    assert _requests_for(hub, "meta/served") == 0
    assert "modelParameterSize" not in _spec(api_client, "BaseModel", "served", namespace)

    # Without the annotation it is learned, and the size written re-evaluates the InferenceService:
    # 1.24B is outside [2B, 4B].
    patch(
        api_client, "BaseModel", "served", {"metadata": {"annotations": {SKIP_ANNOTATION: None}}}, namespace
    )
    (learned,) = _wait_event(api_client, namespace, "served", "ModelMetadataLearned")
    assert learned.message == "Learned from hf://meta/served: modelParameterSize 1.24B, maxTokens 131072"
    spec = _spec(api_client, "BaseModel", "served", namespace)
    assert (spec["modelParameterSize"], spec["maxTokens"]) == ("1.24B", 131072)
    assert spec["modelFramework"] == objects.TRANSFORMERS | {"operator": "Equal", "weight": 1}
    eventually(
        lambda: (runtime_ready(api_client, "chat", namespace) or {}).get("reason") == "RuntimeNotFound",
        timeout=30,
        what="chat to turn RuntimeNotFound",
    )
    (warning,) = _wait_event(api_client, namespace, "chat", "RuntimeNotFound")
    assert "model size 1.24B is outside supported range [2B, 4B]" in warning.message

    # Each model's files were read once. A field removed later is filled again from what was learned,
    # without reading the files again.
    assert (_requests_for(hub, f"meta/{bare}"), _requests_for(hub, "meta/served")) == (1, 1)
    patch(api_client, "ClusterBaseModel", bare, {"spec": {"maxTokens": None}})
    eventually(
        lambda: _spec(api_client, "ClusterBaseModel", bare).get("maxTokens") == 131072, what="the refill"
    )
    assert _requests_for(hub, f"meta/{bare}") == 1
    assert _result(runner, "learned") >= 3  # leftover cluster models of other tests may count too
    for where, name in ((namespace, "served"), ("default", bare)):
        assert _events(api_client, where, name, "ModelMetadataUnavailable") == []


def test_a_4bit_checkpoint_is_learned_at_its_logical_size_under_ome_s_opt_out(
    api_client: Any, namespace: str, hub: HubStandIn, running_operator: Any, tmp_path: Path
) -> None:
    """SPEC §10 (v5): an NVFP4 export's size is its logical size and its quantization OME's value, so a
    runtime entry for `quantization: nvfp4` and 7B-9B serves it; OME's `skip-config-parsing` keeps the
    operator away as the product's own annotation does; a malformed hf_quant_config.json is a Warning."""
    write_quantized(tmp_path / "fp4", QUANTIZED_MODELS["Llama-3.1-8B-Instruct-FP4"])
    write_json(tmp_path / "bad" / "config.json", LLAMA_3_2_1B)
    write_safetensors(tmp_path / "bad" / "model.safetensors", {"w": ("U8", [8])})
    (tmp_path / "bad" / "hf_quant_config.json").write_bytes(b'{"quantization": {"quant_algo": "NVFP4"')
    hub.repos["nvidia/fp4"] = Repo(tmp_path / "fp4")
    hub.repos["nvidia/bad"] = Repo(tmp_path / "bad")
    fp4 = objects.model("fp4", namespace=namespace)
    fp4["spec"]["storage"]["storageUri"] = "hf://nvidia/fp4"
    fp4["metadata"]["annotations"] = {OME_SKIP_ANNOTATION: "True"}
    create(api_client, fp4)
    bad = objects.model("bad-quant", namespace=namespace)
    bad["spec"]["storage"]["storageUri"] = "hf://nvidia/bad"
    create(api_client, bad)
    runtime = objects.runtime("rt-8b-nvfp4", namespace=namespace, size_range=("7B", "9B"))
    runtime["spec"]["supportedModelFormats"][0]["quantization"] = "nvfp4"
    create(api_client, runtime)
    create(api_client, objects.inference_service("chat", namespace=namespace, model_name="fp4"))

    running_operator(namespaces=[namespace], model_metadata=LearningConfig(endpoint=hub.url))

    (warning,) = _wait_event(api_client, namespace, "bad-quant", "ModelMetadataUnavailable")
    assert (warning.type, warning.message) == (
        "Warning",
        "Cannot read the model's files: hf://nvidia/bad/hf_quant_config.json: invalid JSON: Expecting ',' "
        "delimiter at line 1; next attempt in 30s",
    )
    # OME's opt-out: neither read nor written, and the runtime that wants nvfp4 does not serve it yet.
    assert _requests_for(hub, "nvidia/fp4") == 0
    assert "quantization" not in _spec(api_client, "BaseModel", "fp4", namespace)
    assert (runtime_ready(api_client, "chat", namespace) or {}).get("reason") == "RuntimeNotFound"

    patch(
        api_client, "BaseModel", "fp4", {"metadata": {"annotations": {OME_SKIP_ANNOTATION: None}}}, namespace
    )
    (learned,) = _wait_event(api_client, namespace, "fp4", "ModelMetadataLearned")
    assert learned.message == (
        "Learned from hf://nvidia/fp4: modelParameterSize 8.03B, quantization nvfp4, maxTokens 131072"
    )
    spec = _spec(api_client, "BaseModel", "fp4", namespace)
    assert (spec["modelParameterSize"], spec["quantization"]) == ("8.03B", "nvfp4")
    eventually(
        lambda: (runtime_ready(api_client, "chat", namespace) or {}).get("reason") == "RuntimeSelected",
        timeout=30,
        what="chat to be served by rt-8b-nvfp4",
    )


def test_hub_failures_back_off_and_recover(
    api_client: Any,
    namespace: str,
    hub: HubStandIn,
    running_operator: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A private repository without a token (401) and a missing one (404): a Warning event per attempt,
    attempts spaced by the retry delays; once HF_TOKEN is set the private model is learned."""
    for name, repo in (("private", "meta/private"), ("absent", "meta/absent")):
        body = objects.model(name, namespace=namespace, with_format=False)
        body["spec"]["storage"]["storageUri"] = f"hf://{repo}"
        create(api_client, body)
    learning = LearningConfig(endpoint=hub.url, retry_delays=FAST, token_namespaces=frozenset({namespace}))
    runner: OperatorThread = running_operator(namespaces=[namespace], model_metadata=learning)

    warnings = _wait_event(api_client, namespace, "absent", "ModelMetadataUnavailable", count=3)
    # No HF_TOKEN yet: the read has no token, so its error does not tell private from missing (SPEC §10.6).
    reason = "hf://meta/absent: not found or not public (read without the Hub token)"
    assert {event.message for event in warnings} == {
        f"Cannot read the model's files: {reason}; next attempt in {delay}" for delay in ("1s", "2s", "3s")
    }
    assert {(event.type, event.source.component) for event in warnings} == {("Warning", "ome-selector")}
    # The attempts (one model-info request each) are spaced by at least the retry delays: the backoff the
    # product promises (SPEC §10), a lower bound that a slow machine only makes larger.
    attempts = [r.at for r in hub.requests_snapshot() if r.path.startswith("/api/models/meta/absent/")]
    gaps = [later - earlier for earlier, later in itertools.pairwise(attempts)]
    assert len(gaps) >= 2
    assert all(gap >= FAST[min(index, len(FAST) - 1)] for index, gap in enumerate(gaps)), gaps
    assert runner.operator.learner is not None
    assert runner.operator.learner.schedule.failures(ObjectKey(Kind.BASE_MODEL, namespace, "absent")) >= 3

    (unauthorized, *_) = _wait_event(api_client, namespace, "private", "ModelMetadataUnavailable")
    assert unauthorized.message.startswith(
        "Cannot read the model's files: hf://meta/private: not found or not public"
    )
    assert "modelParameterSize" not in _spec(api_client, "BaseModel", "private", namespace)

    # With the token, the next attempt succeeds; the failures never stopped the operator.
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    eventually(
        lambda: _spec(api_client, "BaseModel", "private", namespace).get("modelParameterSize") == "1.24B",
        timeout=30,
        what="the private model to be learned with HF_TOKEN",
    )
    _wait_event(api_client, namespace, "private", "ModelMetadataLearned")
    assert runner.operator.learner.schedule.failures(ObjectKey(Kind.BASE_MODEL, namespace, "private")) == 0
    assert _result(runner, "failed") >= 4
    assert runner.ready


def test_report_only_learns_and_writes_nothing(
    api_client: Any, namespace: str, hub: HubStandIn, running_operator: Any
) -> None:
    body = objects.model("quiet", namespace=namespace, with_format=False)
    body["spec"]["storage"]["storageUri"] = "hf://meta/llama"
    create(api_client, body)
    runner: OperatorThread = running_operator(
        namespaces=[namespace], report_only=True, model_metadata=LearningConfig(endpoint=hub.url)
    )
    assert runner.operator.learner is None
    patch(api_client, "BaseModel", "quiet", {"metadata": {"labels": {"touched": "yes"}}}, namespace)
    runner.wait_idle(settle=1.0)
    assert hub.requests_snapshot() == []
    assert "modelParameterSize" not in _spec(api_client, "BaseModel", "quiet", namespace)
    assert events_for(api_client, namespace, "quiet") == []


def test_only_the_leader_learns(
    api_client: Any, control_plane: ControlPlane, namespace: str, hub: HubStandIn, running_operator: Any
) -> None:
    """A follower reads no files and writes nothing; when it becomes the leader, it learns."""
    body = objects.model("led", namespace=namespace, with_format=False)
    body["spec"]["storage"]["storageUri"] = "hf://meta/llama"
    create(api_client, body)
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "held", "namespace": namespace},
        "spec": {
            "holderIdentity": "someone-else",
            "leaseDurationSeconds": 3600,
            "renewTime": "2030-01-01T00:00:00.000000Z",
        },
    }
    control_plane.kubectl("create", "-f", "-", input=json.dumps(lease))
    runner: OperatorThread = running_operator(
        namespaces=[namespace],
        model_metadata=LearningConfig(endpoint=hub.url),
        leader_election=LeaderElectionConfig(namespace=namespace, name="held", identity="follower"),
    )
    runner.wait_idle(settle=1.0)
    # The follower's learner holds the model as a candidate (it has seen it) and has nothing queued: a
    # follower attempts nothing, and nothing but leading would start an attempt.
    learner = runner.operator.learner
    assert learner is not None
    eventually(
        lambda: any(key.name == "led" for key in learner._candidates),
        what="the follower's learner holding the model",
    )
    runner.call(learner.wait_idle())
    assert hub.requests_snapshot() == []
    assert "modelParameterSize" not in _spec(api_client, "BaseModel", "led", namespace)

    control_plane.kubectl("delete", "lease", "held", "-n", namespace)
    eventually(
        lambda: _spec(api_client, "BaseModel", "led", namespace).get("modelParameterSize") == "1.24B",
        timeout=30,
        what="the new leader to learn the model",
    )
    _wait_event(api_client, namespace, "led", "ModelMetadataLearned")


# --- hostile models (SPEC §10.1, §10.7) --------------------------------------------------------------------


class _Ticker:
    """Wakes every 10 ms on the operator's loop and keeps the longest gap between a due time and a wake-up
    during which the operator's process computed: its CPU time over the gap (all its threads; the model
    reader's child is another process), capped by the gap. A thread parsing a model holds the GIL and burns
    CPU, so it shows; a machine too busy to schedule the process at all (2 cores shared by many) does not."""

    def __init__(self) -> None:
        self.held = 0.0  # the longest gap, as far as the process computed during it
        self.longest = 0.0  # the longest gap, whatever the reason
        self.ticks = 0

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            due, cpu = loop.time() + 0.01, time.process_time()
            await asyncio.sleep(0.01)
            gap = max(0.0, loop.time() - due)
            self.longest = max(self.longest, gap)
            self.held = max(self.held, min(gap, time.process_time() - cpu))
            self.ticks += 1


@contextmanager
def _standin_process(repos: dict[str, Path]) -> Iterator[str]:
    """The Hub stand-in in a process of its own: its threads never share this process's GIL."""
    script = Path(__file__).resolve().parents[1] / "unit" / "hub_standin.py"
    arguments = [f"{repo}={folder}" for repo, folder in repos.items()]
    with subprocess.Popen(
        [sys.executable, str(script), *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as server:
        assert server.stdout is not None
        assert server.stdin is not None
        try:
            yield server.stdout.readline().strip()
        finally:
            server.stdin.close()
            server.wait(30)


def test_hostile_models_never_hold_the_operators_loop(
    api_client: Any,
    namespace: str,
    tmp_path: Path,
    running_operator: Any,
) -> None:
    """The worst inputs under and over SPEC §10.1's limits, read by the operator from the Hub stand-in while a
    ticker on the operator's loop sees no gap over 50 ms and the webhook keeps answering; each hostile model
    gives one Warning event and ``result="failed"``, the ones within the limits are learned."""
    names = list(HOSTILE)
    repos = {f"hostile/{name}": write_hostile(tmp_path / name, name) for name in names}
    with _standin_process(repos) as endpoint:
        _read_hostile_models(api_client, namespace, running_operator, endpoint, names)


def _read_hostile_models(
    api_client: Any, namespace: str, running_operator: Any, endpoint: str, names: list[str]
) -> None:
    runner: OperatorThread = running_operator(
        namespaces=[namespace],
        model_metadata=LearningConfig(endpoint=endpoint, retry_delays=(3600.0,)),
        webhook=WebhookConfig(bind_address=("127.0.0.1", 0)),
    )
    ticker, stop = _Ticker(), asyncio.Event()
    ticking = runner.call(_start(ticker.run(stop)))
    for name in names:
        body = objects.model(name, namespace=namespace, with_format=False)
        body["spec"]["storage"]["storageUri"] = f"hf://hostile/{name}"
        create(api_client, body)

    # While the children read, one after the other, the webhook answers the apiserver.
    answered = 0
    deadline = time.monotonic() + 600
    outcomes: dict[str, str] = {}
    while len(outcomes) < len(names):
        assert time.monotonic() < deadline, f"not every hostile model was read: {outcomes}"
        wait_until_called(lambda: admission_count(runner, PROBE_KIND), api_client, timeout=30)
        answered += 1
        for name in names:
            if name not in outcomes:
                for reason in ("ModelMetadataUnavailable", "ModelMetadataLearned"):
                    if events := _events(api_client, namespace, name, reason):
                        outcomes[name] = events[0].message
    runner.call(_set(stop))
    runner.call(_wait(ticking))

    assert ticker.ticks > 100
    assert answered >= 1
    prefix = "Cannot read the model's files: hf://hostile/"
    assert outcomes == {
        "huge-shape": f"{prefix}huge-shape/model.safetensors: invalid safetensors header: tensor 'w' has "
        "100000 dimensions, more than 8; next attempt in 60m",
        "big-metadata": "Learned from hf://hostile/big-metadata: modelParameterSize 1, modelFormat "
        "safetensors 1.0.0, modelArchitecture LlamaForCausalLM, modelFramework transformers 4.45.0.dev0, "
        "maxTokens 131072",
        "most-tensors": "Learned from hf://hostile/most-tensors: modelParameterSize 200000, modelFormat "
        "safetensors 1.0.0, modelArchitecture LlamaForCausalLM, modelFramework transformers 4.45.0.dev0, "
        "maxTokens 131072",
        "deep-header": f"{prefix}deep-header/model.safetensors: invalid safetensors header: nested deeper "
        "than 3 levels; next attempt in 60m",
        "long-numbers": "Learned from hf://hostile/long-numbers: modelArchitecture LlamaForCausalLM",
        "big-config": f"{prefix}big-config/config.json: larger than 4000000 bytes: not model metadata; next "
        "attempt in 60m",
        "big-index": f"{prefix}big-index/model-00001-of-01024.safetensors: missing (a shard named in "
        "model.safetensors.index.json); next attempt in 60m",
        # 49 U8 tensors of one element, none excluded: two 4-bit parameters each.
        "quant-exclusions": "Learned from hf://hostile/quant-exclusions: modelParameterSize 98, "
        "modelFormat safetensors 1.0.0, modelArchitecture LlamaForCausalLM, modelFramework transformers "
        "4.45.0.dev0, quantization mxfp4, maxTokens 131072",
    }
    failed = sum(1 for message in outcomes.values() if message.startswith("Cannot read"))
    assert _result(runner, "failed") == failed
    assert runner.ready
    late = f"{ticker.held * 1e3:.0f} ms (the longest gap: {ticker.longest * 1e3:.0f} ms)"
    assert ticker.held < 0.05, f"the operator's process held its loop for {late}"


async def _start(coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(coroutine)


async def _wait(task: asyncio.Task[None]) -> None:
    await task


async def _set(event: asyncio.Event) -> None:
    event.set()
