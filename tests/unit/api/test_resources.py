"""The resource models: kinds, keys and the InferenceService projections the operator and webhook rely on."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from selection_builders import isvc

from ome_selector.api.resources import Kind, ObjectKey


@pytest.mark.parametrize(
    ("kind", "plural", "namespaced"),
    [
        (Kind.BASE_MODEL, "basemodels", True),
        (Kind.CLUSTER_BASE_MODEL, "clusterbasemodels", False),
        (Kind.SERVING_RUNTIME, "servingruntimes", True),
        (Kind.CLUSTER_SERVING_RUNTIME, "clusterservingruntimes", False),
        (Kind.INFERENCE_SERVICE, "inferenceservices", True),
    ],
    ids=str,
)
def test_kind_properties(kind: Kind, plural: str, namespaced: bool) -> None:
    assert kind.plural == plural
    assert kind.namespaced is namespaced


def test_object_key_text() -> None:
    assert str(ObjectKey(Kind.SERVING_RUNTIME, "ns", "rt")) == "ServingRuntime ns/rt"
    assert str(ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "rt")) == "ClusterServingRuntime rt"


def test_runtime_name_and_auto_sync() -> None:
    assert isvc().runtime_name is None
    assert isvc(runtime_name="").runtime_name is None
    assert isvc(runtime_name="rt").runtime_name == "rt"
    assert isvc().auto_sync is True
    assert isvc(runtime_name="rt").auto_sync is True
    assert isvc(runtime_name="rt", auto_sync=True).auto_sync is True
    assert isvc(runtime_name="rt", auto_sync=False).auto_sync is False
    assert isvc(model_name=None).model_name is None


def test_accelerator_classes_from_the_four_sources_without_repeats() -> None:
    service = isvc(
        annotations={"ome.io/accelerator-class": "h100"},
        selector_class="a100",
        engine={"acceleratorOverride": {"acceleratorClass": "h100"}},
        decoder={"acceleratorOverride": {"acceleratorClass": "l40s"}},
    )
    assert service.accelerator_classes == ("h100", "a100", "l40s")


def test_empty_accelerator_classes_are_not_asked_for() -> None:
    service = isvc(
        annotations={"ome.io/accelerator-class": ""},
        selector_class="",
        engine={"acceleratorOverride": {}},
        decoder={"acceleratorOverride": {"acceleratorClass": ""}},
    )
    assert service.accelerator_classes == ()


@pytest.mark.parametrize(
    ("engine", "defers"),
    [
        (None, False),
        ({}, False),
        ({"runner": {"image": "img"}}, True),
        ({"runner": {"image": ""}}, False),
        ({"runner": {}}, False),
        ({"leader": {"runner": {"image": "l"}}}, False),
        ({"worker": {"runner": {"image": "w"}}}, False),
        ({"leader": {"runner": {"image": "l"}}, "worker": {"runner": {"image": "w"}}}, True),
        ({"leader": {"runner": {"image": "l"}}, "worker": {"runner": {}}}, False),
    ],
    ids=[
        "no engine",
        "empty engine",
        "engine image",
        "empty engine image",
        "runner without image",
        "leader only",
        "worker only",
        "leader and worker",
        "worker without image",
    ],
)
def test_defers_auto_selection(engine: dict[str, Any] | None, defers: bool) -> None:
    service = isvc(engine=engine)
    assert service.defers_auto_selection is defers
    assert service.has_engine is (engine is not None)


def test_matcher_inputs_change_with_every_matcher_field_and_only_those() -> None:
    base = isvc(runtime_name="rt", engine={"runner": {"image": "a"}})
    same = isvc(runtime_name="rt", engine={"runner": {"image": "a", "resources": {"x": 1}}})
    assert base.matcher_inputs == same.matcher_inputs
    assert hash(base.matcher_inputs) == hash(same.matcher_inputs)
    variants = [
        isvc(model_name="other", runtime_name="rt", engine={"runner": {"image": "a"}}),
        isvc(runtime_name="rt2", engine={"runner": {"image": "a"}}),
        isvc(runtime_name="rt", auto_sync=False, engine={"runner": {"image": "a"}}),
        isvc(runtime_name="rt"),
        isvc(runtime_name="rt", engine={"runner": {"image": "b"}}),
        isvc(runtime_name="rt", engine={"runner": {"image": "a"}, "leader": {"runner": {"image": "l"}}}),
        isvc(runtime_name="rt", engine={"runner": {"image": "a"}, "worker": {"runner": {"image": "w"}}}),
        isvc(runtime_name="rt", engine={"runner": {"image": "a"}}, selector_class="a100"),
        isvc(
            runtime_name="rt",
            engine={"runner": {"image": "a"}},
            annotations={"ome.io/accelerator-class": "h100"},
        ),
        isvc(
            runtime_name="rt",
            engine={"runner": {"image": "a"}},
            decoder={"acceleratorOverride": {"acceleratorClass": "x"}},
        ),
        isvc(runtime_name="rt", engine={"runner": {"image": "a"}}, deletion_timestamp="2024-01-01T00:00:00Z"),
        # v4 (SPEC §7): the runtime kind, the deployment mode, the mode annotations, the decoder's presence
        isvc(runtime_name="rt", runtime_kind="ServingRuntime", engine={"runner": {"image": "a"}}),
        isvc(runtime_name="rt", deployment_mode="bogus", engine={"runner": {"image": "a"}}),
        isvc(
            runtime_name="rt",
            engine={"runner": {"image": "a"}, "annotations": {"ome.io/deploymentMode": "x"}},
        ),
        isvc(runtime_name="rt", engine={"runner": {"image": "a"}}, decoder={}),
        isvc(
            runtime_name="rt",
            engine={"runner": {"image": "a"}},
            decoder={"annotations": {"ome.io/deploymentMode": "OMENative"}},
        ),
    ]
    for variant in variants:
        assert variant.matcher_inputs != base.matcher_inputs, variant


def test_other_annotations_do_not_change_matcher_inputs() -> None:
    assert isvc(annotations={"team": "a"}).matcher_inputs == isvc().matcher_inputs


def test_an_inference_service_is_an_immutable_value() -> None:
    service = isvc(runtime_name="rt", annotations={"ome.io/accelerator-class": "h100"})
    twin = isvc(runtime_name="rt", annotations={"ome.io/accelerator-class": "h100"})
    assert service == twin
    assert hash(service) == hash(twin)
    assert service != isvc(runtime_name="rt")
    assert service != isvc(runtime_name="rt", annotations={"ome.io/accelerator-class": "h100"}, name="b")
    assert service.kind is Kind.INFERENCE_SERVICE
    with pytest.raises(AttributeError):
        service.name = "other"
    with pytest.raises(AttributeError):
        del service.namespace
    for copied in (copy.copy(service), copy.deepcopy(service), pickle.loads(pickle.dumps(service))):
        assert copied == service
        assert copied.accelerator_classes == ("h100",)
    assert repr(service).startswith("InferenceService(name='svc', namespace='ns', spec=InferenceServiceSpec(")
    assert not hasattr(service, "__dict__")  # slotted: thousands are kept
