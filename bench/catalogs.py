"""The catalogs the selection-core benchmarks run on.

- **published**: OME's published catalog (tests/data/ome-catalog: 201 runtimes, 98.5% of them
  ``safetensors``), with the Llama 3.2 3B model given the metadata OME reads from its weights;
- **OME-shaped**: the published runtimes cloned round-robin under new names up to a size (so 10,000 runtimes
  hold about fifty copies of each published one, formats and architectures in the published proportions);
- **rotating**: synthetic runtimes whose entries rotate through five formats and four architectures, two
  fifths of them naming the model's format.

Each comes with a model some runtimes serve and one of the same format that none serves (its InferenceServices
get the capped no-runtime message).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ome_selector.api.loading import load_resource
from ome_selector.api.manifests import load_manifest
from ome_selector.api.resources import Model, ModelFormat, ModelFramework, Resource, Runtime
from ome_selector.catalog.catalog import Catalog

__all__ = ["NAMESPACE", "BenchCatalog", "ome_shaped_catalog", "published_catalog", "rotating_catalog"]

REPO = Path(__file__).resolve().parents[1]
OME_CATALOG = REPO / "tests" / "data" / "ome-catalog"
NAMESPACE = "default"
GV = "ome.io/v1beta1"


@dataclass(frozen=True, slots=True)
class BenchCatalog:
    """A catalog, a model some of its runtimes serve and one of the same format that none serves."""

    catalog: Catalog
    served: Model
    orphan: Model


def _published_resources() -> list[Resource]:
    resources: list[Resource] = []
    for path in sorted(OME_CATALOG.rglob("*.yaml")):
        resources.extend(load_manifest(path.read_text(encoding="utf-8")))
    return resources


def _with_weights_metadata(model: Model) -> Model:
    """The published Llama 3.2 3B has no metadata yet; fill in what OME reads from its weights."""
    spec = model.spec.model_copy(
        update={
            "model_format": ModelFormat(name="safetensors", version="1.0.0"),
            "model_framework": ModelFramework(name="transformers", version="4.45.0.dev0"),
            "model_architecture": "LlamaForCausalLM",
            "model_parameter_size": "3.21B",
        }
    )
    return model.model_copy(update={"spec": spec})


def _orphan(architecture: str = "PhiForCausalLM") -> Model:
    """A safetensors model of an architecture no runtime names."""
    return synthetic_model("bench-orphan", architecture, framework_version="4.45.0.dev0")


def _published_llama(resources: list[Resource]) -> Model:
    for resource in resources:
        if isinstance(resource, Model) and resource.name == "llama-3-2-3b-instruct":
            return _with_weights_metadata(resource)
    raise LookupError("llama-3-2-3b-instruct is not in the vendored OME catalog")


def published_catalog() -> BenchCatalog:
    """OME's published catalog, models and runtimes."""
    resources = _published_resources()
    served, orphan = _published_llama(resources), _orphan()
    return BenchCatalog(Catalog.from_resources([*resources, served, orphan]), served, orphan)


def ome_shaped_catalog(size: int) -> BenchCatalog:
    """``size`` runtimes: the published ones cloned round-robin, clone ``i`` named ``<name>-<i // 201>``."""
    resources = _published_resources()
    # Of two published documents with one name the later wins, as in the catalog: 201 runtimes.
    published = list({r.key: r for r in resources if isinstance(r, Runtime)}.values())
    clones = (
        published[i % len(published)].model_copy(
            update={"name": f"{published[i % len(published)].name}-{i // len(published):03d}"}
        )
        for i in range(size)
    )
    served, orphan = _published_llama(resources), _orphan()
    return BenchCatalog(Catalog.from_resources([served, orphan, *clones]), served, orphan)


FORMATS = ["safetensors", "onnx", "gguf", "pytorch", "tensorrt"]
ARCHITECTURES = ["LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "GemmaForCausalLM"]
BOUNDS = [("500M", "2B"), ("2B", "4B"), ("1B", None), (None, "13B"), ("7B", "70B"), None]


def rotating_runtime(index: int) -> Runtime:
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


def synthetic_model(name: str, architecture: str, framework_version: str = "4.45.0") -> Model:
    model = load_resource(
        {
            "apiVersion": GV,
            "kind": "ClusterBaseModel",
            "metadata": {"name": name},
            "spec": {
                "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                "modelFramework": {"name": "transformers", "version": framework_version},
                "modelArchitecture": architecture,
                "modelParameterSize": "3.21B",
            },
        }
    )
    assert isinstance(model, Model)
    return model


def rotating_catalog(size: int) -> BenchCatalog:
    """``size`` rotating runtimes (two fifths name ``safetensors``), the Llama model and the orphan."""
    served = synthetic_model("bench-llama", "LlamaForCausalLM")
    orphan = _orphan()
    runtimes = (rotating_runtime(i) for i in range(size))
    return BenchCatalog(Catalog.from_resources([served, orphan, *runtimes]), served, orphan)
