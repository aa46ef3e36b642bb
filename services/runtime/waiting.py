"""Waiting on several asyncio events at once (a listener's wake and its stop, ...)."""

from __future__ import annotations

import asyncio


async def first_set(*events: asyncio.Event, timeout: float | None = None) -> None:
    """Until one of ``events`` is set, at most ``timeout`` seconds (None: no limit)."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
