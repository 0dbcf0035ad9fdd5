"""The samples catalog does what samples/README.md says: one InferenceService per SPEC §5 outcome,
objects that also apply on OME's own CRDs, and nothing an admission webhook would deny.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ome_selector.api.resources import InferenceService, Kind, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.sources import FileSource, load_catalog
from ome_selector.selection.outcome import OutcomeKind, evaluate

REPO_ROOT = Path(__file__).resolve().parents[3]
SAMPLES = REPO_ROOT / "samples"

QWEN_VS_LLAMA = (
    "model format 'mt:safetensors:1.0.0:Qwen3ForCausalLM:transformers:4.51.0' not in supported formats: "
    "architecture mismatch (model=Qwen3ForCausalLM, runtime=LlamaForCausalLM), "
    "framework version mismatch (model=4.51.0, runtime=4.45.0.dev0)"
)

# InferenceService → (outcome, condition status, reason, message), from SPEC §5 and the samples' comments.
EXPECTED: dict[tuple[str, str], tuple[OutcomeKind, str, str, str]] = {
    ("ome-demo", "llama-3b-auto"): (
        OutcomeKind.RUNTIME_SELECTED, "True", "RuntimeSelected",
        "selected ClusterServingRuntime sglang-llama-3-2-compact (score 4; closer size range than "
        "vllm-llama-3-2 at score 4: [2B, 4B] vs [1B, 8B])",
    ),
    ("ome-demo", "llama-1b-auto"): (
        OutcomeKind.RUNTIME_SELECTED, "True", "RuntimeSelected",
        "selected ClusterServingRuntime vllm-llama-3-2 (score 4)",
    ),
    ("ome-demo", "llama-3b-h100"): (
        OutcomeKind.RUNTIME_SELECTED, "True", "RuntimeSelected",
        "selected ClusterServingRuntime vllm-llama-3-2-h100 (score 2)",
    ),
    ("ome-demo", "qwen3-8b-auto"): (
        OutcomeKind.RUNTIME_SELECTED, "True", "RuntimeSelected",
        "selected ClusterServingRuntime sglang-qwen3-medium (score 2)",
    ),
    ("ome-demo", "qwen3-4b-auto"): (
        OutcomeKind.RUNTIME_SELECTED, "True", "RuntimeSelected",
        "selected ClusterServingRuntime sglang-qwen3-medium (score 2; tied with vllm-qwen3-small on score, "
        "first by name)",
    ),
    ("ome-demo", "llama-3b-named"): (
        OutcomeKind.RUNTIME_SPECIFIED, "True", "RuntimeSpecified",
        "using specified ClusterServingRuntime srt-llama-3-2-3b-instruct-demo",
    ),
    ("ome-demo", "llama-3b-on-1b-runtime"): (
        OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED, "True", "RuntimeSpecified",
        "using specified ClusterServingRuntime srt-llama-3-2-1b-instruct-demo; "
        "it does not declare support for model llama-3-2-3b-instruct-demo: "
        "model size 3.21B is outside supported range [500M, 2B]",
    ),
    ("ome-demo", "llama-3b-on-1b-runtime-pinned"): (
        OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED, "True", "RuntimeSpecified",
        "using specified ClusterServingRuntime srt-llama-3-2-1b-instruct-demo; "
        "it does not declare support for model llama-3-2-3b-instruct-demo: "
        "model size 3.21B is outside supported range [500M, 2B]",
    ),
    ("ome-demo", "llama-3b-legacy-runtime"): (
        OutcomeKind.RUNTIME_DISABLED, "False", "RuntimeDisabled",
        "cluster-scoped runtime vllm-llama-3-2-legacy is disabled",
    ),
    ("ome-demo", "llama-3b-missing-runtime"): (
        OutcomeKind.RUNTIME_NOT_FOUND, "False", "RuntimeNotFound",
        "runtime vllm-llama-3-2-turbo not found in namespace ome-demo or at cluster scope",
    ),
    ("team-b", "llama-3b-canary-runtime"): (
        OutcomeKind.RUNTIME_INHERITANCE_ERROR, "False", "RuntimeInheritanceError",
        "runtime team-vllm-canary cannot be resolved: "
        'inherit-from parent "team-vllm-nightly" not found (chain so far: [team-vllm-canary])',
    ),
    ("team-b", "llama-3b-canary-runtime-pinned"): (
        OutcomeKind.RUNTIME_SPECIFIED_UNRESOLVED, "True", "RuntimeSpecified",
        "using specified ServingRuntime team-vllm-canary; live runtime cannot be resolved: "
        'inherit-from parent "team-vllm-nightly" not found (chain so far: [team-vllm-canary])',
    ),
    ("ome-demo", "qwen3-32b-auto"): (
        # All nine runtimes serve the model's format (safetensors), so each is an entry, nearest miss first:
        # the two Qwen3 runtimes failed only on size. The text is cut at 1,024 characters and points at
        # explain for the five that do not fit.
        OutcomeKind.NO_RUNTIME, "False", "RuntimeNotFound",
        "no runtime supports model qwen3-32b-demo "
        "(checked 9 runtimes: 0 namespace-scoped, 9 cluster-scoped): "
        "sglang-qwen3-medium (model size 32.76B is outside supported range [8B, 16B]); "
        "vllm-qwen3-small (model size 32.76B is outside supported range (-inf, 8B]); "
        f"sglang-llama-3-2-compact ({QWEN_VS_LLAMA}); "
        f"srt-llama-3-2-1b-instruct-demo ({QWEN_VS_LLAMA}); "
        "… 5 more (kubectl ome-selector runtime explain --isvc qwen3-32b-auto -n ome-demo)",
    ),
    ("ome-demo", "mistral-7b"): (
        OutcomeKind.MODEL_NOT_FOUND, "False", "ModelNotFound",
        "model mistral-7b-instruct-v0-3 not found: "
        "no BaseModel in namespace ome-demo and no ClusterBaseModel",
    ),
    ("ome-demo", "llama-8b-retired"): (
        OutcomeKind.MODEL_DISABLED, "False", "ModelDisabled", "model llama-3-1-8b-instruct-demo is disabled",
    ),
    ("ome-demo", "llama-70b-pending"): (
        OutcomeKind.MODEL_METADATA_PENDING, "Unknown", "ModelMetadataPending",
        "model llama-3-3-70b-instruct-demo has no modelFormat yet; runtime selection waits for it",
    ),
    ("team-a", "support-assistant"): (
        OutcomeKind.RUNTIME_SELECTED, "True", "RuntimeSelected",
        "selected ServingRuntime team-vllm-llama-3-2 (score 2; namespace-scoped before ClusterServingRuntime "
        "sglang-llama-3-2-compact at score 4)",
    ),
    # OME v1.3 inheritance and deployment modes (SPEC §1, §3.3): named runtimes on their effective specs.
    ("demo-v13", "demo-inherited"): (
        OutcomeKind.RUNTIME_SPECIFIED, "True", "RuntimeSpecified",
        "using specified ServingRuntime demo-llama-served",
    ),
    ("demo-v13", "demo-mode-mismatch"): (
        OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED, "True", "RuntimeSpecified",
        "using specified ServingRuntime demo-llama-served; it does not declare support for model "
        "llama-3-2-3b-instruct-demo: runtime engine deployment mode RawDeployment does not match requested "
        "engine deployment mode OMENative",
    ),
    ("demo-v13", "demo-disabled-by-profile"): (
        OutcomeKind.RUNTIME_DISABLED, "False", "RuntimeDisabled",
        "namespace-scoped runtime demo-llama-draft is disabled",
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(FileSource([str(SAMPLES)]).read(), "default")


def _documents() -> list[tuple[str, dict[str, Any]]]:
    """(path under samples/, document) of every sample, samples/ome-v1.3/ included."""
    documents = []
    for path in sorted(SAMPLES.rglob("*.yaml")):
        name = str(path.relative_to(SAMPLES))
        documents += [(name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    return documents


def test_every_inference_service_has_its_expected_outcome(catalog: Catalog) -> None:
    found = {(isvc.namespace, isvc.name): isvc for isvc in catalog.inference_services()}
    assert set(found) == set(EXPECTED)
    for key, (kind, status, reason, message) in EXPECTED.items():
        outcome = evaluate(catalog, found[key])
        assert outcome is not None, key
        assert (outcome.kind, outcome.status, outcome.reason, outcome.message) == (
            kind,
            status,
            reason,
            message,
        )


def test_every_outcome_of_the_spec_is_shown() -> None:
    assert {kind for kind, *_ in EXPECTED.values()} == set(OutcomeKind)


def test_advisory_event_only_without_autosync_false(catalog: Catalog) -> None:
    def event(name: str) -> Any:
        isvc = catalog.get(ObjectKey(Kind.INFERENCE_SERVICE, "ome-demo", name))
        assert isinstance(isvc, InferenceService)
        outcome = evaluate(catalog, isvc)
        assert outcome is not None
        return outcome.event

    assert event("llama-3b-on-1b-runtime").reason == "RuntimeCompatibilityAdvisory"
    assert event("llama-3b-on-1b-runtime-pinned") is None


def test_nothing_would_be_denied_at_admission(catalog: Catalog) -> None:
    """SPEC §7 checks only InferenceServices with spec.engine, and leaves auto-selection until after admission
    when the engine names its runner image; the samples that end in a denial-worthy state rely on that."""
    for isvc in catalog.inference_services():
        outcome = evaluate(catalog, isvc)
        assert outcome is not None
        if not outcome.denies_admission or not isvc.has_engine:
            continue
        assert outcome.kind is OutcomeKind.NO_RUNTIME, isvc.name
        assert isvc.defers_auto_selection, isvc.name


def test_samples_also_fit_omes_stricter_crds() -> None:
    """OME's CRDs also require storage on models and modelFramework on every runtime entry (SPEC §1)."""
    for file, doc in _documents():
        kind = doc["kind"]
        name = doc["metadata"]["name"]
        if kind in ("BaseModel", "ClusterBaseModel"):
            assert doc["spec"].get("storage", {}).get("storageUri"), (file, name)
        if kind in ("ServingRuntime", "ClusterServingRuntime"):
            entries = doc["spec"].get("supportedModelFormats")
            # A runtime with a parent inherits its formats (OME v1.3, SPEC §1).
            inherits = "ome.io/inherit-from" in doc["metadata"].get("annotations", {})
            assert entries or inherits, (file, name)
            assert all(entry.get("modelFramework", {}).get("name") for entry in entries or ()), (file, name)
        if kind == "InferenceService" and "runner" in (doc["spec"].get("engine") or {}):
            assert doc["spec"]["engine"]["runner"].get("name"), (file, name)  # a container needs a name


