"""`kubectl ome-selector status` against the real apiserver: one listing of InferenceServices, -n/-A/-l, every
output.

It runs on OME's CRDs too (tests/integration/beside_ome/), whose printer columns show no RuntimeReady.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import objects
from harness.controlplane import ControlPlane
from harness.kube import create, eventually, runtime_ready

KUBECTL_OME = Path(sys.executable).parent / "kubectl-ome_selector"


def _status(control_plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL_OME), "status", "--kubeconfig", str(control_plane.kubeconfig), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_status_lists_every_inference_service_on_either_crds(
    api_client: Any, control_plane: ControlPlane, namespace: str, running_operator: Any
) -> None:
    create(api_client, objects.model("llama", namespace=namespace, size="3.21B"))
    create(api_client, objects.runtime("rt-fit", namespace=namespace, size_range=("2B", "4B")))
    create(api_client, objects.inference_service("auto", namespace=namespace, model_name="llama"))
    named = objects.inference_service("named", namespace=namespace, model_name="llama", runtime_name="gone")
    named["metadata"]["labels"] = {"app": "chat"}
    create(api_client, named)
    bare = objects.inference_service("bare", namespace=namespace, model_name="-")
    del bare["spec"]["model"]  # neither a model nor a runtime: left alone (SPEC §5)
    create(api_client, bare)
    running_operator(namespaces=[namespace])
    eventually(
        lambda: all(runtime_ready(api_client, name, namespace) for name in ("auto", "named")) or None,
        what="both conditions",
    )

    table = _status(control_plane, "-n", namespace)
    assert (table.returncode, table.stderr) == (0, ""), table.stderr
    assert table.stdout == (
        "NAME    MODEL   RUNTIME   RUNTIMEREADY   REASON\n"
        "auto    llama   rt-fit    True           RuntimeSelected\n"
        "bare    -       -         -              -\n"
        "named   llama   gone      False          RuntimeNotFound\n"
    )
    wide = _status(control_plane, "-n", namespace, "-l", "app=chat", "-o", "wide")
    assert wide.stdout.splitlines() == [
        "NAME    MODEL   RUNTIME   RUNTIMEREADY   REASON            MESSAGE",
        "named   llama   gone      False          RuntimeNotFound   "
        f"runtime gone not found in namespace {namespace} or at cluster scope",
    ]
    document = json.loads(_status(control_plane, "-A", "-o", "json").stdout)
    ours = {item["name"]: item for item in document["items"] if item["namespace"] == namespace}
    assert set(ours) == {"auto", "bare", "named"}
    assert ours["auto"] == {
        "namespace": namespace,
        "name": "auto",
        "model": "llama",
        "runtime": "rt-fit",
        "runtime_source": "selected",
        "runtime_kind": "ServingRuntime",
        "status": "True",
        "reason": "RuntimeSelected",
        "message": "selected ServingRuntime rt-fit (score 2)",
    }
    everywhere = _status(control_plane, "-A")
    assert everywhere.stdout.startswith("NAMESPACE   ")
    assert re.search(rf"^{namespace} +auto +llama +rt-fit +True +RuntimeSelected$", everywhere.stdout, re.M)
    nothing = _status(control_plane, "-n", namespace, "-l", "app=none")
    assert (nothing.returncode, nothing.stdout) == (0, "")
    assert nothing.stderr == f"No InferenceServices found in namespace {namespace}.\n"
