"""The shipped CRDs (SPEC §1) on the real kube-apiserver: defaults, validation, pruning, columns, status.

Cluster-scoped objects get unique names (the control plane lives for the whole session); nothing waits for
deletions.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness.controlplane import ControlPlane
from harness.kube import PLURALS
from harness.objects import with_field
from harness.ome_data import OME_5E4857E, OME_CFA05C6, SNAPSHOTS, OmeSnapshot

pytestmark = pytest.mark.integration

GROUP, VERSION = "ome.io", "v1beta1"
REPO_ROOT = Path(__file__).resolve().parents[2]
CLUSTER_KINDS = {"ClusterBaseModel", "ClusterServingRuntime"}


def _message(error: ApiException) -> str:
    """The `message` of the apiserver's Status answer."""
    message = json.loads(error.body or "{}").get("message", "")
    assert isinstance(message, str)
    return message


def _unique(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def _model(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "modelFormat": {"name": "safetensors", "version": "1.0.0"},
            "modelFramework": {"name": "transformers", "version": "4.51.0"},
            "modelArchitecture": "Qwen3ForCausalLM",
            "modelParameterSize": "32.8B",
            "storage": {"storageUri": "hf://Qwen/Qwen3-32B", "path": "/raid/models/Qwen/Qwen3-32B"},
            **spec,
        },
    }


def _runtime(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "disabled": False,
            "supportedModelFormats": [
                {
                    "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                    "modelFramework": {"name": "transformers", "version": "4.51.0"},
                    "modelArchitecture": "Qwen3ForCausalLM",
                    "autoSelect": True,
                    "priority": 1,
                }
            ],
            "modelSizeRange": {"min": "30B", "max": "34B"},
            **spec,
        },
    }


def _isvc(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferenceService",
        "metadata": {"name": name},
        "spec": {"model": {"name": "qwen3-32b"}, **spec},
    }


class Objects:
    """Create, read and patch ome.io objects of any of the five kinds through the dynamic client."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.namespace = namespace
        self.cluster_scoped: list[tuple[str, str]] = []  # (plural, name) to delete after the test

    def create(self, document: dict[str, Any], **options: Any) -> dict[str, Any]:
        kind = document["kind"]
        if kind in CLUSTER_KINDS:
            created = self.api.create_cluster_custom_object(
                GROUP, VERSION, PLURALS[kind], document, **options
            )
            if not options.get("dry_run"):
                self.cluster_scoped.append((PLURALS[kind], document["metadata"]["name"]))
        else:
            created = self.api.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURALS[kind], document, **options
            )
        assert isinstance(created, dict)
        return created

    def get(self, kind: str, name: str) -> dict[str, Any]:
        if kind in CLUSTER_KINDS:
            found = self.api.get_cluster_custom_object(GROUP, VERSION, PLURALS[kind], name)
        else:
            found = self.api.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURALS[kind], name)
        assert isinstance(found, dict)
        return found

    def patch_status(self, kind: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        if kind in CLUSTER_KINDS:
            patched = self.api.patch_cluster_custom_object_status(GROUP, VERSION, PLURALS[kind], name, patch)
        else:
            patched = self.api.patch_namespaced_custom_object_status(
                GROUP, VERSION, self.namespace, PLURALS[kind], name, patch
            )
        assert isinstance(patched, dict)
        return patched

    def rejection(self, document: dict[str, Any]) -> str:
        """Create `document`, expecting a 422; returns the apiserver's message."""
        with pytest.raises(ApiException) as caught:
            self.create(document)
        assert caught.value.status == 422, caught.value.body
        return _message(caught.value)


@pytest.fixture
def objects(api_client: Any, namespace: str) -> Iterator[Objects]:
    """Cluster-scoped objects are deleted afterwards: other tests count the runtimes they can see."""
    made = Objects(api_client, namespace)
    yield made
    for plural, name in made.cluster_scoped:
        with contextlib.suppress(ApiException):
            made.api.delete_cluster_custom_object(GROUP, VERSION, plural, name)


# --------------------------------------------------------------------------------------------- valid objects


