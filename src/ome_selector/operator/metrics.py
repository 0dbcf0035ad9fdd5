"""Prometheus metrics of SPEC §8, on a registry of their own so several operators can run in one process.

Every label value comes from a fixed set (SPEC §7, §8), never from a request or an object: ``status`` and
``reason`` from the SPEC §5 table, ``kind`` the five kinds or ``other``, ``allowed`` ``true``, ``false`` or
``error``, ``code`` the HTTP statuses of a malformed admission request, ``operation`` the API calls the
operator makes.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Hashable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_LOOP_LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.evaluations = Counter(
            "ome_selector_evaluations",
            "InferenceService evaluations by outcome reason and RuntimeReady status",
            ["status", "reason"],
            registry=self.registry,
        )
        self.runtime_ready = Gauge(
            "ome_selector_inferenceservices",
            "InferenceServices by their current RuntimeReady status and reason, as last evaluated",
            ["status", "reason"],
            registry=self.registry,
        )
        self.evaluation_seconds = Histogram(
            "ome_selector_evaluation_duration_seconds",
            "Time to evaluate one InferenceService and write its outcome",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.admission_seconds = Histogram(
            "ome_selector_admission_duration_seconds",
            "Time to answer one admission review",
            ["kind", "allowed"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.admission_malformed = Counter(
            "ome_selector_admission_malformed",
            "Admission requests refused before any check: not a well-formed AdmissionReview (400), no "
            "webhook at the path (404), a body not arriving in time (408), body over 1 MiB (413)",
            ["code"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "ome_selector_workqueue_depth", "InferenceServices waiting for evaluation", registry=self.registry
        )
        self.api_errors = Counter(
            "ome_selector_api_errors",
            "Failed Kubernetes API calls by operation",
            ["operation"],
            registry=self.registry,
        )
        self.writes = Counter(
            "ome_selector_api_writes",
            "Kubernetes API writes by operation",
            ["operation"],
            registry=self.registry,
        )
        self.events_dropped = Counter(
            "ome_selector_events_dropped",
            "Events not recorded because the event queue was full (the RuntimeReady condition was written)",
            registry=self.registry,
        )
        self.leader = Gauge(
            "ome_selector_leader",
            "1 on the replica that holds the Lease and writes conditions and events, 0 on the others",
            registry=self.registry,
        )
        self.loop_lag = Histogram(
            "ome_selector_event_loop_lag_seconds",
            "How late the event loop woke a task that asked to wake every 100 ms: a callback holding the "
            "loop (the budget is 50 ms) or a process not scheduled",
            buckets=_LOOP_LAG_BUCKETS,
            registry=self.registry,
        )
        self.loop_lag_cpu = Histogram(
            "ome_selector_event_loop_lag_cpu_seconds",
            "Of each late wake-up of the event loop, the part its thread was computing (the rest it waited "
            "to be scheduled)",
            buckets=_LOOP_LAG_BUCKETS,
            registry=self.registry,
        )
        self.resync_seconds = Histogram(
            "ome_selector_resync_duration_seconds",
            "Time of one full listing reconciled into the catalog, with every InferenceService queued",
            buckets=(0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0),
            registry=self.registry,
        )
        self._verdicts: dict[Hashable, tuple[str, str]] = {}
        self._tally: Tally[tuple[str, str]] = Tally()

    def record_verdict(self, key: Hashable, status: str, reason: str) -> None:
        """Keep the RuntimeReady gauge equal to the current verdicts (one per InferenceService)."""
        previous = self._verdicts.get(key)
        if previous == (status, reason):
            return
        if previous is not None:
            self._set(previous, -1)
        self._verdicts[key] = (status, reason)
        self._set((status, reason), +1)

    def forget(self, key: Hashable) -> None:
        previous = self._verdicts.pop(key, None)
        if previous is not None:
            self._set(previous, -1)

    def _set(self, labels: tuple[str, str], delta: int) -> None:
        self._tally[labels] += delta
        self.runtime_ready.labels(*labels).set(self._tally[labels])
