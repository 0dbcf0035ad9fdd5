"""``make bench``: how long the selection core takes per decision, and how that grows with the catalog.

Measures, for one model:

- ``explain`` (every runtime's verdict, the CLI's view) and ``evaluate`` (the operator's and webhook's
  decision, which reads only the runtimes indexed under the model's format);
- against OME's published catalog (tests/data/ome-catalog, 201 runtimes) and synthetic catalogs of 1,000 and
  10,000 runtimes (a fifth of them naming the model's format);
- plus the cost of one incremental catalog update (a runtime replaced, as a watch event does).

Timing uses :mod:`timeit` (best of several repeats); nothing here asserts a time.
"""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ome_selector.api.loading import load_resource
from ome_selector.api.manifests import load_manifest
from ome_selector.api.resources import InferenceService, Model, ModelFormat, ModelFramework, Resource, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.explain import explain
from ome_selector.selection.outcome import evaluate

REPO = Path(__file__).resolve().parents[1]
OME_CATALOG = REPO / "tests" / "data" / "ome-catalog"
NAMESPACE = "default"
GV = "ome.io/v1beta1"


def best_seconds(call: Callable[[], object], repeat: int = 5) -> float:
    """Seconds per call: the best of ``repeat`` runs of an auto-ranged loop."""
    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number


