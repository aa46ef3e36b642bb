"""Observability during a room run: the room's services as child processes (every
one: table, relay, timer, cashier, lobby, history, ledger) under NATS authorization,
bots playing; an operator's ``$SRV.PING``/``$SRV.INFO``/``$SRV.STATS`` reach every
service, each answers with counters that moved, each serves its metrics and
``/healthz`` on 127.0.0.1, the health endpoint answers, and ``studroom health``'s
table lists them all."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from studroom.services.auth.authority import Authority
from studroom.services.room.bots import Room
from studroom.services.room.plans import plan_tables, table_ids
from studroom.services.runtime.processes import process
from studroom.services.cli.health import ask_all, table_text
from studroom.services.runtime.settings import METRICS_PORT_VAR, Settings
from studroom.services.runtime.processes.supervisor import Services, child_env
from studroom.services.wire import subjects

pytestmark = pytest.mark.integration

SERVICES = ("table", "relay", "timer", "cashier", "lobby", "history", "ledger")
# Each service's counter that must have moved once bots have played a few hands.
MOVED = {"table": "commands", "relay": "relay_events", "timer": "timer_turns_seen", "cashier": "cashier_requests",
         "lobby": "lobby_applied", "history": "history_projected", "ledger": "ledger_booked"}
LAGS = ("ledger", "history", "lobby", "cashier")
HANDS = 10
PLAY_AT_MOST = 15.0


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the first sample ``name`` having ``labels`` in a Prometheus text."""
    for line in text.splitlines():
        if line.startswith((name + "{", name + " ")) and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


async def _until(check: Any, seconds: float, what: Any) -> Any:
    """``check()``'s first true result within ``seconds``; else fail, saying ``what()``."""
    deadline = time.monotonic() + seconds
    while True:
        result = await check()
        if result or time.monotonic() > deadline:
            assert result, what()
            return result
        await asyncio.sleep(0.5)


class Observer:
    """An operator's view of the room's services (those of ``pids``: our children)."""

    def __init__(self, nc: Any, pids: set[str]) -> None:
        self.nc, self.pids = nc, pids

    async def ask(self, verb: str) -> dict[str, dict[str, Any]]:
        """Each of our services' answer to ``$SRV.<verb>``, by service."""
        answers = await ask_all(self.nc, f"$SRV.{verb}", 0.5)
        return {a["name"].removeprefix("studroom-"): a for a in answers if a["metadata"].get("pid") in self.pids}

    async def scrape(self, url: str, name: str) -> str | None:
        """``name``'s metrics once its key counter moved (and, where it has one, its lag
        or backlog was polled); None before."""
        status, text = await asyncio.to_thread(_get, url)
        assert status == 200, text
        moved = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                    if line.startswith(f"studroom_{MOVED[name]}_total"))
        lag = name not in LAGS or _sample(text, "studroom_projection_lag_events", projection=name) is not None
        backlog = name != "relay" or _sample(text, "studroom_relay_backlog_events") is not None
        return text if moved > 0 and lag and backlog else None


