"""Asking every running service instance at once (NATS micro discovery, ``$SRV.STATS``:
each instance answers, runtime/processes/observe.py) and reading its answer: its
instance, readiness and key counters.  ``studroom health`` prints them, the console's
desk charts them (services/console/desk.py).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from ..runtime.observability.metrics import flat_name

SHOWN_GAUGES = ("projection_lag_events", "relay_backlog_events", "table_partitions")


async def ask_all(nc: Any, subject: str, wait: float) -> list[dict[str, Any]]:
    """Every answer to one request on ``subject`` within ``wait`` seconds."""
    answers: list[dict[str, Any]] = []

    async def collect(msg: Any) -> None:
        try:
            answers.append(json.loads(msg.data))
        except ValueError:
            pass

    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, cb=collect)
    try:
        await nc.publish(subject, b"", reply=inbox)
        await asyncio.sleep(wait)
    finally:
        await sub.unsubscribe()
    return answers


def key_counters(stats: dict[str, Any]) -> dict[str, float]:
    """An instance's counters and its lag or backlog, from its ``$SRV.STATS`` answer."""
    readings: dict[str, float] = {}
    for endpoint in stats.get("endpoints") or []:
        readings |= endpoint.get("data") or {}
    return {flat_name(name).replace("_total", ""): value for name, value in readings.items()
            if ("_total" in name or name.startswith(SHOWN_GAUGES)) and (value or not name.startswith("door_"))}


def readiness(stats: dict[str, Any]) -> str:
    """``ready``, ``not ready``, or ``?`` (an instance that does not say: an older version)."""
    said = [endpoint["data"]["ready"] for endpoint in stats.get("endpoints") or []
            if "ready" in (endpoint.get("data") or {})]
    return "?" if not said else "ready" if all(said) else "not ready"


def instance(stats: dict[str, Any]) -> str:
    return f'{stats["name"].removeprefix("studroom-")} {stats.get("metadata", {}).get("instance", stats["id"])}'


def started_at(stats: dict[str, Any]) -> datetime:
    """When the instance started, as its answer says (KeyError, ValueError: it does not)."""
    return datetime.strptime(stats["started"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