def test_namespaces_come_first_and_hold_every_namespaced_sample() -> None:
    files = sorted(path.name for path in SAMPLES.glob("*.yaml"))
    assert files[0] == "00-namespaces.yaml"
    documents = _documents()
    declared = {doc["metadata"]["name"] for file, doc in documents if doc["kind"] == "Namespace"}
    assert declared == {"ome-demo", "team-a", "team-b", "demo-v13"}
    for file, doc in documents:
        if doc["kind"] in ("BaseModel", "ServingRuntime", "InferenceService"):
            assert doc["metadata"].get("namespace") in declared, (file, doc["metadata"]["name"])


def test_the_two_ome_catalog_runtimes_are_unchanged() -> None:
    ome = REPO_ROOT / "tests" / "data" / "ome-catalog" / "runtimes" / "srt" / "meta"
    upstream = [
        yaml.safe_load((ome / f"llama-3-2-{size}-instruct-rt.yaml").read_text()) for size in ("1b", "3b")
    ]
    ours = [doc for file, doc in _documents() if file == "20-ome-catalog-runtimes.yaml"]
    # Renamed (-demo): applied beside OME's catalog, the samples never merge into its objects.
    assert [doc["metadata"] for doc in ours] == [
        {"name": f"{doc['metadata']['name']}-demo"} for doc in upstream
    ]
    assert [{**doc, "metadata": {}} for doc in ours] == [{**doc, "metadata": {}} for doc in upstream]
    assert [doc["spec"]["modelSizeRange"] for doc in ours] == [
        {"min": "500M", "max": "2B"},
        {"min": "2B", "max": "4B"},
    ]
    assert all(entry["autoSelect"] is False for doc in ours for entry in doc["spec"]["supportedModelFormats"])


