"""Static checks of the shipped CRDs (SPEC §1), and OME's published catalog validated against their schemas.

The schema checks walk every node, and the validator is shown to reject the malformed documents the
apiserver rejects, so neither can pass vacuously. tests/integration/test_crds.py checks the same against the
real apiserver.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from harness.crds import CRD_DIR, CRD_NAMES, crd_documents
from harness.objects import with_field
from harness.ome_data import OME_5E4857E, OME_CFA05C6, SNAPSHOTS, OmeSnapshot

REPO_ROOT = Path(__file__).resolve().parents[2]
CATALOG_DIR = REPO_ROOT / "tests" / "data" / "ome-catalog"
SAMPLES_DIR = REPO_ROOT / "samples"

MODEL_KINDS = ("BaseModel", "ClusterBaseModel")
RUNTIME_KINDS = ("ServingRuntime", "ClusterServingRuntime")
ALL_KINDS = (*MODEL_KINDS, *RUNTIME_KINDS, "InferenceService")
TWINS = (("BaseModel", "ClusterBaseModel"), ("ServingRuntime", "ClusterServingRuntime"))

RUNTIME_READY = '.status.conditions[?(@.type=="RuntimeReady")]'
AGE = ("AGE", "date", ".metadata.creationTimestamp", 0)
# (NAME as kubectl prints it, type, jsonPath, priority), in order.
Column = tuple[str, str, str, int]
PRINTER_COLUMNS: dict[str, tuple[Column, ...]] = {
    **dict.fromkeys(
        MODEL_KINDS,
        (
            ("FORMAT", "string", ".spec.modelFormat.name", 0),
            ("ARCHITECTURE", "string", ".spec.modelArchitecture", 0),
            ("SIZE", "string", ".spec.modelParameterSize", 0),
            AGE,
        ),
    ),
    **dict.fromkeys(
        RUNTIME_KINDS,
        (
            ("DISABLED", "boolean", ".spec.disabled", 0),
            ("MIN", "string", ".spec.modelSizeRange.min", 0),
            ("MAX", "string", ".spec.modelSizeRange.max", 0),
            AGE,
        ),
    ),
    "InferenceService": (
        ("MODEL", "string", ".spec.model.name", 0),
        ("RUNTIME", "string", ".spec.runtime.name", 0),
        ("RUNTIMEREADY", "string", f"{RUNTIME_READY}.status", 0),
        ("REASON", "string", f"{RUNTIME_READY}.reason", 0),
        AGE,  # before MESSAGE, so that `-o wide` appends the long message at the end
        ("MESSAGE", "string", f"{RUNTIME_READY}.message", 1),
    ),
}

Schema = dict[str, Any]


# --------------------------------------------------------------------------------------------- helpers


def _crds_by_kind() -> dict[str, dict[str, Any]]:
    return {crd["spec"]["names"]["kind"]: crd for crd in crd_documents()}


CRDS = _crds_by_kind()


def _version(kind: str) -> dict[str, Any]:
    versions: list[dict[str, Any]] = CRDS[kind]["spec"]["versions"]
    assert len(versions) == 1
    return versions[0]


def _schema(kind: str) -> Schema:
    schema: Schema = _version(kind)["schema"]["openAPIV3Schema"]
    return schema


def _at(schema: Schema, path: str) -> Schema:
    """The schema node at a dotted field path; `[]` steps into array items, e.g. `spec.entries[].name`, and
    `{}` into a map's values, e.g. `spec.engine.annotations{}`."""
    node = schema
    for part in path.split("."):
        name, step = (part[:-2], part[-2:]) if part.endswith(("[]", "{}")) else (part, "")
        node = node["properties"][name]
        if step == "[]":
            assert node["type"] == "array", path
            node = node["items"]
        elif step == "{}":
            assert node["type"] == "object", path
            assert "properties" not in node, path
            node = node["additionalProperties"]
    return node


