"""The controller's catalog without a cluster (report-only, no writer): what a listing or a watch event
costs and changes — reconciling a listing never undoes the watch, unchanged models and runtimes are not parsed
again, objects too large to read are absent."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import pytest

from harness import objects
from ome_selector.api import loading as loading_module
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.kube.objects import Page
from ome_selector.operator import controller as controller_module
from ome_selector.operator.controller import Controller
from ome_selector.operator.metrics import Metrics

T = TypeVar("T")
MODEL = ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "m")
RUNTIME = ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "rt")


def _listed(
    body: dict[str, Any], *, uid: str = "u1", generation: int = 1, version: str = "1"
) -> dict[str, Any]:
    """``body`` as the apiserver returns it: with uid, generation and resourceVersion."""
    return body | {
        "metadata": body["metadata"] | {"uid": uid, "generation": generation, "resourceVersion": version}
    }


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the objects the controller parses (a step counter)."""
    seen: list[str] = []
    original = load_resource

    def counting(body: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(body["metadata"]["name"])
        return original(body, *args, **kwargs)

    monkeypatch.setattr(loading_module, "load_resource", counting)  # what load_stored calls
    return seen


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def test_a_model_or_runtime_of_an_unchanged_generation_is_not_parsed_again(parses: list[str]) -> None:
    controller = Controller(None, Metrics(), report_only=True)
    model = _listed(objects.model("m", size="7B"))
    big = objects.runtime("rt")
    big["spec"]["supportedModelFormats"] *= 900
    runtime = _listed(big)
    for body in (model, runtime):
        controller.mirror.on_watch_event(body, deleted=False)
    assert parses == ["m", "rt"]
    # A label change, a relist, a status write: same uid and generation, a new resourceVersion.
    for body in (model, runtime):
        relabelled = _listed(body | {"metadata": body["metadata"] | {"labels": {"a": "b"}}}, version="2")
        controller.mirror.on_watch_event(relabelled, deleted=False)
    assert parses == ["m", "rt"]
    # A spec change moves the generation; a re-created object has another uid.
    controller.mirror.on_watch_event(
        _listed(objects.model("m", size="8B"), generation=2, version="3"), deleted=False
    )
    controller.mirror.on_watch_event(_listed(objects.runtime("rt"), uid="u2", version="4"), deleted=False)
    assert parses == ["m", "rt", "m", "rt"]
    assert controller.catalog.get(MODEL).spec.model_parameter_size == "8B"  # type: ignore[union-attr]


def test_inference_services_are_read_at_every_new_version(parses: list[str]) -> None:
    controller = Controller(None, Metrics(), report_only=True)
    isvc = _listed(objects.inference_service("svc", namespace="ns", model_name="m"))
    controller.mirror.on_watch_event(isvc, deleted=False)
    controller.mirror.on_watch_event(
        _listed(isvc | {"metadata": isvc["metadata"] | {"annotations": {"x": "y"}}}, version="2"),
        deleted=False,
    )
    assert parses == ["svc", "svc"]  # its annotations are inputs, and it is small


def test_the_version_already_read_is_not_read_again(parses: list[str]) -> None:
    """A resync's listing, or Kopf's after the startup listing, hands over mostly what is read already."""
    controller = Controller(None, Metrics(), report_only=True)
    bodies = [
        _listed(objects.inference_service("svc", namespace="ns", model_name="m"), version="5"),
        _listed(objects.model("m", size="7B"), version="6"),
        _listed(objects.runtime("rt"), version="7"),
    ]
    for body in bodies:
        controller.mirror.on_watch_event(body, deleted=False)
    _run(controller.mirror.reconcile(_pages(bodies)))
    for body in bodies:
        controller.mirror.on_watch_event(body, deleted=False)
    assert parses == ["svc", "m", "rt"]
    # Without a resourceVersion (a body not from the apiserver) nothing is taken for read.
    bare = objects.inference_service("svc", namespace="ns", model_name="m")
    controller.mirror.on_watch_event(bare, deleted=False)
    controller.mirror.on_watch_event(bare, deleted=False)
    assert parses == ["svc", "m", "rt", "svc", "svc"]


def test_an_object_too_large_to_read_is_absent_and_said_once(
    parses: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    controller = Controller(None, Metrics(), report_only=True)
    runtime = _listed(objects.runtime("rt"))
    controller.mirror.on_watch_event(runtime, deleted=False)
    assert RUNTIME in controller.catalog
    huge = objects.runtime("rt")
    huge["spec"]["supportedModelFormats"] *= 30_000
    with caplog.at_level(logging.WARNING):
        for version in ("2", "3"):
            controller.mirror.on_watch_event(_listed(huge, generation=2, version=version), deleted=False)
    assert RUNTIME not in controller.catalog
    assert parses == ["rt"]  # the 30,000 entries were never parsed
    assert [r.getMessage() for r in caplog.records] == [
        "ignoring ClusterServingRuntime rt: spec.supportedModelFormats has 30000 entries, more than the 1000 "
        "ome-selector reads"
    ]


async def _pages(
    *pages: list[dict[str, Any]],
    between: Callable[[int], None] | None = None,
    version: str | None = None,
    kind: Kind = Kind.CLUSTER_BASE_MODEL,
) -> AsyncIterator[Page]:
    """A listing of ``kind`` read in ``pages``, at resourceVersion ``version`` (None: unknown, as where the
    apiserver's do not compare); ``between(n)`` runs after page ``n`` was consumed (a watch event then)."""
    for number, page in enumerate(pages):
        yield Page(kind, version, page)
        if between is not None:
            between(number)


# How the same listing of "m" and "old" may come: in one page, one object a page, with empty pages around.
PAGINGS = [
    pytest.param(lambda m, old: [[m, old]], id="one page"),
    pytest.param(lambda m, old: [[m], [old]], id="a page each"),
    pytest.param(lambda m, old: [[], [old], [], [m], []], id="empty pages around"),
]


@pytest.mark.parametrize("paging", PAGINGS)
def test_a_listing_never_undoes_what_the_watch_delivered_while_it_was_in_flight(
    paging: Callable[..., list[list[dict[str, Any]]]],
) -> None:
    m, old = _listed(objects.model("m")), _listed(objects.model("old"))

    async def scenario() -> Controller:
        controller = Controller(None, Metrics(), report_only=True)
        controller.mirror.begin_listing()
        await controller.mirror.reconcile(_pages(*paging(m, old)))
        controller.mark_ready()
        # A listing is requested; meanwhile the watch adds "new", deletes "old" and changes "m".
        controller.mirror.begin_listing()
        controller.mirror.on_watch_event(_listed(objects.model("new"), uid="n"), deleted=False)
        controller.mirror.on_watch_event(old, deleted=True)
        controller.mirror.on_watch_event(
            _listed(objects.model("m", size="8B"), generation=2, version="2"), deleted=False
        )
        # The listing (older than all of that) still has "old" and the old "m", and not "new".
        await controller.mirror.reconcile(_pages(*paging(m, old)))
        return controller

    controller = _run(scenario())
    names = sorted(key.name for key in controller.catalog.keys(Kind.CLUSTER_BASE_MODEL))
    assert names == ["m", "new"]
    assert controller.catalog.get(MODEL).spec.model_parameter_size == "8B"  # type: ignore[union-attr]


def test_what_the_watch_delivers_between_two_pages_is_newer_than_the_later_pages() -> None:
    m, old = _listed(objects.model("m")), _listed(objects.model("old"))

    def watch(page: int) -> None:
        if page == 0:  # after the first page: "old" is deleted, "m" changed, both listed on later pages
            controller.mirror.on_watch_event(old, deleted=True)
            controller.mirror.on_watch_event(
                _listed(objects.model("m", size="8B"), generation=2, version="2"), deleted=False
            )

    async def scenario() -> None:
        controller.mirror.begin_listing()
        await controller.mirror.reconcile(_pages([], [m], [old], between=watch))

    controller = Controller(None, Metrics(), report_only=True)
    _run(scenario())
    assert controller.catalog.keys(Kind.CLUSTER_BASE_MODEL) == [MODEL]
    assert controller.catalog.get(MODEL).spec.model_parameter_size == "8B"  # type: ignore[union-attr]


@pytest.mark.parametrize("paging", PAGINGS)
def test_a_listing_forgets_what_vanished_and_queues_its_dependants(
    paging: Callable[..., list[list[dict[str, Any]]]],
) -> None:
    isvc = _listed(objects.inference_service("svc", namespace="ns", model_name="m"))
    m = _listed(objects.model("m"))

    async def scenario() -> tuple[Controller, int]:
        controller = Controller(None, Metrics(), report_only=True)
        controller.mirror.begin_listing()
        await controller.mirror.reconcile(_pages(*paging(m, isvc)))
        controller.mark_ready()
        controller.mirror.begin_listing()
        await controller.mirror.reconcile(_pages([], [isvc], []))  # the model vanished during a watch gap
        return controller, controller.queue.depth

    controller, queued = _run(scenario())
    assert MODEL not in controller.catalog
    assert queued == 1  # the InferenceService that referenced it


def test_a_listing_that_fails_part_way_stores_what_it_read_and_forgets_nothing() -> None:
    m, old, new = (_listed(objects.model(name), uid=name) for name in ("m", "old", "new"))

    async def failing() -> AsyncIterator[Page]:
        changed = _listed(m | {"spec": {"modelParameterSize": "8B"}}, uid="m", generation=2, version="2")
        yield Page(Kind.CLUSTER_BASE_MODEL, None, [changed, new])
        raise ConnectionError("the apiserver went away")

    async def scenario() -> Controller:
        controller = Controller(None, Metrics(), report_only=True)
        controller.mirror.begin_listing()
        await controller.mirror.reconcile(_pages([m, old]))
        controller.mirror.begin_listing()
        with pytest.raises(ConnectionError):
            await controller.mirror.reconcile(failing())
        # No listing is in flight any more: the watch's events are not remembered against one.
        controller.mirror.on_watch_event(_listed(objects.model("later"), uid="later"), deleted=False)
        assert controller.mirror._touched is None
        return controller

    controller = _run(scenario())
    names = sorted(key.name for key in controller.catalog.keys(Kind.CLUSTER_BASE_MODEL))
    assert names == ["later", "m", "new", "old"]  # "old" was not on the page read: still there
    assert controller.catalog.get(MODEL).spec.model_parameter_size == "8B"  # type: ignore[union-attr]


# --- what is kept per InferenceService ----------------------------------------------------------------------

READY = {
    "type": "RuntimeReady",
    "status": "True",
    "reason": "RuntimeSelected",
    "message": "Selected ClusterServingRuntime rt (score 12)",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


@pytest.mark.parametrize(
    "conditions",
    [
        pytest.param(None, id="none"),
        pytest.param([], id="empty"),
        pytest.param([READY], id="ours"),
        pytest.param(
            [{"type": "Ready", "status": "False", "observedGeneration": 3}, READY], id="another first"
        ),
        pytest.param([READY | {"flag": True, "ratio": 0.5, "empty": None}], id="every scalar"),
        pytest.param([READY | {"details": {"a": [1]}}], id="a nested value"),
        pytest.param([READY, "not a condition", 7, None, ["x"]], id="malformed entries"),
        pytest.param("a string", id="not a list"),
    ],
)
def test_the_stored_conditions_are_the_ones_read(conditions: Any) -> None:
    body = json.loads(json.dumps(conditions))  # as parsed from the wire
    stored = controller_module._Stored("7", body)
    assert stored.resource_version == "7"
    assert stored.conditions == conditions
    assert stored.conditions == conditions  # read as often as a write needs
    if isinstance(body, list):
        kept = stored.conditions
        assert isinstance(kept, list)
        # Flat conditions are kept in a form of their own: a write's list never aliases the body's dicts.
        flat = [i for i, c in enumerate(body) if isinstance(c, dict) and "details" not in c]
        assert all(kept[i] is not body[i] for i in flat)


def test_inference_services_share_the_strings_of_their_conditions() -> None:
    first, second = (controller_module._Stored(v, json.loads(json.dumps([READY]))) for v in ("1", "2"))
    (a,), (b,) = first.conditions or [], second.conditions or []
    assert all(a[key] is b[key] for key in READY)
    assert not hasattr(first, "__dict__")  # slotted: one is kept per InferenceService


def test_the_controller_keeps_the_version_and_conditions_of_each_inference_service() -> None:
    controller = Controller(None, Metrics(), report_only=True)
    body = _listed(objects.inference_service("svc", namespace="ns", model_name="m"), version="9")
    body["status"] = {"conditions": [READY]}
    controller.mirror.on_watch_event(json.loads(json.dumps(body)), deleted=False)
    key = ObjectKey(Kind.INFERENCE_SERVICE, "ns", "svc")
    stored = controller._stored[key]
    assert (stored.resource_version, stored.conditions) == ("9", [READY])
    controller.mirror.on_watch_event(body, deleted=True)
    assert key not in controller._stored


def test_a_runtime_annotation_change_counts_although_the_generation_stays(parses: list[str]) -> None:
    # SPEC §5 v4: ome.io/inherit-from and ome.io/runtime-profile are read; metadata.generation does not move.
    controller = Controller(None, Metrics(), report_only=True)
    runtime = _listed(objects.runtime("rt"))
    controller.mirror.on_watch_event(runtime, deleted=False)
    for number, read in enumerate(
        [{"team": "a"}, {"team": "a", "ome.io/inherit-from": "base"}, {"ome.io/runtime-profile": "true"}], 2
    ):
        changed = _listed(
            runtime | {"metadata": runtime["metadata"] | {"annotations": read}}, version=str(number)
        )
        controller.mirror.on_watch_event(changed, deleted=False)
    assert parses == ["rt", "rt", "rt"]  # the unread annotation changed nothing, each read one did
    stored = controller.catalog.get(RUNTIME)
    assert stored is not None
    assert (stored.inherit_from, stored.runtime_profile) == (None, "true")  # type: ignore[union-attr]


# --- the memory only moves forward (SPEC §5 "Level-triggered resync") ----------------------------------


def test_a_late_deletion_of_a_names_old_object_leaves_the_new_one() -> None:
    """Kopf hands over each object's events in order, not two objects': the deletion of the old object of a
    reused name may come after the creation of the new one."""
    controller = Controller(None, Metrics(), report_only=True)
    controller.mirror.on_watch_event(
        _listed(objects.model("m", size="7B"), uid="old", version="5"), deleted=False
    )
    controller.mirror.on_watch_event(
        _listed(objects.model("m", size="8B"), uid="new", version="7"), deleted=False
    )
    controller.mirror.on_watch_event(
        _listed(objects.model("m", size="7B"), uid="old", version="6"), deleted=True
    )
    assert controller.catalog.get(MODEL).spec.model_parameter_size == "8B"  # type: ignore[union-attr]


def test_a_late_event_of_a_deleted_object_does_not_bring_it_back() -> None:
    controller = Controller(None, Metrics(), report_only=True)
    controller.mirror.on_watch_event(_listed(objects.model("m"), version="5"), deleted=True)
    controller.mirror.on_watch_event(_listed(objects.model("m"), version="4"), deleted=False)
    assert MODEL not in controller.catalog
    # The name created again: a later version.
    controller.mirror.on_watch_event(_listed(objects.model("m"), uid="u2", version="8"), deleted=False)
    assert MODEL in controller.catalog


@pytest.mark.parametrize("when", ["during the listing", "after the listing"])
def test_an_event_older_than_a_listing_does_not_keep_what_the_listing_no_longer_holds(when: str) -> None:
    """An event that waited in Kopf's queue through a watch gap (the operator paused, the machine loaded)
    may be handed over while the resync after the gap lists, or after it: the model it shows was deleted
    before the listing, which does not hold it."""
    gone = _listed(objects.model("gone"), uid="g", version="5")
    kept = _listed(objects.model("m"), version="3")

    async def scenario() -> Controller:
        controller = Controller(None, Metrics(), report_only=True)
        controller.mirror.begin_listing()
        await controller.mirror.reconcile(_pages([kept, gone], version="6"))
        controller.mark_ready()
        controller.mirror.begin_listing()
        if when == "during the listing":
            controller.mirror.on_watch_event(gone, deleted=False)
        await controller.mirror.reconcile(_pages([kept], version="10"))  # "gone" was deleted at 7
        if when == "after the listing":
            controller.mirror.on_watch_event(gone, deleted=False)
        return controller

    controller = _run(scenario())
    assert controller.catalog.keys(Kind.CLUSTER_BASE_MODEL) == [MODEL]


def test_what_the_watch_delivers_after_the_listings_version_outlives_the_listing() -> None:
    m, old = _listed(objects.model("m"), version="3"), _listed(objects.model("old"), version="4")

    async def scenario() -> Controller:
        controller = Controller(None, Metrics(), report_only=True)
        controller.mirror.begin_listing()
        await controller.mirror.reconcile(_pages([m, old], version="5"))
        controller.mark_ready()
        controller.mirror.begin_listing()
        # The listing is read at 10; the watch delivers what happened at 11 to 13 before it is reconciled.
        controller.mirror.on_watch_event(_listed(objects.model("new"), uid="n", version="11"), deleted=False)
        controller.mirror.on_watch_event(_listed(objects.model("old"), version="12"), deleted=True)
        changed = _listed(objects.model("m", size="8B"), generation=2, version="13")
        controller.mirror.on_watch_event(changed, deleted=False)
        await controller.mirror.reconcile(_pages([m], [old], version="10"))
        return controller

    controller = _run(scenario())
    names = sorted(key.name for key in controller.catalog.keys(Kind.CLUSTER_BASE_MODEL))
    assert names == ["m", "new"]
    assert controller.catalog.get(MODEL).spec.model_parameter_size == "8B"  # type: ignore[union-attr]


def test_where_resource_versions_do_not_compare_the_watch_is_trusted_as_before() -> None:
    """An apiserver whose resourceVersions are not KEP-5504 numbers: no event is taken for outdated."""
    controller = Controller(None, Metrics(), report_only=True)
    controller.mirror.on_watch_event(
        _listed(objects.model("m", size="8B"), uid="new", version="b7"), deleted=False
    )
    controller.mirror.on_watch_event(_listed(objects.model("m"), uid="old", version="a6"), deleted=True)
    assert MODEL not in controller.catalog
    controller.mirror.on_watch_event(_listed(objects.model("m", size="7B"), version="a5"), deleted=False)
    assert controller.catalog.get(MODEL).spec.model_parameter_size == "7B"  # type: ignore[union-attr]
