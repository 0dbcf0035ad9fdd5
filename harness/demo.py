"""`make demo`: a local control plane, the samples, the operator and webhook, and what a user sees.

Every step prints a short caption, the command a user would type, and its real output. The run ends by
stopping everything it started; with DEMO_KEEP=1 it keeps the control plane and operator running until
interrupted (Ctrl-C) and prints the kubeconfig to use meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubernetes import config

from harness.controlplane import ControlPlane, running_control_plane
from harness.kube import eventually, runtime_ready
from harness.model_folders import LLAMA_3_2_3B, decoder_tensors, write_json, write_safetensors
from harness.operator_process import operator_process

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLES = REPO_ROOT / "samples"
BOLD, DIM, RESET = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")

FP8_MODEL = """\
apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata: {name: llama-3-2-3b-instruct-fp8}
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelFramework: {name: transformers, version: "4.45.0.dev0"}
  modelArchitecture: LlamaForCausalLM
  quantization: fp8
  storage: {storageUri: "hf://example/Llama-3.2-3B-Instruct-FP8"}
"""
FP8_RUNTIME = """\
apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata: {{name: {name}}}
spec:
  modelSizeRange: {{min: {low}, max: {high}}}
  supportedModelFormats:
    - modelFormat: {{name: safetensors, version: "1.0.0"}}
      modelFramework: {{name: transformers, version: "4.45.0.dev0"}}
      modelArchitecture: LlamaForCausalLM
      quantization: fp8
      autoSelect: true
      priority: 1
  engineConfig: {{runner: {{name: ome-container, image: "example.invalid/sglang:fp8"}}}}
"""
FP8_ISVC = """\
apiVersion: ome.io/v1beta1
kind: InferenceService
metadata: {name: fp8-chat, namespace: ome-demo}
spec:
  model: {name: llama-3-2-3b-instruct-fp8}
"""
ENGINE_ISVC = """\
apiVersion: ome.io/v1beta1
kind: InferenceService
metadata: {{name: {name}, namespace: ome-demo}}
spec:
  model: {{name: {model}}}
{runtime}  engine: {{minReplicas: 1}}
"""


class Demo:
    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.api_client: Any = config.new_client_from_config(config_file=str(plane.kubeconfig))  # type: ignore[no-untyped-call]
        self.env = {
            **os.environ,
            "KUBECONFIG": str(plane.kubeconfig),
            "PATH": f"{plane.bin_dir}:{os.environ['PATH']}",
        }

    def caption(self, text: str) -> None:
        print(f"\n{BOLD}==> {text}{RESET}", flush=True)

    def run(self, *argv: str, input: str | None = None, check: bool = True, show: bool = True) -> str:
        """Run a command a user would type (kubectl and kubectl-ome_selector on PATH, KUBECONFIG set) and show
        it."""
        if show:
            shown = " ".join(shlex.quote(a) for a in argv)
            print(f"{DIM}${RESET} {shown}" + (f" {DIM}<<EOF{RESET}" if input else ""), flush=True)
        executable = (
            str(Path(sys.executable).parent / argv[0]) if argv[0] == "kubectl-ome_selector" else argv[0]
        )
        result = subprocess.run(
            [executable, *argv[1:]],
            input=input,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )
        output = (result.stdout + result.stderr).rstrip()
        if show and output:
            print(output, flush=True)
        if check and result.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed with {result.returncode}: {output}")
        return output

    def wait_reason(self, name: str, reason: str, namespace: str = "ome-demo") -> None:
        def probe() -> bool:
            condition = runtime_ready(self.api_client, name, namespace)
            return bool(condition and condition["reason"] == reason)

        eventually(probe, timeout=60, what=f"{namespace}/{name} to become {reason}")


def write_fp8_model_folder(folder: Path) -> Path:
    """Llama 3.2 3B Instruct FP8 as a model folder: its config.json and a safetensors file with the real
    header over sparse (empty) weights, so it costs a few kilobytes of disk."""
    config = LLAMA_3_2_3B | {"quantization_config": {"quant_method": "fp8"}}
    write_json(folder / "config.json", config)
    write_safetensors(
        folder / "model.safetensors", decoder_tensors(config, dtype="F8_E4M3"), {"format": "pt"}
    )
    return folder


def show_events(demo: Demo, name: str, reason: str) -> None:
    """The events section of `kubectl describe`, once the event with `reason` is there."""

    def events() -> str | None:
        described = demo.run("kubectl", "describe", "isvc", name, "-n", "ome-demo", show=False)
        section = described.split("Events:")[-1]
        return section if reason in section else None

    section = eventually(events, what=f"the {reason} event of {name}")
    print(f"$ kubectl describe isvc {name} -n ome-demo   # events section")
    print("Events:" + section)


# A closer range for the 1B Llama models: what-if shows which InferenceServices it would take over.
SMALL_LLAMA_RUNTIME = """\
apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata: {name: sglang-llama-3-2-small}
spec:
  modelSizeRange: {min: 1B, max: 2B}
  supportedModelFormats:
    - modelFormat: {name: safetensors, version: "1.0.0"}
      modelFramework: {name: transformers, version: "4.45.0.dev0"}
      modelArchitecture: LlamaForCausalLM
      autoSelect: true
      priority: 2
