"""Stopping background tasks: cancel them all first, then wait for each, so they wind down together."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(tasks: Collection[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
