"""Issue 16's door on a secure room: every responder (table service, cashier, lobby,
history, health) answers only on the asker's own inbox, and one player's flood is
refused ``rate_limited`` while the room plays on.

The shared room (tests/live_room.py: the services as child processes, as `studroom
room` runs them, on a server in operator mode), and bots of this module's own at two
tables.  A spy of the test's own (may subscribe to everything, publish nothing) sees
every message on the hostile reply subjects.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from live_room import LiveRoom
from studroom.projections.history.protocol import Hands
from studroom.projections.history.protocol import encode as encode_history
from studroom.services.wire.subjects import LOBBY_BUCKET
from studroom.services.auth import jwt
from studroom.services.auth.authority import Authority
from studroom.services.wire.cashier_protocol import Balance, encode
from studroom.services.room.bots import Room
from studroom.services.room.plans import plan_tables
from studroom.services.runtime.processes import process
from studroom.services.cli.health import ask_all
from studroom.services.wire.subjects import LEASE_BUCKET
from studroom.services.wire import protocol, subjects
from studroom.services.wire.partitioning import partition_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

T = TypeVar("T")
RUN = uuid.uuid4().hex[:6]
MAL, BOSS = f"mal{RUN}", f"boss{RUN}"      # the hostile player, a hostile operator
ANSWER = b'{"ok'                         # how every responder's answer begins


class DoorRoom:
    """The bots and the test's connections on an event loop of its own thread (the tests call in)."""

    def __init__(self, url: str, authority: Authority, tables: list[str], folder: Path) -> None:
        self.url, self.authority, self.tables = url, authority, tables
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.room = Room(url, plan_tables(tables, 3, {}), authority=authority, pace_ms=0, seed=5, record=False)
        token, seed = authority.user("auditor.doorspy", publish=[], subscribe=[">"])
        self.spy_creds = folder / "spy.creds"
        self.spy_creds.write_text(jwt.creds(token, seed))
        self.seen: list[tuple[str, bytes]] = []

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def start(self) -> None:
        self.spy = await process.connect(self.url, "test-door-spy", creds=self.spy_creds)
        self.mal = await process.connect(self.url, "test-mal", creds=self.authority.ensure("player", MAL))
        self.boss = await process.connect(self.url, "test-boss", creds=self.authority.ensure("operator", BOSS))
        self.service = await process.connect(self.url, "test-relay", creds=self.authority.ensure("service", "relay"))
        await self.room.start()

    async def watch(self, subject: str) -> Any:
        async def seen(msg: Any) -> None:
            self.seen.append((msg.subject, msg.data))
        return await self.spy.subscribe(subject, cb=seen)

    async def stop(self) -> None:
        await self.room.stop()
        for nc in (self.spy, self.mal, self.boss, self.service):
            await nc.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def live(live_room: LiveRoom) -> Iterator[DoorRoom]:
    folder = Path(tempfile.mkdtemp(prefix="studroom-it-door-"))
    room = DoorRoom(live_room.url, live_room.authority, live_room.table_ids(f"dr{RUN}t", 2), folder)
    try:
        room.run(room.start())
        yield room
        assert not live_room.dead(), f"a service died: {live_room.dead()}; logs in {live_room.log_dir}"
        room.run(room.stop())
    finally:
        room.close()
        shutil.rmtree(folder, ignore_errors=True)


def requests(table_id: str) -> dict[str, tuple[Any, str, bytes]]:
    """Each responder's request: (connection name, subject, body)."""
    return {
        "table": ("mal", subjects.command_from("player", MAL, table_id), protocol.encode_command(protocol.ViewTable())),
        "cashier": ("mal", subjects.cashier_requests("player", MAL), encode(Balance())),
        "lobby": ("mal", subjects.lobby_query("player", MAL), b""),
        "history": ("mal", subjects.history_requests("player", MAL), encode_history(Hands())),
        "health": ("boss", subjects.health("table", "operator", BOSS), b""),
    }


def hostile_replies(table_id: str) -> list[str]:
    return [f"$KV.{LEASE_BUCKET}.p.{partition_of(table_id)}", f"$KV.{LOBBY_BUCKET}.{table_id}",
            f"$JS.API.STREAM.DELETE.{subjects.PUBLIC_STREAM}", "_INBOX.player.bob.x1",
            f"studroom.svc.{table_id}.timer"]