def human(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def published_catalog() -> tuple[Catalog, Model]:
    resources: list[Resource] = []
    for path in sorted(OME_CATALOG.rglob("*.yaml")):
        resources.extend(load_manifest(path.read_text(encoding="utf-8")))
    catalog = Catalog.from_resources(resources)
    model = catalog.resolve_model(NAMESPACE, "llama-3-2-3b-instruct")
    assert model is not None
    # The published model has no metadata yet; fill in what OME reads from the weights.
    spec = model.spec.model_copy(
        update={
            "model_format": ModelFormat(name="safetensors", version="1.0.0"),
            "model_framework": ModelFramework(name="transformers", version="4.45.0.dev0"),
            "model_architecture": "LlamaForCausalLM",
            "model_parameter_size": "3.21B",
        }
    )
    model = model.model_copy(update={"spec": spec})
    catalog.upsert(model)
    return catalog, model


FORMATS = ["safetensors", "onnx", "gguf", "pytorch", "tensorrt"]
ARCHITECTURES = ["LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "GemmaForCausalLM"]
BOUNDS = [("500M", "2B"), ("2B", "4B"), ("1B", None), (None, "13B"), ("7B", "70B"), None]


def synthetic_runtime(index: int) -> Runtime:
    fmt = FORMATS[index % len(FORMATS)]
    bounds = BOUNDS[index % len(BOUNDS)]
    entries: list[dict[str, Any]] = [
        {
            "modelFormat": {"name": fmt, "version": "1.0.0"},
            "modelFramework": {"name": "transformers", "version": f"4.{40 + index % 10}.0"},
            "modelArchitecture": ARCHITECTURES[(index // 10) % len(ARCHITECTURES)],
            "autoSelect": index % 3 != 0,
            "priority": 1 + index % 3,
        },
        {"modelFormat": {"name": FORMATS[(index + 1) % len(FORMATS)]}, "autoSelect": True},
    ]
    spec: dict[str, Any] = {"supportedModelFormats": entries}
    if bounds is not None:
        spec["modelSizeRange"] = {k: v for k, v in zip(("min", "max"), bounds, strict=True) if v is not None}
    namespaced = index % 10 == 0
    doc = {
        "apiVersion": GV,
        "kind": "ServingRuntime" if namespaced else "ClusterServingRuntime",
        "metadata": {"name": f"rt-{index:05d}", **({"namespace": NAMESPACE} if namespaced else {})},
        "spec": spec,
    }
    resource = load_resource(doc)
    assert isinstance(resource, Runtime)
    return resource


def synthetic_model(name: str, architecture: str) -> Model:
    model = load_resource(
        {
            "apiVersion": GV,
            "kind": "ClusterBaseModel",
            "metadata": {"name": name},
            "spec": {
                "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                "modelFramework": {"name": "transformers", "version": "4.45.0"},
                "modelArchitecture": architecture,
                "modelParameterSize": "3.21B",
            },
        }
    )
    assert isinstance(model, Model)
    return model


def synthetic_catalog(size: int) -> tuple[Catalog, Model, Model]:
    """A catalog of ``size`` runtimes, a model some of them serve, and one none serves (same format)."""
    served = synthetic_model("bench-llama", "LlamaForCausalLM")
    orphan = synthetic_model("bench-phi", "PhiForCausalLM")
    runtimes = (synthetic_runtime(i) for i in range(size))
    return Catalog.from_resources([served, orphan, *runtimes]), served, orphan


def inference_service(model: Model) -> InferenceService:
    resource = load_resource(
        {
            "apiVersion": GV,
            "kind": "InferenceService",
            "metadata": {"name": f"isvc-{model.name}", "namespace": NAMESPACE},
            "spec": {"model": {"name": model.name}},
        }
    )
    assert isinstance(resource, InferenceService)
    return resource


def measure(label: str, catalog: Catalog, model: Model, orphan: Model | None = None) -> dict[str, float]:
    """Time explain and evaluate for ``model`` (and evaluate for ``orphan``, a model no runtime serves)."""
    isvc = inference_service(model)
    catalog.upsert(isvc)
    explanation = explain(catalog, model, NAMESPACE)
    outcome = evaluate(catalog, isvc)
    assert outcome is not None
    runtimes = len(explanation.verdicts)
    candidates = len(catalog.runtime_profiles_for_format(NAMESPACE, model.spec.format_name))
    victim = catalog.runtimes()[len(catalog.runtimes()) // 2]
    figures = {
        "runtimes": float(runtimes),
        "explain": best_seconds(lambda: explain(catalog, model, NAMESPACE)),
        "evaluate": best_seconds(lambda: evaluate(catalog, isvc)),
        "upsert": best_seconds(lambda: catalog.upsert(victim)),
    }
    print(f"{label}: {runtimes} runtimes, {candidates} of them name the model's format")
    print(f"  explain  (every verdict, the CLI)        {human(figures['explain']):>10} per call")
    print(
        f"  evaluate (operator/webhook decision)     {human(figures['evaluate']):>10} per call  "
        f"-> {outcome.message}"
    )
    if orphan is not None:
        orphan_isvc = inference_service(orphan)
        catalog.upsert(orphan_isvc)
        orphan_outcome = evaluate(catalog, orphan_isvc)
        assert orphan_outcome is not None
        figures["evaluate_none"] = best_seconds(lambda: evaluate(catalog, orphan_isvc))
        print(
            f"  evaluate, no runtime fits (capped msg)  {human(figures['evaluate_none']):>10} per call  "
            f"-> {orphan_outcome.reason}, {len(orphan_outcome.message)} characters"
        )
    print(f"  upsert of one runtime (a watch event)    {human(figures['upsert']):>10} per call")
    return figures


def main() -> int:
    print(f"Python {sys.version.split()[0]}; best of 5 timeit repeats, time per call\n")
    build_start = timeit.default_timer()
    catalog, model = published_catalog()
    print(f"published catalog loaded and indexed in {human(timeit.default_timer() - build_start)}")
    results = {"OME catalog": measure("OME catalog, llama-3-2-3b-instruct at 3.21B", catalog, model)}
    for size in (1_000, 10_000):
        build_start = timeit.default_timer()
        synthetic, served, orphan = synthetic_catalog(size)
        built = timeit.default_timer() - build_start
        print(
            f"\nsynthetic catalog of {size:,} runtimes built in {human(built)} "
            f"({human(built / size)} per runtime)"
        )
        results[f"{size}"] = measure(f"synthetic {size:,}", synthetic, served, orphan)
    small, large = results["1000"], results["10000"]
    growth = large["runtimes"] / small["runtimes"]
    print(f"\ngrowth from 1,000 to 10,000 runtimes ({growth:.0f}x):")
    for key, name in (
        ("explain", "explain"),
        ("evaluate", "evaluate"),
        ("evaluate_none", "evaluate, no runtime fits"),
        ("upsert", "upsert"),
    ):
        print(f"  {name:<26} {large[key] / small[key]:5.1f}x")
    print(
        "explain judges every runtime; evaluate judges only the runtimes indexed under the model's format "
        "(here a fixed two fifths of the catalog, so they grow 10x too). Both are linear in what they judge; "
        "per-runtime cost rises once the working set no longer fits the CPU caches, and figures vary "
        "between runs on a shared machine."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