def test_valid_object_of_every_kind_gets_omes_defaults(objects: Objects) -> None:
    name = _unique("qwen3-32b")
    for kind in ("BaseModel", "ClusterBaseModel"):
        stored = objects.create(_model(kind, name))
        assert stored["spec"]["modelFormat"] == {
            "name": "safetensors",
            "version": "1.0.0",
            "operator": "Equal",
            "weight": 1,
        }
        assert stored["spec"]["modelFramework"]["operator"] == "Equal"
        assert stored["spec"]["modelFramework"]["weight"] == 1
        assert stored["spec"]["modelParameterSize"] == "32.8B"
        assert objects.get(kind, name)["spec"] == stored["spec"]

    for kind in ("ServingRuntime", "ClusterServingRuntime"):
        stored = objects.create(_runtime(kind, name))
        (entry,) = stored["spec"]["supportedModelFormats"]
        for block in ("modelFormat", "modelFramework"):
            assert (entry[block]["operator"], entry[block]["weight"]) == ("Equal", 1), block
        assert "priority" in entry
        assert stored["spec"]["modelSizeRange"] == {"min": "30B", "max": "34B"}
        assert objects.get(kind, name)["spec"] == stored["spec"]

    stored = objects.create(_isvc(name, runtime={"name": name}))
    assert stored["spec"]["model"] == {"name": "qwen3-32b", "kind": "ClusterBaseModel"}
    assert stored["spec"]["runtime"] == {"name": name, "kind": "ClusterServingRuntime"}
    assert objects.get("InferenceService", name)["spec"] == stored["spec"]


def test_explicit_values_are_kept_over_the_defaults(objects: Objects) -> None:
    runtime = _runtime("ServingRuntime", _unique("rt"))
    entry = runtime["spec"]["supportedModelFormats"][0]
    entry["modelFormat"] |= {"operator": "GreaterThanOrEqual", "weight": 0}
    entry["modelFramework"] |= {"operator": "GreaterThan", "weight": 7}
    stored_entry = objects.create(runtime)["spec"]["supportedModelFormats"][0]
    assert (stored_entry["modelFormat"]["operator"], stored_entry["modelFormat"]["weight"]) == (
        "GreaterThanOrEqual",
        0,
    )
    assert (stored_entry["modelFramework"]["operator"], stored_entry["modelFramework"]["weight"]) == (
        "GreaterThan",
        7,
    )

    isvc = _isvc(_unique("isvc"), runtime={"name": "rt", "kind": "ServingRuntime", "autoSync": False})
    isvc["spec"]["model"]["kind"] = "BaseModel"
    stored = objects.create(isvc)["spec"]
    assert stored["model"]["kind"] == "BaseModel"
    assert stored["runtime"] == {"name": "rt", "kind": "ServingRuntime", "autoSync": False}


def test_an_isvc_without_model_or_runtime_is_accepted_and_not_defaulted(objects: Objects) -> None:
    stored = objects.create(_isvc(_unique("bare")) | {"spec": {"engine": {"minReplicas": 1}}})
    assert stored["spec"] == {"engine": {"minReplicas": 1}}


# --------------------------------------------------------------------------------------------- rejected


REJECTED: list[tuple[str, Callable[[str], dict[str, Any]], str, Any, str]] = [
    # (case, object factory, path, value, what the message must name)
    (
        "number-as-size",
        lambda n: _model("ClusterBaseModel", n),
        "spec.modelParameterSize",
        7,
        'spec.modelParameterSize: Invalid value: "integer": '
        "spec.modelParameterSize in body must be of type string",
    ),
    (
        "number-as-min",
        lambda n: _runtime("ClusterServingRuntime", n),
        "spec.modelSizeRange.min",
        30000000000,
        "spec.modelSizeRange.min: Invalid value",
    ),
    (
        "missing-format-name",
        lambda n: _runtime("ServingRuntime", n),
        "spec.supportedModelFormats.0.modelFormat.name",
        ...,
        "spec.supportedModelFormats[0].modelFormat.name: Required value",
    ),
    (
        "priority-zero",
        lambda n: _runtime("ClusterServingRuntime", n),
        "spec.supportedModelFormats.0.priority",
        0,
        "spec.supportedModelFormats[0].priority: Invalid value: 0: "
        "spec.supportedModelFormats[0].priority in body should be greater than or equal to 1",
    ),
    (
        "missing-model-name",
        _isvc,
        "spec.model.name",
        ...,
        "spec.model.name: Required value",
    ),
    (
        "string-as-weight",
        lambda n: _runtime("ServingRuntime", n),
        "spec.supportedModelFormats.0.modelFramework.weight",
        "1",
        "spec.supportedModelFormats[0].modelFramework.weight: Invalid value",
    ),
    # SPEC §1 v4: the deployment-mode enum of OME v1.3's CRD, and annotations maps of strings.
    (
        "deployment-mode-outside-the-enum",
        _isvc,
        "spec.deploymentMode",
        "MultiNode",
        'spec.deploymentMode: Unsupported value: "MultiNode"',
    ),
    (
        "engine-annotation-not-a-string",
        _isvc,
        "spec.engine",
        {"annotations": {"x": 5}},
        "spec.engine.annotations.x: Invalid value",
    ),
    (
        "engine-config-annotation-not-a-string",
        lambda n: _runtime("ClusterServingRuntime", n),
        "spec.engineConfig",
        {"annotations": {"x": True}},
        "spec.engineConfig.annotations.x: Invalid value",
    ),
]


