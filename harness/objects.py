"""Builders of ome.io objects for tests, benchmarks and the demo (plain dicts, as kubectl sends them)."""

from __future__ import annotations

import copy
from typing import Any

from ome_selector.api.resources import API_GROUP_VERSION

API_VERSION = API_GROUP_VERSION
# Copied into every object built (dict(...)), so a test that edits one object never edits the next.
SAFETENSORS = {"name": "safetensors", "version": "1.0.0"}
TRANSFORMERS = {"name": "transformers", "version": "4.45.0.dev0"}
LLAMA = "LlamaForCausalLM"


def _metadata(name: str, namespace: str | None) -> dict[str, Any]:
    return {"name": name} | ({"namespace": namespace} if namespace else {})


def model(
    name: str,
    *,
    namespace: str | None = None,
    size: str | None = None,
    disabled: bool = False,
    with_format: bool = True,
) -> dict[str, Any]:
    """A BaseModel (with `namespace`) or ClusterBaseModel, with the metadata OME's agent fills in."""
    spec: dict[str, Any] = {"storage": {"storageUri": f"hf://example/{name}"}}
    if with_format:
        spec |= {
            "modelFormat": dict(SAFETENSORS),
            "modelFramework": dict(TRANSFORMERS),
            "modelArchitecture": LLAMA,
        }
    if size is not None:
        spec["modelParameterSize"] = size
    if disabled:
        spec["disabled"] = True
    kind = "BaseModel" if namespace else "ClusterBaseModel"
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": _metadata(name, namespace), "spec": spec}


def runtime(
    name: str,
    *,
    namespace: str | None = None,
    size_range: tuple[str | None, str | None] | None = None,
    auto_select: bool = True,
    priority: int = 1,
    disabled: bool = False,
) -> dict[str, Any]:
    """A ServingRuntime (with `namespace`) or ClusterServingRuntime serving safetensors Llama models."""
    spec: dict[str, Any] = {
        "supportedModelFormats": [
            {
                "modelFormat": dict(SAFETENSORS),
                "modelFramework": dict(TRANSFORMERS),
                "modelArchitecture": LLAMA,
                "autoSelect": auto_select,
                "priority": priority,
            }
        ],
        "engineConfig": {"runner": {"name": "ome-container", "image": "example.invalid/sglang:latest"}},
    }
    if size_range is not None:
        low, high = size_range
        spec["modelSizeRange"] = {k: v for k, v in (("min", low), ("max", high)) if v is not None}
    if disabled:
        spec["disabled"] = True
    kind = "ServingRuntime" if namespace else "ClusterServingRuntime"
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": _metadata(name, namespace), "spec": spec}


def inference_service(
    name: str,
    *,
    namespace: str,
    model_name: str,
    runtime_name: str | None = None,
    auto_sync: bool | None = None,
    engine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"model": {"name": model_name}}
    if runtime_name is not None or auto_sync is not None:
        spec["runtime"] = {
            k: v for k, v in (("name", runtime_name), ("autoSync", auto_sync)) if v is not None
        }
    if engine is not None:
        spec["engine"] = engine
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceService",
        "metadata": _metadata(name, namespace),
        "spec": spec,
    }


def with_field(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `document` with the dotted `path` (numbers index lists) set to `value`; `...` removes
    the field."""
    document = copy.deepcopy(document)
    *parents, last = path.split(".")
    node: Any = document
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return document
