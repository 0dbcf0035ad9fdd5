"""kubectl's habits in `kubectl ome-selector` (SPEC §6): `version` beside OME's own `kubectl-ome`, `-o
name`, `-o jsonpath=`, `--no-headers`, `--request-timeout`, the short kinds, a missing kubeconfig reported as
kubectl reports it, and `model inspect -o manifest`. Exact outputs, from the samples as files (live:
tests/integration).
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_runner import KUBECTL_OME, NO_PYC, Run

from harness.kube import token_kubeconfig
from harness.model_folders import BERT_MINILM_CONFIG, bert_minilm_tensors, write_json, write_safetensors
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Model
from ome_selector.cli.arguments import request_timeout
from ome_selector.cli.cluster_source import NO_KUBECONFIG
from ome_selector.cli.kubectl_ome import other_kubectl_ome, version_lines
from ome_selector.cli.output import JsonPathError, jsonpath

MODEL = ["runtime", "explain", "-f", "samples/", "--model", "llama-3-2-3b-instruct-demo"]
TIE_NOTE = (
    "Note: selected ClusterServingRuntime sglang-llama-3-2-compact (score 4; closer size range than "
    "vllm-llama-3-2 at score 4: [2B, 4B] vs [1B, 8B])\n"
)


# --- version beside OME's kubectl-ome -------------------------------------------------------------------


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _version(search_path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL_OME), "version"],
        env={**os.environ, "PATH": search_path},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_version_names_another_kubectl_ome_on_path(tmp_path: Path) -> None:
    ome = _executable(tmp_path / "ome" / "kubectl-ome", "#!/bin/sh\necho OME\n")
    alias = tmp_path / "alias" / "kubectl-ome"
    alias.parent.mkdir()
    alias.symlink_to(KUBECTL_OME)  # the documented alias: a link to this plugin, not another one
    search = os.pathsep.join(
        [str(alias.parent), str(ome.parent), str(KUBECTL_OME.parent), "/usr/bin", "/bin"]
    )
    result = _version(search)
    assert (result.returncode, result.stdout) == (0, "kubectl ome-selector (ome-selector) 0.1.0\n")
    assert result.stderr == (
        f"Note: another kubectl-ome is on PATH ({ome}): `kubectl ome` may run it rather than this plugin; "
        "run this one as `kubectl ome-selector`\n"
    )


def test_version_is_quiet_with_no_other_kubectl_ome(tmp_path: Path) -> None:
    alias = tmp_path / "alias" / "kubectl-ome"
    alias.parent.mkdir()
    alias.symlink_to(KUBECTL_OME)
    result = _version(os.pathsep.join([str(alias.parent), str(KUBECTL_OME.parent), "/usr/bin", "/bin"]))
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "kubectl ome-selector (ome-selector) 0.1.0\n",
        "",
    )


def test_a_copied_console_script_is_this_plugin_too(tmp_path: Path) -> None:
    """A console script of this module (e.g. a copy pip wrote) is not "another" kubectl-ome."""
    script = "#!/usr/bin/python3\nfrom ome_selector.cli.kubectl_ome import main\nmain()\n"
    _executable(tmp_path / "a" / "kubectl-ome", script)
    other = _executable(tmp_path / "b" / "kubectl-ome", "#!/bin/sh\n")
    found = other_kubectl_ome(os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path)]))
    assert found == [other]
    assert version_lines([])[1] == []


# --- -o name, -o jsonpath=, --no-headers ----------------------------------------------------------------


def test_explain_names_every_runtime_as_kubectl_does(kubectl_ome: Run) -> None:
    result = kubectl_ome(*MODEL, "-o", "name")
    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines()[:3] == [
        "clusterservingruntime.ome.io/sglang-llama-3-2-compact",
        "clusterservingruntime.ome.io/vllm-llama-3-2",
        "clusterservingruntime.ome.io/vllm-llama-3-2-h100",
    ]
    assert len(result.out.splitlines()) == 9


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.selected.name}", "sglang-llama-3-2-compact"),
        ("{.selected.decidedBy}", "sizeRange"),
        ("{.runtimes[0:2].name}", "sglang-llama-3-2-compact vllm-llama-3-2"),
        (
            '{range .runtimes[?(@.compatible==true)]}{.name}{"\\t"}{.rank}{"\\n"}{end}',
            "sglang-llama-3-2-compact\t1\nvllm-llama-3-2\t2\nvllm-llama-3-2-h100\t3\n",
        ),
        ("{range .runtimes[0:1]}{.compatible} {.priority} {.inheritanceChain}{end}", "true 2 "),
        ("model={.model.modelParameterSize}\\n", "model=3.21B\n"),
        ("{.no.such.key}", ""),
        ("{$.model.kind}", "ClusterBaseModel"),
    ],
)
def test_explain_jsonpath(kubectl_ome: Run, template: str, expected: str) -> None:
    result = kubectl_ome(*MODEL, "-o", f"jsonpath={template}")
    assert (result.code, result.out, result.err) == (0, expected, "")


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("jsonpath", "template format specified but no template given"),
        ("jsonpath={range .runtimes[*]}", "unclosed range: {range} without {end}"),
        ("jsonpath={end}", "not in range, nothing to end"),
        ("jsonpath={.a", "unclosed action '{.a'"),
    ],
)
def test_a_bad_template_is_a_usage_error(kubectl_ome: Run, output: str, message: str) -> None:
    result = kubectl_ome(*MODEL, "-o", output)
    assert (result.code, result.out) == (1, "")
    assert result.err.endswith(f"error: argument -o/--output: {message}\n")


def test_no_headers_drops_the_header_line_only(kubectl_ome: Run) -> None:
    full = kubectl_ome(*MODEL)
    bare = kubectl_ome(*MODEL, "--no-headers")
    assert (bare.code, bare.err) == (0, TIE_NOTE)
    assert bare.out == "".join(full.out.splitlines(keepends=True)[1:])


def test_status_lint_and_what_if_speak_name_and_jsonpath(kubectl_ome: Run) -> None:
    status = kubectl_ome("status", "-f", "samples/", "-n", "team-a", "-o", "name")
    assert (status.code, status.out) == (0, "inferenceservice.ome.io/support-assistant\n")
    # The samples hold no stored condition: no runtime is shown for an InferenceService that names none.
    runtime = kubectl_ome(
        "status", "-f", "samples/", "-n", "team-a", "-o", "jsonpath={.items[*].name}={.items[*].runtime}"
    )
    assert (runtime.code, runtime.out) == (0, "support-assistant=")
    headless = kubectl_ome("status", "-f", "samples/", "-n", "team-a", "--no-headers")
    assert headless.out == "support-assistant   support-assistant-3b   -         -              -\n"
    lint = kubectl_ome("runtime", "lint", "-f", "samples/", "-n", "team-a", "-o", "name")
    assert lint.code in (0, 1)
    assert lint.out
    assert all(line.count(".ome.io/") == 1 for line in lint.out.splitlines())
    assert len(set(lint.out.splitlines())) == len(lint.out.splitlines())  # each object once
    moved = kubectl_ome(
        "runtime", "what-if", "--delete", "csr/vllm-llama-3-2", "--against", "samples/", "-A", "-o", "name"
    )
    assert (moved.code, moved.out, moved.err) == (0, "inferenceservice.ome.io/llama-1b-auto\n", "")


def test_jsonpath_renders_values_as_kubectl_does() -> None:
    document = {"items": [{"a": True, "b": None, "c": {"d": [1, "x"]}, "n": 2.5}, {"a": False}]}
    assert jsonpath("{.items[*].a}", document) == "true false"
    assert jsonpath("{.items[0].b}|{.items[0].c}|{.items[0].n}", document) == '|{"d":[1,"x"]}|2.5'
    assert jsonpath("{range .items}[{.a}]{end}", document) == "[true][false]"
    assert jsonpath("{'quoted'} {\"a}b\"}", document) == "quoted a}b"
    with pytest.raises(JsonPathError):
        jsonpath("{.items[}", document)


# --- short kinds ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["csr", "CSR", "clusterservingruntime", "clusterservingruntimes"])
def test_what_if_takes_kubectl_short_kinds(kubectl_ome: Run, kind: str) -> None:
    result = kubectl_ome("runtime", "what-if", "--delete", f"{kind}/vllm-llama-3-2", "--against", "samples/")
    assert result.code == 0, result.err


def test_apply_and_kind_take_bm_and_cbm(kubectl_ome: Run, tmp_path: Path) -> None:
    unknown = kubectl_ome("runtime", "what-if", "--delete", "pod/x", "--against", "samples/")
    assert unknown.err.endswith(
        "error: argument --delete: unknown kind 'pod' "
        "(one of basemodel, clusterbasemodel, servingruntime, clusterservingruntime, inferenceservice)\n"
    )
    wrong = kubectl_ome("model", "inspect", str(tmp_path), "--apply", "sr/x")
    assert wrong.err.endswith(
        "error: argument --apply: expected KIND/NAME with KIND basemodel or clusterbasemodel, got 'sr/x'\n"
    )


# --- --request-timeout and a missing kubeconfig ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", None), ("5", 5.0), ("5s", 5.0), ("2m", 120.0), ("1h30m", 5400.0), ("500ms", 0.5), ("1.5s", 1.5)],
)
def test_request_timeout_reads_as_client_go(text: str, seconds: float | None) -> None:
    assert request_timeout(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "-1s", "s", "1 s", "٣"])
def test_a_bad_request_timeout_is_kubectls_usage_error(kubectl_ome: Run, text: str) -> None:
    result = kubectl_ome("runtime", "explain", "--model", "m", f"--request-timeout={text}")
    assert result.code == 1
    assert result.err.endswith(
        "error: argument --request-timeout: Invalid timeout value. Timeout must be a single integer in "
        "seconds, or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)\n"
    )


@pytest.fixture
def silent_apiserver() -> Iterator[str]:
    """An address that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        listener.close()


