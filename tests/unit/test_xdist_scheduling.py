"""The canary of harness.xdist_scheduling: what it overrides in pytest-xdist's private scheduler API."""

from __future__ import annotations

import inspect
from typing import Any

from xdist.scheduler import LoadFileScheduling
from xdist.scheduler.loadscope import LoadScopeScheduling

from harness.xdist_scheduling import REFILL_AT, LastTestFirst


def test_xdist_still_refills_through_the_methods_the_scheduler_overrides_and_calls() -> None:
    source = inspect.getsource(LoadScopeScheduling._reschedule)
    # xdist's own body, which LastTestFirst repeats with another threshold: if it changes, so must ours.
    for line in (
        "if node.shutting_down:",
        "if not self.workqueue:",
        "node.shutdown()",
        "if self._pending_of(self.assigned_work[node]) > 2:",
        "self._assign_work_unit(node)",
    ):
        assert line in source, f"pytest-xdist changed LoadScopeScheduling._reschedule: {line!r} is gone"
    assert inspect.signature(LoadScopeScheduling._pending_of).parameters.keys() == {"self", "workload"}
    assert "self._reschedule(node)" in inspect.getsource(LoadScopeScheduling.mark_test_complete), (
        "pytest-xdist no longer refills a worker from mark_test_complete through _reschedule"
    )
    assert issubclass(LastTestFirst, LoadFileScheduling)
    assert LastTestFirst._split_scope is LoadFileScheduling._split_scope  # still one file per unit


def test_a_worker_is_refilled_only_when_it_holds_its_last_test_back() -> None:
    class Node:
        shutting_down = False
        shut = False

        def shutdown(self) -> None:
            self.shut = True

    scheduler: Any = LastTestFirst.__new__(LastTestFirst)  # without xdist's session: only the refill rule
    node = Node()
    given: list[object] = []
    scheduler.workqueue = {"tests/b.py": {"tests/b.py::t": False}}
    scheduler._assign_work_unit = given.append
    scheduler.assigned_work = {node: {"tests/a.py": {"a1": True, "a2": False, "a3": False}}}
    scheduler._reschedule(node)
    assert given == []  # two left: it has one to run before the one it holds back
    scheduler.assigned_work[node]["tests/a.py"]["a2"] = True
    scheduler._reschedule(node)
    assert given == [node]
    assert REFILL_AT == 1
    scheduler.workqueue = {}
    scheduler._reschedule(node)
    assert node.shut
