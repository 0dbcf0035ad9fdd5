"""The signal that drains a running operator before it stops (``ome-selector drain`` sends it, the operator's
``Operator.drain`` answers it); kept apart so that sending it imports nothing of the operator."""

from __future__ import annotations

import signal

__all__ = ["DRAIN_SIGNAL"]

#: Sent by the pod's preStop hook: not ready from then on, each webhook connection closed after its answer.
DRAIN_SIGNAL = signal.SIGUSR1
