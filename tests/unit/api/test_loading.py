"""Loading the five kinds (SPEC §1): CRD defaults, CRD validation with field paths, null = absent, YAML."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import GV, isvc, model_doc, runtime_doc

from ome_selector.api.loading import LoadError, describe_value, field_path, key_of, load_resource
from ome_selector.api.resources import InferenceService, Kind, Model, ObjectKey, Runtime
from ome_selector.selection.profiles import RuntimeProfile


def test_runtime_entry_defaults() -> None:
    doc = runtime_doc(
        "rt",
        {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"}},
    )
    resource = load_resource(doc)
    assert isinstance(resource, Runtime)
    entry = resource.spec.supported_model_formats[0]
    assert entry.model_format is not None
    assert entry.model_framework is not None
    assert (entry.model_format.operator, entry.model_format.weight) == ("Equal", 1)
    assert (entry.model_framework.operator, entry.model_framework.weight) == ("Equal", 1)
    assert entry.priority == 1
    assert entry.auto_select is False
    assert resource.spec.disabled is None  # absent, so a parent can set it (SPEC §1 v4)
    assert resource.spec.is_disabled is False
    assert resource.spec.model_size_range is None
    assert resource.kind is Kind.CLUSTER_SERVING_RUNTIME
    assert resource.namespace is None


def test_model_defaults() -> None:
    resource = load_resource(model_doc("m", fmt=None))
    assert isinstance(resource, Model)
    assert resource.spec.model_format is None
    assert resource.spec.disabled is False
    assert not resource.spec.has_format
    assert not resource.spec.has_size


def test_null_counts_as_absent() -> None:
    doc = runtime_doc(
        "rt",
        {
            "modelFormat": {"name": "x", "version": None, "operator": None, "weight": None},
            "priority": None,
            "autoSelect": None,
            "modelArchitecture": None,
        },
        size_range={"min": None, "max": "4B"},
    )
    doc["spec"]["disabled"] = None
    doc["spec"]["acceleratorRequirements"] = None
    resource = load_resource(doc)
    assert isinstance(resource, Runtime)
    entry = resource.spec.supported_model_formats[0]
    assert entry.model_format is not None
    assert entry.model_format.version is None
    assert (entry.model_format.operator, entry.model_format.weight, entry.priority) == ("Equal", 1, 1)
    assert resource.spec.model_size_range is not None
    assert resource.spec.model_size_range.min is None
    assert resource.spec.model_size_range.max == "4B"


def test_empty_string_bound_is_present() -> None:
    resource = load_resource(runtime_doc("rt", size_range={"min": ""}))
    assert isinstance(resource, Runtime)
    assert resource.spec.model_size_range is not None
    assert resource.spec.model_size_range.min == ""
    assert RuntimeProfile.of(resource).range_text == "[, inf)"


def test_unknown_fields_are_ignored() -> None:
    doc = runtime_doc("rt", {"modelFormat": {"name": "x", "color": "blue"}, "name": "legacy"})
    doc["spec"]["engineConfig"] = {"runner": {"image": 7}}
    doc["status"] = {"anything": [1, 2]}
    assert isinstance(load_resource(doc), Runtime)


def test_snake_case_names_are_accepted_too() -> None:
    doc = model_doc("m")
    doc["spec"] = {"model_format": {"name": "onnx"}, "model_parameter_size": "1B"}
    resource = load_resource(doc)
    assert isinstance(resource, Model)
    assert resource.spec.format_name == "onnx"
    assert resource.spec.model_parameter_size == "1B"


def _with(doc: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target: Any = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


RT = runtime_doc(
    "rt",
    {"modelFormat": {"name": "x", "version": "1"}, "modelFramework": {"name": "y"}, "priority": 2},
    min="1B",
    max="4B",
    classes=["a100"],
)
MODEL = model_doc("m", fmt="x", version="1", framework="y", size="3B")
ISVC: dict[str, Any] = {
    "apiVersion": GV,
    "kind": "InferenceService",
    "metadata": {"name": "svc", "namespace": "ns"},
    "spec": {"model": {"name": "m"}, "runtime": {"name": "rt"}, "engine": {"runner": {"image": "img"}}},
}

INVALID = [
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "modelFormat"], {}),
        "spec.supportedModelFormats[0].modelFormat.name",
        "required value",
        "entry format name required",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "priority"], 0),
        "spec.supportedModelFormats[0].priority",
        "greater than or equal to 1",
        "priority 0",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "priority"], -3),
        "spec.supportedModelFormats[0].priority",
        "greater than or equal to 1",
        "negative priority",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "priority"], "2"),
        "spec.supportedModelFormats[0].priority",
        "must be an integer",
        "priority as string",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "priority"], True),
        "spec.supportedModelFormats[0].priority",
        "must be an integer",
        "priority as boolean",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "priority"], 1.5),
        "spec.supportedModelFormats[0].priority",
        "must be an integer",
        "priority as float",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "modelFormat", "version"], 1.0),
        "spec.supportedModelFormats[0].modelFormat.version",
        "must be a string",
        "version as a YAML float",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "modelFormat", "weight"], "1"),
        "spec.supportedModelFormats[0].modelFormat.weight",
        "must be an integer",
        "weight as string",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "modelFramework", "operator"], 3),
        "spec.supportedModelFormats[0].modelFramework.operator",
        "must be a string",
        "operator as number",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0, "autoSelect"], "true"),
        "spec.supportedModelFormats[0].autoSelect",
        "must be a boolean",
        "autoSelect as string",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats", 0], "safetensors"),
        "spec.supportedModelFormats[0]",
        "must be an object",
        "entry as string",
    ),
    (
        _with(RT, ["spec", "supportedModelFormats"], {"a": 1}),
        "spec.supportedModelFormats",
        "must be an array",
        "entries as object",
    ),
    (
        _with(RT, ["spec", "modelSizeRange", "min"], 2000000000),
        "spec.modelSizeRange.min",
        "must be a string",
        "min as number",
    ),
    (_with(RT, ["spec", "disabled"], "no"), "spec.disabled", "must be a boolean", "disabled as string"),
    (
        _with(RT, ["spec", "acceleratorRequirements", "acceleratorClasses"], ["a", 1]),
        "spec.acceleratorRequirements.acceleratorClasses[1]",
        "must be a string",
        "class as number",
    ),
    (_with(RT, ["spec"], ["x"]), "spec", "must be an object", "spec as list"),
    (
        _with(MODEL, ["spec", "modelParameterSize"], 7),
        "spec.modelParameterSize",
        "must be a string",
        "size as number",
    ),
    (
        _with(MODEL, ["spec", "modelFormat", "name"], 5),
        "spec.modelFormat.name",
        "must be a string",
        "format name as number",
    ),
    (
        _with(MODEL, ["spec", "diffusionPipeline"], {"additionalComponents": {"k": {"library": 1}}}),
        "spec.diffusionPipeline.additionalComponents.k.library",
        "must be a string",
        "component library as number",
    ),
    (_with(MODEL, ["metadata", "name"], None), "metadata.name", "required value", "name missing"),
    (_with(MODEL, ["metadata", "name"], ""), "metadata.name", "required value", "name empty"),
    (_with(MODEL, ["metadata", "name"], 12), "metadata.name", "must be a string", "name as number"),
    (_with(MODEL, ["metadata"], "m"), "metadata", "must be an object", "metadata as string"),
    (_with(ISVC, ["spec", "model"], {}), "spec.model.name", "required value", "isvc model name required"),
    (
        _with(ISVC, ["spec", "model", "name"], None),
        "spec.model.name",
        "required value",
        "isvc model name null",
    ),
    (
        _with(ISVC, ["spec", "runtime", "autoSync"], "false"),
        "spec.runtime.autoSync",
        "must be a boolean",
        "autoSync as string",
    ),
    (
        _with(ISVC, ["spec", "engine", "runner", "image"], 3),
        "spec.engine.runner.image",
        "must be a string",
        "image as number",
    ),
    (
        _with(ISVC, ["metadata", "annotations"], {"ome.io/accelerator-class": 1}),
        "metadata.annotations.ome.io/accelerator-class",
        "must be a string",
        "annotation as number",
    ),
    (
        _with(ISVC, ["metadata", "namespace"], None),
        "metadata.namespace",
        "required value",
        "namespaced without namespace",
    ),
]


@pytest.mark.parametrize(
    ("doc", "path", "message"), [(d, p, m) for d, p, m, _ in INVALID], ids=[i for *_, i in INVALID]
)
def test_invalid_documents_name_the_field(doc: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(LoadError) as caught:
        load_resource(doc)
    assert caught.value.path == path
    assert message in caught.value.message
    assert str(caught.value).startswith(path + ": ")


@pytest.mark.parametrize(
    "doc",
    [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        {"apiVersion": "ome.io/v1", "kind": "BaseModel", "metadata": {"name": "x"}},
        {"apiVersion": GV, "kind": "FineTunedWeight", "metadata": {"name": "x"}},
        {"apiVersion": GV, "kind": "List", "items": []},
        {"kind": "BaseModel"},
        {},
    ],
    ids=["other group", "other version", "other kind", "List", "no apiVersion", "empty"],
)
def test_other_documents_are_skipped(doc: dict[str, Any]) -> None:
    assert load_resource(doc) is None


def test_namespaces() -> None:
    doc = _with(MODEL, ["metadata", "namespace"], "team")
    assert load_resource(doc) is not None
    cluster = load_resource(doc)
    assert isinstance(cluster, Model)
    assert cluster.namespace is None  # a ClusterBaseModel ignores metadata.namespace
    namespaced = _with(doc, ["kind"], "BaseModel")
    loaded = load_resource(namespaced)
    assert isinstance(loaded, Model)
    assert loaded.key == (Kind.BASE_MODEL, "team", "m")
    without = _with(ISVC, ["metadata"], {"name": "svc"})
    loaded_isvc = load_resource(without, default_namespace="dflt")
    assert isinstance(loaded_isvc, InferenceService)
    assert loaded_isvc.namespace == "dflt"


def test_mapping_bodies_are_accepted() -> None:
    from types import MappingProxyType

    body = MappingProxyType(copy.deepcopy(ISVC))
    assert isinstance(load_resource(body), InferenceService)


def test_an_inference_service_keeps_the_annotations_selection_reads_and_checks_them_all() -> None:
    annotations = {
        "ome.io/accelerator-class": "h100",
        "kubectl.kubernetes.io/last-applied-configuration": "{...}",
        "team": "a",
    }
    loaded = load_resource(_with(ISVC, ["metadata", "annotations"], annotations))
    assert isinstance(loaded, InferenceService)
    assert dict(loaded.annotations) == {"ome.io/accelerator-class": "h100"}
    unread = load_resource(_with(ISVC, ["metadata", "annotations"], {"team": "a"}))
    assert isinstance(unread, InferenceService)
    assert dict(unread.annotations) == {}
    with pytest.raises(LoadError) as error:
        load_resource(_with(ISVC, ["metadata", "annotations"], {"team": 7}))
    assert error.value.path == "metadata.annotations.team"


def test_inference_services_with_equal_specs_share_one() -> None:
    first, second = (load_resource(_with(ISVC, ["metadata", "name"], name)) for name in ("a", "b"))
    other = load_resource(_with(ISVC, ["spec", "runtime", "name"], "other"))
    assert isinstance(first, InferenceService)
    assert isinstance(second, InferenceService)
    assert isinstance(other, InferenceService)
    assert first.spec is second.spec
    assert other.spec is not first.spec
    assert other.spec.runtime is not None
    assert other.spec.runtime.name == "other"
    assert first != second  # different names


# --- hypothesis: never anything but LoadError ---------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=12,
)

FIELDS = [
    "modelFormat",
    "modelFramework",
    "modelArchitecture",
    "quantization",
    "modelParameterSize",
    "diffusionPipeline",
    "disabled",
    "supportedModelFormats",
    "modelSizeRange",
    "acceleratorRequirements",
    "model",
    "runtime",
    "engine",
    "decoder",
    "acceleratorSelector",
]


@st.composite
def documents(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from([k.value for k in Kind] + ["Other"]))
    spec = draw(st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=5) | json_values)
    metadata = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "name": st.text(max_size=5) | json_values,
                "namespace": st.text(max_size=5) | json_values,
                "annotations": json_values,
                "deletionTimestamp": json_values,
                "generation": json_values,
            },
        )
        | json_values
    )
    return draw(
        st.fixed_dictionaries(
            {"apiVersion": st.just(GV), "kind": st.just(kind)},
            optional={"metadata": st.just(metadata), "spec": st.just(spec)},
        )
        | json_values
    )


@settings(max_examples=400)
@given(documents(), st.none() | st.text(max_size=4))
def test_loading_never_raises_anything_but_load_error(doc: Any, default_namespace: str | None) -> None:
    try:
        load_resource(doc, default_namespace=default_namespace)
    except LoadError as error:
        path = error.path
    else:
        return
    assert isinstance(path, str)


def test_inference_service_helper_roundtrip() -> None:
    assert isvc().key == (Kind.INFERENCE_SERVICE, "ns", "svc")


# --- field paths, value descriptions, keys ------------------------------------------------------------------


def test_field_paths() -> None:
    assert (
        field_path("spec", "supportedModelFormats", 0, "priority") == "spec.supportedModelFormats[0].priority"
    )
    assert field_path("items[3]", "spec.model.name") == "items[3].spec.model.name"
    assert field_path("", "spec") == "spec"
    assert field_path("items", 2, "", "items", 0) == "items[2].items[0]"
    assert field_path() == ""


VALUES: list[tuple[Any, str]] = [
    (7, "7 (int)"),
    ("yes", "'yes' (str)"),
    (3.21, "3.21 (float)"),
    (True, "True (bool)"),
    (None, "null"),
    ({"a": 1}, "an object"),
    ([1], "an array"),
    ("x" * 100, "'" + "x" * 56 + "... (str)"),
    ("4B\n", "'4B\\n' (str)"),
    (10**400, "<1329-bit integer> (int)"),
]


@pytest.mark.parametrize(("value", "text"), VALUES)
def test_values_are_described_briefly(value: Any, text: str) -> None:
    assert describe_value(value) == text


@given(json_values | st.integers() | st.just("z" * 10_000_000) | st.just(10**4000))
def test_descriptions_are_short_whatever_the_value(value: Any) -> None:
    assert len(describe_value(value)) <= 70


def test_keys_of_bodies() -> None:
    model = {"kind": "BaseModel", "metadata": {"name": "m", "namespace": "ns"}}
    assert key_of(model) == ObjectKey(Kind.BASE_MODEL, "ns", "m")
    assert key_of({"kind": "ClusterBaseModel", "metadata": {"name": "m", "namespace": "x"}}) == ObjectKey(
        Kind.CLUSTER_BASE_MODEL, None, "m"
    )
    assert key_of({"kind": "BaseModel", "metadata": {"name": "m"}}) is None
    assert key_of({"kind": "BaseModel", "metadata": {"name": "m"}}, default_namespace="d") == ObjectKey(
        Kind.BASE_MODEL, "d", "m"
    )
    for body in (
        {"kind": "Pod", "metadata": {"name": "p"}},
        {"kind": "BaseModel", "metadata": {"name": 7, "namespace": "ns"}},
        {"kind": "BaseModel", "metadata": {"name": "", "namespace": "ns"}},
        {"kind": "BaseModel", "metadata": "m"},
        {"kind": ["BaseModel"], "metadata": {"name": "m"}},
        {"metadata": {"name": "m"}},
    ):
        assert key_of(body) is None, body


@settings(max_examples=200)
@given(documents())
def test_a_loaded_resource_has_the_key_of_its_body(doc: Any) -> None:
    try:
        resource = load_resource(doc, default_namespace="dflt")
    except LoadError:
        return
    if resource is not None:
        assert key_of(doc, default_namespace="dflt") == resource.key


# --- the fields of v4 (SPEC §1) ----------------------------------------------------------------------------

RUNTIME = runtime_doc("rt", {"modelFormat": {"name": "safetensors"}})

V4_INVALID = [
    (
        _with(RUNTIME, ["metadata", "annotations"], {"ome.io/inherit-from": 5}),
        "metadata.annotations.ome.io/inherit-from",
    ),
    (_with(RUNTIME, ["metadata", "annotations"], {"other": True}), "metadata.annotations.other"),
    (
        _with(RUNTIME, ["spec", "engineConfig"], {"annotations": {"ome.io/deploymentMode": 1}}),
        "spec.engineConfig.annotations.ome.io/deploymentMode",
    ),
    (
        _with(RUNTIME, ["spec", "decoderConfig"], {"annotations": {"x": ["a"]}}),
        "spec.decoderConfig.annotations.x",
    ),
    (_with(ISVC, ["spec", "engine"], {"annotations": {"x": 1}}), "spec.engine.annotations.x"),
    (
        _with(ISVC, ["spec", "decoder"], {"annotations": {"ome.io/deploymentMode": False}}),
        "spec.decoder.annotations.ome.io/deploymentMode",
    ),
    (_with(ISVC, ["spec", "runtime"], {"name": "rt", "kind": 5}), "spec.runtime.kind"),
    (_with(ISVC, ["spec", "deploymentMode"], 3), "spec.deploymentMode"),
    (_with(MODEL, ["metadata", "annotations"], {"x": 1}), "metadata.annotations.x"),
]


@pytest.mark.parametrize(("doc", "path"), V4_INVALID)
@pytest.mark.parametrize("from_file", [True, False])
def test_values_of_the_annotation_maps_and_the_runtime_kind_must_be_strings(
    doc: dict[str, Any], path: str, from_file: bool
) -> None:
    with pytest.raises(LoadError) as caught:
        load_resource(doc, from_file=from_file)
    assert (caught.value.path, caught.value.message.split(",")[0][:16]) == (path, "must be a string")


@pytest.mark.parametrize("mode", ["MultiNode", "VirtualDeployment", "", "omenative", "bogus"])
def test_a_file_with_a_deployment_mode_outside_the_enum_is_an_error_a_cluster_object_is_not(
    mode: str,
) -> None:
    doc = _with(ISVC, ["spec", "deploymentMode"], mode)
    with pytest.raises(LoadError) as caught:
        load_resource(doc, from_file=True)
    assert caught.value.path == "spec.deploymentMode"
    assert caught.value.message == f'must be one of "OMENative", "RawDeployment", not {describe_value(mode)}'
    loaded = load_resource(doc)
    assert isinstance(loaded, InferenceService)
    assert loaded.spec.deployment_mode == mode


@pytest.mark.parametrize("mode", ["OMENative", "RawDeployment"])
def test_the_enum_values_load_from_files(mode: str) -> None:
    loaded = load_resource(_with(ISVC, ["spec", "deploymentMode"], mode), from_file=True)
    assert isinstance(loaded, InferenceService)
    assert loaded.deployment_modes.engine == mode


@pytest.mark.parametrize(
    ("runtime_ref", "from_file", "kind"),
    [
        ({"name": "rt"}, True, "ClusterServingRuntime"),  # the CRD default
        ({"name": "rt", "kind": None}, True, "ClusterServingRuntime"),  # null counts as absent
        ({"name": "rt"}, False, None),  # stored without the default: left absent
        ({"name": "rt", "kind": ""}, True, ""),
        ({"name": "rt", "kind": "ServingRuntime"}, True, "ServingRuntime"),
        (None, True, None),  # no spec.runtime: nothing to default
    ],
)
def test_an_absent_runtime_kind_from_a_file_becomes_cluster_serving_runtime(
    runtime_ref: dict[str, Any] | None, from_file: bool, kind: str | None
) -> None:
    loaded = load_resource(_with(ISVC, ["spec", "runtime"], runtime_ref), from_file=from_file)
    assert isinstance(loaded, InferenceService)
    assert loaded.runtime_kind == kind


def test_a_runtime_keeps_its_two_annotations_and_its_mode_annotations() -> None:
    doc = _with(
        RUNTIME,
        ["metadata", "annotations"],
        {"ome.io/inherit-from": "base", "ome.io/runtime-profile": "true", "team": "a"},
    )
    doc = _with(
        doc, ["spec", "engineConfig"], {"annotations": {"ome.io/deploymentMode": "RawDeployment", "x": "y"}}
    )
    doc = _with(doc, ["spec", "decoderConfig"], {"annotations": {"ome.io/deploymentMode": "bogus"}})
    loaded = load_resource(doc)
    assert isinstance(loaded, Runtime)
    assert (loaded.inherit_from, loaded.runtime_profile, loaded.parent_name) == ("base", "true", "base")
    assert (loaded.spec.engine_mode_annotation, loaded.spec.decoder_mode_annotation) == (
        "RawDeployment",
        "bogus",
    )
    profile = RuntimeProfile.of(loaded)
    assert (profile.engine_mode, profile.decoder_mode) == ("RawDeployment", None)  # "bogus" declares nothing
    empty = load_resource(_with(RUNTIME, ["metadata", "annotations"], {"ome.io/inherit-from": ""}))
    assert isinstance(empty, Runtime)
    assert (empty.inherit_from, empty.parent_name) == ("", None)
