"""The operator's composition of the webhook: only when configured, on its own registry, ready with it; the
Kopf settings and memories."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf

from ome_selector.kube.objects import PAGE_SIZE
from ome_selector.operator.app import (
    KOPF_IDLE_WORKER_SECONDS,
    ForgetfulMemories,
    Operator,
    OperatorConfig,
    configure_settings,
)
from ome_selector.operator.controller import Controller
from ome_selector.operator.metrics import Metrics
from ome_selector.webhook.config import WebhookConfig


def test_no_webhook_without_config() -> None:
    operator = Operator(OperatorConfig(health_address=None))
    assert operator.admission is None
    assert operator.webhook is None
    assert operator.registry._webhooks.get_all_handlers() == []


def test_the_webhook_sees_the_catalog_once_the_first_listing_is_indexed() -> None:
    operator = Operator(OperatorConfig(health_address=None, webhook=WebhookConfig()))
    assert operator.admission is not None
    assert operator.webhook is not None
    assert len(operator.registry._webhooks.get_all_handlers()) == 5
    assert not operator.admission.ready

    async def start() -> Controller:
        controller = Controller(None, Metrics(), report_only=True)
        operator.controller = controller
        assert operator.indexed_catalog() is None  # listed, not yet marked ready
        controller.mark_ready()
        return controller

    controller = asyncio.run(start())
    assert operator.indexed_catalog() is controller.catalog
    assert operator.admission.ready


def test_kopf_lists_in_pages_and_lets_idle_object_workers_go() -> None:
    settings = kopf.OperatorSettings()
    configure_settings(settings, OperatorConfig(health_address=None))
    # Memory at scale: one page of Kopf's listing alive at a time, no task kept per quiet object.
    assert settings.watching.chunk_size == PAGE_SIZE
    assert settings.queueing.idle_timeout == KOPF_IDLE_WORKER_SECONDS < 1
    assert settings.posting.enabled is False
    assert settings.scanning.disabled is True


def test_kopf_keeps_no_memory_of_an_object_between_its_events() -> None:
    memories = ForgetfulMemories()
    body: kopf.RawBody = {"metadata": {"uid": "u1", "name": "svc", "namespace": "ns"}}

    async def twice() -> tuple[Any, Any]:
        first = await memories.recall(body, noticed_by_listing=True)
        return first, await memories.recall(body)

    first, second = asyncio.run(twice())
    assert first is not second
    assert first.noticed_by_listing  # what Kopf asks for is still passed on
    assert list(memories.iter_all_memories()) == []
