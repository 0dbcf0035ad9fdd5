"""The fault-injection check's schedules (harness.chaos): a pure function of the seed, and always playable."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.chaos import (
    FAULTS,
    MODELS,
    OPERATIONS,
    RECREATED_KINDS,
    RUNTIMES,
    SERVICES,
    Chaos,
    ConditionAudit,
    Step,
    schedule,
)


def test_a_seed_always_gives_the_same_schedule_and_another_seed_another() -> None:
    assert schedule(7, 40) == schedule(7, 40)
    assert schedule(7, 40) != schedule(8, 40)
    assert schedule(7, 10) == schedule(7, 40)[:10]  # a shorter run is the start of the longer one


def test_a_long_schedule_has_every_fault_and_every_operation() -> None:
    actions = {step.action for step in schedule(3, 400)}
    assert actions >= set(FAULTS) | set(OPERATIONS)


def _operations(plan: list[Step]) -> list[Step]:
    """The operations in the order they are applied, those played during a pause included; a CRD recreated is
    the deletion of every object of its kind (``delete-all``), then the creations the step holds."""
    played: list[Step] = []
    for step in plan:
        if step.action == "pause-across-compaction":
            during = step.args["during"]
            played.append(Step(during["action"], during["args"]))
        elif step.action == "crd-recreate":
            played.append(Step("delete-all", {"kind": step.args["kind"]}))
            played.extend(Step(created["action"], created["args"]) for created in step.args["recreate"])
        elif step.action in OPERATIONS:
            played.append(step)
    return played


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32), steps=st.integers(min_value=1, max_value=120))
def test_every_operation_acts_on_what_the_schedule_has_made(seed: int, steps: int) -> None:
    """Deletes and edits name objects that exist at that point, creates names that do not (reused names are
    created again only after their deletion); a fault never comes first (there is nothing to disturb)."""
    plan = schedule(seed, steps)
    assert plan[0].action in OPERATIONS
    models: set[str] = set()
    runtimes: set[str] = set()
    services: set[str] = set()
    for step in _operations(plan):
        name = step.args.get("name")
        if step.action == "delete-all":
            {"ClusterBaseModel": models, "ClusterServingRuntime": runtimes}.get(
                step.args["kind"], services
            ).clear()
        elif step.action == "create-model":
            assert name in MODELS
            assert name not in models
            models.add(name)
        elif step.action in ("size-model", "delete-model"):
            assert name in models
            if step.action == "delete-model":
                models.discard(name)
        elif step.action == "create-runtime":
            assert name in RUNTIMES
            assert name not in runtimes
            runtimes.add(name)
        elif step.action in ("edit-runtime", "inherit-runtime", "delete-runtime"):
            assert name in runtimes
            if step.action == "delete-runtime":
                runtimes.discard(name)
        elif step.action == "create-isvc":
            assert name in SERVICES
            assert name not in services
            services.add(name)
        elif step.action == "delete-isvc":
            assert name in services
            services.discard(name)


def _audited(version: int, uid: str, state: tuple[str, str, str] | None, code: int = 200) -> str:
    conditions = [] if state is None else [dict(zip(("status", "reason", "message"), state, strict=True))]
    for condition in conditions:
        condition["type"] = "RuntimeReady"
    stored = {
        "kind": "InferenceService",
        "metadata": {"uid": uid, "resourceVersion": str(version)},
        "status": {"conditions": conditions},
    }
    entry = {"stage": "ResponseComplete", "responseStatus": {"code": code}}
    if code == 200:
        entry["responseObject"] = stored
    return json.dumps(entry) + "\n"


SELECTED = ("True", "RuntimeSelected", "selected rt")
NOT_FOUND = ("False", "RuntimeNotFound", "no runtime")


def test_the_audit_log_counts_each_condition_change_once_in_the_order_the_writes_were_stored(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.log"
    audit = ConditionAudit(log)
    audit.read()  # no log yet: nothing
    # Logged out of order (two requests answered together), a refused write, a write that changed nothing,
    # and a line still being written.
    log.write_text(
        _audited(5, "a", NOT_FOUND)
        + _audited(3, "a", SELECTED)
        + _audited(6, "a", NOT_FOUND, code=409)
        + _audited(7, "a", NOT_FOUND)
        + _audited(4, "b", SELECTED)
        + _audited(9, "a", SELECTED)[:20]
    )
    audit.read()
    assert audit.changes == Counter({"a": 2, "b": 1})
    assert (audit.state("a"), audit.state("b"), audit.state("c")) == (NOT_FOUND, SELECTED, None)
    with log.open("a") as more:
        more.write(_audited(9, "a", SELECTED)[20:] + _audited(8, "a", NOT_FOUND))
    audit.read()  # the rest of the line: a change back
    assert audit.changes == Counter({"a": 3, "b": 1})
    assert audit.state("a") == SELECTED


def test_a_write_the_log_misses_is_taken_from_the_cluster_as_one_change(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_text(_audited(3, "a", NOT_FOUND) + _audited(5, "a", SELECTED, code=504))  # stored all the same
    audit = ConditionAudit(log)
    audit.read()
    assert audit.state("a") == NOT_FOUND
    audit.take("a", 5, SELECTED)
    audit.take("a", 4, NOT_FOUND)  # older than what it holds: ignored
    assert (audit.state("a"), audit.changes["a"]) == (SELECTED, 2)


def test_an_event_recorded_in_the_quiet_is_written_in_it_unless_its_subject_changed_since_the_last_check(
    tmp_path: Path,
) -> None:
    """The quiet check (nothing written when nothing changed): an event about an InferenceService whose
    condition changed in this interval is the tail of that change (the event count holds it to one); any other
    event, and any write of an InferenceService, was written while nothing changed."""
    log = tmp_path / "audit.log"
    log.write_text(_audited(3, "a", NOT_FOUND) + _audited(4, "b", SELECTED))
    audit = ConditionAudit(log)
    audit.read()
    with log.open("a") as more:
        more.write(_audited(7, "a", SELECTED))  # a changed in this interval, b did not
    said: list[str] = []
    chaos: Any = SimpleNamespace(
        conditions=audit,
        log=said.append,
        _accounted=(Counter(audit.changes), set()),
        _event_subjects={"a.1": "a", "b.1": "b"},
    )
    keys = ["event/a.1", "event/b.1", "event/unknown.1", "isvc/s1"]
    assert Chaos._written_in_quiet(chaos, keys) == ["event/b.1", "event/unknown.1", "isvc/s1"]
    assert said == ["  event/a.1: recorded in the quiet, for a change before it"]


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32), steps=st.integers(min_value=1, max_value=120))
def test_a_recreated_crd_brings_back_every_object_the_schedule_had_of_its_kind(seed: int, steps: int) -> None:
    """Deleting a CRD deletes its objects: the step creates every one of them again (the models with their
    sizes, the InferenceServices with their models), so the invariants check the objects the schedule
    expects, recreated, and nothing the schedule made vanishes unseen."""
    plan = schedule(seed, steps)
    models: dict[str, Any] = {}
    runtimes: set[str] = set()
    services: dict[str, str] = {}
    for step in plan:
        for played in _operations([step]):
            a = played.args
            if played.action in ("create-model", "size-model"):
                models[a["name"]] = a["size"]
            elif played.action == "delete-model":
                del models[a["name"]]
            elif played.action == "create-runtime":
                runtimes.add(a["name"])
            elif played.action == "delete-runtime":
                runtimes.discard(a["name"])
            elif played.action == "create-isvc":
                services[a["name"]] = a["model"]
            elif played.action == "delete-isvc":
                del services[a["name"]]
        if step.action != "crd-recreate":
            continue
        kind = step.args["kind"]
        assert kind in {k.value for k in RECREATED_KINDS}
        created = [(c["action"], c["args"]) for c in step.args["recreate"]]
        if kind == "ClusterBaseModel":
            assert created == [("create-model", {"name": n, "size": models[n]}) for n in sorted(models)]
        elif kind == "ClusterServingRuntime":
            assert [(action, args["name"]) for action, args in created] == [
                ("create-runtime", n) for n in sorted(runtimes)
            ]
        else:
            assert [(action, args["name"], args["model"]) for action, args in created] == [
                ("create-isvc", n, services[n]) for n in sorted(services)
            ]


def test_the_crd_recreate_fault_deletes_each_kind_the_schedule_uses() -> None:
    kinds = {step.args["kind"] for step in schedule(3, 400) if step.action == "crd-recreate"}
    assert kinds == {kind.value for kind in RECREATED_KINDS}
