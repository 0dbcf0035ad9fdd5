"""Files and kustomizations read as the real kubectl reads them (SPEC §6): `-f DIR` in the order `kubectl
apply -R -f DIR` walks it, an object defined twice as `kubectl apply` leaves it (the later one), and `-k DIR`
as `kubectl kustomize DIR` builds it — checked against the kubectl binary of the control plane."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

from harness.controlplane import ControlPlane
from ome_selector.cli.sources import FileSource, read_catalog

REPO_ROOT = Path(__file__).resolve().parents[2]
KUBECTL_OME = str(Path(__import__("sys").executable).parent / "kubectl-ome_selector")
KUSTOMIZE = REPO_ROOT / "tests" / "data" / "kustomize"
OVERLAY = "tests/data/kustomize/ome-llama-3b"


def _model(name: str, *, disabled: bool) -> str:
    return (
        f"apiVersion: ome.io/v1beta1\nkind: ClusterBaseModel\nmetadata:\n  name: {name}\n"
        f"spec:\n  disabled: {str(disabled).lower()}\n  modelFormat:\n    name: safetensors\n"
    )


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _kubectl_ome(
    control_plane: ControlPlane, *args: str, path: str | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`kubectl-ome ARGS` from the repository root, with the control plane's kubectl first on PATH (or
    ``path``) and a kubeconfig that must never be read."""
    environment = {
        **os.environ,
        "PATH": f"{control_plane.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}" if path is None else path,
        "KUBECONFIG": "/nonexistent/kubeconfig",
    }
    return subprocess.run(
        [KUBECTL_OME, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=REPO_ROOT,
        env=environment,
        input=stdin,
    )


def test_a_directory_is_read_in_kubectls_order(control_plane: ControlPlane, tmp_path: Path) -> None:
    """`kubectl create --dry-run=client -R -f DIR -o name` prints the objects in the order kubectl reads the
    files; the reader's order is the same (a subdirectory where its name sorts, upper case first, only
    *.yaml, *.yml and *.json)."""
    tag = uuid.uuid4().hex[:6]
    names = ["b.yaml", "a/z.yaml", "a/y/x.json", "a.yaml", "a-b.yaml", "B.yml", "a/c.YAML", "a/notes.txt"]
    files = {}
    for index, name in enumerate(names):
        model = f"order-{tag}-{index}"
        files[name] = (
            json.dumps(
                {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": model}}
            )
            if name.endswith(".json")
            else _model(model, disabled=False)
        )
    _write(tmp_path / "tree", files)
    listed = control_plane.kubectl(
        "create", "--dry-run=client", "-R", "-f", str(tmp_path / "tree"), "-o", "name"
    )
    kubectl_order = [line.rsplit("/", 1)[1] for line in listed.stdout.split()]
    ours = [raw.body["metadata"]["name"] for raw in FileSource([str(tmp_path / "tree")]).read()]
    assert ours == kubectl_order
    assert len(ours) == 6  # c.YAML and notes.txt are not manifests to either


def test_an_object_defined_twice_is_what_kubectl_apply_leaves(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """a/z.yaml comes before a.yaml in kubectl's walk: the cluster keeps a.yaml's object, and so does the
    reader, with the warning."""
    name = f"twice-{uuid.uuid4().hex[:6]}"
    _write(
        tmp_path / "tree", {"a/z.yaml": _model(name, disabled=True), "a.yaml": _model(name, disabled=False)}
    )
    try:
        control_plane.kubectl("apply", "-R", "-f", str(tmp_path / "tree"))
        applied = json.loads(
            control_plane.kubectl("get", "clusterbasemodels.ome.io", name, "-o", "json").stdout
        )
    finally:
        control_plane.kubectl("delete", "clusterbasemodels.ome.io", name, "--ignore-not-found")
    source = FileSource([str(tmp_path / "tree")])
    catalog, redefined = read_catalog(source.read(), source.namespace)
    (model,) = catalog.models()
    assert applied["spec"]["disabled"] is False
    assert model.spec.disabled is False
    assert [(r.places) for r in redefined] == [(f"{tmp_path}/tree/a/z.yaml", f"{tmp_path}/tree/a.yaml")]


def test_k_reads_what_kubectl_kustomize_builds(control_plane: ControlPlane) -> None:
    """OME's own kustomization of its runtimes, plus a model and a patch (tests/data/kustomize/): the patched
    runtime is selected, and -k reads exactly what `kubectl kustomize` prints."""
    built = control_plane.kubectl("kustomize", OVERLAY).stdout
    args = ("runtime", "explain", "--model", "llama-3-2-3b-instruct", "-o", "json")
    with_k = _kubectl_ome(control_plane, *args, "-k", OVERLAY)
    from_build = _kubectl_ome(control_plane, *args, "-f", "-", stdin=built)
    assert with_k.returncode == 0, with_k.stderr
    assert (with_k.stdout, with_k.stderr) == (from_build.stdout, from_build.stderr) == (with_k.stdout, "")
    document = json.loads(with_k.stdout)
    assert len(document["runtimes"]) == 46
    assert document["selected"]["name"] == "srt-llama-3-2-3b-instruct"
    top = document["runtimes"][:2]
    assert [(r["name"], r["rank"], r["score"], r["priority"]) for r in top] == [
        ("srt-llama-3-2-3b-instruct", 1, 4, 2),
        ("vllm-llama-3-2-3b-instruct", 2, 2, 1),
    ]
    lint_k = _kubectl_ome(control_plane, "runtime", "lint", "-k", OVERLAY, "-o", "json")
    lint_build = _kubectl_ome(control_plane, "runtime", "lint", "-f", "-", "-o", "json", stdin=built)
    assert lint_k.returncode == lint_build.returncode == 0
    # The same findings; -k names where they come from as the kustomization, stdin as <stdin>.
    assert lint_k.stdout == lint_build.stdout.replace(
        '"file": "<stdin>"', f'"file": "kustomization {OVERLAY}"'
    )
    assert f'"file": "kustomization {OVERLAY}"' in lint_k.stdout


def test_k_is_in_command_line_order_with_f(control_plane: ControlPlane, tmp_path: Path) -> None:
    """-f then -k: the kustomization's model is the later definition, and the warning names both."""
    earlier = tmp_path / "model.yaml"
    earlier.write_text((KUSTOMIZE / "ome-llama-3b" / "model.yaml").read_text().replace("3.21B", "30B"))
    result = _kubectl_ome(
        control_plane,
        "runtime",
        "explain",
        "-f",
        str(earlier),
        "-k",
        OVERLAY,
        "--model",
        "llama-3-2-3b-instruct",
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"Warning: ClusterBaseModel llama-3-2-3b-instruct is defined twice: in {earlier} and in "
        f"kustomization {OVERLAY} (document 1); the last one is used, as kubectl apply leaves it\n"
    )
    assert result.stdout.splitlines()[1].startswith("srt-llama-3-2-3b-instruct ")


def test_what_if_k_applies_the_kustomization(control_plane: ControlPlane) -> None:
    against = (
        "--against",
        "tests/data/kustomize/inference-service.yaml",
        "--against",
        f"{OVERLAY}/model.yaml",
        "--against",
        "tests/data/ome-catalog/runtimes/vllm/llama-3-2-3b-instruct-rt.yaml",
    )
    result = _kubectl_ome(control_plane, "runtime", "what-if", "-k", OVERLAY, *against, "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "changes": [
            {
                "namespace": "default",
                "name": "llama-3b",
                "before": {
                    "status": "True",
                    "reason": "RuntimeSelected",
                    "runtime": "ClusterServingRuntime/vllm-llama-3-2-3b-instruct",
                },
                "after": {
                    "status": "True",
                    "reason": "RuntimeSelected",
                    "runtime": "ClusterServingRuntime/srt-llama-3-2-3b-instruct",
                },
            }
        ],
        "unchanged": 0,
    }
    # The kustomization's model is also in --against: no warning, each catalog is read on its own.
    assert result.stderr == ""


def test_k_failures_are_one_line_errors(control_plane: ControlPlane, tmp_path: Path) -> None:
    args = ("runtime", "lint", "-k")
    no_kustomization = _kubectl_ome(control_plane, *args, "tests/data/cli")
    assert (no_kustomization.returncode, no_kustomization.stdout) == (1, "")
    assert no_kustomization.stderr == (
        "error: kubectl kustomize tests/data/cli: unable to find one of 'kustomization.yaml', "
        f"'kustomization.yml' or 'Kustomization' in directory '{REPO_ROOT}/tests/data/cli'\n"
    )
    missing = _kubectl_ome(control_plane, *args, "no/such/dir")
    assert (missing.returncode, missing.stderr) == (
        1,
        'error: the path "no/such/dir" is not a directory (-k takes a kustomization directory)\n',
    )
    no_kubectl = _kubectl_ome(control_plane, *args, OVERLAY, path=str(tmp_path))
    assert (no_kubectl.returncode, no_kubectl.stderr) == (
        1,
        f"error: -k {OVERLAY}: kubectl not found on PATH (-k runs `kubectl kustomize DIR`)\n",
    )