def _walk(node: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    yield path or "<root>", node
    for name, child in node.get("properties", {}).items():
        yield from _walk(child, f"{path}.{name}" if path else name)
    if isinstance(node.get("items"), dict):
        yield from _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{path}{{}}")


def _structural_problems(schema: Schema) -> list[str]:
    """The rules of a structural schema that hand-written YAML can break (the apiserver checks the rest)."""
    problems = []
    for path, node in _walk(schema):
        preserved = node.get("x-kubernetes-preserve-unknown-fields") is True
        if "type" not in node and not preserved and not node.get("x-kubernetes-int-or-string"):
            problems.append(f"{path}: no type")
        if node.get("type") == "array" and not isinstance(node.get("items"), dict):
            problems.append(f"{path}: array without one items schema")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: both properties and additionalProperties")
        for key in (
            "$ref",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "definitions",
            "dependencies",
            "patternProperties",
        ):
            if key in node:
                problems.append(f"{path}: uses {key}")
        if "required" in node and set(node["required"]) - set(node.get("properties", {})):
            problems.append(
                f"{path}: requires undeclared {sorted(set(node['required']) - set(node['properties']))}"
            )
    return problems


def _to_json_schema(node: Any) -> Any:
    """OpenAPI v3 (Kubernetes flavour) → JSON Schema: drop the x-kubernetes-* extensions."""
    if isinstance(node, dict):
        return {
            key: _to_json_schema(value) for key, value in node.items() if not key.startswith("x-kubernetes-")
        }
    if isinstance(node, list):
        return [_to_json_schema(value) for value in node]
    return node


def _drop_nulls(value: Any) -> Any:
    """Like the apiserver, drop `null` values before validating (none of our fields is nullable)."""
    if isinstance(value, dict):
        return {key: _drop_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_drop_nulls(item) for item in value]
    return value


VALIDATORS = {kind: Draft202012Validator(_to_json_schema(_schema(kind))) for kind in ALL_KINDS}


def _errors(document: dict[str, Any]) -> list[str]:
    validator = VALIDATORS[document["kind"]]
    return sorted(
        f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}"
        for error in validator.iter_errors(_drop_nulls(document))
    )