@pytest.mark.parametrize(
    ("factory", "path", "value", "expected"), [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED]
)
def test_malformed_objects_are_rejected_naming_the_field(
    objects: Objects, factory: Callable[[str], dict[str, Any]], path: str, value: Any, expected: str
) -> None:
    message = objects.rejection(with_field(factory(_unique("bad")), path, value))
    assert expected in message


# ------------------------------------------------------------------------------------- accepted as written


def test_the_v4_fields_are_accepted_and_spec_deployment_mode_has_no_default(objects: Objects) -> None:
    modes = {"ome.io/deploymentMode": "RawDeployment"}
    created = objects.create(
        _isvc(_unique("modes"), engine={"annotations": modes}, decoder={"annotations": modes}),
        field_validation="Strict",
    )
    assert created["spec"]["engine"]["annotations"] == modes
    assert "deploymentMode" not in created["spec"]  # no default (SPEC §1)
    runtime = _runtime("ServingRuntime", _unique("modes"))
    runtime["spec"]["decoderConfig"] = {"annotations": modes, "runner": {"image": "x"}}
    assert objects.create(runtime, field_validation="Strict")["spec"]["decoderConfig"]["annotations"] == modes


def test_sizes_are_not_checked_and_unknown_operators_are_accepted(objects: Objects) -> None:
    model = objects.create(_model("ClusterBaseModel", _unique("lower"), modelParameterSize="4b"))
    assert model["spec"]["modelParameterSize"] == "4b"

    runtime = _runtime("ServingRuntime", _unique("odd"), modelSizeRange={"min": "2b", "max": " 4 K"})
    runtime["spec"]["supportedModelFormats"][0]["modelFramework"]["operator"] = "LessThan"
    stored = objects.create(runtime)["spec"]
    assert stored["modelSizeRange"] == {"min": "2b", "max": " 4 K"}
    assert stored["supportedModelFormats"][0]["modelFramework"]["operator"] == "LessThan"


def test_null_fields_count_as_absent(objects: Objects) -> None:
    model = objects.create(_model("BaseModel", _unique("nulls"), modelParameterSize=None, quantization=None))
    assert "modelParameterSize" not in model["spec"]
    assert "quantization" not in model["spec"]

    runtime = _runtime("ServingRuntime", _unique("nulls"), modelSizeRange={"min": "7B", "max": None})
    runtime["spec"]["supportedModelFormats"][0]["priority"] = None
    stored = objects.create(runtime)["spec"]
    assert stored["modelSizeRange"] == {"min": "7B"}
    assert "priority" not in stored["supportedModelFormats"][0]


def test_models_without_a_format_are_accepted(objects: Objects) -> None:
    """A model without modelFormat.name is pending (SPEC §3), so the CRD must store it."""
    model = _model("ClusterBaseModel", _unique("pending"))
    del model["spec"]["modelFormat"]
    assert "modelFormat" not in objects.create(model)["spec"]
    assert objects.create(_model("BaseModel", _unique("empty"), modelFormat={}))["spec"]["modelFormat"] == {
        "operator": "Equal",
        "weight": 1,
    }