@pytest.mark.parametrize(
    "command", [["runtime", "explain", "--model", "m", "-n", "ns"], ["status", "-n", "ns"]]
)
def test_request_timeout_ends_a_request_that_gets_no_answer(
    silent_apiserver: str, tmp_path: Path, command: list[str]
) -> None:
    kubeconfig = token_kubeconfig(tmp_path / "kubeconfig", silent_apiserver)
    result = subprocess.run(
        [str(KUBECTL_OME), *command, "--kubeconfig", str(kubeconfig), "--request-timeout", "1s"],
        capture_output=True,
        text=True,
        timeout=60,  # without the flag the client would wait 70 s for the first byte
        check=False,
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "error: cannot reach the cluster: no answer within the request timeout (1s)\n"


def _live(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL_OME), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    "command", [["runtime", "explain", "--model", "m"], ["status"], ["runtime", "lint", "-n", "x"]]
)
def test_a_missing_kubeconfig_is_reported_as_kubectl_reports_it(tmp_path: Path, command: list[str]) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "nope"), **NO_PYC}
    implicit = _live(env, *command)
    assert (implicit.returncode, implicit.stdout, implicit.stderr) == (1, "", f"error: {NO_KUBECONFIG}\n")
    assert NO_KUBECONFIG == (
        "The connection to the server localhost:8080 was refused - did you specify the right host or port?"
    )
    no_env = _live({"PATH": os.environ["PATH"], "HOME": str(tmp_path), **NO_PYC}, *command)
    assert no_env.stderr == f"error: {NO_KUBECONFIG}\n"
    explicit = _live(env, *command, "--kubeconfig", str(tmp_path / "gone"))
    assert (explicit.returncode, explicit.stderr) == (
        1,
        f"error: stat {tmp_path / 'gone'}: no such file or directory\n",
    )


