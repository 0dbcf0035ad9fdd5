"""The admission handlers without a cluster or an operator: registrations, the catalog provider, failures."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf
import pytest

from harness import objects
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Kind, ObjectKey, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.webhook.admission import AdmissionHandlers, recording_failures
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.confirming import _Differences, _differences, _held_as_listed
from ome_selector.webhook.registration import HANDLER_IDS

INHERIT = "ome.io/inherit-from"
PROFILE = "ome.io/runtime-profile"

SERVICE: kopf.RawBody = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "svc", "namespace": "ns"},
    "spec": {"model": {"name": "m"}, "engine": {}},
}


def _handlers(catalog: Any = None, **config: Any) -> AdmissionHandlers:
    return AdmissionHandlers(
        WebhookConfig(**config), catalog=lambda: catalog, reader=None, review_metrics=None
    )


def _validate(handlers: AdmissionHandlers, body: kopf.RawBody) -> list[str]:
    warnings: list[str] = []
    asyncio.run(
        handlers._validate_inference_service(body=kopf.Body(body), warnings=warnings, operation="CREATE")
    )
    return warnings


def test_one_validating_handler_per_kind_on_the_given_registry() -> None:
    registry = kopf.OperatorRegistry()
    _handlers().register(registry)
    handlers = registry._webhooks.get_all_handlers()
    assert sorted(h.id for h in handlers) == sorted(HANDLER_IDS.values())
    assert all(h.subresource is None for h in handlers)
    # SPEC §12: the models' and runtimes' webhooks see DELETE too (the impact of a deletion is warned about).
    operations = {h.id: h.operations for h in handlers}
    assert operations == {
        handler_id: ["CREATE", "UPDATE"] if kind is Kind.INFERENCE_SERVICE else ["CREATE", "UPDATE", "DELETE"]
        for kind, handler_id in HANDLER_IDS.items()
    }
    assert kopf.get_default_registry()._webhooks.get_all_handlers() == []


def test_ready_once_the_provider_has_a_catalog() -> None:
    catalog: list[Catalog | None] = [None]
    handlers = AdmissionHandlers(
        WebhookConfig(), catalog=lambda: catalog[0], reader=None, review_metrics=None
    )
    assert not handlers.ready
    catalog[0] = Catalog()
    assert handlers.ready


def test_a_denial_from_the_live_catalog_is_confirmed_by_a_direct_read_first() -> None:
    # The model is missing from the live catalog: that rests on something absent, so the handler wants a
    # direct read before denying, and without the server's reader that is an unexpected failure.
    handlers = _handlers(Catalog())
    with recording_failures() as failures:
        _validate(handlers, SERVICE)
    assert [str(f) for f in failures] == ["no API client for the confirming read"]
    assert handlers.confirmations == 0


def test_an_unexpected_failure_is_recorded_not_a_denial() -> None:
    class Broken:
        def resolve_model(self, *_: Any) -> Any:
            raise KeyError("index corrupted")

    with recording_failures() as failures:
        _validate(_handlers(Broken()), SERVICE)
    assert [repr(f) for f in failures] == ["KeyError('index corrupted')"]


def test_before_indexing_the_handler_fails_instead_of_deciding() -> None:
    with recording_failures() as failures:
        _validate(_handlers(None), SERVICE)
    assert [str(f) for f in failures] == ["the cluster is not indexed yet"]


def test_outside_a_recorded_request_a_failure_propagates() -> None:
    with pytest.raises(RuntimeError, match="not indexed yet"):
        _validate(_handlers(None), SERVICE)


def test_noop_mode_never_looks() -> None:
    assert _validate(_handlers(None, noop=True), SERVICE) == []


def _listed(name: str, version: str, namespace: str | None = "ns") -> dict[str, Any]:
    """A runtime as a metadata-only listing names it."""
    kind = "ServingRuntime" if namespace else "ClusterServingRuntime"
    metadata = {"name": name, "resourceVersion": version} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": metadata}


def _stored(name: str, version: str, namespace: str | None = "ns") -> Resource:
    body = objects.runtime(name, namespace=namespace)
    body["metadata"]["resourceVersion"] = version
    resource = load_resource(body)
    assert resource is not None
    return resource


def test_a_listed_runtime_unchanged_since_the_watch_saw_it_is_not_read_again() -> None:
    live = Catalog.from_resources(
        [
            _stored("same", "7"),
            _stored("changed", "7"),
            _stored("deleted", "7"),
            _stored("cluster", "3", None),
        ]
    )
    listed = [
        _listed("same", "7"),
        _listed("changed", "8"),
        _listed("new", "9"),
        _listed("cluster", "3", None),
        _listed("unreadable", "5"),
        _listed("unreadable-again", "6"),
    ]
    unreadable = {_key("unreadable"): "5", _key("unreadable-again"): "4"}
    found = _differences(live, "ns", listed, unreadable)
    assert found.stale == [_key("changed"), _key("new"), _key("unreadable-again")]
    assert found.gone == [_key("deleted")]
    # Everything held as listed: nothing to read, and nothing gone (the scan is skipped).
    unchanged = [
        _listed("same", "7"),
        _listed("changed", "7"),
        _listed("deleted", "7"),
        _listed("cluster", "3", None),
    ]
    assert _differences(live, "ns", unchanged, {}) == _Differences([], [])
    # Another namespace sees only the cluster runtime.
    assert _differences(live, "elsewhere", [_listed("cluster", "3", None)], {}) == _Differences([], [])
    assert _differences(live, "elsewhere", [], {}) == _Differences(
        [], [ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "cluster")]
    )


def _key(name: str) -> ObjectKey:
    return ObjectKey(Kind.SERVING_RUNTIME, "ns", name)


def _versioned(
    version: str, uid: str | None, generation: int | None, annotations: dict[str, str] | None = None
) -> Resource:
    body = objects.runtime("rt", namespace="ns")
    body["metadata"] |= {"resourceVersion": version, "uid": uid, "generation": generation}
    if annotations is not None:
        body["metadata"]["annotations"] = annotations
    resource = load_resource(body)
    assert resource is not None
    return resource


@pytest.mark.parametrize(
    ("stored", "listed", "held"),
    [
        pytest.param(("7", "u", 2), {"resourceVersion": "7"}, True, id="same resourceVersion"),
        pytest.param(("7", "u", 2), {"resourceVersion": "8", "uid": "u", "generation": 2}, True, id="labels"),
        pytest.param(("7", "u", 2), {"resourceVersion": "8", "uid": "u", "generation": 3}, False, id="spec"),
        pytest.param(("7", "u", 2), {"resourceVersion": "8", "uid": "v", "generation": 2}, False, id="uid"),
        pytest.param(("7", "u", 2), {"resourceVersion": "8", "uid": "u"}, False, id="no generation listed"),
        pytest.param(("7", "u", None), {"resourceVersion": "8", "uid": "u"}, False, id="none either side"),
        pytest.param(("7", None, None), {"resourceVersion": "8"}, False, id="nothing but the version"),
        # SPEC §5 (v4): a runtime's read annotations count although metadata.generation does not move, so
        # at the same uid and generation a changed ome.io/inherit-from (or ome.io/runtime-profile) is not
        # held; other annotations, like labels, do not count.
        pytest.param(
            ("7", "u", 2, {INHERIT: "base"}),
            {"resourceVersion": "8", "uid": "u", "generation": 2, "annotations": {INHERIT: "other"}},
            False,
            id="inherit-from changed",
        ),
        pytest.param(
            ("7", "u", 2, {INHERIT: "base"}),
            {"resourceVersion": "8", "uid": "u", "generation": 2},
            False,
            id="inherit-from removed",
        ),
        pytest.param(
            ("7", "u", 2),
            {"resourceVersion": "8", "uid": "u", "generation": 2, "annotations": {INHERIT: "base"}},
            False,
            id="inherit-from added",
        ),
        pytest.param(
            ("7", "u", 2, {PROFILE: "true"}),
            {"resourceVersion": "8", "uid": "u", "generation": 2, "annotations": {PROFILE: "false"}},
            False,
            id="runtime-profile changed",
        ),
        pytest.param(
            ("7", "u", 2, {INHERIT: "base", PROFILE: "true"}),
            {
                "resourceVersion": "8",
                "uid": "u",
                "generation": 2,
                "annotations": {INHERIT: "base", PROFILE: "true", "team": "serving"},
            },
            True,
            id="another annotation changed",
        ),
    ],
)
def test_a_listed_runtime_is_held_at_its_version_or_at_its_uid_and_generation(
    stored: tuple[Any, ...], listed: dict[str, Any], held: bool
) -> None:
    assert _held_as_listed(_versioned(*stored), listed) is held


def test_a_model_is_held_only_at_its_resource_version() -> None:
    body = objects.model("m")
    body["metadata"] |= {"resourceVersion": "7", "uid": "u", "generation": 2}
    model = load_resource(body)
    assert model is not None
    assert not _held_as_listed(model, {"resourceVersion": "8", "uid": "u", "generation": 2})
