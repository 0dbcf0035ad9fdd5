"""Kopf wiring: thin registrations that hand watch events to the controller, and the operator's lifecycle.

Only `@kopf.on.event` is used on the five ome.io kinds: unlike change handlers, it writes no annotations,
finalizers or progress onto the watched objects (FIELD-NOTES §1.2), which belong to OME and its users.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ome_selector.operator.connection import ClusterAccess, kopf_connection
from ome_selector.operator.controller import Controller
from ome_selector.operator.listing import ALL_KINDS, GROUP, VERSION, list_objects
from ome_selector.operator.metrics import Metrics
from ome_selector.operator.writer import ApiWriter
from ome_selector.webhook.admission import configure_admission, register_admission
from ome_selector.webhook.config import WebhookConfig

logger = logging.getLogger(__name__)


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
    webhook: WebhookConfig | None = None  # None: no admission webhook (issue 7, ome_selector.webhook)


class Operator:
    """One operator instance: its registry, controller and background tasks."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.access = ClusterAccess(config.kubeconfig, config.context)
        self.metrics = Metrics()
        self.registry = kopf.OperatorRegistry()
        self.controller: Controller | None = None
        self._api_client: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._health_runner: web.AppRunner | None = None
        self._register()
        self.admission = register_admission(self)  # webhook handlers; None without config.webhook

    def _register(self) -> None:
        registry = self.registry
        for kind in ALL_KINDS:
            kopf.on.event(GROUP, VERSION, kind.plural, id=f"watch-{kind.plural}", registry=registry)(
                self._on_event
            )
        kopf.on.login(registry=registry)(self._login)
        kopf.on.startup(registry=registry)(self._startup)
        kopf.on.cleanup(registry=registry)(self._cleanup)

    async def _login(self, **_: Any) -> kopf.ConnectionInfo:
        return kopf_connection(await self.access.configuration())

    async def _on_event(self, event: kopf.RawEvent, **_: Any) -> None:
        controller = self.controller
        if controller is None:
            return
        body = event["object"]
        if event["type"] == "DELETED":
            controller.forget(body)
        else:
            controller.observe(body)

    async def _startup(self, settings: kopf.OperatorSettings, **_: Any) -> None:
        configure_settings(settings, self.config)
        self._api_client = await self.access.api_client()
        writer = (
            None
            if self.config.report_only
            else ApiWriter(self._api_client, self.metrics, instance=self.config.instance)
        )
        controller = Controller(
            writer, self.metrics, report_only=self.config.report_only, workers=self.config.workers
        )
        # Decide nothing before every model and runtime is known: one consistent listing first.
        snapshot = await list_objects(self._api_client, namespaces=self.config.namespaces)
        controller.replace_all(snapshot.bodies)
        # The catalog is long-lived: keep the collector from re-scanning it on every full collection.
        gc.freeze()
        self.controller = controller
        controller.start()
        controller.mark_ready()
        logger.info(
            "indexed %d objects at resourceVersion %s; %s",
            len(snapshot.bodies),
            snapshot.resource_version,
            "report-only: no writes, no events" if self.config.report_only else "writing RuntimeReady",
        )
        self._tasks.append(asyncio.create_task(self._resync_forever(), name="resync"))
        if self.config.health_address is not None:
            await self._serve_health(*self.config.health_address)

    async def _resync_forever(self) -> None:
        """A periodic full listing closes any gap in the watch (a deletion missed around a restart)."""
        while True:
            await asyncio.sleep(self.config.resync_seconds)
            try:
                await self.resync()
            except Exception as error:  # the next resync tries again
                self.metrics.api_errors.labels("list").inc()
                logger.warning("resync listing failed: %s", error)

    async def resync(self) -> None:
        """One full listing reconciled into the catalog; only what changed is re-evaluated."""
        snapshot = await list_objects(self._api_client, namespaces=self.config.namespaces)
        if self.controller is not None:
            self.controller.replace_all(snapshot.bodies)

    def waiting_for(self) -> str | None:
        """What the operator still waits for before it is ready to serve (/readyz), or None when ready.

        With a webhook, ready also means that the webhook listens and its configuration carries the CA it
        serves with: the chart's Service routes to the pod before it is ready (publishNotReadyAddresses), so
        readiness, and `helm install --wait` with it, then waits for nothing but the webhook itself.
        """
        if self.controller is None or not self.controller.ready.is_set():
            return "starting"
        if self.admission is not None and not self.admission.registered.is_set():
            return "webhook not registered yet"
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
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.controller is not None:
            await self.controller.stop()
        if self._health_runner is not None:
            await self._health_runner.cleanup()
        if self._api_client is not None:
            await self._api_client.close()

    async def run(self, stop_flag: asyncio.Event | None = None) -> None:
        settings = kopf.OperatorSettings()
        configure_settings(settings, self.config)
        configure_admission(settings, self.admission)
        namespaces = list(self.config.namespaces) if self.config.namespaces is not None else []
        await kopf.operator(
            registry=self.registry,
            settings=settings,
            clusterwide=self.config.namespaces is None,
            namespaces=namespaces,
            standalone=True,
            stop_flag=stop_flag,
        )


def configure_settings(settings: kopf.OperatorSettings, config: OperatorConfig) -> None:
    # Our events are recorded by the writer, once per changing write; Kopf's poster has no de-duplication.
    settings.posting.enabled = False
    # Kopf needs no CRD or namespace watching for a fixed set of kinds and namespaces (least privilege).
    settings.scanning.disabled = True
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.networking.request_timeout = 60