def test_no_sample_shares_a_name_with_omes_catalog() -> None:
    """Applied on a cluster that runs OME, a sample of the same kind and name would be merged into OME's own
    object (its spec.disabled, its ranges): every sample has a name of its own."""
    catalog = REPO_ROOT / "tests" / "data" / "ome-catalog"
    published = {
        (doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])
        for path in catalog.rglob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and "metadata" in doc
    }
    assert len(published) > 400  # the catalog's 205 models and 201 runtimes: the test reads them
    kinds = {kind for kind, _, _ in published}
    ours = {
        (doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]) for _, doc in _documents()
    }
    assert kinds <= {kind for kind, _, _ in ours}
    assert ours.isdisjoint(published), sorted(ours & published)
    # Nor by name alone, whatever the kind: a sample never shadows a catalog object in explain or lint output.
    assert {name for *_, name in ours}.isdisjoint({name for *_, name in published})


def test_the_size_range_page_model() -> None:
    model = next(doc for _, doc in _documents() if doc["metadata"]["name"] == "llama-3-2-3b-instruct-demo")
    assert model["kind"] == "ClusterBaseModel"
    spec = model["spec"]
    assert spec["modelParameterSize"] == "3.21B"
    assert spec["modelFormat"] == {"name": "safetensors", "version": "1.0.0"}
    assert spec["modelArchitecture"] == "LlamaForCausalLM"
    assert spec["modelFramework"] == {"name": "transformers", "version": "4.45.0.dev0"}


def test_readme_names_every_inference_service() -> None:
    readme = (SAMPLES / "README.md").read_text()
    for namespace, name in EXPECTED:
        assert f"| `{namespace}/{name}` |" in readme, name
