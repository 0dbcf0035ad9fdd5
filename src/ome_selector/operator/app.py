"""Kopf wiring: thin registrations that hand watch events to the controller, and the operator's lifecycle.

Only `@kopf.on.event` is used on the five ome.io kinds: unlike change handlers, it writes no annotations,
finalizers or progress onto the watched objects, which belong to OME and its users.

Level-triggered (SPEC §5): a resync lists everything, reconciles the mirror's catalog with it and evaluates
every InferenceService against its stored condition; :class:`~ome_selector.operator.mirror.Resyncs` says
when (periodically, and after each listing Kopf starts).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ome_selector.api.resources import API_GROUP, API_VERSION, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.kube.connection import ClusterAccess, credentials
from ome_selector.kube.leaderelection import ApiLeaseStore, LeaderElector, LeaseTimings, default_identity
from ome_selector.kube.objects import ALL_KINDS, Objects, Page
from ome_selector.operator.controller import Controller
from ome_selector.operator.kopfwiring import (
    ForgetfulMemories,
    cancel_orphaned_pause_waiters,
    configure_settings,
    kopf_connection,
    observe_ended_streams,
    observe_listings,
    restart_ended_streams,
    resume_expired_listings,
)
from ome_selector.operator.learning import LearningConfig, ModelMetadataLearner
from ome_selector.operator.looplag import watch_loop_lag
from ome_selector.operator.metrics import Metrics
from ome_selector.operator.mirror import Resyncs
from ome_selector.operator.signals import DRAIN_SIGNAL
from ome_selector.operator.tasks import cancel_and_wait
from ome_selector.operator.writer import ApiWriter
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.webhook.admission import AdmissionHandlers
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.confirming import DirectReader
from ome_selector.webhook.impact import CatalogReviewMetrics
from ome_selector.webhook.server import WebhookServer

logger = logging.getLogger(__name__)

_KINDS_BY_PLURAL = {kind.plural: kind.value for kind in ALL_KINDS}
#: A kind whose watch stream ended and was not listed again within this long makes the replica not ready
#: (SPEC §5 "Watch streams that end"): its memory of that kind may be stale.
WATCH_RESTART_SECONDS = 5.0


@dataclass(frozen=True)
class LeaderElectionConfig:
    """The Lease that decides which replica writes (SPEC §8): ``<namespace>/<name>``."""

    namespace: str
    name: str = "ome-selector"
    timings: LeaseTimings = field(default_factory=LeaseTimings)
    identity: str = field(default_factory=default_identity)


@dataclass
class OperatorConfig:
    namespaces: Sequence[str] | None = None  # None: all namespaces
    report_only: bool = False
    workers: int = 4
    resync_seconds: float = 600.0
    kubeconfig: Path | None = None
    context: str | None = None
    health_address: tuple[str, int] | None = ("0.0.0.0", 8080)
    instance: str = field(default_factory=lambda: os.environ.get("POD_NAME") or socket.gethostname())
    webhook: WebhookConfig | None = None  # None: no admission webhook (ome_selector.webhook, SPEC §7)
    leader_election: LeaderElectionConfig | None = None  # None: this one process writes (local mode)
    model_metadata: LearningConfig | None = None  # None: learn no model metadata (SPEC §10, opt-in)
    runtime_lookup: RuntimeLookup = RuntimeLookup.V1_3  # SPEC §1: how a named runtime is found


class Operator:
    """One operator instance: its registry, controller and background tasks."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.access = ClusterAccess(
            config.kubeconfig, config.context, observer=self.metrics.observe_api_request
        )
        self.registry = kopf.OperatorRegistry()
        self.controller: Controller | None = None
        self.learner: ModelMetadataLearner | None = None
        self._api_client: Any = None
        self._objects: Objects | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._health_runner: web.AppRunner | None = None
        self.elector: LeaderElector | None = None
        self._election: asyncio.Task[None] | None = None
        self.stopping = False  # set on shutdown: readiness turns false before anything stops serving
        self._resync_lock = asyncio.Lock()
        # When to resync (after each listing Kopf starts, periodically); self.resync is looked up each time.
        self.resync_schedule = Resyncs(
            lambda *, evaluate: self.resync(evaluate=evaluate),
            on_failure=lambda: self.metrics.api_errors.labels("list").inc(),
        )
        #: Kinds (plural) whose Kopf watch stream ended and has not listed them again: since when, and why.
        self.ended_streams: dict[str, tuple[float, str]] = {}
        #: How many resyncs ran since start (tests wait for one).
        self.resyncs = 0
        self._register()
        # The admission webhook (SPEC §7), when configured: its handlers on this registry, and its server.
        self.admission: AdmissionHandlers | None = None
        self.webhook: WebhookServer | None = None
        if config.webhook is not None:
            self.admission = AdmissionHandlers(
                config.webhook,
                catalog=self.indexed_catalog,
                reader=DirectReader(),
                review_metrics=CatalogReviewMetrics(self.metrics.registry),  # SPEC §12
                report_only=config.report_only,
                runtime_lookup=config.runtime_lookup,
            )
            self.admission.register(self.registry)
            self.webhook = WebhookServer(
                config.webhook,
                self.admission,
                access=self.access,
                latency=self.metrics.admission_seconds,
                malformed=self.metrics.admission_malformed,
                namespaces=config.namespaces,
                in_flight=self.metrics.webhook_in_flight,
                on_certificate=self.metrics.set_certificate_expiry,
            )

    def _register(self) -> None:
        registry = self.registry
        for kind in ALL_KINDS:
            kopf.on.event(API_GROUP, API_VERSION, kind.plural, id=f"watch-{kind.plural}", registry=registry)(
                self._on_event
            )
        kopf.on.login(registry=registry)(self._login)
        kopf.on.startup(registry=registry)(self._startup)
        kopf.on.cleanup(registry=registry)(self._cleanup)

    def indexed_catalog(self) -> Catalog | None:
        """The live catalog once the first full listing is in it; None while starting."""
        controller = self.controller
        return controller.catalog if controller is not None and controller.ready.is_set() else None

    async def _login(self, **_: Any) -> kopf.ConnectionInfo:
        return kopf_connection(credentials(await self.access.configuration()))

    async def _on_event(self, event: kopf.RawEvent, **_: Any) -> None:
        controller = self.controller
        if controller is None:
            return
        taken = controller.mirror.on_watch_event(event["object"], deleted=event["type"] == "DELETED")
        if self.learner is not None and taken:  # an outdated event is one for neither
            (self.learner.forget if event["type"] == "DELETED" else self.learner.observe)(event["object"])
        if event["type"] is None:  # Kopf is listing: at start, or after a gap in the watch
            self.resync_schedule.listing_seen(str(event["object"].get("kind")))

    def _kopf_listed(self, plural: str) -> None:
        """Kopf read the first page of a listing: a relist after a watch gap, even of a kind that has become
        empty, whose listing hands no event to :meth:`_on_event` (SPEC §5)."""
        kind = _KINDS_BY_PLURAL.get(plural)
        if kind is not None:
            ended = self.ended_streams.pop(plural, None)
            if ended is not None:
                self.metrics.watch_ended.labels(kind).set(0)
                logger.info("the watch of %s is back: it listed them again", plural)
            self.resync_schedule.listing_seen(kind)

    def _stream_ended(self, plural: str, reason: str) -> None:
        """One of Kopf's watch streams ended where Kopf would have given it up; it is being listed again
        (SPEC §5 "Watch streams that end"). Counted once per end, until a listing of the kind is read."""
        kind = _KINDS_BY_PLURAL.get(plural, "other")
        if plural in self.ended_streams:
            return
        self.ended_streams[plural] = (time.monotonic(), reason)
        self.metrics.watch_restarts.labels(kind, reason).inc()
        self.metrics.watch_ended.labels(kind).set(1)
        logger.warning("the watch of %s ended (%s): starting it again with a listing", plural, reason)

    async def _startup(self, settings: kopf.OperatorSettings, **_: Any) -> None:
        configure_settings(settings)
        observe_listings(self._kopf_listed)
        observe_ended_streams(self._stream_ended)
        self._api_client = await self.access.api_client()
        objects = self._objects = Objects(self._api_client)
        election = self.config.leader_election
        if election is not None and not self.config.report_only:
            # Report-only writes nothing, so it needs no leader (and no Lease RBAC).
            self.elector = LeaderElector(
                ApiLeaseStore(self._api_client, election.namespace, election.name),
                election.identity,
                election.timings,
                on_started_leading=self._started_leading,
                on_stopped_leading=self._stopped_leading,
            )
        writer = (
            None
            if self.config.report_only
            else ApiWriter(
                objects,
                self.metrics,
                instance=self.config.instance,
                may_write=self.elector.may_write if self.elector is not None else _always,
            )
        )
        controller = Controller(
            writer,
            self.metrics,
            report_only=self.config.report_only,
            workers=self.config.workers,
            runtime_lookup=self.config.runtime_lookup,
        )
        if self.config.model_metadata is not None and writer is not None:
            self.learner = ModelMetadataLearner(
                objects,
                self.metrics,
                self.config.model_metadata,
                instance=self.config.instance,
                may_write=writer.may_write,
                catalog=self.indexed_catalog,
                runtime_lookup=self.config.runtime_lookup,
            )
        elif self.config.model_metadata is not None:
            logger.warning("report-only: model metadata is not learned (that would write)")
        # Decide nothing before every model and runtime is known: one full listing first.
        count, version = await self._list_into(objects, controller)
        # The catalog is long-lived: keep the collector from re-scanning it on every full collection.
        gc.freeze()
        self.controller = controller
        self.metrics.catalog_counts = controller.catalog.counts
        controller.start()
        controller.mark_ready()
        if self.learner is not None:
            self.learner.start()
        logger.info(
            "indexed %d objects at resourceVersion %s; %s",
            count,
            version,
            "report-only: no writes, no events" if self.config.report_only else "writing RuntimeReady",
        )
        periodic = self.resync_schedule.forever(self.config.resync_seconds)
        self._tasks.append(asyncio.create_task(periodic, name="resync"))
        lag = watch_loop_lag(self.metrics.loop_lag, computed=self.metrics.loop_lag_cpu)
        self._tasks.append(asyncio.create_task(lag, name="loop-lag"))
        if self.elector is not None:
            self._election = asyncio.create_task(self.elector.run(), name="leader-election")
        else:
            self.metrics.leader.set(0 if self.config.report_only else 1)
        if self.config.health_address is not None:
            await self._serve_health(*self.config.health_address)

    def _started_leading(self) -> None:
        logger.info(
            "leading as %s: writing RuntimeReady conditions and events",
            self.elector and self.elector.identity,
        )
        self.metrics.leader.set(1)
        if self.controller is not None:
            self.controller.evaluate_all()
        if self.learner is not None:
            self.learner.learn_all()

    def _stopped_leading(self) -> None:
        logger.info("not leading: evaluating for the webhook and metrics only")
        self.metrics.leader.set(0)
        if self.controller is not None:
            self.controller.forget_writes()

    async def resync(self, *, evaluate: bool = True) -> None:
        """One full listing reconciled into the catalog, then (``evaluate``) every InferenceService evaluated
        against its stored condition (a missing or differing one is written, SPEC §5)."""
        objects, controller = self._objects, self.controller
        if objects is None or controller is None:
            return  # not started: the startup listing is still to come
        async with self._resync_lock:
            started = asyncio.get_running_loop().time()
            count, version = await self._list_into(objects, controller)
            self.metrics.resync_seconds.observe(asyncio.get_running_loop().time() - started)
            if evaluate:
                controller.evaluate_all()
            self.resyncs += 1
            logger.debug("resynced %d objects at resourceVersion %s", count, version)

    async def _list_into(self, objects: Objects, controller: Controller) -> tuple[int, str | None]:
        """One full listing (streamed from the apiserver's watch cache where it can) reconciled into the
        controller's catalog and shown to the learner, a page at a time: at 10,000 InferenceServices all the
        bodies at once would be the operator's largest allocation. Returns how many objects were listed, and
        the resourceVersion of the last kind read."""
        learner = self.learner
        listed_models: set[ObjectKey] = set()
        count, version = 0, None

        async def pages() -> AsyncIterator[Page]:
            nonlocal count, version
            async for page in objects.stream_pages(namespaces=self.config.namespaces):
                count, version = count + len(page.bodies), page.resource_version
                yield page
                if learner is not None:
                    listed_models.update(learner.observe_listed(page.bodies))

        controller.mirror.begin_listing()
        await controller.mirror.reconcile(pages())
        if learner is not None:
            learner.forget_unlisted(listed_models)  # only after the whole listing: it names every model
        return count, version

    def drain(self) -> None:
        """Get ready to stop (SIGUSR1, sent by ``ome-selector drain`` as the pod's preStop hook): not ready
        from now on, and each webhook answer closes its connection, so that by the time the listener closes
        the apiserver holds no connection to it. Everything else goes on until the stop."""
        if not self.stopping:
            logger.info("draining: not ready, and each webhook connection closes after its answer")
        self.stopping = True
        if self.webhook is not None:
            self.webhook.draining = True

    def waiting_for(self) -> str | None:
        """What keeps this replica from being ready (/readyz), or None when it is ready.

        Ready means: the first full listing is indexed, with a webhook the server listens and the
        configuration carries the CA it serves with, and no kind's watch has been ended for
        WATCH_RESTART_SECONDS without being listed again (SPEC §5 "Watch streams that end"). A stopping
        replica is not ready (SPEC §8), so its endpoint leaves the Service before anything stops serving.
        """
        if self.stopping:
            return "stopping"
        if self.controller is None or not self.controller.ready.is_set():
            return "starting"
        if self.webhook is not None and not self.webhook.registered.is_set():
            return "webhook not registered yet"
        now = time.monotonic()
        for plural, (since, reason) in sorted(self.ended_streams.items()):
            if now - since >= WATCH_RESTART_SECONDS:
                return f"the watch of {plural} ended ({reason}) and could not be started again"
        return None

    async def _serve_health(self, host: str, port: int) -> None:
        async def healthz(_: web.Request) -> web.Response:
            ready = self.controller is not None and self.controller.ready.is_set()
            return web.Response(status=200 if ready else 503, text="ok" if ready else "starting")

        async def readyz(_: web.Request) -> web.Response:
            waiting = self.waiting_for()
            return web.Response(status=503 if waiting else 200, text=waiting or "ok")

        async def metrics(_: web.Request) -> web.Response:
            return web.Response(
                body=generate_latest(self.metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
            )

        app = web.Application()
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/readyz", readyz)
        app.router.add_get("/metrics", metrics)
        self._health_runner = web.AppRunner(app, access_log=None)
        await self._health_runner.setup()
        await web.TCPSite(self._health_runner, host, port).start()

    async def _cleanup(self, **_: Any) -> None:
        # Readiness first, then the Lease: a leader stops writing and hands over before anything else stops,
        # but first records the events of the conditions it has written (while it may still write).
        self.stopping = True
        if self.controller is not None:
            await self.controller.finish_writes()
        if self._election is not None:
            await cancel_and_wait([self._election])
        relist = self.resync_schedule.task
        await cancel_and_wait([*self._tasks, *([relist] if relist is not None else [])])
        if self.controller is not None:
            await self.controller.stop()
        if self.learner is not None:
            await self.learner.stop()
        if self._health_runner is not None:
            await self._health_runner.cleanup()
        if self._api_client is not None:
            await self._api_client.close()
        cancel_orphaned_pause_waiters()

    async def run(self, stop_flag: asyncio.Event | None = None) -> None:
        resume_expired_listings()
        restart_ended_streams()
        settings = kopf.OperatorSettings()
        configure_settings(settings)
        if self.webhook is not None:
            self.webhook.configure(settings)
        namespaces = list(self.config.namespaces) if self.config.namespaces is not None else []
        loop = asyncio.get_running_loop()
        # Signals reach only the main thread (an operator in a test's thread is drained by calling drain()).
        draining_on_signal = threading.current_thread() is threading.main_thread()
        if draining_on_signal:
            loop.add_signal_handler(DRAIN_SIGNAL, self.drain)
        try:
            await kopf.operator(
                registry=self.registry,
                settings=settings,
                clusterwide=self.config.namespaces is None,
                namespaces=namespaces,
                standalone=True,
                stop_flag=stop_flag,
                memories=ForgetfulMemories(),
            )
        finally:
            if draining_on_signal:
                loop.remove_signal_handler(DRAIN_SIGNAL)


def _always() -> bool:
    return True