def _ome_documents(directory: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted([*directory.rglob("*.yaml"), *directory.rglob("*.yml")]):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if (
                isinstance(document, dict)
                and document.get("apiVersion") == "ome.io/v1beta1"
                and document.get("kind") in ALL_KINDS
            ):
                yield path, document


def _catalog_dir(directory: Path = CATALOG_DIR) -> Path:
    assert (directory / "runtimes").is_dir(), f"OME's catalog is vendored under {directory}"
    return directory


# A valid object of every kind, using every typed field.
VALID: dict[str, dict[str, Any]] = {
    "ClusterBaseModel": {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": "llama-3-8b"},
        "spec": {
            "disabled": False,
            "modelFormat": {"name": "safetensors", "version": "1.0.0"},
            "modelFramework": {"name": "transformers", "version": "4.41.0"},
            "modelArchitecture": "LlamaForCausalLM",
            "quantization": "fp8",
            "modelParameterSize": "8.03B",
            "diffusionPipeline": {
                "className": "FluxPipeline",
                "vae": {"library": "diffusers", "type": "AutoencoderKL"},
                "additionalComponents": {"image_encoder": {"library": "transformers", "type": "CLIP"}},
            },
            "storage": {"storageUri": "hf://meta-llama/Meta-Llama-3-8B"},
        },
    },
    "ClusterServingRuntime": {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": "srt-llama"},
        "spec": {
            "disabled": False,
            "supportedModelFormats": [
                {
                    "modelFormat": {
                        "name": "safetensors",
                        "version": "1.0.0",
                        "operator": "Equal",
                        "weight": 1,
                    },
                    "modelFramework": {
                        "name": "transformers",
                        "version": "4.41.0",
                        "operator": "GreaterThan",
                    },
                    "modelArchitecture": "LlamaForCausalLM",
                    "quantization": "fp8",
                    "autoSelect": True,
                    "priority": 2,
                }
            ],
            "modelSizeRange": {"min": "7B", "max": "9B"},
            "acceleratorRequirements": {"acceleratorClasses": ["nvidia-h100"]},
            "engineConfig": {
                "runner": {"image": "sglang:latest"},
                "annotations": {"ome.io/deploymentMode": "MultiNode"},
            },
            "decoderConfig": {"annotations": {"ome.io/deploymentMode": "RawDeployment"}},
        },
    },
    "InferenceService": {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "llama", "namespace": "default"},
        "spec": {
            "model": {"name": "llama-3-8b"},
            "runtime": {"name": "srt-llama", "kind": "ClusterServingRuntime", "autoSync": False},
            "deploymentMode": "RawDeployment",
            "engine": {
                "runner": {"image": "sglang:latest"},
                "leader": {"runner": {"image": "a"}},
                "worker": {"runner": {"image": "b"}},
                "acceleratorOverride": {"acceleratorClass": "nvidia-h100"},
                "annotations": {"ome.io/deploymentMode": "MultiNode"},
            },
            "decoder": {
                "acceleratorOverride": {"acceleratorClass": "nvidia-h100"},
                "annotations": {"ome.io/deploymentMode": "RawDeployment"},
            },
            "acceleratorSelector": {"acceleratorClass": "nvidia-h100"},
        },
        "status": {
            "conditions": [
                {
                    "type": "RuntimeReady",
                    "status": "True",
                    "reason": "RuntimeSelected",
                    "message": "selected ClusterServingRuntime srt-llama (score 4)",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        },
    },
}
VALID["BaseModel"] = {**VALID["ClusterBaseModel"], "kind": "BaseModel"}
VALID["ServingRuntime"] = {**VALID["ClusterServingRuntime"], "kind": "ServingRuntime"}


def _mutated(kind: str, path: str, value: Any) -> dict[str, Any]:
    """VALID[kind] with `path` set to `value` (`...` removes it)."""
    return with_field(VALID[kind], path, value)


# --------------------------------------------------------------------------------------------- the files


def test_one_file_per_kind_named_after_the_crd() -> None:
    files = sorted(CRD_DIR.glob("*.yaml"))
    assert [f.name for f in files] == [f"ome.io_{name.split('.')[0]}.yaml" for name in CRD_NAMES]
    for file in files:
        documents = [d for d in yaml.safe_load_all(file.read_text(encoding="utf-8")) if d is not None]
        assert len(documents) == 1, file.name
        assert file.name == f"ome.io_{documents[0]['spec']['names']['plural']}.yaml"


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_names_group_version_scope_and_labels(kind: str) -> None:
    crd = CRDS[kind]
    names = crd["spec"]["names"]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{names['plural']}.ome.io"
    assert crd["metadata"]["labels"]["app.kubernetes.io/part-of"] == "ome-selector"
    assert crd["spec"]["group"] == "ome.io"
    assert names["plural"] == kind.lower() + "s"
    assert names["singular"] == kind.lower()
    assert names["listKind"] == f"{kind}List"
    assert crd["spec"]["scope"] == ("Cluster" if kind.startswith("Cluster") else "Namespaced")
    version = _version(kind)
    assert (version["name"], version["served"], version["storage"]) == ("v1beta1", True, True)
    assert names.get("shortNames", []) == (["isvc"] if kind == "InferenceService" else [])


@pytest.mark.parametrize(("namespaced", "cluster"), TWINS)
def test_cluster_kinds_are_twins_of_the_namespaced_ones(namespaced: str, cluster: str) -> None:
    def comparable(kind: str) -> dict[str, Any]:
        version = copy.deepcopy(_version(kind))
        version["schema"]["openAPIV3Schema"].pop("description", None)
        return version

    assert comparable(namespaced) == comparable(cluster)


# --------------------------------------------------------------------------------------------- schemas


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_schema_is_structural(kind: str) -> None:
    schema = _schema(kind)
    assert schema["type"] == "object"
    assert "x-kubernetes-preserve-unknown-fields" not in schema, (
        "unknown top-level fields are pruned, as OME's"
    )
    assert sum(1 for _ in _walk(schema)) > 10
    assert _structural_problems(schema) == []


def test_the_structural_check_finds_problems() -> None:
    broken = {
        "type": "object",
        "properties": {"a": {"properties": {"b": {"type": "string"}}}, "c": {"type": "array"}},
    }
    assert _structural_problems(broken) == ["a: no type", "c: array without one items schema"]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_spec_and_status_keep_unknown_fields(kind: str) -> None:
    schema = _schema(kind)
    assert schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    assert schema["properties"]["status"]["x-kubernetes-preserve-unknown-fields"] is True


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_status_subresource_on_inferenceservice_and_the_model_kinds(kind: str) -> None:
    expected: dict[str, Any] | None = {"status": {}} if kind in (*MODEL_KINDS, "InferenceService") else None
    assert _version(kind).get("subresources") == expected


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_printer_columns(kind: str) -> None:
    columns = tuple(
        (c["name"].upper(), c["type"], c["jsonPath"], c.get("priority", 0))
        for c in _version(kind)["additionalPrinterColumns"]
    )
    assert columns == PRINTER_COLUMNS[kind]


MODEL_FIELDS_READ = {
    "spec.modelFormat.name": "string",
    "spec.modelFormat.version": "string",
    "spec.modelFramework.name": "string",
    "spec.modelFramework.version": "string",
    "spec.modelArchitecture": "string",
    "spec.quantization": "string",
    "spec.modelParameterSize": "string",
    "spec.diffusionPipeline": "object",
    "spec.diffusionPipeline.className": "string",
    "spec.diffusionPipeline.scheduler.library": "string",
    "spec.diffusionPipeline.textEncoder.type": "string",
    "spec.disabled": "boolean",
}
RUNTIME_FIELDS_READ = {
    "spec.disabled": "boolean",
    "spec.supportedModelFormats": "array",
    "spec.supportedModelFormats[].modelFormat.name": "string",
    "spec.supportedModelFormats[].modelFormat.version": "string",
    "spec.supportedModelFormats[].modelFormat.operator": "string",
    "spec.supportedModelFormats[].modelFormat.weight": "integer",
    "spec.supportedModelFormats[].modelFramework.name": "string",
    "spec.supportedModelFormats[].modelFramework.version": "string",
    "spec.supportedModelFormats[].modelFramework.operator": "string",
    "spec.supportedModelFormats[].modelFramework.weight": "integer",
    "spec.supportedModelFormats[].modelArchitecture": "string",
    "spec.supportedModelFormats[].quantization": "string",
    "spec.supportedModelFormats[].diffusionPipeline.className": "string",
    "spec.supportedModelFormats[].diffusionPipeline.vae.library": "string",
    "spec.supportedModelFormats[].autoSelect": "boolean",
    "spec.supportedModelFormats[].priority": "integer",
    "spec.modelSizeRange.min": "string",
    "spec.modelSizeRange.max": "string",
    "spec.acceleratorRequirements.acceleratorClasses": "array",
    # (v4, SPEC §1) the ome.io/deploymentMode key of the components' annotations, maps of strings
    "spec.engineConfig": "object",
    "spec.engineConfig.annotations": "object",
    "spec.engineConfig.annotations{}": "string",
    "spec.decoderConfig": "object",
    "spec.decoderConfig.annotations": "object",
    "spec.decoderConfig.annotations{}": "string",
}
FIELDS_READ: dict[str, dict[str, str]] = {
    "BaseModel": MODEL_FIELDS_READ,
    "ClusterBaseModel": MODEL_FIELDS_READ,
    "ServingRuntime": RUNTIME_FIELDS_READ,
    "ClusterServingRuntime": RUNTIME_FIELDS_READ,
    "InferenceService": {
        "spec.model.name": "string",
        "spec.model.kind": "string",
        "spec.runtime.name": "string",
        "spec.runtime.kind": "string",
        "spec.runtime.autoSync": "boolean",
        "spec.engine": "object",
        "spec.engine.runner.image": "string",
        "spec.engine.leader.runner.image": "string",
        "spec.engine.worker.runner.image": "string",
        "spec.engine.acceleratorOverride.acceleratorClass": "string",
        "spec.decoder.acceleratorOverride.acceleratorClass": "string",
        "spec.acceleratorSelector.acceleratorClass": "string",
        # (v4, SPEC §1, §3 check 3) the deployment mode, the components' mode annotations (maps of
        # strings) and the presence of spec.decoder
        "spec.deploymentMode": "string",
        "spec.engine.annotations": "object",
        "spec.engine.annotations{}": "string",
        "spec.decoder": "object",
        "spec.decoder.annotations": "object",
        "spec.decoder.annotations{}": "string",
        "status.conditions[].type": "string",
        "status.conditions[].status": "string",
        "status.conditions[].reason": "string",
        "status.conditions[].message": "string",
        "status.conditions[].lastTransitionTime": "string",
        "status.conditions[].severity": "string",
    },
}


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_field_the_product_reads_is_typed(kind: str) -> None:
    schema = _schema(kind)
    assert {path: _at(schema, path)["type"] for path in FIELDS_READ[kind]} == FIELDS_READ[kind]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_size_fields_are_plain_strings_without_pattern(kind: str) -> None:
    schema = _schema(kind)
    paths = ["spec.modelParameterSize"] if kind in MODEL_KINDS else []
    paths += ["spec.modelSizeRange.min", "spec.modelSizeRange.max"] if kind in RUNTIME_KINDS else []
    for path in paths:
        assert _at(schema, path) == {"type": "string"} | (
            {"description": _at(schema, path)["description"]} if "description" in _at(schema, path) else {}
        ), path
    # No constraint of any kind anywhere on a size: the product reads every value (SPEC §2, §7).
    for path, node in _walk(schema):
        if path.endswith(("modelParameterSize", "modelSizeRange.min", "modelSizeRange.max")):
            assert not {"pattern", "enum", "format", "minLength", "maxLength"} & set(node), path


def _format_blocks(kind: str) -> list[str]:
    if kind in MODEL_KINDS:
        return ["spec.modelFormat", "spec.modelFramework"]
    return ["spec.supportedModelFormats[].modelFormat", "spec.supportedModelFormats[].modelFramework"]


@pytest.mark.parametrize("kind", [*MODEL_KINDS, *RUNTIME_KINDS])
def test_ome_defaults_and_no_enum_on_operator(kind: str) -> None:
    schema = _schema(kind)
    for block in _format_blocks(kind):
        assert _at(schema, f"{block}.weight")["default"] == 1
        operator = _at(schema, f"{block}.operator")
        assert operator["default"] == "Equal"
        assert "enum" not in operator, "an unknown operator is accepted with a warning (SPEC §7)"


def test_inferenceservice_defaults() -> None:
    schema = _schema("InferenceService")
    assert _at(schema, "spec.model.kind")["default"] == "ClusterBaseModel"
    assert _at(schema, "spec.runtime.kind")["default"] == "ClusterServingRuntime"
    assert "enum" not in _at(schema, "spec.runtime.kind"), "any other value is looked up too (SPEC §1 v4)"
    assert "default" not in _at(schema, "spec.runtime.autoSync"), (
        "absent means true; the object stays as written"
    )


def test_deployment_mode_is_omes_enum_without_default() -> None:
    # SPEC §1 (v4): enum OMENative, RawDeployment, as OME v1.3's CRD; no default. MultiNode and
    # VirtualDeployment are valid modes only in the annotations (§3 check 3), which have no enum.
    schema = _schema("InferenceService")
    mode = _at(schema, "spec.deploymentMode")
    assert mode["type"] == "string"
    assert sorted(mode["enum"]) == ["OMENative", "RawDeployment"]
    assert "default" not in mode
    for path in ("spec.engine.annotations{}", "spec.decoder.annotations{}"):
        assert not {"enum", "pattern"} & set(_at(schema, path)), path
    for kind in RUNTIME_KINDS:
        for path in ("spec.engineConfig.annotations{}", "spec.decoderConfig.annotations{}"):
            assert not {"enum", "pattern"} & set(_at(_schema(kind), path)), (kind, path)


@pytest.mark.parametrize("kind", RUNTIME_KINDS)
def test_runtime_entry_requirements(kind: str) -> None:
    schema = _schema(kind)
    entry = _at(schema, "spec.supportedModelFormats[]")
    assert "required" not in entry, "OME also requires modelFramework; SPEC §1 is laxer"
    assert _at(schema, "spec.supportedModelFormats[].modelFormat")["required"] == ["name"]
    assert "required" not in _at(schema, "spec.supportedModelFormats[].modelFramework")
    priority = _at(schema, "spec.supportedModelFormats[].priority")
    assert priority["minimum"] == 1
    assert "default" not in priority


def test_required_fields_are_exactly_the_specs() -> None:
    required = {
        (kind, path): tuple(node["required"])
        for kind in ALL_KINDS
        for path, node in _walk(_schema(kind))
        if "required" in node
    }
    assert required == {
        **{(kind, "spec.supportedModelFormats[].modelFormat"): ("name",) for kind in RUNTIME_KINDS},
        ("InferenceService", "spec.model"): ("name",),
        ("InferenceService", "status.conditions[]"): ("type", "status"),
    }


def test_defaults_validate_against_their_own_node() -> None:
    seen = 0
    for kind in ALL_KINDS:
        for path, node in _walk(_schema(kind)):
            if "default" in node:
                seen += 1
                assert not list(Draft202012Validator(_to_json_schema(node)).iter_errors(node["default"])), (
                    path
                )
    assert seen == 2 * 4 + 2 * 4 + 2


# --------------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_valid_objects_validate(kind: str) -> None:
    assert _errors(VALID[kind]) == []


@pytest.mark.parametrize(
    ("kind", "path", "value", "field"),
    [
        ("ClusterBaseModel", "spec.modelParameterSize", 7, "spec.modelParameterSize"),
        ("BaseModel", "spec.modelParameterSize", 7.5, "spec.modelParameterSize"),
        ("ClusterServingRuntime", "spec.modelSizeRange.min", 1000000000, "spec.modelSizeRange.min"),
        (
            "ServingRuntime",
            "spec.supportedModelFormats.0.modelFormat.name",
            ...,
            "spec.supportedModelFormats.0",
        ),
        (
            "ClusterServingRuntime",
            "spec.supportedModelFormats.0.priority",
            0,
            "spec.supportedModelFormats.0.priority",
        ),
        (
            "ServingRuntime",
            "spec.supportedModelFormats.0.priority",
            -1,
            "spec.supportedModelFormats.0.priority",
        ),
        (
            "ClusterServingRuntime",
            "spec.supportedModelFormats.0.modelFormat.weight",
            "1",
            "spec.supportedModelFormats",
        ),
        ("ClusterServingRuntime", "spec.disabled", "yes", "spec.disabled"),
        ("InferenceService", "spec.model.name", ..., "spec.model"),
        ("InferenceService", "spec.runtime.autoSync", "false", "spec.runtime.autoSync"),
        ("InferenceService", "status.conditions.0.type", ..., "status.conditions.0"),
        # (v4, SPEC §1) outside the enum, MultiNode too; a mode annotation that is not a string; a kind
        # that is not a string
        ("InferenceService", "spec.deploymentMode", "MultiNode", "spec.deploymentMode"),
        ("InferenceService", "spec.deploymentMode", "rawdeployment", "spec.deploymentMode"),
        ("InferenceService", "spec.deploymentMode", "", "spec.deploymentMode"),
        (
            "InferenceService",
            "spec.engine.annotations",
            {"ome.io/deploymentMode": 1},
            "spec.engine.annotations",
        ),
        (
            "InferenceService",
            "spec.decoder.annotations",
            {"ome.io/deploymentMode": True},
            "spec.decoder.annotations",
        ),
        ("InferenceService", "spec.runtime.kind", 1, "spec.runtime.kind"),
        (
            "ClusterServingRuntime",
            "spec.engineConfig.annotations",
            {"ome.io/deploymentMode": 1},
            "spec.engineConfig.annotations",
        ),
        (
            "ServingRuntime",
            "spec.decoderConfig.annotations",
            ["ome.io/deploymentMode"],
            "spec.decoderConfig.annotations",
        ),
    ],
)
def test_malformed_objects_are_rejected_naming_the_field(
    kind: str, path: str, value: Any, field: str
) -> None:
    errors = _errors(_mutated(kind, path, value))
    assert errors, f"{kind} with {path}={value!r} validated"
    assert all(error.startswith(field) for error in errors), errors


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("ClusterBaseModel", "spec.modelParameterSize", "4b"),
        ("ClusterBaseModel", "spec.modelParameterSize", ""),
        ("ClusterBaseModel", "spec.modelParameterSize", None),
        ("ClusterBaseModel", "spec.modelFormat", ...),
        ("ClusterBaseModel", "spec.modelFormat", {"version": "1"}),
        ("ClusterServingRuntime", "spec.modelSizeRange", {"min": "2b", "max": " 4 K"}),
        ("ClusterServingRuntime", "spec.modelSizeRange.max", None),
        ("ClusterServingRuntime", "spec.supportedModelFormats.0.modelFormat.operator", "LessThan"),
        ("ClusterServingRuntime", "spec.supportedModelFormats.0.modelFramework", ...),
        ("ClusterServingRuntime", "spec.supportedModelFormats.0.priority", None),
        ("InferenceService", "spec.model", ...),
        ("InferenceService", "spec.runtime.name", ...),
        # (v4, SPEC §1) values the API server accepts: a mode annotation that declares nothing (§3 check 3),
        # any string as the runtime kind, no deployment mode at all
        ("InferenceService", "spec.engine.annotations", {"ome.io/deploymentMode": "Serverless"}),
        ("InferenceService", "spec.decoder.annotations", {"ome.io/deploymentMode": ""}),
        ("InferenceService", "spec.runtime.kind", ""),
        ("InferenceService", "spec.runtime.kind", "servingruntime"),
        ("InferenceService", "spec.deploymentMode", ...),
        ("InferenceService", "spec.deploymentMode", "OMENative"),
        ("ClusterServingRuntime", "spec.engineConfig.annotations", {"ome.io/deploymentMode": "Knative"}),
    ],
)
def test_what_the_product_reads_leniently_is_accepted(kind: str, path: str, value: Any) -> None:
    assert _errors(_mutated(kind, path, value)) == []


