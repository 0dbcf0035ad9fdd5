"""SPEC §7 since v5: the mode warning from the raw modes, and InferenceServices with ``spec.replicaRefs``
allowed untouched — every text character for character."""

from __future__ import annotations

from typing import Any

import pytest
from selection_builders import NS, entry, model_doc, runtime_doc

from ome_selector.api.loading import load_resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.webhook.decisions import ALLOWED, Decision, decide_inference_service

GV = "ome.io/v1beta1"
MODE = "ome.io/deploymentMode"


def warning(engine: str, decoder: str) -> str:
    return (
        f"spec.engine and spec.decoder ask for different deployment modes ({engine}, {decoder}); "
        "OME denies this: InvalidDeploymentModeCombination"
    )


def isvc_doc(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": GV,
        "kind": "InferenceService",
        "metadata": {"name": "svc", "namespace": NS},
        "spec": {"model": {"name": "m"}, "engine": {}, **spec},
    }


def modes(engine: str | None = None, decoder: str | None = None, **spec: Any) -> dict[str, Any]:
    """A spec whose engine and decoder carry these mode annotations (None: the decoder without one)."""
    parts: dict[str, Any] = {"engine": {"annotations": {MODE: engine}} if engine is not None else {}}
    parts["decoder"] = {"annotations": {MODE: decoder}} if decoder is not None else {}
    return {**parts, **spec}


def catalog_of(*docs: dict[str, Any]) -> Catalog:
    return Catalog.from_resources(r for r in map(load_resource, docs) if r is not None)


CATALOG = catalog_of(model_doc("m", size="3B"), runtime_doc("rt", entry()))


def create(doc: dict[str, Any], catalog: Catalog = CATALOG, **kwargs: Any) -> Decision:
    return decide_inference_service(catalog, doc, None, "CREATE", **kwargs)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # Before v5 each of these was silent: one side declared no valid mode.
        (modes("OMENative"), warning("OMENative", '""')),  # the decoder's raw mode is empty
        (modes(None, "OMENative", deploymentMode=None), warning('""', "OMENative")),
        (modes("Bogus", "OMENative"), warning("Bogus", "OMENative")),  # invalid, still raw
        (modes("omenative", "OMENative"), warning("omenative", "OMENative")),  # compared exactly
        (modes("OMENative", "MultiNodeX"), warning("OMENative", "MultiNodeX")),
        # A control character: quoted, escaped.
        (modes("Raw\nDeployment", "OMENative"), warning('"Raw\\nDeployment"', "OMENative")),
        (modes("OMENative", "evil\u202etxt"), warning("OMENative", '"evil\\u202etxt"')),
        # An empty annotation falls back to spec.deploymentMode.
        (modes("", "RawDeployment", deploymentMode="OMENative"), warning("OMENative", "RawDeployment")),
        # As before: both valid and different, one OMENative.
        (modes(None, "RawDeployment", deploymentMode="OMENative"), warning("OMENative", "RawDeployment")),
        # No warning: the same raw mode, or neither is OMENative.
        (modes(None, None, deploymentMode="OMENative"), None),
        (modes("OMENative", "", deploymentMode="OMENative"), None),
        (modes("Bogus", "RawDeployment"), None),
        (modes("", ""), None),
        # No decoder: nothing to combine.
        ({"engine": {"annotations": {MODE: "OMENative"}}}, None),
    ],
)
def test_the_mode_warning_reads_the_raw_modes(spec: dict[str, Any], expected: str | None) -> None:
    spec = {key: value for key, value in spec.items() if value is not None}
    decision = create(isvc_doc(**spec), report_only=True)
    assert decision.allowed
    assert decision.warnings == (() if expected is None else (expected,))


def test_a_long_raw_mode_is_cut_with_the_warning() -> None:
    decision = create(isvc_doc(**modes("OMENative", "x" * 100_000)), report_only=True)
    (text,) = decision.warnings
    assert len(text) == 256
    assert text == warning("OMENative", "x" * 300)[:255] + "…"


def test_the_raw_mode_warning_comes_with_a_denial_and_a_deferral() -> None:
    spec = modes("Bogus", "OMENative")
    denied = create(isvc_doc(**spec), catalog_of())  # model missing
    assert (denied.allowed, denied.warnings) == (False, (warning("Bogus", "OMENative"),))
    engine = {"annotations": {MODE: "Bogus"}, "runner": {"image": "x"}}
    deferred = create(isvc_doc(**{**spec, "engine": engine}), catalog_of(model_doc("m")))
    assert (deferred.allowed, deferred.warnings) == (True, (warning("Bogus", "OMENative"),))


REPLICA_REFS = [{"name": "replica-a"}, {"name": "replica-b", "weight": 2}]


@pytest.mark.parametrize(
    "spec",
    [
        {},  # would be allowed with the success warning
        {"model": {"name": "missing"}},  # would be denied: model missing
        {"runtime": {"name": "missing"}},  # would be denied: runtime missing
        modes("Bogus", "OMENative"),  # would carry the mode warning
    ],
)
def test_an_inference_service_with_replica_refs_is_allowed_untouched(spec: dict[str, Any]) -> None:
    doc = isvc_doc(**spec, replicaRefs=REPLICA_REFS)
    assert create(doc) == ALLOWED
    assert create(doc, catalog_of()) == ALLOWED
    assert create(doc, report_only=True) == ALLOWED
    old = isvc_doc(**spec)
    assert decide_inference_service(CATALOG, doc, old, "UPDATE") == ALLOWED


@pytest.mark.parametrize("value", [None, []])
def test_empty_replica_refs_are_absent(value: Any) -> None:
    decision = create(isvc_doc(replicaRefs=value))
    assert decision.warnings == ("runtime rt will be auto-selected for model m",)


def test_removing_replica_refs_is_judged() -> None:
    """The field is read (SPEC §1): an UPDATE that drops it is judged like a CREATE."""
    old = isvc_doc(model={"name": "missing"}, replicaRefs=REPLICA_REFS)
    new = isvc_doc(model={"name": "missing"})
    decision = decide_inference_service(CATALOG, new, old, "UPDATE")
    assert (decision.allowed, decision.message) == (
        False,
        f"model missing not found: no BaseModel in namespace {NS} and no ClusterBaseModel",
    )


# --- SPEC §9 v5 rows, the webhook's side ---------------------------------------------------------------


def test_a_virtual_deployment_is_checked_like_any_other() -> None:
    """Upstream's webhook still checks selection for it; so does the product (and its controller writes the
    condition, where upstream's writes none)."""
    doc = isvc_doc()
    doc["metadata"]["annotations"] = {MODE: "VirtualDeployment"}
    assert create(doc).warnings == ("runtime rt will be auto-selected for model m",)
    denied = create(doc, catalog_of())
    assert (denied.allowed, denied.message) == (
        False,
        f"model m not found: no BaseModel in namespace {NS} and no ClusterBaseModel",
    )


def test_a_pinned_model_less_inference_service_naming_a_disabled_runtime_is_denied() -> None:
    """Upstream's webhook checks nothing for a model-less InferenceService pinned with autoSync: false."""
    doc = isvc_doc(runtime={"name": "off", "autoSync": False})
    del doc["spec"]["model"]
    catalog = catalog_of(runtime_doc("off", entry(), disabled=True))
    decision = create(doc, catalog)
    assert (decision.allowed, decision.message) == (False, "cluster-scoped runtime off is disabled")
    missing = create(doc, catalog_of())  # as OME v1.3: a runtime created later serves it
    assert (missing.allowed, missing.warnings) == (True, ())
