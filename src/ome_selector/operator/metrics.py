"""Prometheus metrics of SPEC §8, on a registry of their own so several operators can run in one process.

Every label value comes from a fixed set (SPEC §7, §8), never from a request or an object: ``status`` and
``reason`` from the SPEC §5 table, ``kind`` the five kinds or ``other``, ``allowed`` ``true``, ``false`` or
``error``, ``code`` the HTTP statuses of a malformed admission request or (``api_requests``) of an API answer,
``operation`` the API calls the operator makes. docs/metrics.md lists every metric; a test compares it with
what ``/metrics`` serves.

Counters and histograms carry no ``_created`` series (they would double the series count for nothing a query
uses), and the process' own figures (``process_*``, the RSS of SPEC §8) are on the same private registry.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Hashable, Iterator, Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ome_selector import __version__
from ome_selector.api.resources import Kind

# Process-wide in prometheus_client: no counter or histogram of this process exports `_created`.
disable_created_metrics()  # type: ignore[no-untyped-call]

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_LOOP_LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
#: How long an InferenceService waits in the work queue: a burst of catalog changes may hold it (SPEC §5).
_QUEUE_BUCKETS = (0.001, 0.01, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_API_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

#: The ``code`` of ``ome_selector_admission_malformed_total`` (SPEC §7).
MALFORMED_CODES = ("400", "404", "408", "413")
#: The ``operation`` of ``ome_selector_api_errors_total`` and (the writes among them) ``api_writes_total``.
CALLS = ("list", "read", "patch", "patch_status", "create_event")
WRITES = ("patch", "patch_status", "create_event")
#: The ``code`` of ``ome_selector_api_requests_total`` (its ``operation`` is the call's verb,
#: :func:`api_operation`): the HTTP status of the answer when one of these, ``other`` for any other status,
#: ``error`` when no answer came (a connection failure or a timeout).
API_CODES = (
    "200",
    "201",
    "204",
    "400",
    "401",
    "403",
    "404",
    "409",
    "410",
    "422",
    "429",
    "500",
    "502",
    "503",
    "504",
    "other",
    "error",
)


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
        # Every series exists from the start at 0, so a rate over it is defined before the first error.
        for operation in CALLS:
            self.api_errors.labels(operation)
        for operation in WRITES:
            self.writes.labels(operation)
        for code in MALFORMED_CODES:
            self.admission_malformed.labels(code)
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
        self.build_info = Gauge(
            "ome_selector_build_info",
            "Always 1; the running version in the label",
            ["version"],
            registry=self.registry,
        )
        self.build_info.labels(__version__).set(1)
        ProcessCollector(registry=self.registry)
        self.queue_seconds = Histogram(
            "ome_selector_workqueue_queue_duration_seconds",
            "How long an InferenceService waited in the work queue before its evaluation started",
            buckets=_QUEUE_BUCKETS,
            registry=self.registry,
        )
        self.retries = Counter(
            "ome_selector_workqueue_retries",
            "Evaluations that failed and were scheduled again with backoff",
            registry=self.registry,
        )
        self.api_requests = Counter(
            "ome_selector_api_requests",
            "Kubernetes API requests the operator made (its watches aside), by verb and HTTP status",
            ["operation", "code"],
            registry=self.registry,
        )
        self.api_request_seconds = Histogram(
            "ome_selector_api_request_duration_seconds",
            "Time from sending a Kubernetes API request to its answer's headers, by verb",
            ["operation"],
            buckets=_API_BUCKETS,
            registry=self.registry,
        )
        self.webhook_in_flight = Gauge(
            "ome_selector_webhook_requests_in_flight",
            "Admission reviews being answered now",
            registry=self.registry,
        )
        #: Set by the webhook server when it (re)loads its certificate; unset: the series is absent.
        self.certificate_expiry: float | None = None
        #: Read at each scrape: the catalog's objects by kind; None (no series) until the first listing.
        self.catalog_counts: Callable[[], Mapping[Kind, int]] | None = None
        self.registry.register(_ScrapeTime(self))
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
        self.condition_conflicts = Counter(
            "ome_selector_condition_conflicts",
            "RuntimeReady conditions found written by another writer, then left to it (SPEC §5: beside OME "
            "v1.3 or later, run with --report-only)",
            registry=self.registry,
        )
        # SPEC §5 "Watch streams that end": ``kind`` the five kinds (``other`` for none of them), ``reason``
        # one of kopfwiring.END_REASONS.
        self.watch_restarts = Counter(
            "ome_selector_watch_restarts",
            "Watch streams of a kind that ended where Kopf would have given them up, and were started again "
            "with a listing",
            ["kind", "reason"],
            registry=self.registry,
        )
        self.watch_ended = Gauge(
            "ome_selector_watch_ended",
            "1 while the watch stream of a kind has ended and no listing of the kind has been read since",
            ["kind"],
            registry=self.registry,
        )
        for kind in Kind:
            self.watch_ended.labels(kind.value)
        self._verdicts: dict[Hashable, tuple[str, str]] = {}
        self._tally: Tally[tuple[str, str]] = Tally()

    def set_certificate_expiry(self, not_after: float) -> None:
        """The serving certificate in use expires at ``not_after`` (seconds since the epoch)."""
        self.certificate_expiry = not_after

    def observe_api_request(self, method: str, path: str, status: int | None, seconds: float) -> None:
        """One API request answered (``status``) or failed without an answer (None), as heard by
        :class:`~ome_selector.kube.connection.ClusterAccess`."""
        operation = api_operation(method, path)
        self.api_requests.labels(operation, api_code(status)).inc()
        self.api_request_seconds.labels(operation).observe(seconds)

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


def api_operation(method: str, path: str) -> str:
    """The Kubernetes verb of a request: ``list`` for a GET of a collection, ``get`` of one object (a
    subresource is its object's verb: a status patch is ``patch``)."""
    method = method.upper()
    if method == "GET":
        # /api/v1/namespaces/<ns>/events, /apis/<g>/<v>/<plural>: the last segment names a collection when
        # the segment count says so (core: /api/v1/..., groups: /apis/<group>/<version>/...).
        parts = [part for part in path.split("/") if part]
        base = 2 if parts[:1] == ["api"] else 3
        rest = parts[base:]
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            rest = rest[2:]
        return "list" if len(rest) == 1 else "get"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, "get")


def api_code(status: int | None) -> str:
    """The ``code`` label of an answer's HTTP status (None: no answer)."""
    if status is None:
        return "error"
    code = str(status)
    return code if code in API_CODES else "other"


class _ScrapeTime(Collector):
    """The series read when scraped, present only once known: the certificate's expiry and the catalog."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        expiry = self._metrics.certificate_expiry
        if expiry is not None:
            yield GaugeMetricFamily(
                "ome_selector_webhook_certificate_expiry_timestamp_seconds",
                "When the webhook's serving certificate in use expires (seconds since the epoch)",
                value=expiry,
            )
        counts = self._metrics.catalog_counts
        if counts is not None:
            tally = counts()
            family = GaugeMetricFamily(
                "ome_selector_catalog_objects", "Objects in the operator's catalog, by kind", labels=["kind"]
            )
            for kind in Kind:
                family.add_metric([kind.value], tally.get(kind, 0))
            yield family