async def _misdirected(live: DoorRoom) -> int:
    """Every door's misdirected count, from the services' $SRV.STATS."""
    total = 0
    for stats in await ask_all(live.boss, "$SRV.STATS", 1.0):
        for endpoint in stats.get("endpoints") or []:
            total += sum(v for k, v in (endpoint.get("data") or {}).items() if "misdirected" in k)
    return total


def test_replies_only_to_the_askers_own_inbox_at_every_responder(live: DoorRoom) -> None:
    table_id = live.tables[0]

    async def main() -> None:
        hostile = hostile_replies(table_id)
        subs = [await live.watch(subject) for subject in hostile]
        await live.spy.flush()
        misdirected = await _misdirected(live)
        js = live.service.jetstream()
        for responder, (who, subject, body) in requests(table_id).items():
            nc = getattr(live, who)
            answer = await nc.request(subject, body, timeout=5)          # his own inbox: answered
            assert answer.data.startswith(ANSWER), (responder, answer.data[:200])
            for reply in hostile:
                await nc.publish(subject, body, reply=reply)
            await nc.flush()
        await asyncio.sleep(1.0)
        for sub in subs:
            await sub.unsubscribe()
        answers = [(s, d[:80]) for s, d in live.seen if d.startswith(ANSWER)]
        assert answers == [], answers
        assert (await js.stream_info(subjects.PUBLIC_STREAM)).config.name == subjects.PUBLIC_STREAM
        entry = await (await js.key_value(LOBBY_BUCKET)).get(table_id)
        assert not entry.value.startswith(ANSWER)
        counted = await _misdirected(live) - misdirected
        assert counted >= len(requests(table_id)) * len(hostile), counted

    live.run(main())


# The flooder runs in a process of its own (as an attacker would: not on the bots' event
# loop), sends the requests as fast as it may for SECONDS, and prints what came back.
FLOOD = """
import asyncio, json, sys, time
from studroom.services.runtime.processes import process

async def main(url, creds, inbox, seconds, *requests):
    nc = await process.connect(url, "test-flood", creds=creds)
    answers, sent = {}, 0

    async def answered(msg):
        code = "rate_limited" if b'"rate_limited"' in msg.data else "answered"
        answers[code] = answers.get(code, 0) + 1

    await nc.subscribe(inbox, cb=answered)
    pairs = [r.split("=", 1) for r in requests]
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        for subject, body in pairs:
            await nc.publish(subject, body.encode(), reply=inbox)
            sent += 1
        if sent % 30 == 0:
            await asyncio.sleep(0.01)        # at most about 3,000 requests a second
    await nc.flush()
    await asyncio.sleep(1.0)
    await nc.close()
    print(json.dumps({"sent": sent, **answers}))

asyncio.run(main(*sys.argv[1:]))
"""


def test_one_players_flood_is_rate_limited_and_the_room_plays_on(live: DoorRoom) -> None:
    table_id = live.tables[0]
    quiet_s = flood_s = 4.0

    async def actions_per_second(seconds: float) -> float:
        before = live.room.stats.actions
        await asyncio.sleep(seconds)
        return (live.room.stats.actions - before) / seconds

    async def flood() -> dict[str, int]:
        flooding = [f"{subject}={body.decode()}" for name, (_, subject, body) in requests(table_id).items()
                    if name in ("table", "history", "lobby")]
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FLOOD, live.url, str(live.authority.ensure("player", MAL)),
            subjects.inbox_prefix("player", MAL) + ".flood", str(flood_s), *flooding,
            stdout=asyncio.subprocess.PIPE)
        out, _ = await child.communicate()
        return json.loads(out.decode().strip().splitlines()[-1])

    async def main() -> tuple[float, float, dict[str, int]]:
        deadline = time.monotonic() + 30
        while live.room.stats.hands < 3:
            assert time.monotonic() < deadline, "the bots did not play"
            await asyncio.sleep(0.2)
        quiet = await actions_per_second(quiet_s)
        flooding = asyncio.create_task(flood())
        await asyncio.sleep(0.5)                    # the flooder's start (a process: imports, connecting)
        flooded = await actions_per_second(flood_s - 1.0)
        return quiet, flooded, await flooding

    quiet, flooded, answers = live.run(main())
    print(f"\nroom actions/s quiet {quiet:.0f}, during one player's flood {flooded:.0f} "
          f"({(1 - flooded / quiet) * 100 if quiet else 0:.1f} % less); the flood: {answers}")
    assert answers.get("rate_limited", 0) > 0, answers
    # generous: the flooder's own process shares the machine's 2 cores with the room
    assert flooded >= quiet / 3, (quiet, flooded)