# --------------------------------------------------------------------------------------------- real data


#: The documents of each vendored snapshot of OME's catalog, by kind (a duplicated name counts twice).
CATALOG_COUNTS = {
    OME_CFA05C6.id: {"ClusterServingRuntime": 205, "ClusterBaseModel": 205},
    OME_5E4857E.id: {"ClusterServingRuntime": 210, "ClusterBaseModel": 207},
}


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[snapshot.id for snapshot in SNAPSHOTS])
def test_omes_catalog_validates(snapshot: OmeSnapshot) -> None:
    catalog = _catalog_dir(snapshot.catalog)
    counts = dict.fromkeys(ALL_KINDS, 0)
    failures = []
    for path, document in _ome_documents(catalog):
        counts[document["kind"]] += 1
        failures += [f"{path.relative_to(catalog)}: {error}" for error in _errors(document)]
    assert {kind: count for kind, count in counts.items() if count} == CATALOG_COUNTS[snapshot.id]
    assert failures == []


def test_samples_validate() -> None:
    documents = list(_ome_documents(SAMPLES_DIR))
    assert documents, f"no ome.io objects under {SAMPLES_DIR}"
    failures = [
        f"{path.relative_to(REPO_ROOT)}: {error}"
        for path, document in documents
        for error in _errors(document)
    ]
    assert failures == []