# --- model inspect -o manifest --------------------------------------------------------------------------


@pytest.fixture
def minilm(tmp_path: Path) -> Path:
    folder = tmp_path / "all-MiniLM-L6-v2"
    write_json(folder / "config.json", BERT_MINILM_CONFIG)
    write_safetensors(folder / "model.safetensors", bert_minilm_tensors(), {"format": "pt"})
    return folder


SPEC = """\
spec:
  modelParameterSize: 22.71M
  modelFormat:
    name: safetensors
    version: 1.0.0
  modelArchitecture: BertModel
  modelFramework:
    name: transformers
    version: 4.8.2
  maxTokens: 512
"""


def test_manifest_is_a_cluster_base_model_named_after_the_folder(kubectl_ome: Run, minilm: Path) -> None:
    result = kubectl_ome("model", "inspect", str(minilm), "-o", "manifest")
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "apiVersion: ome.io/v1beta1\nkind: ClusterBaseModel\nmetadata:\n  name: all-minilm-l6-v2\n" + SPEC
    )


def test_manifest_of_a_base_model_in_a_namespace(kubectl_ome: Run, minilm: Path) -> None:
    result = kubectl_ome(
        "model", "inspect", str(minilm), "-o", "manifest", "--kind", "bm", "--name", "minilm", "-n", "team-a"
    )
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "apiVersion: ome.io/v1beta1\nkind: BaseModel\nmetadata:\n  name: minilm\n  namespace: team-a\n" + SPEC
    )
    # What the product reads back from it is what --apply would have set (SPEC §10).
    document = yaml.safe_load(result.out)
    loaded = load_resource(document)
    assert isinstance(loaded, Model)
    assert loaded.spec.model_parameter_size == "22.71M"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--apply", "bm/x"], "-o manifest writes no model: it cannot be combined with --apply"),
        (["--kind", "sr"], "argument --kind: expected basemodel or clusterbasemodel, got 'sr'"),
    ],
)
def test_manifest_usage_errors(kubectl_ome: Run, minilm: Path, argv: list[str], message: str) -> None:
    result = kubectl_ome("model", "inspect", str(minilm), "-o", "manifest", *argv)
    assert (result.code, result.out) == (1, "")
    assert result.err.endswith(f"error: {message}\n")


def test_inspect_speaks_jsonpath_and_refuses_name_without_apply(kubectl_ome: Run, minilm: Path) -> None:
    path = kubectl_ome(
        "model", "inspect", str(minilm), "-o", "jsonpath={.modelParameterSize} {.files[*].name}"
    )
    assert (path.code, path.out, path.err) == (0, "22.71M model.safetensors", "")
    name = kubectl_ome("model", "inspect", str(minilm), "-o", "name")
    assert (name.code, name.out) == (1, "")
    assert (
        name.err == "error: -o name names the model --apply KIND/NAME writes; without --apply there is none\n"
    )
