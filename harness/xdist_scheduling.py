"""``make test``'s file scheduler: pytest-xdist's ``--dist loadfile``, with one change to when a worker is
given its next file.

xdist hands a worker another file as soon as it has two tests left, so near the end of a run one worker can
hold two slow files (say a 25 s watch-gap test queued behind a 15 s fuzz test) while the others run out of
work and stop. Here a worker is given its next file only when it is down to the test it holds back for
pytest's ``nextitem``, that is, when it has nothing else to run; the rest of xdist's scheduling is unchanged.

This is the harness's one reliance on xdist's private scheduler methods (``_reschedule``, ``_pending_of``,
``_assign_work_unit`` and the ``assigned_work``/``workqueue`` fields): tests/unit/test_xdist_scheduling.py
fails when an xdist release changes them.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

__all__ = ["LastTestFirst"]

#: Tests a worker still has when it is given its next file: the one it holds back is all it has left.
REFILL_AT = 1


class LastTestFirst(LoadFileScheduling):
    """``--dist loadfile``, a worker refilled only when it has run all but the test it holds back."""

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > REFILL_AT:
            return
        self._assign_work_unit(node)
