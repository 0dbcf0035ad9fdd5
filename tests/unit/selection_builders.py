"""Builders for the selection-core tests: every object goes through the real loader, as the operator's do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ome_selector.api.loading import load_resource
from ome_selector.api.resources import InferenceService, Model, Resource, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.sources import FileSource
from ome_selector.selection import messages
from ome_selector.selection.explain import Explanation
from ome_selector.selection.inheritance import find_named_runtime

NS = "ns"
GV = "ome.io/v1beta1"
DATA = Path(__file__).resolve().parents[1] / "data"
OME_CATALOG = DATA / "ome-catalog"


def _drop_none(mapping: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if v is not None}


def model_doc(
    name: str = "m",
    *,
    fmt: str | None = "safetensors",
    version: str | None = None,
    framework: str | None = None,
    fw_version: str | None = None,
    arch: str | None = None,
    quant: str | None = None,
    size: str | None = None,
    pipeline: dict[str, Any] | None = None,
    disabled: bool | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = _drop_none(
        {
            "modelFormat": _drop_none({"name": fmt, "version": version}) if fmt is not None else None,
            "modelFramework": _drop_none({"name": framework, "version": fw_version})
            if framework is not None
            else None,
            "modelArchitecture": arch,
            "quantization": quant,
            "modelParameterSize": size,
            "diffusionPipeline": pipeline,
            "disabled": disabled,
        }
    )
    metadata = _drop_none({"name": name, "namespace": namespace})
    kind = "BaseModel" if namespace is not None else "ClusterBaseModel"
    return {"apiVersion": GV, "kind": kind, "metadata": metadata, "spec": spec}


def model(name: str = "m", **kwargs: Any) -> Model:
    resource = load_resource(model_doc(name, **kwargs))
    assert isinstance(resource, Model)
    return resource


def entry(
    fmt: str | None = "safetensors",
    *,
    version: str | None = None,
    operator: str | None = None,
    weight: int | None = None,
    framework: str | None = None,
    fw_version: str | None = None,
    fw_operator: str | None = None,
    fw_weight: int | None = None,
    arch: str | None = None,
    quant: str | None = None,
    pipeline: dict[str, Any] | None = None,
    auto_select: bool | None = True,
    priority: int | None = None,
) -> dict[str, Any]:
    return _drop_none(
        {
            "modelFormat": _drop_none(
                {"name": fmt, "version": version, "operator": operator, "weight": weight}
            )
            if fmt is not None
            else None,
            "modelFramework": _drop_none(
                {"name": framework, "version": fw_version, "operator": fw_operator, "weight": fw_weight}
            )
            if framework is not None
            else None,
            "modelArchitecture": arch,
            "quantization": quant,
            "diffusionPipeline": pipeline,
            "autoSelect": auto_select,
            "priority": priority,
        }
    )


def runtime_doc(
    name: str,
    *entries: dict[str, Any],
    namespace: str | None = None,
    min: str | None = None,
    max: str | None = None,
    size_range: dict[str, Any] | None = None,
    disabled: bool | None = None,
    classes: list[str] | None = None,
    inherit_from: str | None = None,
    annotations: dict[str, Any] | None = None,
    engine_mode: str | None = None,
    decoder_mode: str | None = None,
) -> dict[str, Any]:
    if size_range is None and (min is not None or max is not None):
        size_range = _drop_none({"min": min, "max": max})
    spec = _drop_none(
        {
            "disabled": disabled,
            "supportedModelFormats": list(entries),
            "modelSizeRange": size_range,
            "acceleratorRequirements": {"acceleratorClasses": classes} if classes is not None else None,
            "engineConfig": _mode_config(engine_mode),
            "decoderConfig": _mode_config(decoder_mode),
        }
    )
    if inherit_from is not None:
        annotations = {**(annotations or {}), "ome.io/inherit-from": inherit_from}
    kind = "ServingRuntime" if namespace is not None else "ClusterServingRuntime"
    return {
        "apiVersion": GV,
        "kind": kind,
        "metadata": _drop_none({"name": name, "namespace": namespace, "annotations": annotations}),
        "spec": spec,
    }


def _mode_config(mode: str | None) -> dict[str, Any] | None:
    return {"annotations": {"ome.io/deploymentMode": mode}} if mode is not None else None


def runtime(name: str, *entries: dict[str, Any], **kwargs: Any) -> Runtime:
    resource = load_resource(runtime_doc(name, *entries, **kwargs))
    assert isinstance(resource, Runtime)
    return resource


def isvc(
    name: str = "svc",
    *,
    model_name: str | None = "m",
    runtime_name: str | None = None,
    runtime_kind: str | None = None,
    auto_sync: bool | None = None,
    deployment_mode: str | None = None,
    namespace: str = NS,
    annotations: dict[str, str] | None = None,
    engine: dict[str, Any] | None = None,
    decoder: dict[str, Any] | None = None,
    selector_class: str | None = None,
    deletion_timestamp: str | None = None,
    replica_refs: list[dict[str, Any]] | None = None,
) -> InferenceService:
    runtime_ref = _drop_none({"name": runtime_name, "kind": runtime_kind, "autoSync": auto_sync}) or None
    spec = _drop_none(
        {
            "model": {"name": model_name} if model_name is not None else None,
            "runtime": runtime_ref,
            "deploymentMode": deployment_mode,
            "engine": engine,
            "decoder": decoder,
            "acceleratorSelector": {"acceleratorClass": selector_class}
            if selector_class is not None
            else None,
            "replicaRefs": replica_refs,
        }
    )
    metadata = _drop_none(
        {
            "name": name,
            "namespace": namespace,
            "annotations": annotations,
            "deletionTimestamp": deletion_timestamp,
        }
    )
    resource = load_resource(
        {"apiVersion": GV, "kind": "InferenceService", "metadata": metadata, "spec": spec}
    )
    assert isinstance(resource, InferenceService)
    return resource


def catalog(*resources: Resource) -> Catalog:
    return Catalog.from_resources(resources)


def resolve_runtime(c: Catalog, namespace: str, name: str) -> Runtime | None:
    """The runtime a name resolves to from ``namespace`` (SPEC §1 lookups)."""
    profile = find_named_runtime(c, namespace, name, None)
    return profile.runtime if profile is not None else None


def load_ome_catalog(directory: Path = OME_CATALOG) -> list[Resource]:
    """Every definition of a vendored OME catalog (default: OME cfa05c6), models and runtimes, files in
    kubectl's order as `-f DIR` reads them, so that in a :class:`Catalog` the later duplicate wins."""
    resources: list[Resource] = []
    for raw in FileSource([str(directory)]).read():
        resource = load_resource(raw.body, from_file=True)
        if resource is not None:
            resources.append(resource)
    return resources


def no_runtime_message_from(explanation: Explanation, service: InferenceService) -> str:
    """The no-runtime message written from explain's verdicts (every runtime judged, whole reasons): the
    runtimes of the model's format, nearest miss first (SPEC §5 v3). Evaluation must write the same."""
    listed = sorted(
        (v for v in explanation.verdicts if v.serves_format),
        key=lambda v: (-(v.failed or 0), v.is_cluster, v.name),
    )
    return messages.no_runtime_message(
        model=explanation.model.name,
        namespaced_count=explanation.namespaced_count,
        cluster_count=explanation.cluster_count,
        entries=[messages.runtime_entry(v.runtime.namespace, v.name, v.reason) for v in listed],
        other_formats=len(explanation.verdicts) - len(listed),
        isvc=service.name,
        namespace=service.namespace,
    )