async def _play_and_observe(nats_url: str, authority: Authority, run: str, pids: set[str]) -> dict[str, Any]:
    ids = table_ids(2, prefix=f"ob{run}t")
    room = Room(nats_url, plan_tables(ids, 3, {}), authority=authority, pace_ms=0, seed=7, record=False)
    nc = await process.connect(nats_url, "studroom-test-observer", creds=authority.ensure("operator", "observer"))
    await room.start()
    try:
        deadline = time.monotonic() + PLAY_AT_MOST
        while room.stats.hands < HANDS and time.monotonic() < deadline:
            await asyncio.sleep(0.25)
        assert room.stats.hands > 0
        observer = Observer(nc, pids)

        answered: set[str] = set()

        async def everyone() -> dict[str, dict[str, Any]] | None:
            pings = await observer.ask("PING")
            answered.update(pings)
            return pings if set(pings) >= set(SERVICES) else None

        seen: dict[str, Any] = {"pings": await _until(everyone, 20, lambda: f"$SRV.PING: only {answered} answered")}
        seen["infos"] = await observer.ask("INFO")
        seen["metrics"] = {}
        for name in SERVICES:
            url = seen["infos"][name]["metadata"]["metrics"]
            seen["metrics"][name] = await _until(lambda n=name, u=url: observer.scrape(u, n), 15,
                                                 lambda n=name: f"{n}: its counter did not move or its lag is missing")
            seen.setdefault("healthz", {})[name] = await asyncio.to_thread(_get, url.replace("/metrics", "/healthz"))
        seen["stats"] = await observer.ask("STATS")
        seen["health"] = json.loads((await nc.request(subjects.health("table", "operator", "observer"), b"", timeout=2)).data)
        return seen
    finally:
        for bot in room.bots:
            bot.pause()
        await room.stop()
        await nc.drain()


def test_every_service_answers_discovery_stats_and_metrics_during_a_room_run(
    settings: Settings, secure_nats_url: str, authority: Authority, database_url: str
) -> None:
    run = uuid.uuid4().hex[:6]
    env = child_env(secure_nats_url, database_url, settings.data_dir) | {METRICS_PORT_VAR: "0"}
    log_dir = Path(tempfile.mkdtemp(prefix="studroom-it-observe-"))
    services = Services(env, log_dir, instances=1, stores=1, timers=True, name=f"ob{run}",
                        schema_prefix=f"ob_{run}_p", authority=authority)
    services.start()
    try:
        pids = {str(proc.pid) for _, proc, _ in services.procs}
        seen = asyncio.run(_play_and_observe(secure_nats_url, authority, run, pids))
        assert not services.dead(), f"a service died: {services.dead()}; logs in {log_dir}"
    finally:
        problems = services.stop()
    assert not problems, problems

    # Discovery: every service, with its instance id and its metrics address.
    assert set(seen["pings"]) == set(seen["infos"]) == set(seen["stats"]) == set(SERVICES)
    assert seen["infos"]["table"]["metadata"]["instance"] == f"ob{run}-1"
    for name, info in seen["infos"].items():
        assert info["metadata"]["metrics"].startswith("http://127.0.0.1:")
        assert [e["subject"] for e in info["endpoints"]] == [subjects.health_asked(name)]

    # $SRV.STATS: the health endpoint's stats carry the readings; every key counter moved.
    for name, stats in seen["stats"].items():
        readings = stats["endpoints"][0]["data"]
        assert readings["up_seconds"] > 0
        assert sum(v for k, v in readings.items() if k.startswith(f"{MOVED[name]}_total")) > 0, (name, readings)
    table = seen["stats"]["table"]["endpoints"][0]["data"]
    assert table["command_seconds_count"] > 0 and table["command_seconds_sum"] > 0

    # Metrics: the command latency histogram, lag of every projection, the relay's backlog.
    metrics = seen["metrics"]
    assert _sample(metrics["table"], "studroom_command_seconds_bucket", le="+Inf") == \
        _sample(metrics["table"], "studroom_command_seconds_count")
    assert _sample(metrics["table"], "studroom_commands_total", service="table", instance=f"ob{run}-1") > 0
    for name in LAGS:
        assert _sample(metrics[name], "studroom_projection_lag_events", projection=name) >= 0

    # Health: the endpoint over NATS and /healthz over HTTP.
    assert seen["health"]["ok"] is True and seen["health"]["service"] == "table"
    for name, (status, body) in seen["healthz"].items():
        assert status == 200 and json.loads(body)["ok"] is True, (name, body)

    # studroom health's table: a row for each.
    text = table_text(list(seen["stats"].values()), datetime.now(UTC))
    assert len(text.splitlines()) == 2 + len(SERVICES) and f"ob{run}-1" in text      # header, rule, rows
    print(text)
    shutil.rmtree(log_dir, ignore_errors=True)
