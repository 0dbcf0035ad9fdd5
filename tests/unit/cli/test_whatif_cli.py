"""`kubectl ome-selector runtime what-if` against the samples as files (SPEC §11): a closer range switches
exactly the expected InferenceService, deleting the only runtime leaves them without one; exit status and bad
input.

tests/integration/test_lint_whatif_live.py runs the same cases against a real API server.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import yaml
from cli_runner import KUBECTL_OME, REPO_ROOT, Run

CLOSER = "tests/data/whatif/sglang-llama-3-2-small.yaml"
AGAINST = ("--against", "samples/")
BAD_CHANGE = "tests/data/cli/malformed/size-not-a-string.yaml"


def verdict(status: str, reason: str, runtime: str | None = None) -> dict[str, Any]:
    return {"status": status, "reason": reason, "runtime": runtime}


def change(name: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    return {"namespace": "ome-demo", "name": name, "before": before, "after": after}


SELECTED = "RuntimeSelected"
NOT_FOUND = verdict("False", "RuntimeNotFound")


def test_a_closer_range_switches_the_1b_model(kubectl_ome: Run) -> None:
    result = kubectl_ome("runtime", "what-if", "-f", CLOSER, *AGAINST)
    assert result.code == 0
    assert result.out == (
        "NAMESPACE   NAME            BEFORE                                                      AFTER\n"
        "ome-demo    llama-1b-auto   True RuntimeSelected ClusterServingRuntime/vllm-llama-3-2   "
        "True RuntimeSelected ClusterServingRuntime/sglang-llama-3-2-small\n"
    )
    assert result.err == "InferenceServices: 1 changed, 19 unchanged\n"
    document = kubectl_ome("runtime", "what-if", "-f", CLOSER, *AGAINST, "-o", "json", "--fail-on-change")
    assert (document.code, document.err) == (3, "")
    assert json.loads(document.out) == {
        "changes": [
            change(
                "llama-1b-auto",
                verdict("True", SELECTED, "ClusterServingRuntime/vllm-llama-3-2"),
                verdict("True", SELECTED, "ClusterServingRuntime/sglang-llama-3-2-small"),
            )
        ],
        "unchanged": 19,
    }


def test_deleting_the_only_runtimes_of_qwen3(kubectl_ome: Run) -> None:
    result = kubectl_ome(
        "runtime",
        "what-if",
        "--delete",
        "clusterservingruntime/sglang-qwen3-medium",
        "--delete",
        "ClusterServingRuntimes/vllm-qwen3-small",
        *AGAINST,
        "-o",
        "json",
    )
    assert result.code == 0
    # qwen3-32b-auto had no runtime before either: its message changes, its verdict does not.
    assert json.loads(result.out) == {
        "changes": [
            change(
                "qwen3-4b-auto",
                verdict("True", SELECTED, "ClusterServingRuntime/sglang-qwen3-medium"),
                NOT_FOUND,
            ),
            change(
                "qwen3-8b-auto",
                verdict("True", SELECTED, "ClusterServingRuntime/sglang-qwen3-medium"),
                NOT_FOUND,
            ),
        ],
        "unchanged": 18,
    }


def test_deleting_a_named_runtime(kubectl_ome: Run) -> None:
    result = kubectl_ome(
        "runtime",
        "what-if",
        "--delete",
        "clusterservingruntime/srt-llama-3-2-1b-instruct-demo",
        *AGAINST,
        "-o",
        "json",
    )
    named = verdict("True", "RuntimeSpecified", "ClusterServingRuntime/srt-llama-3-2-1b-instruct-demo")
    assert json.loads(result.out)["changes"] == [
        change("llama-3b-on-1b-runtime", named, NOT_FOUND),
        change("llama-3b-on-1b-runtime-pinned", named, NOT_FOUND),
    ]


def test_one_namespace(kubectl_ome: Run) -> None:
    """team-a's InferenceService uses its own runtime: nothing changes there."""
    result = kubectl_ome("runtime", "what-if", "-f", CLOSER, *AGAINST, "-n", "team-a", "--fail-on-change")
    assert result == (0, "", "InferenceServices: 0 changed, 1 unchanged\n")
    deleted = kubectl_ome(
        "runtime", "what-if", "--delete", "servingruntime/team-vllm-llama-3-2", *AGAINST, "-n", "team-a"
    )
    assert deleted.out.splitlines()[1].split() == [
        "team-a",
        "support-assistant",
        "True",
        SELECTED,
        "ServingRuntime/team-vllm-llama-3-2",
        "True",
        SELECTED,
        "ClusterServingRuntime/sglang-llama-3-2-compact",
    ]


