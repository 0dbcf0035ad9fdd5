"""The end-to-end scenario of a deployed ome-selector, shared by the RBAC test and `make e2e`.

What a platform engineer would check after installing: auto-selection, a named runtime that does not
declare support (admitted with a warning, advisory event), ``RuntimeNotFound`` once a model's size appears,
and a denial at admission. Objects are created with kubectl (so admission warnings and denials read as
users see them); conditions and events are read with the official client. Everything lives in one
namespace and uses a model architecture of its own, so other runtimes in the cluster (cluster-scoped ones
included) never match.

``python -m harness.scenario --kubeconfig PATH --namespace NS`` runs it against any cluster where
ome-selector is installed (the namespace is created when missing).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from kubernetes import client, config

from harness import objects
from harness.kube import events_for, eventually, runtime_ready

__all__ = ["ARCHITECTURE", "Kubectl", "KubectlRunner", "ScenarioReport", "run_scenario"]

ARCHITECTURE = "OmeSelectorScenarioForCausalLM"
ISVC_WEBHOOK = "inferenceservices.ome-selector.ome.io"
ENGINE: dict[str, Any] = {"minReplicas": 1}


class KubectlRunner(Protocol):
    """``ControlPlane.kubectl`` or :class:`Kubectl`: kubectl with a fixed kubeconfig."""

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]: ...


@dataclass(frozen=True)
class Kubectl:
    """kubectl against ``kubeconfig`` (the e2e entry point; tests pass ``ControlPlane.kubectl``)."""

    kubeconfig: Path
    binary: str = "kubectl"

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.binary, f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )


@dataclass
class ScenarioReport:
    """What the scenario saw, step by step (printed by the e2e entry point)."""

    steps: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.steps.append(text)


def _model(name: str, namespace: str, size: str | None) -> dict[str, Any]:
    body = objects.model(name, namespace=namespace, size=size)
    body["spec"]["modelArchitecture"] = ARCHITECTURE
    return body


def _runtime(name: str, namespace: str, low: str, high: str) -> dict[str, Any]:
    body = objects.runtime(name, namespace=namespace, size_range=(low, high))
    for entry in body["spec"]["supportedModelFormats"]:
        entry["modelArchitecture"] = ARCHITECTURE
    return body


def _isvc(name: str, namespace: str, model: str, runtime: str | None = None) -> dict[str, Any]:
    return objects.inference_service(
        name, namespace=namespace, model_name=model, runtime_name=runtime, engine=dict(ENGINE)
    )


def _warnings(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [
        line.removeprefix("Warning: ") for line in result.stderr.splitlines() if line.startswith("Warning: ")
    ]


def run_scenario(
    api_client: Any,
    kubectl: KubectlRunner,
    namespace: str,
    *,
    webhook: bool = True,
    timeout: float = 60.0,
    log: Callable[[str], None] | None = None,
) -> ScenarioReport:
    """Run every step in ``namespace`` (which must exist); an AssertionError names the step that failed.

    ``webhook=False`` skips what only the admission webhook does (warnings and the denial).
    """
    report = ScenarioReport()

    def step(text: str) -> None:
        report.add(text)
        if log is not None:
            log(text)

    def create(*docs: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return kubectl("create", "-f", "-", input=yaml.safe_dump_all(docs), check=False)

    def condition(name: str, status: str, reason: str, prefix: str) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            current = runtime_ready(api_client, name, namespace)
            if (
                current
                and (current.get("status"), current.get("reason")) == (status, reason)
                and str(current.get("message", "")).startswith(prefix)
            ):
                return current
            return None

        return eventually(probe, timeout=timeout, what=f"RuntimeReady={status} {reason} on {name}")

    def event(name: str, reason: str) -> Any:
        def probe() -> Any:
            found = [e for e in events_for(api_client, namespace, name) if e.reason == reason]
            return found[0] if found else None

        return eventually(probe, timeout=timeout, what=f"a {reason} event on {name}")

    # The product page's catalog: a 1B runtime (500M–2B) and a 3B runtime (2B–4B), a 3.21B model, and a model
    # whose size is not known yet.
    result = create(
        _runtime("srt-llama-1b", namespace, "500M", "2B"),
        _runtime("srt-llama-3b", namespace, "2B", "4B"),
        _model("llama-3-2-3b-instruct", namespace, "3.21B"),
        _model("llama-next", namespace, None),
    )
    assert result.returncode == 0, f"creating the catalog failed: {result.stderr}"
    step("catalog: runtimes srt-llama-1b [500M, 2B] and srt-llama-3b [2B, 4B], models 3.21B and unsized")

    # 1. Auto-selection by size range.
    result = create(_isvc("auto", namespace, "llama-3-2-3b-instruct"))
    assert result.returncode == 0, f"auto: {result.stderr}"
    found = condition("auto", "True", "RuntimeSelected", "selected ServingRuntime srt-llama-3b ")
    step(f"auto-selection: {found['message']}")

    # 2. A named runtime that does not declare support: admitted with a warning, advisory event.
    result = create(_isvc("pinned", namespace, "llama-3-2-3b-instruct", runtime="srt-llama-1b"))
    assert result.returncode == 0, f"pinned: {result.stderr}"
    if webhook:
        warnings = _warnings(result)
        assert any(
            "does not declare support for model llama-3-2-3b-instruct" in w
            and "model size 3.21B is outside supported range [500M, 2B]" in w
            for w in warnings
        ), f"pinned: no admission warning in {result.stderr!r}"
        step(f"admission warning: {warnings[0]}")
    found = condition("pinned", "True", "RuntimeSpecified", "using specified ServingRuntime srt-llama-1b; ")
    advisory = event("pinned", "RuntimeCompatibilityAdvisory")
    assert advisory.type == "Warning", advisory
    step(f"advisory event: {advisory.message}")

    # 3. RuntimeNotFound once the model's size appears and no range covers it.
    result = create(_isvc("grows", namespace, "llama-next"))
    assert result.returncode == 0, f"grows: {result.stderr}"
    condition("grows", "True", "RuntimeSelected", "selected ServingRuntime ")
    result = kubectl(
        "patch",
        "basemodel",
        "llama-next",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"modelParameterSize":"70B"}}',
        check=False,
    )
    assert result.returncode == 0, f"patching the model size: {result.stderr}"
    found = condition("grows", "False", "RuntimeNotFound", "no runtime supports model llama-next ")
    not_found = event("grows", "RuntimeNotFound")
    assert not_found.type == "Warning", not_found
    step(f"after modelParameterSize 70B appeared: {found['message']}")

    # 4. Denied at admission: auto-selection is impossible.
    if webhook:
        result = create(_isvc("denied", namespace, "llama-next"))
        expected = (
            f'admission webhook "{ISVC_WEBHOOK}" denied the request: no runtime supports model llama-next '
        )
        assert result.returncode != 0, "denied: the InferenceService was admitted"
        assert expected in result.stderr, f"denied: unexpected error {result.stderr!r}"
        step(f"denial: {result.stderr.strip()}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.scenario", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", default="ome-selector-e2e")
    parser.add_argument("--kubectl", default="kubectl", help="kubectl binary (default: from PATH)")
    parser.add_argument("--no-webhook", action="store_true", help="the release runs without the webhook")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    kubectl = Kubectl(args.kubeconfig, args.kubectl)
    api_client = config.new_client_from_config(config_file=str(args.kubeconfig))  # type: ignore[no-untyped-call]
    with api_client:
        core: Any = client.CoreV1Api(api_client)
        try:
            core.create_namespace({"metadata": {"name": args.namespace}})
        except client.ApiException as error:
            if error.status != 409:
                raise
        try:
            run_scenario(
                api_client,
                kubectl,
                args.namespace,
                webhook=not args.no_webhook,
                timeout=args.timeout,
                log=lambda text: print(f"ok: {text}", flush=True),
            )
        except AssertionError as error:
            print(f"FAILED: {error}", file=sys.stderr)
            return 1
    print("e2e scenario passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
