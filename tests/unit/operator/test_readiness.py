"""/readyz: ready once the catalog is indexed and, with a webhook, once the webhook is registered (its server
listens and its configuration carries the CA), and not ready again once stopping (SPEC §8). /healthz
(liveness, startup) waits for the catalog only."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import aiohttp

from ome_selector.operator.app import WATCH_RESTART_SECONDS, Operator, OperatorConfig
from ome_selector.webhook.config import WebhookConfig


class _Controller:
    def __init__(self) -> None:
        self.ready = asyncio.Event()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _get(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as response:
        return response.status, await response.text()


def _probe(operator: Operator, steps: list[Any]) -> list[tuple[tuple[int, str], tuple[int, str]]]:
    """(/healthz, /readyz) after each step (a callable changing the operator's state)."""

    async def run() -> list[tuple[tuple[int, str], tuple[int, str]]]:
        port = _free_port()
        await operator._serve_health("127.0.0.1", port)
        seen = []
        try:
            for step in steps:
                step()
                seen.append((await _get(port, "/healthz"), await _get(port, "/readyz")))
        finally:
            assert operator._health_runner is not None
            await operator._health_runner.cleanup()
        return seen

    return asyncio.run(run())


def test_without_a_webhook_ready_means_indexed() -> None:
    operator = Operator(OperatorConfig(health_address=None))
    controller = _Controller()
    operator.controller = controller  # type: ignore[assignment]
    assert _probe(operator, [lambda: None, controller.ready.set]) == [
        ((503, "starting"), (503, "starting")),
        ((200, "ok"), (200, "ok")),
    ]


def test_with_a_webhook_ready_waits_for_its_registration() -> None:
    operator = Operator(OperatorConfig(health_address=None, webhook=WebhookConfig()))
    assert operator.webhook is not None
    registered = operator.webhook.registered
    controller = _Controller()
    operator.controller = controller  # type: ignore[assignment]
    assert _probe(operator, [lambda: None, controller.ready.set, registered.set, registered.clear]) == [
        ((503, "starting"), (503, "starting")),
        ((200, "ok"), (503, "webhook not registered yet")),
        ((200, "ok"), (200, "ok")),
        ((200, "ok"), (503, "webhook not registered yet")),
    ]


def test_a_stopping_replica_turns_not_ready_but_stays_alive() -> None:
    operator = Operator(OperatorConfig(health_address=None))
    controller = _Controller()
    operator.controller = controller  # type: ignore[assignment]
    controller.ready.set()

    def stop() -> None:
        operator.stopping = True

    assert _probe(operator, [lambda: None, stop]) == [
        ((200, "ok"), (200, "ok")),
        ((200, "ok"), (503, "stopping")),
    ]


def test_a_watch_that_ended_and_is_not_listed_again_makes_it_not_ready() -> None:
    """SPEC §5 "Watch streams that end": not ready once a kind's watch has been ended for a few seconds
    without a listing; counted once per end; ready again at the kind's next listing."""
    operator = Operator(OperatorConfig(health_address=None))
    controller = _Controller()
    controller.ready.set()
    operator.controller = controller  # type: ignore[assignment]
    operator.resync_schedule.listing_seen = lambda kind: None  # type: ignore[method-assign]  # no resync here
    not_ready = "the watch of clusterbasemodels ended (not_found) and could not be started again"

    def later(seconds: float) -> Any:
        def step() -> None:  # the end happened that much earlier
            for plural, (since, reason) in operator.ended_streams.items():
                operator.ended_streams[plural] = (since - seconds, reason)

        return step

    steps = [
        lambda: operator._stream_ended("clusterbasemodels", "not_found"),
        later(WATCH_RESTART_SECONDS - 1),
        later(1),
        lambda: operator._stream_ended("clusterbasemodels", "listing_failed"),  # its restart failing
        lambda: operator._kopf_listed("clusterbasemodels"),
    ]
    assert [ready for _, ready in _probe(operator, steps)] == [
        (200, "ok"),
        (200, "ok"),
        (503, not_ready),
        (503, not_ready),
        (200, "ok"),
    ]
    sample = operator.metrics.registry.get_sample_value
    restarts = {"kind": "ClusterBaseModel", "reason": "not_found"}
    assert sample("ome_selector_watch_restarts_total", restarts) == 1.0
    assert sample("ome_selector_watch_restarts_total", restarts | {"reason": "listing_failed"}) is None
    assert sample("ome_selector_watch_ended", {"kind": "ClusterBaseModel"}) == 0.0