def test_unknown_fields_are_preserved(objects: Objects) -> None:
    engine_config = {
        "annotations": {"prometheus.io/scrape": "true"},
        "runner": {
            "name": "ome-container",
            "image": "sglang:v0.5",
            "resources": {"limits": {"nvidia.com/gpu": 4}},
        },
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    runtime = _runtime(
        "ClusterServingRuntime", _unique("keep"), engineConfig=engine_config, protocolVersions=["openAI"]
    )
    runtime["spec"]["supportedModelFormats"][0] |= {
        "version": "1.0.0",
        "acceleratorConfig": {"h100": {"x": 1}},
    }
    runtime["spec"]["acceleratorRequirements"] = {"acceleratorClasses": ["nvidia-h100"], "minMemory": 80}
    stored = objects.create(runtime)["spec"]
    assert stored["engineConfig"] == engine_config
    assert stored["protocolVersions"] == ["openAI"]
    assert stored["supportedModelFormats"][0]["acceleratorConfig"] == {"h100": {"x": 1}}
    assert stored["acceleratorRequirements"] == {"acceleratorClasses": ["nvidia-h100"], "minMemory": 80}

    model = objects.create(
        _model("BaseModel", _unique("keep"), modelCapabilities=["TEXT_TO_TEXT"], vendor="Qwen")
    )
    assert model["spec"]["storage"]["storageUri"] == "hf://Qwen/Qwen3-32B"
    assert model["spec"]["modelCapabilities"] == ["TEXT_TO_TEXT"]

    engine = {
        "minReplicas": 1,
        "runner": {"image": "img", "args": ["--tp", "4"]},
        "leader": {"runner": {"env": []}},
    }
    isvc = objects.create(_isvc(_unique("keep"), engine=engine, router={"minReplicas": 2}))
    assert isvc["spec"]["engine"] == engine
    assert isvc["spec"]["router"] == {"minReplicas": 2}


def test_unknown_fields_in_fully_typed_blocks_are_pruned_like_omes(objects: Objects) -> None:
    runtime = _runtime("ServingRuntime", _unique("typo"), modelSizeRange={"min": "7B", "mxa": "9B"})
    stored = objects.create(runtime)["spec"]
    assert stored["modelSizeRange"] == {"min": "7B"}


# --------------------------------------------------------------------------------------------- real data


def _catalog_documents(directory: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(directory.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(document, dict) and document.get("apiVersion") == f"{GROUP}/{VERSION}":
                yield str(path.relative_to(directory)), document


#: The ome.io documents of each vendored snapshot of OME's catalog (a duplicated name counts twice).
CATALOG_DOCUMENTS = {OME_CFA05C6.id: 410, OME_5E4857E.id: 417}


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[snapshot.id for snapshot in SNAPSHOTS])
def test_omes_catalog_is_accepted_with_nothing_pruned(objects: Objects, snapshot: OmeSnapshot) -> None:
    """Every catalog object, created with dry run and strict field validation: accepted, no field dropped."""
    failures = []
    count = 0
    for where, document in _catalog_documents(snapshot.catalog):
        count += 1
        try:
            objects.create(document, dry_run="All", field_validation="Strict")
        except ApiException as error:
            failures.append(f"{where}: {error.status} {_message(error)}")
    assert count == CATALOG_DOCUMENTS[snapshot.id]
    assert failures == []


# ----------------------------------------------------------------------------------------- kubectl columns


def _table(control_plane: ControlPlane, *args: str) -> tuple[list[str], list[dict[str, str]]]:
    """`kubectl get` output: the header, and one {column: cell} per row, cut at the header's offsets."""
    header, *rows = control_plane.kubectl("get", *args).stdout.rstrip("\n").splitlines()
    names = header.split()
    starts = [header.index(f" {name}") + 1 if i else 0 for i, name in enumerate(names)]
    ends = [*starts[1:], None]
    return names, [{n: row[a:b].strip() for n, a, b in zip(names, starts, ends, strict=True)} for row in rows]


def test_kubectl_shows_the_size_column_of_models(control_plane: ControlPlane, objects: Objects) -> None:
    name = _unique("qwen")
    objects.create(_model("ClusterBaseModel", name))
    header, [row] = _table(control_plane, "clusterbasemodels", name)
    assert header == ["NAME", "FORMAT", "ARCHITECTURE", "SIZE", "AGE"]
    assert row | {"AGE": ""} == {
        "NAME": name,
        "FORMAT": "safetensors",
        "ARCHITECTURE": "Qwen3ForCausalLM",
        "SIZE": "32.8B",
        "AGE": "",
    }

    objects.create(_model("BaseModel", name, modelParameterSize="4b"))
    header, [row] = _table(control_plane, "basemodels", name, "-n", objects.namespace)
    assert header == ["NAME", "FORMAT", "ARCHITECTURE", "SIZE", "AGE"]
    assert row["SIZE"] == "4b"


def test_kubectl_shows_the_range_of_runtimes(control_plane: ControlPlane, objects: Objects) -> None:
    name = _unique("srt")
    objects.create(_runtime("ServingRuntime", name, modelSizeRange={"min": "30B"}))
    header, [row] = _table(control_plane, "servingruntimes", name, "-n", objects.namespace)
    assert header == ["NAME", "DISABLED", "MIN", "MAX", "AGE"]
    assert (row["NAME"], row["DISABLED"], row["MIN"], row["MAX"]) == (name, "false", "30B", "")

    objects.create(_runtime("ClusterServingRuntime", name))
    header, [row] = _table(control_plane, "clusterservingruntimes", name)
    assert header == ["NAME", "DISABLED", "MIN", "MAX", "AGE"]
    assert (row["MIN"], row["MAX"]) == ("30B", "34B")


def test_kubectl_shows_the_message_only_in_wide_output(control_plane: ControlPlane, objects: Objects) -> None:
    name = _unique("isvc")
    objects.create(_isvc(name))
    message = "selected ClusterServingRuntime srt-qwen3-32b (score 2)"
    condition = {
        "type": "RuntimeReady",
        "status": "True",
        "reason": "RuntimeSelected",
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    other = {"type": "Ready", "status": "False", "reason": "Pending", "message": "not this one"}
    objects.patch_status("InferenceService", name, {"status": {"conditions": [other, condition]}})

    header, [row] = _table(control_plane, "isvc", name, "-n", objects.namespace)
    assert header == ["NAME", "MODEL", "RUNTIME", "RUNTIMEREADY", "REASON", "AGE"]
    assert row | {"AGE": ""} == {
        "NAME": name,
        "MODEL": "qwen3-32b",
        "RUNTIME": "",
        "RUNTIMEREADY": "True",
        "REASON": "RuntimeSelected",
        "AGE": "",
    }

    header, [row] = _table(control_plane, "inferenceservices", name, "-n", objects.namespace, "-o", "wide")
    assert header == ["NAME", "MODEL", "RUNTIME", "RUNTIMEREADY", "REASON", "AGE", "MESSAGE"]
    assert row["MESSAGE"] == message


# --------------------------------------------------------------------------------------------- status


def test_status_subresource_of_inferenceservices(objects: Objects) -> None:
    name = _unique("isvc")
    created = objects.create(_isvc(name, runtime={"name": "a"}) | {"status": {"ignored": True}})
    assert "status" not in created, "status is not written through the main resource"

    condition = {"type": "RuntimeReady", "status": "False", "reason": "RuntimeNotFound", "message": "m"}
    patched = objects.patch_status(
        "InferenceService",
        name,
        {"spec": {"runtime": {"name": "b"}}, "status": {"conditions": [condition], "url": "http://x"}},
    )
    assert patched["spec"] == created["spec"], "a status patch does not change spec"
    assert patched["status"] == {"conditions": [condition], "url": "http://x"}
    assert patched["metadata"]["generation"] == created["metadata"]["generation"]

    with pytest.raises(ApiException) as caught:
        objects.patch_status("InferenceService", name, {"status": {"conditions": [{"reason": "no type"}]}})
    assert caught.value.status == 422
    assert "status.conditions[0].type: Required value" in _message(caught.value)


@pytest.mark.parametrize("kind", ["BaseModel", "ClusterBaseModel"])
def test_status_subresource_of_models(objects: Objects, kind: str) -> None:
    name = _unique("model")
    created = objects.create(_model(kind, name))
    patched = objects.patch_status(kind, name, {"spec": {"disabled": True}, "status": {"state": "Ready"}})
    assert patched["status"] == {"state": "Ready"}
    assert patched["spec"] == created["spec"]


def test_runtimes_have_no_status_subresource(objects: Objects) -> None:
    name = _unique("rt")
    objects.create(_runtime("ServingRuntime", name))
    with pytest.raises(ApiException) as caught:
        objects.patch_status("ServingRuntime", name, {"status": {"x": 1}})
    assert caught.value.status == 404
