"""`kubectl ome-selector runtime explain` and OME v1.3 (SPEC §6 v4): the note for a named runtime,
`--with-effective` (its `Effective runtime:` block and the JSON `effective`), `inheritanceChain`,
`--runtime-lookup`, all from files alone. The expected texts are written from the SPEC and the samples'
comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_runner import Run

NOTE = "Note: spec.runtime is explicit; automatic selection below is hypothetical.\n"
DEMO = ("-f", "samples/", "-n", "demo-v13")


def block(*lines: str) -> str:
    """What `--with-effective` adds after the table: one empty line, then the block."""
    return "\n" + "".join(f"{line}\n" for line in ("Effective runtime:", *lines))


def _after_table(out: str) -> str:
    return out[out.index("\nEffective runtime:\n") :]


# --- the block, from the samples ----------------------------------------------------------------------------

BLOCK_CASES = [
    pytest.param(
        ["--isvc", "demo-inherited", *DEMO],
        block(
            "SELECTION Explicit",
            "SOURCE SR/demo-v13/demo-llama-served",
            "INHERITANCE Observed",
            "ROOT-FIRST ServingRuntime/demo-v13/demo-llama-profile",
            "ROOT-FIRST ServingRuntime/demo-v13/demo-llama-served",
        ),
        id="explicit-inherited",
    ),
    pytest.param(
        ["--isvc", "llama-3b-auto", "-f", "samples/", "-n", "ome-demo"],
        block(
            "SELECTION Selected",
            "SOURCE CSR/sglang-llama-3-2-compact",
            "INHERITANCE Observed",
            "ROOT-FIRST ClusterServingRuntime/sglang-llama-3-2-compact",
        ),
        id="selected-without-a-parent",
    ),
    pytest.param(
        ["--isvc", "llama-3b-missing-runtime", "-f", "samples/", "-n", "ome-demo"],
        block("SELECTION Explicit", "SOURCE -", "INHERITANCE Unavailable", "REASON RuntimeNotFound"),
        id="explicit-missing",
    ),
    pytest.param(
        ["--isvc", "qwen3-32b-auto", "-f", "samples/", "-n", "ome-demo"],
        block("SELECTION Selected", "SOURCE -", "INHERITANCE Unavailable", "REASON RuntimeNotFound"),
        id="nothing-auto-selectable",
    ),
    pytest.param(
        # Disabled through its chain: the source is still the runtime the lookup finds.
        ["--isvc", "demo-disabled-by-profile", *DEMO, "-o", "wide"],
        block(
            "SELECTION Explicit",
            "SOURCE SR/demo-v13/demo-llama-draft",
            "INHERITANCE Observed",
            "ROOT-FIRST ServingRuntime/demo-v13/demo-llama-profile",
            "ROOT-FIRST ServingRuntime/demo-v13/demo-llama-draft",
        ),
        id="explicit-disabled-by-its-profile-wide",
    ),
    pytest.param(
        # team-b's runtime inherits from one that does not exist; the absent kind defaults to
        # ClusterServingRuntime, and with none of that name the lookup finds the ServingRuntime.
        ["--isvc", "llama-3b-canary-runtime", "-f", "samples/", "-n", "team-b"],
        block(
            "SELECTION Explicit",
            "SOURCE SR/team-b/team-vllm-canary",
            "INHERITANCE Unavailable",
            "REASON ParentNotFound",
        ),
        id="explicit-broken-chain",
    ),
]


@pytest.mark.parametrize(("args", "expected"), BLOCK_CASES)
def test_effective_block(kubectl_ome: Run, args: list[str], expected: str) -> None:
    result = kubectl_ome("runtime", "explain", *args, "--with-effective")
    assert result.code == 0, result.err
    assert _after_table(result.out) == expected
    # The table above is the one explain prints without the flag.
    without = kubectl_ome("runtime", "explain", *args)
    assert result.out == without.out + expected
    assert result.err == without.err


def test_the_note_for_a_named_runtime_and_the_verdict_under_it(kubectl_ome: Run) -> None:
    result = kubectl_ome("runtime", "explain", "--isvc", "demo-mode-mismatch", *DEMO)
    assert result.code == 0
    assert result.err == NOTE + (
        "Note: InferenceService demo-v13/demo-mode-mismatch names runtime demo-llama-served: "
        "RuntimeSpecified: "
        "using specified ServingRuntime demo-llama-served; it does not declare support for model "
        "llama-3-2-3b-instruct-demo: runtime engine deployment mode RawDeployment does not match requested "
        "engine deployment mode OMENative\n"
    )


def test_no_note_without_a_named_runtime(kubectl_ome: Run) -> None:
    """Only the step that decided between the two closest runtimes (SPEC §6), no note about a named one."""
    result = kubectl_ome("runtime", "explain", "--isvc", "llama-3b-auto", "-f", "samples/", "-n", "ome-demo")
    assert (result.code, result.err) == (
        0,
        "Note: selected ClusterServingRuntime sglang-llama-3-2-compact (score 4; closer size range than "
        "vllm-llama-3-2 at score 4: [2B, 4B] vs [1B, 8B])\n",
    )


@pytest.mark.parametrize("output", ["table", "wide", "json", "yaml"])
def test_with_effective_needs_isvc(kubectl_ome: Run, output: str) -> None:
    result = kubectl_ome(
        "runtime", "explain", "-f", "samples/", "--model", "qwen3-8b", "--with-effective", "-o", output
    )
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith("usage: kubectl ome-selector runtime explain ")
    assert result.err.endswith("\nerror: --with-effective requires --isvc\n")


# --- the document -------------------------------------------------------------------------------------------


def _document(kubectl_ome: Run, *args: str) -> dict[str, Any]:
    result = kubectl_ome("runtime", "explain", *args, "-o", "json")
    assert result.code == 0, result.err
    document: dict[str, Any] = json.loads(result.out)
    return document


def _ref(kind: str, name: str, namespace: str | None = "demo-v13") -> dict[str, Any]:
    return {"kind": kind, "name": name, "namespace": namespace}


def test_effective_document(kubectl_ome: Run) -> None:
    document = _document(kubectl_ome, "--isvc", "demo-inherited", *DEMO, "--with-effective")
    assert list(document) == ["model", "selected", "runtimes", "effective"]
    assert list(document["effective"]) == ["selection", "source", "inheritance", "reason", "chain", "error"]
    assert document["effective"] == {
        "selection": "Explicit",
        "source": _ref("ServingRuntime", "demo-llama-served"),
        "inheritance": "Observed",
        "reason": None,
        "chain": [_ref("ServingRuntime", "demo-llama-profile"), _ref("ServingRuntime", "demo-llama-served")],
        "error": None,
    }
    as_yaml = kubectl_ome(
        "runtime", "explain", "--isvc", "demo-inherited", *DEMO, "--with-effective", "-o", "yaml"
    )
    assert yaml.safe_load(as_yaml.out) == document


def test_no_effective_key_without_the_flag(kubectl_ome: Run) -> None:
    assert "effective" not in _document(kubectl_ome, "--isvc", "demo-inherited", *DEMO)


def test_inheritance_chain_per_runtime(kubectl_ome: Run) -> None:
    """Rows judge each runtime on its own spec (the children have no formats); the chain is information."""
    document = _document(kubectl_ome, "--isvc", "demo-inherited", *DEMO)
    rows = {r["name"]: r for r in document["runtimes"]}
    assert list(rows["demo-llama-served"]) == [
        "kind", "name", "namespace", "supportsModel", "compatible", "rank", "score", "priority", "reason",
        "weight", "inheritanceChain",
    ]  # fmt: skip
    assert rows["demo-llama-served"]["inheritanceChain"] == ["demo-llama-profile", "demo-llama-served"]
    assert rows["demo-llama-draft"]["inheritanceChain"] == ["demo-llama-profile", "demo-llama-draft"]
    assert rows["demo-llama-profile"]["inheritanceChain"] is None
    assert rows["sglang-llama-3-2-compact"]["inheritanceChain"] is None
    assert rows["demo-llama-served"]["reason"] == (
        "model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0' not in supported "
        "formats: "
        "no supported formats defined"
    )
    assert (rows["demo-llama-served"]["weight"], rows["demo-llama-profile"]["weight"]) == (None, 2)
    assert document["selected"] == _ref("ClusterServingRuntime", "sglang-llama-3-2-compact", None) | {
        "decidedBy": "sizeRange",
        "message": "selected ClusterServingRuntime sglang-llama-3-2-compact (score 4; closer size range than "
        "vllm-llama-3-2 at score 4: [2B, 4B] vs [1B, 8B])",
    }


# --- chains from files alone, broken ones -------------------------------------------------------------------

GV = "apiVersion: ome.io/v1beta1"
MODEL = f"""{GV}
kind: ClusterBaseModel
metadata: {{name: m}}
spec: {{modelFormat: {{name: safetensors}}}}
"""


def _runtime(name: str, parent: str | None, *, namespace: str | None = None, kind: str = "") -> str:
    kind = kind or ("ServingRuntime" if namespace else "ClusterServingRuntime")
    where = f", namespace: {namespace}" if namespace else ""
    annotations = (
        f", annotations: {{ome.io/inherit-from: {json.dumps(parent)}}}" if parent is not None else ""
    )
    return (
        f"{GV}\nkind: {kind}\nmetadata: {{name: {name}{where}{annotations}}}\n"
        "spec: {supportedModelFormats: [{modelFormat: {name: safetensors}, autoSelect: true}]}\n"
    )


def _isvc(runtime: str, kind: str | None = None) -> str:
    kind_field = f", kind: {kind}" if kind is not None else ""
    return (
        f"{GV}\nkind: InferenceService\nmetadata: {{name: svc, namespace: ns}}\n"
        f"spec: {{model: {{name: m}}, runtime: {{name: {runtime}{kind_field}}}}}\n"
    )


def _catalog(tmp_path: Path, *documents: str) -> str:
    path = tmp_path / "catalog.yaml"
    path.write_text("---\n".join((MODEL, *documents)))
    return str(path)


BROKEN_CASES = [
    pytest.param(
        [_runtime("child", "gone"), _isvc("child")],
        "ParentNotFound",
        'inherit-from parent "gone" not found (chain so far: [child])',
        id="parent-not-found",
    ),
    pytest.param(
        [_runtime("a", "b"), _runtime("b", "a"), _isvc("a")],
        "InheritanceCycle",
        "inheritance cycle detected: [a b a]",
        id="cycle",
    ),
    pytest.param(
        [*(_runtime(f"r{i}", f"r{i + 1}") for i in range(5)), _runtime("r5", None), _isvc("r0")],
        "MaxDepthExceeded",
        "inheritance chain exceeds max depth 5 (chain: [r0 r1 r2 r3 r4])",
        id="max-depth",
    ),
    pytest.param(
        [_runtime("child", "Bad_Name"), _isvc("child")],
        "ParentNotFound",
        'inherit-from parent "Bad_Name" is not a valid runtime name (chain so far: [child])',
        id="not-a-name",
    ),
]


@pytest.mark.parametrize(("documents", "reason", "error"), BROKEN_CASES)
def test_broken_chains(
    kubectl_ome: Run, tmp_path: Path, documents: list[str], reason: str, error: str
) -> None:
    path = _catalog(tmp_path, *documents)
    source = ["--isvc", "svc", "-n", "ns", "-f", path, "--with-effective"]
    result = kubectl_ome("runtime", "explain", *source)
    assert result.code == 0, result.err
    name = documents[-1].split("runtime: {name: ")[1].split("}")[0]
    assert _after_table(result.out) == block(
        "SELECTION Explicit", f"SOURCE CSR/{name}", "INHERITANCE Unavailable", f"REASON {reason}"
    )
    assert result.err == NOTE + (
        f"Note: InferenceService ns/svc names runtime {name}: RuntimeInheritanceError: runtime {name} "
        "cannot be "
        f"resolved: {error}\n"
    )
    document = _document(kubectl_ome, *source)
    assert document["effective"] == {
        "selection": "Explicit",
        "source": {"kind": "ClusterServingRuntime", "name": name, "namespace": None},
        "inheritance": "Unavailable",
        "reason": reason,
        "chain": [],
        "error": error,
    }
    rows = {r["name"]: r for r in document["runtimes"]}
    assert rows[name]["inheritanceChain"] == {"error": error}
    # Auto-selection judges it on its own spec: its own entry auto-selects the model.
    assert rows[name]["compatible"] is True


def test_a_serving_runtime_chain_reaches_a_cluster_parent(kubectl_ome: Run, tmp_path: Path) -> None:
    path = _catalog(tmp_path, _runtime("base", None), _runtime("child", "base", namespace="ns"))
    isvc = _isvc("child", "ServingRuntime")
    (tmp_path / "isvc.yaml").write_text(isvc)
    source = ["--isvc", "svc", "-n", "ns", "-f", path, "-f", str(tmp_path / "isvc.yaml"), "--with-effective"]
    result = kubectl_ome("runtime", "explain", *source)
    assert _after_table(result.out) == block(
        "SELECTION Explicit",
        "SOURCE SR/ns/child",
        "INHERITANCE Observed",
        "ROOT-FIRST ClusterServingRuntime/base",
        "ROOT-FIRST ServingRuntime/ns/child",
    )


# --- --runtime-lookup ---------------------------------------------------------------------------------------

LOOKUP_CASES = [
    # (spec.runtime.kind, --runtime-lookup, the source): SPEC §1's table, and legacy whatever the kind.
    pytest.param("ClusterServingRuntime", "v1.3", "CSR/rt", id="v1.3-cluster-kind-cluster-first"),
    pytest.param("ClusterServingRuntime", "legacy", "SR/ns/rt", id="legacy-prefers-the-namespace"),
    pytest.param(None, "v1.3", "CSR/rt", id="absent-kind-defaults-to-cluster"),
    pytest.param("ServingRuntime", "v1.3", "SR/ns/rt", id="v1.3-serving-kind"),
    pytest.param("Other", "v1.3", "SR/ns/rt", id="v1.3-other-kind-namespace-first"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "lookup", "source"), LOOKUP_CASES)
def test_runtime_lookup(kubectl_ome: Run, tmp_path: Path, kind: str | None, lookup: str, source: str) -> None:
    path = _catalog(tmp_path, _runtime("rt", None), _runtime("rt", None, namespace="ns"), _isvc("rt", kind))
    args = ["--isvc", "svc", "-n", "ns", "-f", path, "--with-effective", "--runtime-lookup", lookup]
    result = kubectl_ome("runtime", "explain", *args)
    assert result.code == 0, result.err
    assert f"\nSOURCE {source}\n" in result.out
    kind_name = "ClusterServingRuntime" if source.startswith("CSR") else "ServingRuntime"
    assert f"RuntimeSpecified: using specified {kind_name} rt\n" in result.err


def test_a_missing_serving_runtime_says_so(kubectl_ome: Run, tmp_path: Path) -> None:
    path = _catalog(tmp_path, _runtime("rt", None), _isvc("rt", "ServingRuntime"))
    result = kubectl_ome("runtime", "explain", "--isvc", "svc", "-n", "ns", "-f", path, "--with-effective")
    assert result.err.endswith(
        "names runtime rt: RuntimeNotFound: ServingRuntime rt not found in namespace ns\n"
    )
    assert "\nSOURCE -\nINHERITANCE Unavailable\nREASON RuntimeNotFound\n" in result.out
    legacy = kubectl_ome(
        "runtime",
        "explain",
        "--isvc",
        "svc",
        "-n",
        "ns",
        "-f",
        path,
        "--with-effective",
        "--runtime-lookup",
        "legacy",
    )
    assert "\nSOURCE CSR/rt\n" in legacy.out


def test_runtime_lookup_values(kubectl_ome: Run) -> None:
    result = kubectl_ome("runtime", "explain", "-f", "samples/", "--model", "m", "--runtime-lookup", "v1.2")
    assert (result.code, result.out) == (1, "")
    assert "argument --runtime-lookup: invalid choice: 'v1.2'" in result.err


@pytest.mark.parametrize("command", ["lint", "what-if"])
def test_every_runtime_command_takes_runtime_lookup(kubectl_ome: Run, command: str) -> None:
    help_text = kubectl_ome("runtime", command, "--help").out
    assert "--runtime-lookup v1.3|legacy" in help_text
