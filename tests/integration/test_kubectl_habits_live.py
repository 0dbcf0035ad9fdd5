"""`kubectl ome-selector` against the real apiserver (SPEC §5, §6): the condition and explain name the step
that decided a tie, status shows the runtime the core derives from the same listing, `-o name`,
`-o jsonpath=`, `--no-headers` and `--request-timeout` live, and completion of object names from the cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import objects
from harness.controlplane import ControlPlane
from harness.kube import create, eventually, runtime_ready

BIN = Path(sys.executable).parent
KUBECTL_OME = BIN / "kubectl-ome_selector"
COMPLETE = BIN / "kubectl_complete-ome_selector"


def _run(executable: Path, control_plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(executable), *args, "--kubeconfig", str(control_plane.kubeconfig)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_a_tie_on_score_says_the_range_decided_everywhere(
    api_client: Any, control_plane: ControlPlane, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("llama", namespace=namespace, size="3.21B"))
    create(api_client, objects.runtime("rt-near", namespace=namespace, size_range=("2B", "4B")))
    create(api_client, objects.runtime("rt-far", namespace=namespace, size_range=("1B", "8B")))
    create(api_client, objects.inference_service("auto", namespace=namespace, model_name="llama"))
    running_operator(namespaces=[namespace])
    condition = eventually(lambda: runtime_ready(api_client, "auto", namespace), what="RuntimeReady")
    message = (
        "selected ServingRuntime rt-near (score 2; closer size range than rt-far at score 2: "
        "[2B, 4B] vs [1B, 8B])"
    )
    assert (condition["reason"], condition["message"]) == ("RuntimeSelected", message)

    explained = _run(KUBECTL_OME, control_plane, "runtime", "explain", "--isvc", "auto", "-n", namespace)
    assert (explained.returncode, explained.stderr) == (0, f"Note: {message}\n")
    document = _run(
        KUBECTL_OME, control_plane, "runtime", "explain", "--isvc", "auto", "-n", namespace, "-o", "json"
    )
    assert json.loads(document.stdout)["selected"] == {
        "kind": "ServingRuntime",
        "name": "rt-near",
        "namespace": namespace,
        "decidedBy": "sizeRange",
        "message": message,
    }
    names = _run(
        KUBECTL_OME, control_plane, "runtime", "explain", "--model", "llama", "-n", namespace, "-o", "name"
    )
    assert names.stdout == "servingruntime.ome.io/rt-near\nservingruntime.ome.io/rt-far\n"

    # status: the runtime is the core's verdict on the same listing, which the stored condition is.
    status = _run(
        KUBECTL_OME, control_plane, "status", "-n", namespace, "--no-headers", "--request-timeout", "30s"
    )
    assert (status.returncode, status.stdout, status.stderr) == (
        0,
        "auto   llama   rt-near   True           RuntimeSelected\n",
        "",
    )
    path = _run(
        KUBECTL_OME,
        control_plane,
        "status",
        "-n",
        namespace,
        "-o",
        "jsonpath={range .items[*]}{.name}={.runtime_kind}/{.runtime}{end}",
    )
    assert (path.returncode, path.stdout) == (0, "auto=ServingRuntime/rt-near")


def test_completion_offers_the_names_the_cluster_lists(
    api_client: Any, control_plane: ControlPlane, namespace: str
) -> None:
    create(api_client, objects.model("team-model", namespace=namespace, size="3B"))
    create(api_client, objects.inference_service("chat-a", namespace=namespace, model_name="team-model"))
    create(api_client, objects.inference_service("chat-b", namespace=namespace, model_name="team-model"))
    create(api_client, objects.inference_service("other", namespace=namespace, model_name="team-model"))
    words = ["runtime", "explain", "-n", namespace, "--kubeconfig", str(control_plane.kubeconfig)]
    isvcs = subprocess.run(
        [str(COMPLETE), *words, "--isvc", "chat"], capture_output=True, text=True, check=False, timeout=60
    )
    assert (isvcs.returncode, isvcs.stdout, isvcs.stderr) == (0, "chat-a\nchat-b\n:4\n", "")
    models = subprocess.run(
        [str(COMPLETE), *words, "--model", "team"], capture_output=True, text=True, check=False, timeout=60
    )
    assert models.stdout == "team-model\n:4\n"
    spaces = subprocess.run(
        [str(COMPLETE), "status", "--kubeconfig", str(control_plane.kubeconfig), "-n", namespace[:-1]],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    # At most LIMIT namespaces are asked for (the suite makes many): those offered start with the word.
    *offered, directive = spaces.stdout.splitlines()
    assert directive == ":4"
    assert all(name.startswith(namespace[:-1]) for name in offered)
    # With -f the cluster is not read: nothing is offered.
    offline = subprocess.run(
        [str(COMPLETE), *words, "-f", "samples/", "--isvc", "chat"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert offline.stdout == ":4\n"
