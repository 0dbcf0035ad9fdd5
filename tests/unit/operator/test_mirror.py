"""The cluster mirror's own contract (SPEC §5 "Level-triggered resync"): what it takes, what it drops as
outdated, and what it tells the rest through its callbacks. The controller's use of it is in
test_controller.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness import objects
from ome_selector.api.resources import Kind, ObjectKey, Resource
from ome_selector.kube.objects import Page
from ome_selector.operator.mirror import ClusterMirror

MODEL = ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "m")
OTHER = ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "other")
ISVC = ObjectKey(Kind.INFERENCE_SERVICE, "ns", "svc")


def _at(body: dict[str, Any], version: int, *, uid: str = "u1", generation: int = 1) -> dict[str, Any]:
    """``body`` as the apiserver returns it, at resourceVersion ``version``."""
    metadata = body["metadata"] | {"uid": uid, "generation": generation, "resourceVersion": str(version)}
    return body | {"metadata": metadata}


def _model(version: int, *, size: str = "7B", uid: str = "u1", generation: int = 1) -> dict[str, Any]:
    return _at(objects.model("m", size=size), version, uid=uid, generation=generation)


def _other(version: int) -> dict[str, Any]:
    return _at(objects.model("other"), version)


@dataclass
class _Heard:
    """What the mirror said through its callbacks."""

    changes: list[tuple[ObjectKey, bool, bool]] = field(default_factory=list)  # key, before, after present
    statuses: list[tuple[ObjectKey, str]] = field(default_factory=list)  # key, resourceVersion

    def on_change(self, key: ObjectKey, previous: Resource | None, current: Resource | None) -> None:
        self.changes.append((key, previous is not None, current is not None))

    def on_status(self, key: ObjectKey, body: Any) -> None:
        self.statuses.append((key, body["metadata"]["resourceVersion"]))


def _mirror() -> tuple[ClusterMirror, _Heard]:
    heard = _Heard()
    return ClusterMirror(on_status=heard.on_status, on_change=heard.on_change), heard


async def _pages(version: int, *bodies: dict[str, Any]) -> AsyncIterator[Page]:
    yield Page(Kind.CLUSTER_BASE_MODEL, str(version), list(bodies))


def _list(mirror: ClusterMirror, version: int, *bodies: dict[str, Any]) -> None:
    mirror.begin_listing()
    asyncio.run(mirror.reconcile(_pages(version, *bodies)))


def _size(mirror: ClusterMirror) -> str | None:
    held = mirror.catalog.get(MODEL)
    return None if held is None else held.spec.model_parameter_size  # type: ignore[union-attr]


# (what the memory holds first: ("event", body, deleted) or ("list", version, bodies)), then the event under
# test, whether it is taken, and the model's size the catalog then holds (None: absent).
STEPS = [
    pytest.param([], (_model(5), False), True, "7B", id="a first event is taken"),
    pytest.param(
        [("event", _model(5, size="8B"), False)],
        (_model(4), False),
        False,
        "8B",
        id="older than held: dropped",
    ),
    pytest.param(
        [("event", _model(5), False)],
        (_model(6, size="8B", generation=2), False),
        True,
        "8B",
        id="newer than held: taken",
    ),
    pytest.param(
        [("list", 10, [_other(3)])],
        (_model(5), False),
        False,
        None,
        id="below the floor of a listing that did not hold it: dropped",
    ),
    pytest.param(
        [("list", 10, [_other(3)])],
        (_model(11), False),
        True,
        "7B",
        id="above the floor: taken (created since)",
    ),
    pytest.param(
        [("list", 10, [_model(5)])],
        (_model(6, size="8B", generation=2), False),
        True,
        "8B",
        id="an object the listing held is outdated by its own version, not by the floor",
    ),
    pytest.param(
        [("event", _model(5), False), ("event", _model(7), True)],
        (_model(6, size="8B"), False),
        False,
        None,
        id="tombstone: an event older than the deletion does not bring it back",
    ),
    pytest.param(
        [("event", _model(5), False), ("event", _model(7), True)],
        (_model(8, size="8B", uid="u2"), False),  # a new object of the same name
        True,
        "8B",
        id="tombstone: a creation after the deletion is taken",
    ),
    pytest.param(
        [("event", _model(5), False), ("event", _model(7), True), ("list", 10, [])],
        (_model(6, size="8B"), False),
        False,
        None,
        id="tombstone gone with a later listing: the floor still drops the old event",
    ),
    pytest.param(
        [("event", _model(5, uid="old"), False), ("event", _model(7, size="8B", uid="new"), False)],
        (_model(6, uid="old"), True),
        False,
        "8B",
        id="a late deletion of a name's old object leaves the new one",
    ),
]


@pytest.mark.parametrize(("before", "event", "taken", "size"), STEPS)
def test_what_an_event_does_to_the_memory(
    before: list[tuple[Any, ...]], event: tuple[dict[str, Any], bool], taken: bool, size: str | None
) -> None:
    mirror, _ = _mirror()
    for step in before:
        if step[0] == "event":
            mirror.on_watch_event(step[1], deleted=step[2])
        else:
            _list(mirror, step[1], *step[2])
    body, deleted = event
    assert mirror.on_watch_event(body, deleted=deleted) is taken
    assert _size(mirror) == size


def test_a_listing_removes_what_it_no_longer_holds_and_says_so() -> None:
    mirror, heard = _mirror()
    _list(mirror, 5, _model(3), _other(4))
    heard.changes.clear()
    _list(mirror, 9, _other(4))
    assert mirror.catalog.get(MODEL) is None
    assert mirror.catalog.get(OTHER) is not None
    assert heard.changes == [(MODEL, True, False)]


def test_a_listing_keeps_what_the_watch_created_while_it_was_in_flight() -> None:
    mirror, _ = _mirror()

    async def listing() -> AsyncIterator[Page]:
        mirror.on_watch_event(_model(12), deleted=False)  # after the listing's snapshot at 10
        yield Page(Kind.CLUSTER_BASE_MODEL, "10", [_other(4)])

    mirror.begin_listing()
    asyncio.run(mirror.reconcile(listing()))
    assert _size(mirror) == "7B"


def test_on_change_only_when_what_a_selection_reads_changes() -> None:
    mirror, heard = _mirror()
    mirror.on_watch_event(_model(1), deleted=False)
    labelled = _model(2)
    labelled["metadata"]["labels"] = {"team": "a"}
    mirror.on_watch_event(labelled, deleted=False)  # a label: same generation, nothing read changed
    mirror.on_watch_event(_model(3, size="8B", generation=2), deleted=False)
    mirror.on_watch_event(_model(4, size="8B", generation=2), deleted=True)
    assert heard.changes == [(MODEL, False, True), (MODEL, True, True), (MODEL, True, False)]


def test_on_status_for_every_new_version_of_an_inference_service_only() -> None:
    mirror, heard = _mirror()
    isvc = objects.inference_service("svc", namespace="ns", model_name="m")
    mirror.on_watch_event(_model(1), deleted=False)
    mirror.on_watch_event(_at(isvc, 2), deleted=False)
    mirror.on_watch_event(_at(isvc, 2), deleted=False)  # this very version again (a relist): nothing
    mirror.on_watch_event(_at(isvc, 3), deleted=False)
    assert heard.statuses == [(ISVC, "2"), (ISVC, "3")]


def test_a_writes_answer_older_than_the_watch_is_not_taken() -> None:
    """The answer and the watch come over different connections."""
    mirror, heard = _mirror()
    isvc = objects.inference_service("svc", namespace="ns", model_name="m")
    mirror.on_watch_event(_at(isvc, 5), deleted=False)
    mirror.observe_written(_at(isvc, 4))
    mirror.observe_written(_at(isvc, 6))
    assert heard.statuses == [(ISVC, "5"), (ISVC, "6")]


def test_a_conflicts_reread_hands_its_status_on_even_at_a_version_held() -> None:
    mirror, heard = _mirror()
    isvc = objects.inference_service("svc", namespace="ns", model_name="m")
    mirror.on_watch_event(_at(isvc, 5), deleted=False)
    mirror.observe_read(ISVC, _at(isvc, 5))  # held already: the status still is what the write needs
    mirror.observe_read(ISVC, _at(isvc, 4))  # the watch delivered a later state: nothing
    assert heard.statuses == [(ISVC, "5"), (ISVC, "5")]