"""


def story(demo: Demo) -> None:
    run, caption = demo.run, demo.caption
    caption("The catalog: models with their parameter counts (SIZE) and runtimes with their size ranges")
    run("kubectl", "apply", "-f", str(SAMPLES / "00-namespaces.yaml"))
    run("kubectl", "apply", "-f", str(SAMPLES))
    run("kubectl", "apply", "-f", str(SAMPLES / "ome-v1.3"))  # v1.3 fields: the project's CRDs have them
    run("kubectl", "get", "clusterbasemodels")
    run("kubectl", "get", "clusterservingruntimes")

    caption("Every InferenceService gets a RuntimeReady condition; -o wide shows the message")
    for name, reason in (("llama-3b-auto", "RuntimeSelected"), ("qwen3-32b-auto", "RuntimeNotFound")):
        demo.wait_reason(name, reason)
    demo.wait_reason("support-assistant", "RuntimeSelected", namespace="team-a")
    run("kubectl", "get", "isvc", "-A", "-o", "wide")

    caption("A model without a size passes every range, so a runtime for 500M–2B models is selected ...")
    run("kubectl", "apply", "-f", "-", input=FP8_MODEL)
    run(
        "kubectl",
        "apply",
        "-f",
        "-",
        input=FP8_RUNTIME.format(name="sglang-llama-fp8-small", low="500M", high="2B"),
    )
    run("kubectl", "apply", "-f", "-", input=FP8_ISVC)
    demo.wait_reason("fp8-chat", "RuntimeSelected")
    run("kubectl", "get", "isvc", "fp8-chat", "-n", "ome-demo", "-o", "wide")

    caption("... until the model's size is learned from its files: only the safetensors headers are read")
    folder = str(write_fp8_model_folder(demo.plane.workdir / "models" / "Llama-3.2-3B-Instruct-FP8"))
    run("kubectl-ome_selector", "model", "inspect", folder, "-v")
    caption("--apply writes what the model lacks (never what someone set): modelParameterSize 3.21B")
    run(
        "kubectl-ome_selector",
        "model",
        "inspect",
        folder,
        "--apply",
        "clusterbasemodel/llama-3-2-3b-instruct-fp8",
    )
    caption("The InferenceService on the 500M-2B runtime is re-evaluated: RuntimeNotFound")
    demo.wait_reason("fp8-chat", "RuntimeNotFound")
    run("kubectl", "get", "clusterbasemodel", "llama-3-2-3b-instruct-fp8")
    run("kubectl", "get", "isvc", "fp8-chat", "-n", "ome-demo", "-o", "wide")
    caption("The Warning event, as kubectl describe shows it")
    show_events(demo, "fp8-chat", "RuntimeNotFound")

    caption("A runtime whose range fits appears: the InferenceService is served again, with no new warning")
    run("kubectl", "apply", "-f", "-", input=FP8_RUNTIME.format(name="sglang-llama-fp8", low="2B", high="4B"))
    demo.wait_reason("fp8-chat", "RuntimeSelected")
    run("kubectl", "get", "isvc", "fp8-chat", "-n", "ome-demo", "-o", "wide")

    caption(
        "Naming a runtime that does not declare support: used anyway, with a RuntimeCompatibilityAdvisory"
    )
    demo.wait_reason("llama-3b-on-1b-runtime", "RuntimeSpecified")
    show_events(demo, "llama-3b-on-1b-runtime", "RuntimeCompatibilityAdvisory")

    caption("Why: kubectl ome-selector runtime explain shows every runtime with Yes/No and the reason")
    run(
        "kubectl-ome_selector",
        "runtime",
        "explain",
        "--model",
        "llama-3-2-3b-instruct-demo",
        "-n",
        "ome-demo",
    )

    caption(
        "Check the catalog: kubectl ome-selector runtime lint reports overlapping, tied and unused runtimes"
    )
    run("kubectl-ome_selector", "runtime", "lint", "-n", "ome-demo")

    caption("OME v1.3 inheritance: a named runtime runs its effective spec, merged along ome.io/inherit-from")
    demo.wait_reason("demo-inherited", "RuntimeSpecified", namespace="demo-v13")
    demo.wait_reason("demo-disabled-by-profile", "RuntimeDisabled", namespace="demo-v13")
    run("kubectl", "get", "isvc", "-n", "demo-v13", "-o", "wide")
    caption("explain --with-effective: where the named runtime's spec comes from, root first")
    output = run(
        "kubectl-ome_selector",
        "runtime",
        "explain",
        "--isvc",
        "demo-inherited",
        "-n",
        "demo-v13",
        "--with-effective",
    )
    if "ROOT-FIRST ServingRuntime/demo-v13/demo-llama-profile" not in output:
        raise RuntimeError("explain --with-effective did not show the inherited runtime's chain")
    caption("A deployment-mode mismatch (OMENative asked, RawDeployment inherited): used, with the reason")
    run(
        "kubectl-ome_selector",
        "runtime",
        "explain",
        "--isvc",
        "demo-mode-mismatch",
        "-n",
        "demo-v13",
        "-o",
        "wide",
    )
    caption("lint sees inheritance too: a child that forgot spec.disabled inherits its profile's true")
    output = run("kubectl-ome_selector", "runtime", "lint", "-n", "demo-v13")
    if "INHR004" not in output:
        raise RuntimeError("lint did not report the runtime disabled through its profile")

    caption("Before a catalog change: what-if lists the InferenceServices it would move (exit 3 for CI)")
    output = run(
        "kubectl-ome_selector", "runtime", "what-if", "-A", "--fail-on-change", "-f", "-",
        input=SMALL_LLAMA_RUNTIME, check=False,
    )  # fmt: skip
    if "llama-1b-auto" not in output:
        raise RuntimeError("what-if did not show llama-1b-auto moving to the closer runtime")

    caption("The admission webhook warns when a named runtime does not declare support ...")
    named = ENGINE_ISVC.format(
        name="llama-3b-engine-on-1b",
        model="llama-3-2-3b-instruct-demo",
        runtime="  runtime: {name: srt-llama-3-2-1b-instruct-demo}\n",
    )
    run("kubectl", "apply", "-f", "-", input=named)
    caption("... and denies an InferenceService that no runtime can serve")
    denied = ENGINE_ISVC.format(name="qwen3-32b-engine", model="qwen3-32b-demo", runtime="")
    output = run("kubectl", "apply", "-f", "-", input=denied, check=False)
    if "denied the request" not in output:
        raise RuntimeError("the webhook did not deny an unservable InferenceService")


def main(argv: Sequence[str] | None = None) -> int:
    keep = os.environ.get("DEMO_KEEP") == "1"
    print(f"{BOLD}ome-selector demo{RESET}: local etcd + kube-apiserver, samples, operator and webhook.")
    started = time.monotonic()
    with running_control_plane() as plane:
        print(f"control plane up in {time.monotonic() - started:.1f}s at {plane.server}")
        demo = Demo(plane)
        webhook = ("--webhook-bind-address", "127.0.0.1:0", "--webhook-managed-name", "ome-selector-demo")
        with operator_process(plane, *webhook) as operator:
            print(f"ome-selector is running (pid {operator.process.pid}, log {operator.log})")
            story(demo)
            if keep:
                print(f"\n{BOLD}DEMO_KEEP=1{RESET}: still running. In another shell:")
                print(f"  export KUBECONFIG={plane.kubeconfig} PATH={plane.bin_dir}:$PATH")
                print("Press Ctrl-C to stop everything.")
                with contextlib.suppress(KeyboardInterrupt):
                    signal.pause()
        demo.api_client.close()
    print(f"\n{BOLD}Done{RESET}: the operator, kube-apiserver and etcd are stopped; nothing is left running.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
