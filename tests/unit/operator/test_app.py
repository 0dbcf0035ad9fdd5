"""The operator's composition of the webhook: only when configured, on its own registry, ready with it."""

from __future__ import annotations

import asyncio

from ome_selector.operator.app import Operator, OperatorConfig
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
