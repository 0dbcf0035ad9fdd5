"""Learning models' metadata from their files on the Hub (SPEC §10; opt-in: ``--learn-model-metadata``).

A BaseModel or ClusterBaseModel is a candidate when its ``spec.storage.storageUri`` is ``hf://…``, its spec
lacks a learnable field (:func:`~ome_selector.modelfiles.missing_fields`), it carries neither the annotation
``ome-selector.ome.io/skip-metadata: "true"`` nor OME's ``ome.oracle.com/skip-config-parsing: "true"`` (any
case) and it is not being deleted. For each candidate the learner:

1. reads the model's files in a child process (:mod:`.modelreader`, SPEC §10.7: no parse can hold the event
   loop), one model at a time, with the Hub token only when :func:`may_use_token` allows it (a
   ClusterBaseModel, or a BaseModel of a namespace in :attr:`LearningConfig.token_namespaces`), else
   anonymously; and keeps what it learned per storage URI (validated fields only), so a model's files are read
   once per URI and operator lifetime;
2. reads the model again and sends a merge patch of only the learned fields its spec lacks
   (:func:`~ome_selector.modelfiles.fill_patch`), field manager ``ome-selector``, guarded by the
   resourceVersion it read; after a 409 it reads and recomputes, so nothing anyone set is overwritten;
3. records a Normal event ``ModelMetadataLearned`` naming what it set.

Before it patches, it evaluates the model's InferenceServices with the learned values (SPEC §10, the what-if
of :mod:`ome_selector.review.learned` over the operator's catalog): when any would lose its runtime, a Warning
event ``ModelMetadataStrandsInferenceServices`` names them (at most 5) and why, once per message, and it
still writes what it learned; in report mode (``--learn-model-metadata=report``) it writes nothing and only
reports.

A failure while reading or writing (the Hub refuses, a file is malformed or over a limit, the child is
killed or crashes, the API errs or the model keeps changing while it is patched, anything raised) is a
Warning event ``ModelMetadataUnavailable`` with the reason, escaped, its storage URI cut to 256 characters
(SPEC §10.4), counted as ``result="failed"``, and the model is tried again after :class:`RetrySchedule`'s
delay: 30 s, 2 min, then every 10 min; never the work queue's fast backoff (SPEC §10.5).

Only a writing replica learns: every read and write is behind the leader election's fence, and a new
leader looks at every candidate again. The size it writes reaches the controller through the watch like any
other change (SPEC §5).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prometheus_client import Counter

from ome_selector.api.logfields import log_fields
from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.kube.objects import ApiError, ConflictError, GoneError, Objects
from ome_selector.modelfiles import (
    ModelFileError,
    ModelMetadata,
    describe_fill,
    fill_patch,
    missing_fields,
)
from ome_selector.operator.metrics import Metrics
from ome_selector.operator.modelreader import ChildLimits, ModelReaderProcess
from ome_selector.operator.workqueue import WorkQueue
from ome_selector.operator.writer import COMPONENT, ApiWriter, NotLeaderError
from ome_selector.review.learned import STRANDS, learned_model, moved_steps, stranded, strands_message
from ome_selector.review.whatif import Change
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.messages import escape_controls, truncate

__all__ = [
    "DEFAULT_RETRY_DELAYS",
    "LEARNED",
    "OME_SKIP_ANNOTATION",
    "RESULTS",
    "SKIP_ANNOTATION",
    "SKIP_ANNOTATIONS",
    "STRANDS",
    "UNAVAILABLE",
    "Candidate",
    "LearningConfig",
    "ModelMetadataLearner",
    "RetrySchedule",
    "candidate",
    "environment_token",
    "may_use_token",
]

logger = logging.getLogger(__name__)

SKIP_ANNOTATION = "ome-selector.ome.io/skip-metadata"
#: OME's model agent's own opt-out, honoured alike: a model OME must not learn about, this product leaves
#: alone too (SPEC §10).
OME_SKIP_ANNOTATION = "ome.oracle.com/skip-config-parsing"
SKIP_ANNOTATIONS = (SKIP_ANNOTATION, OME_SKIP_ANNOTATION)
HUB_SCHEME = "hf://"
LEARNED = "ModelMetadataLearned"
UNAVAILABLE = "ModelMetadataUnavailable"
#: The ``result`` label of ``ome_selector_model_metadata_total``: fields were set; the files were read but
#: gave nothing the model lacks; the attempt failed.
RESULTS = ("learned", "unchanged", "failed")
#: Seconds before the next attempt after the 1st, 2nd and every later consecutive failure.
DEFAULT_RETRY_DELAYS = (30.0, 120.0, 600.0)
MAX_CONFLICTS = 5
#: Steps of the learned values' what-if between two yields to the event loop.
_STEPS_PER_YIELD = 16
#: A storage URI in a message is cut to this many characters (SPEC §10.4).
_URI_LIMIT = 256
#: How a failure's event message starts, by what failed: reading the model's files or writing to the model.
_READING = "Cannot read the model's files"
_WRITING = "Cannot set the learned fields"

#: Reads one model: ``(storage URI, token or None) -> metadata``; raises for every failure.
ModelReader = Callable[[str, str | None], Awaitable[ModelMetadata]]


@dataclass(frozen=True)
class LearningConfig:
    """How the operator learns model metadata; the token is chosen per model by the learner's ``token_for``
    (by default ``HF_TOKEN``)."""

    #: The Hub's URL; None: ``HF_ENDPOINT``, else huggingface.co.
    endpoint: str | None = None
    #: Attempts at the same time; reading is one child process at a time whatever this says (SPEC §10.7).
    concurrency: int = 1
    #: Namespaces whose BaseModels are read with the token (:func:`may_use_token`).
    token_namespaces: frozenset[str] = frozenset()
    retry_delays: tuple[float, ...] = DEFAULT_RETRY_DELAYS
    #: What one child process may use before it is killed.
    reader_limits: ChildLimits = field(default_factory=ChildLimits)
    #: ``--learn-model-metadata=report``: evaluate and report, never write the learned fields (SPEC §10).
    report_only: bool = False

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not self.retry_delays or min(self.retry_delays) <= 0:
            raise ValueError("retry delays must be positive, at least one")


@dataclass
class RetrySchedule:
    """When each model may be tried again: ``delays[n-1]`` after its n-th consecutive failure, the last delay
    for every failure after that. Times are the caller's monotonic clock, so a test can pass any numbers."""

    delays: Sequence[float] = DEFAULT_RETRY_DELAYS
    _failures: dict[ObjectKey, int] = field(default_factory=dict, init=False)
    _due: dict[ObjectKey, float] = field(default_factory=dict, init=False)

    def failed(self, key: ObjectKey, now: float) -> float:
        """Record a failure at ``now``; the delay until the next attempt."""
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        delay = float(self.delays[min(failures, len(self.delays)) - 1])
        self._due[key] = now + delay
        return delay

    def succeeded(self, key: ObjectKey) -> None:
        self.forget(key)

    def forget(self, key: ObjectKey) -> None:
        self._failures.pop(key, None)
        self._due.pop(key, None)

    def due(self, key: ObjectKey) -> float:
        """The earliest time of the next attempt (0 without a failure)."""
        return self._due.get(key, 0.0)

    def failures(self, key: ObjectKey) -> int:
        return self._failures.get(key, 0)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A model whose metadata may be learned: what an event about it needs, and where its files are."""

    key: ObjectKey
    storage_uri: str
    uid: str | None
    resource_version: str | None
    missing: tuple[str, ...]

    @property
    def involved(self) -> dict[str, Any]:
        """The body fields an event names its object by."""
        return {
            "metadata": {
                "name": self.key.name,
                "namespace": self.key.namespace,
                "uid": self.uid,
                "resourceVersion": self.resource_version,
            }
        }


def model_key(body: Mapping[str, Any]) -> ObjectKey | None:
    """The key of a BaseModel or ClusterBaseModel body; None for any other body."""
    try:
        kind = Kind(str(body.get("kind")))
    except ValueError:
        return None
    metadata = body.get("metadata") or {}
    name = metadata.get("name")
    if not kind.is_model or not isinstance(name, str):
        return None
    namespace = metadata.get("namespace") if kind.namespaced else None
    return ObjectKey(kind, namespace if isinstance(namespace, str) else None, name)


def _storage_uri(spec: Any) -> str | None:
    storage = spec.get("storage") if isinstance(spec, Mapping) else None
    uri = storage.get("storageUri") if isinstance(storage, Mapping) else None
    return uri if isinstance(uri, str) and uri.startswith(HUB_SCHEME) else None


def _skipped(metadata: Mapping[str, Any]) -> bool:
    annotations = metadata.get("annotations")
    if not isinstance(annotations, Mapping):
        return False
    return any(
        isinstance(value := annotations.get(key), str) and value.strip().lower() == "true"
        for key in SKIP_ANNOTATIONS
    )


def candidate(body: Mapping[str, Any]) -> Candidate | None:
    """The model ``body`` as a learning candidate, or None when it is not one (see the module's rules)."""
    key = model_key(body)
    if key is None:
        return None
    metadata = body.get("metadata") or {}
    spec = body.get("spec")
    uri = _storage_uri(spec)
    if uri is None or _skipped(metadata) or metadata.get("deletionTimestamp"):
        return None
    missing = missing_fields(spec)
    if not missing:
        return None
    return Candidate(key, uri, metadata.get("uid"), metadata.get("resourceVersion"), missing)


def _duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def environment_token(found: Candidate) -> str | None:
    """The Hub token of the operator's environment (``HF_TOKEN``, from the chart's Secret), read at each
    attempt; what ``token_for`` gives a model that :func:`may_use_token`."""
    return os.environ.get("HF_TOKEN") or None


def may_use_token(key: ObjectKey, token_namespaces: Collection[str]) -> bool:
    """Whether a model's files are read with the operator's one Hub token: a ClusterBaseModel (only cluster
    admins create one) always, a BaseModel only in ``token_namespaces``. Any other BaseModel is read
    anonymously, so no tenant learns what the token can see, nor (the errors being the same) whether a
    private repository exists."""
    return key.namespace is None or key.namespace in token_namespaces


def _shown_uri(uri: str) -> str:
    return truncate(escape_controls(uri), _URI_LIMIT)


def _shown_file_error(error: ModelFileError, uri: str) -> str:
    """``<location>: <reason>`` of a read failure, escaped, with the storage URI the location starts with cut
    to 256 characters (SPEC §10.4); a location that is not under ``uri`` is cut the same way."""
    location = error.location
    if location.startswith(uri):  # hf://ORG/NAME[@REVISION], then /FILE when a file is named
        shown = _shown_uri(uri) + escape_controls(location[len(uri) :])
    else:  # e.g. the URI as the child cut it
        shown = _shown_uri(location)
    return f"{shown}: {escape_controls(error.reason)}"


class _NoLongerCandidateError(Exception):
    """The model changed while its files were read: deleted, opted out, complete, or other files."""


class ModelMetadataLearner:
    """Fed every model body the operator sees; learns and writes what candidates lack (module docstring)."""

    def __init__(
        self,
        objects: Objects,
        metrics: Metrics,
        config: LearningConfig,
        *,
        instance: str,
        may_write: Callable[[], bool],
        read: ModelReader | None = None,
        token_for: Callable[[Candidate], str | None] | None = None,
        catalog: Callable[[], Catalog | None] | None = None,
        runtime_lookup: RuntimeLookup = RuntimeLookup.V1_3,
    ) -> None:
        """``read`` reads one model (default: a child process per model, :mod:`.modelreader`);
        ``token_for`` decides which Hub token, if any, a model is read with (None: anonymous; default: the
        environment's token for the models :func:`may_use_token`); ``catalog`` gives the operator's catalog
        (None while it starts) that learned values are evaluated against before they are written."""
        self._objects = objects
        self._catalog = catalog or (lambda: None)
        self._lookup = runtime_lookup
        self._report_only = config.report_only
        #: The last strand warning recorded per model: an unchanged one is not repeated.
        self._warned: dict[ObjectKey, str] = {}
        self._metrics = metrics
        self.may_write = may_write
        # Events at most once, as the operator's own (a lost one must not undo or repeat an attempt).
        self._events = ApiWriter(objects, metrics, instance=instance, may_write=may_write)
        self.reader = ModelReaderProcess(config.reader_limits)
        endpoint = config.endpoint

        async def read_in_child(uri: str, token: str | None) -> ModelMetadata:
            return await self.reader.read(uri, endpoint=endpoint, token=token)

        token_namespaces = config.token_namespaces

        def tenant_token(found: Candidate) -> str | None:
            return environment_token(found) if may_use_token(found.key, token_namespaces) else None

        self._read = read or read_in_child
        self._token_for = token_for or tenant_token
        #: One model is read at a time (SPEC §10.7): candidates queue here.
        self._reading = asyncio.Lock()
        self.results = Counter(
            "ome_selector_model_metadata",
            "Attempts to learn a model's metadata from its files, by result",
            ["result"],
            registry=metrics.registry,
        )
        for result in RESULTS:
            self.results.labels(result)
        self.schedule = RetrySchedule(config.retry_delays)
        self._candidates: dict[ObjectKey, Candidate] = {}
        #: What each model's files said, by the storage URI they were read from.
        self._learned: dict[ObjectKey, tuple[str, ModelMetadata]] = {}
        self._timers: dict[ObjectKey, asyncio.TimerHandle] = {}
        self.queue: WorkQueue[ObjectKey] = WorkQueue(self._attempt, workers=config.concurrency)

    # --- fed by the operator -----------------------------------------------------------------------------

    def observe(self, body: Mapping[str, Any]) -> None:
        """A model was listed, added or changed (other kinds are ignored)."""
        key = model_key(body)
        if key is None:
            return
        found = candidate(body)
        if found is None:
            self._drop(key)
            return
        previous = self._candidates.get(key)
        if previous is not None and previous.storage_uri != found.storage_uri:
            self._drop(key)  # other files: a fresh start, no backoff carried over
        learned = self._learned.get(key)
        if learned is not None and learned[0] != found.storage_uri:
            del self._learned[key]
        elif learned is not None and not fill_patch(body.get("spec"), learned[1]):
            self._candidates.pop(key, None)  # its files were read and give nothing more that it lacks
            return
        self._candidates[key] = found
        self._request(key)

    def forget(self, body: Mapping[str, Any]) -> None:
        """A model was deleted."""
        key = model_key(body)
        if key is not None:
            self._drop(key)
            self._learned.pop(key, None)

    def observe_listed(self, bodies: Iterable[Mapping[str, Any]]) -> set[ObjectKey]:
        """A page of a full listing: observe its models; returns their keys (for :meth:`forget_unlisted`)."""
        listed: set[ObjectKey] = set()
        for body in bodies:
            key = model_key(body)
            if key is not None:
                listed.add(key)
                self.observe(body)
        return listed

    def forget_unlisted(self, listed: Collection[ObjectKey]) -> None:
        """A full listing has been observed, ``listed`` the keys of its models: forget the others."""
        for key in [k for k in {*self._candidates, *self._learned} if k not in listed]:
            self._drop(key)
            self._learned.pop(key, None)

    def learn_all(self) -> None:
        """Look at every candidate again, e.g. on becoming the leader."""
        for key in list(self._candidates):
            self._request(key)

    # --- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> None:
        self.queue.start()

    async def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        await self.queue.stop()  # a read in flight is cancelled, and its child killed

    async def wait_idle(self) -> None:
        """Until no attempt is queued or running (retries waiting for their time do not count)."""
        await self.queue.wait_idle()

    # --- scheduling --------------------------------------------------------------------------------------

    def _drop(self, key: ObjectKey) -> None:
        self._candidates.pop(key, None)
        self.schedule.forget(key)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _request(self, key: ObjectKey) -> None:
        """Queue an attempt now, or when the retry schedule allows one; a follower attempts nothing."""
        if not self.may_write() or key in self._timers:
            return
        loop = asyncio.get_running_loop()
        wait = self.schedule.due(key) - loop.time()
        if wait > 0:
            self._timers[key] = loop.call_later(wait, self._retry, key)
        else:
            self.queue.add(key)

    def _retry(self, key: ObjectKey) -> None:
        self._timers.pop(key, None)
        if key in self._candidates:
            self._request(key)

    # --- one attempt -------------------------------------------------------------------------------------

    async def _attempt(self, key: ObjectKey) -> None:
        found = self._candidates.get(key)
        loop = asyncio.get_running_loop()
        if found is None or not self.may_write():
            return
        if self.schedule.due(key) > loop.time():
            self._request(key)
            return
        try:
            await self._learn(found)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # whatever goes wrong is a failure on the schedule, never a fast retry
            await self._failed(found, f"{type(error).__name__}: {error}", _READING)

    async def _learn(self, found: Candidate) -> None:
        key = found.key
        uri = found.storage_uri
        learned = self._learned.get(key)
        if learned is not None and learned[0] == uri:
            metadata = learned[1]
        else:
            try:
                async with self._reading:
                    metadata = await self._read(uri, self._token_for(found))
            except ModelFileError as error:
                await self._failed(found, _shown_file_error(error, uri), _READING)
                return
            except Exception as error:  # a reader's own failure: the operator carries on
                await self._failed(found, f"{type(error).__name__}: {error}", _READING)
                return
            self._learned[key] = (uri, replace(metadata, files=()))
        # A failure to write is a failure like any other: event, metric and schedule (SPEC §10.5).
        try:
            fields, stored = await self._write(found, metadata)
        except (_NoLongerCandidateError, NotLeaderError):
            return  # the watch brings the model's new state, or the new leader takes over
        except ApiError as error:
            await self._failed(found, f"the API answered {error.status} {error.reason}", _WRITING)
            return
        except ConflictError:
            await self._failed(found, f"it changed {MAX_CONFLICTS} times while it was patched", _WRITING)
            return
        except Exception as error:
            await self._failed(found, f"{type(error).__name__}: {error}", _WRITING)
            return
        self.schedule.succeeded(key)
        self._candidates.pop(key, None)
        if fields and self._report_only:
            self.results.labels("unchanged").inc()
            logger.info(
                "%s: report only: its files at %s would set %s",
                key,
                _shown_uri(uri),
                ", ".join(describe_fill(fields, metadata)),
            )
            return
        if not fields:
            self.results.labels("unchanged").inc()
            logger.info("%s: its files at %s give nothing it lacks", key, _shown_uri(uri))
            return
        self.results.labels("learned").inc()
        learned_text = ", ".join(describe_fill(fields, metadata))
        logger.info("%s: learned from %s: %s", key, _shown_uri(uri), learned_text)
        await self._events.record_event(
            stored,
            kind=key.kind,
            type_="Normal",
            reason=LEARNED,
            message=truncate(f"Learned from {_shown_uri(uri)}: {learned_text}"),
        )

    async def _write(
        self, found: Candidate, metadata: ModelMetadata
    ) -> tuple[dict[str, Any], Mapping[str, Any]]:
        """Patch what the model lacks, read fresh; the fields set (empty: none) and the stored body."""
        key = found.key
        for _ in range(MAX_CONFLICTS):
            try:
                body = await self._objects.get(key.kind, key.namespace, key.name)
            except ApiError:
                self._metrics.api_errors.labels("read").inc()
                raise
            now = candidate(body) if body is not None else None
            if now is None or now.storage_uri != found.storage_uri:
                raise _NoLongerCandidateError(str(key))
            fields = fill_patch(body.get("spec") if body else None, metadata)
            if not fields:
                return fields, now.involved
            if not self.may_write():
                raise NotLeaderError(str(key))
            await self._warn_if_stranding(now, body or {}, fields, metadata)
            if self._report_only:
                return fields, now.involved
            guard = {"resourceVersion": now.resource_version}
            try:
                stored = await self._objects.patch(
                    key.kind,
                    key.namespace,
                    key.name,
                    {"metadata": guard, "spec": fields},
                    field_manager=COMPONENT,
                )
            except ConflictError:
                continue  # changed since it was read: read again, recompute
            except GoneError as error:
                raise _NoLongerCandidateError(str(key)) from error
            except ApiError:
                self._metrics.api_errors.labels("patch").inc()
                raise
            self._metrics.writes.labels("patch").inc()
            return fields, stored
        raise ConflictError(str(key))

    async def _warn_if_stranding(
        self, found: Candidate, body: Mapping[str, Any], fields: Mapping[str, Any], metadata: ModelMetadata
    ) -> None:
        """The Warning event ``ModelMetadataStrandsInferenceServices`` when writing ``fields`` would leave an
        InferenceService of the model without the runtime it has (SPEC §10); nothing without a catalog."""
        catalog = self._catalog()
        if catalog is None:
            return
        try:
            learned = learned_model(body, fields)
        except ValueError as error:  # what the API server stored always loads; a defect is logged, not raised
            logger.warning("%s: cannot evaluate its learned values: %s", found.key, error)
            return
        changes: list[Change] = []
        for index, _ in enumerate(moved_steps(catalog, learned, self._lookup, changes)):
            if index % _STEPS_PER_YIELD == _STEPS_PER_YIELD - 1:
                await asyncio.sleep(0)  # the event loop is never held for long (SPEC §8)
        lost = stranded(catalog, learned, changes)
        if not lost:
            self._warned.pop(found.key, None)
            return
        message = strands_message(lost, ", ".join(describe_fill(fields, metadata)))
        if self._warned.get(found.key) == message:
            return
        self._warned[found.key] = message
        logger.warning("%s: %s", found.key, message, extra=log_fields(found.key, reason=STRANDS))
        await self._events.record_event(
            found.involved, kind=found.key.kind, type_="Warning", reason=STRANDS, message=message
        )

    async def _failed(self, found: Candidate, reason: str, failed: str) -> None:
        """Record a failure (SPEC §10.5): the log line, ``result="failed"``, the next attempt on the schedule
        and the Warning event, whose message starts with ``failed`` (what could not be done)."""
        key = found.key
        loop = asyncio.get_running_loop()
        reason = escape_controls(reason)
        delay = self.schedule.failed(key, loop.time())
        self.results.labels("failed").inc()
        logger.warning(
            "%s: cannot learn its metadata (attempt %d): %s; next attempt in %s",
            key,
            self.schedule.failures(key),
            reason,
            _duration(delay),
            extra=log_fields(key, reason=UNAVAILABLE),
        )
        self._request(key)
        next_attempt = f"; next attempt in {_duration(delay)}"
        # The reason is cut so that the whole message stays within SPEC §5's 1,024 characters.
        message = truncate(f"{failed}: {reason}", 1024 - len(next_attempt)) + next_attempt
        await self._events.record_event(
            found.involved, kind=key.kind, type_="Warning", reason=UNAVAILABLE, message=message
        )