def test_applying_an_inference_service_and_stdin(kubectl_ome: Run) -> None:
    isvc = (
        "apiVersion: ome.io/v1beta1\nkind: InferenceService\n"
        "metadata: {name: new-qwen, namespace: ome-demo}\nspec: {model: {name: qwen3-8b-demo}}\n"
    )
    result = kubectl_ome("runtime", "what-if", "-f", "-", *AGAINST, "-o", "json", stdin=isvc)
    assert json.loads(result.out) == {
        "changes": [
            change("new-qwen", None, verdict("True", SELECTED, "ClusterServingRuntime/sglang-qwen3-medium"))
        ],
        "unchanged": 20,
    }
    table = kubectl_ome("runtime", "what-if", "-f", "-", *AGAINST, stdin=isvc)
    assert table.out.splitlines()[1].split()[:3] == ["ome-demo", "new-qwen", "(absent)"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--delete", "clusterservingruntime/nope"],
            "error: cannot delete ClusterServingRuntime nope: it does not exist\n",
        ),
        (
            ["--delete", "servingruntime/team-vllm-llama-3-2"],
            "error: cannot delete ServingRuntime default/team-vllm-llama-3-2: it does not exist\n",
        ),
        (
            ["-f", CLOSER, "--delete", "clusterservingruntime/sglang-llama-3-2-small"],
            "error: ClusterServingRuntime sglang-llama-3-2-small is both applied (-f) and deleted "
            "(--delete)\n",
        ),
        ([], "error: nothing to compare: give -f CHANGE, -k DIR or --delete KIND/NAME\n"),
        (["-f", "no/such/file.yaml"], 'error: the path "no/such/file.yaml" does not exist\n'),
    ],
    ids=["missing", "namespaced-missing", "applied-and-deleted", "nothing", "no-file"],
)
def test_bad_changes(kubectl_ome: Run, args: list[str], message: str) -> None:
    assert kubectl_ome("runtime", "what-if", *args, *AGAINST) == (1, "", message)


def test_bad_files_are_reported_as_explain_reports_them(kubectl_ome: Run) -> None:
    bad_change = kubectl_ome("runtime", "what-if", "-f", BAD_CHANGE, *AGAINST)
    explain = kubectl_ome("runtime", "explain", "-f", BAD_CHANGE, "--model", "m")
    assert (bad_change.code, bad_change.out) == (1, "")
    assert bad_change.err == explain.err
    assert bad_change.err.startswith(f"error: {BAD_CHANGE}: ")
    for path in ("tests/data/cli/malformed/priority-zero.yaml", "tests/data/cli/malformed/invalid-json.json"):
        what_if = kubectl_ome("runtime", "what-if", "-f", CLOSER, "--against", path)
        explain = kubectl_ome("runtime", "explain", "-f", path, "--model", "m")
        assert (what_if.code, what_if.out) == (1, "")
        assert what_if.err == explain.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--delete", "pod/x"],
            "argument --delete: unknown kind 'pod' (one of basemodel, clusterbasemodel, servingruntime, "
            "clusterservingruntime, inferenceservice)",
        ),
        (["--delete", "isvc"], "argument --delete: 'isvc' is not KIND/NAME"),
        (["--delete", "isvc/a/b"], "argument --delete: 'isvc/a/b' is not KIND/NAME"),
        (
            ["-f", CLOSER, "-n", "a", "-A"],
            "argument -A/--all-namespaces: not allowed with argument -n/--namespace",
        ),
        (
            ["-f", CLOSER, "-o", "yaml"],
            "argument -o/--output: invalid choice: 'yaml' (choose from 'table', 'json', 'name')",
        ),
    ],
)
def test_usage_errors(kubectl_ome: Run, args: list[str], message: str) -> None:
    result = kubectl_ome("runtime", "what-if", *args, *AGAINST)
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith(
        "usage: kubectl ome-selector runtime what-if (-f CHANGE | -k DIR)... [--delete KIND/NAME]..."
    )
    assert result.err.endswith(f"error: {message}\n")


def test_installed_entry_point_exits_3_on_change() -> None:
    result = subprocess.run(
        [str(KUBECTL_OME), "runtime", "what-if", "-f", CLOSER, *AGAINST, "--fail-on-change"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 3
    assert "llama-1b-auto" in result.stdout


def test_objects_defined_twice_are_the_last_with_a_warning(kubectl_ome: Run, tmp_path: Any) -> None:
    """In the change and in the --against catalog alike, an object defined twice is the later one (SPEC §6):
    the copy of the closer runtime given first loses to the original, which switches the 1B model."""
    original = REPO_ROOT / CLOSER
    earlier = tmp_path / "earlier.yaml"
    earlier.write_text(original.read_text().replace("autoSelect: true", "autoSelect: false"))
    twice = tmp_path / "catalog.yaml"
    twice.write_text((REPO_ROOT / "samples" / "10-cluster-base-models.yaml").read_text())
    result = kubectl_ome(
        "runtime",
        "what-if",
        "-f",
        str(earlier),
        "-f",
        CLOSER,
        *AGAINST,
        "--against",
        str(twice),
        "-o",
        "json",
    )
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert [c["name"] for c in document["changes"]] == ["llama-1b-auto"]
    warning = "; the last one is used, as kubectl apply leaves it"
    lines = result.err.splitlines()
    assert lines[-1] == (
        "Warning: ClusterServingRuntime sglang-llama-3-2-small is defined twice: "
        f"in {earlier} and in {CLOSER}{warning}"
    )
    models = [
        doc["metadata"]["name"]
        for doc in yaml.safe_load_all(twice.read_text())
        if doc and doc["kind"] == "ClusterBaseModel"
    ]
    assert len(models) > 1
    assert lines[:-1] == [
        f"Warning: ClusterBaseModel {name} is defined twice: in samples/10-cluster-base-models.yaml "
        f"(document {number}) and in {twice} (document {number}){warning}"
        for number, name in enumerate(models, start=1)
    ]
