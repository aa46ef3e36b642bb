"""The room end to end: bots play over NATS against two table-service processes and
the relay, on real servers, with NATS authorization on (operator mode: every process
and every bot connects as its own identity, with only its role's powers): the shared
room (tests/live_room.py), at tables of this test's own; then the store is the judge.

* every table's stored events replay to a valid table (``Table.replay``);
* every event of every public message a bot received is exactly the public view of the
  stored event of that version, and carries no down card of anybody before his
  showdown reveal; the secrecy check (tests/secrecy.py) finds no leak in any public
  message; the relay sent fewer public messages than events (one per commit);
* each player's private subject carried exactly his own down cards, nobody else's
  (checked on everything the relay sent to the tables' private subjects);
* chips are conserved at every table.

And ``studroom room`` as a subprocess (run once a session: tests/live_room.py), on its
own embedded servers in a fresh data folder, exits 0, says the chips are conserved and
where the credentials are, and neither it nor its services' logs show any of them.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec
import psycopg
import pytest
from live_room import ROOM_BOTS_PER_TABLE, ROOM_TABLES, LiveRoom, RoomCommand
from psycopg import sql
from secrecy import Message, Truth, scan
from studroom.domain import views
from studroom.domain.events import (
    CardsDealt,
    Event,
    HandCancelled,
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    PlayerLeft,
    PlayerSatDown,
)
from studroom.domain.table import Table
from studroom.projections.ledger.conservation import check_table
from studroom.services.auth import jwt
from studroom.services.auth.authority import Authority
from studroom.services.room.bots import Room
from studroom.services.room.plans import TablePlan, plan_tables
from studroom.services.runtime.processes import process
from studroom.services.store.inspect import load_tables, open_stores, stream_ids
from studroom.services.wire import event_messages, subjects

pytestmark = pytest.mark.integration

TABLES = 6
BOTS_PER_TABLE = 4
ENOUGH_HANDS = 100           # play until this many hands (asserted) ...
PLAY_AT_MOST = 60.0          # ... or this many seconds (a bound for a loaded machine)


# ----------------------------------------------------------------------- helpers


def _version(headers: dict[str, str] | None) -> int:
    assert headers and subjects.VERSION_HEADER in headers, f"relay message without {subjects.VERSION_HEADER}: {headers}"
    return int(headers[subjects.VERSION_HEADER])


def _secrets_by_version(events: list[Event]) -> dict[int, tuple[list[tuple[str, int]], set[str]]]:
    """For each version inside a hand (versions count from 1, as in the store): the
    hand's down cards as (card, seat), and the cards shown before that version."""
    hands: list[tuple[int, int, list[tuple[str, int]]]] = []
    start, down = None, []
    for version, event in enumerate(events, start=1):
        if isinstance(event, HandStarted):
            start, down = version, []
        elif isinstance(event, CardsDealt) and start is not None:
            down += [(d.card, d.seat) for d in event.cards if not d.up]
        elif isinstance(event, (HandEnded, HandCancelled)) and start is not None:
            hands.append((start, version, down))
            start = None
    if start is not None:
        hands.append((start, len(events), down))
    out = {}
    for first, last, cards in hands:
        shown: set[str] = set()
        for version in range(first, last + 1):
            out[version] = (cards, set(shown))
            event = events[version - 1]
            if isinstance(event, HandShown):
                shown.update(event.cards)
    return out


def _players_by_version(events: list[Event]) -> list[dict[int, str]]:
    """seat -> player before each version (index version-1)."""
    seats: dict[int, str] = {}
    out = []
    for event in events:
        out.append(dict(seats))
        if isinstance(event, PlayerSatDown):
            seats[event.seat] = event.player
        elif isinstance(event, PlayerLeft):
            seats.pop(event.seat, None)
    return out


def check_public_event(table_id: str, event: Event, version: int,
                       stored: list[Event], secrets: dict[int, tuple[list[tuple[str, int]], set[str]]]) -> None:
    """One event of a public message (a later event of its message may show a card
    this one must not)."""
    expected = views.public(stored[version - 1])
    assert event == expected, f"{table_id} v{version}: public copy differs from the public view"
    text = msgspec.json.encode(event).decode()
    down, shown = secrets.get(version, ([], set()))
    for card, seat in down:
        if card in shown or (isinstance(event, HandShown) and event.seat == seat):
            continue        # revealed at the showdown
        assert f'"{card}"' not in text, (
            f"{table_id} v{version}: seat {seat}'s down card {card} in a public "
            f"{type(event).__name__}: {text}")


class Spy:
    """Everything the relay publishes for some tables, public and private: an auditor
    identity of the test's own, allowed to read both and to publish nothing."""

    def __init__(self, authority: Authority, folder: Path) -> None:
        token, seed = authority.user("auditor.spy", publish=[], subscribe=[
            subjects.all_public_events(), subjects.all_private_events()])
        self.creds = folder / "spy.creds"
        self.creds.write_text(jwt.creds(token, seed))
        self.private: list[Any] = []                                # nats-py messages
        self.public: dict[str, list[Any]] = defaultdict(list)        # by table
        self.nc: Any = None

    async def start(self, nats_url: str, table_ids: list[str]) -> None:
        self.nc = await process.connect(nats_url, "studroom-test-spy", creds=self.creds)

        async def on_private(msg: Any) -> None:
            self.private.append(msg)

        async def on_public(msg: Any) -> None:
            self.public[subjects.table_of_public(msg.subject)].append(msg)

        for table_id in table_ids:
            await self.nc.subscribe(subjects.table_private_events(table_id), cb=on_private)
            await self.nc.subscribe(subjects.public_events(table_id), cb=on_public)
        await self.nc.flush()

    async def stop(self) -> None:
        await self.nc.drain()


def _last_versions(database_url: str, schemas: list[str], ids: list[str]) -> dict[str, int]:
    """Each of the tables' last stored version (0: none yet)."""
    query = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT originator_id, max(originator_version) FROM {} WHERE originator_id = ANY(%s) "
                "GROUP BY originator_id").format(sql.Identifier(schema, "events")) for schema in schemas)
    with psycopg.connect(database_url, autocommit=True) as conn:
        found = dict(conn.execute(query, [ids] * len(schemas)).fetchall())
    return {table: found.get(table, 0) for table in ids}


async def _play(nats_url: str, authority: Authority, plans: list[TablePlan], spy: Spy,
                stored: Any) -> Room:
    """``stored()``: each table's last stored version."""
    ids = [p.table_id for p in plans]
    await spy.start(nats_url, ids)
    room = Room(nats_url, plans, authority=authority, pace_ms=0, seed=2024, record=True)
    await room.start()
    deadline = time.monotonic() + PLAY_AT_MOST
    while room.stats.hands < ENOUGH_HANDS and time.monotonic() < deadline:
        await asyncio.sleep(0.25)
    for bot in room.bots:
        bot.pause()
    # Let the relay deliver everything stored: the tables now wait on paused bots (the shared
    # room's timer would time their turns out after the tables' 10 s: after the checks).
    # Delivered: the spy and every bot have up to each table's last stored version, and
    # the store has not grown since the look before.
    before: dict[str, int] | None = None
    async with asyncio.timeout(30):
        while True:
            last = await asyncio.to_thread(stored)
            if last == before and all(spy.public[t] and _version(spy.public[t][-1].headers) >= last[t]
                                      for t in ids) and all(
                    bot.transcript is not None and bot.transcript.public
                    and bot.transcript.public[-1].version >= last[bot.table_id] for bot in room.bots):
                break
            before = last
            await asyncio.sleep(0.25)
    await room.stop()
    await spy.stop()
    return room


# ------------------------------------------------------------------------- tests


def test_bots_play_over_nats_with_two_table_services_and_the_relay_under_authorization(
    live_room: LiveRoom, database_url: str
) -> None:
    ids = live_room.table_ids("e2e", TABLES)
    plans = plan_tables(ids, BOTS_PER_TABLE, {})
    log_dir = Path(tempfile.mkdtemp(prefix="studroom-it-room-spy-"))
    spy = Spy(live_room.authority, log_dir)
    schemas = live_room.schemas
    room = asyncio.run(_play(live_room.url, live_room.authority, plans, spy,
                             lambda: _last_versions(database_url, schemas, ids)))
    assert not live_room.dead(), f"a service died: {live_room.dead()}; logs in {live_room.log_dir}"

    stats = room.stats
    print(f"{stats.hands} hands, {stats.actions} actions, {stats.errors} errors, "
          f"{stats.refused_stale} stale answers")
    assert stats.hands >= ENOUGH_HANDS, f"only {stats.hands} hands were played"
    assert stats.errors == 0, stats.error_codes

    stored = load_tables(database_url, schemas, only=ids)
    assert sorted(stored) == ids
    # Both stores hold tables of ours (partition p -> store p % 2).
    stores = open_stores(database_url, schemas)
    try:
        assert all(set(stream_ids(store)) & set(ids) for store in stores)
    finally:
        for store in stores:
            store.close()

    # Every table replays to a valid state, hands numbered one after another.
    hands_stored = 0
    for table_id, events in stored.items():
        table = Table.replay(events)
        assert table.version == len(events)
        assert table.config is not None and table.table_id == table_id
        numbers = [e.hand_no for e in events if isinstance(e, HandStarted)]
        assert numbers == list(range(1, len(numbers) + 1))
        hands_stored += sum(isinstance(e, HandEnded) for e in events)
    assert hands_stored >= stats.hands

    # Chips conserved at every table.
    for table_id, events in stored.items():
        check = check_table(table_id, events)
        assert check.conserved, check.bad

    # Public messages: exactly the public views, no down card before its reveal.
    secrets = {t: _secrets_by_version(e) for t, e in stored.items()}
    checked = 0
    for bot in room.bots:
        events = stored[bot.table_id]
        versions = []
        assert bot.transcript is not None
        for received in bot.transcript.public:
            assert received.headers is not None
            types = received.headers[event_messages.EVENTS_HEADER].split(",")
            assert received.subject == subjects.public_message(bot.table_id, event_messages.mark_of(types))
            version = received.version
            place = version - event_messages.first_version(received.headers, len(types))   # in its message
            assert types[place] == type(received.event).__name__
            versions.append(version)
            check_public_event(bot.table_id, received.event, version, events, secrets[bot.table_id])
            checked += 1
        # In order, none missing, none twice, up to the end of the store.
        assert versions == list(range(versions[0], versions[0] + len(versions)))
        assert versions[-1] == len(events)
    assert checked > 20 * stats.hands
    for table_id in ids:
        versions = [version for msg in spy.public[table_id] for version, _ in event_messages.events_of(msg)]
        assert versions == list(range(1, len(stored[table_id]) + 1))
        assert len(spy.public[table_id]) < len(versions)          # one message per commit, not per event

    # The secrecy check (tests/secrecy.py) on every public message, the store as the truth.
    truth = Truth()
    for table_id, events in stored.items():
        truth.learn_stored(table_id, events)
    report = scan([Message(t, _version(m.headers), m.data) for t in ids for m in spy.public[t]], truth)
    assert not report.leaks and report.hands >= stats.hands, str(report)

    # Private subjects: each carries exactly its owner's own down cards (and, R23, a mucked
    # hand to the showdown's participants: checked by the secrecy scan above).
    players = {t: _players_by_version(e) for t, e in stored.items()}
    got: dict[tuple[str, str], list[str]] = defaultdict(list)
    for msg in spy.private:
        _, _, player, table_id = msg.subject.split(".")
        (version, event), = event_messages.events_of(msg)          # a private copy: one event
        original = stored[table_id][version - 1]
        if isinstance(original, HandMucked):
            assert player in {players[table_id][version - 1][s] for s in original.participants}
            continue
        assert isinstance(original, CardsDealt)
        seat = next(s for s, p in players[table_id][version - 1].items() if p == player)
        assert event == views.private(original, seat)
        for dealt in event.cards:
            if dealt.seat != seat and not dealt.up:
                assert dealt.card is None, f"{player} got seat {dealt.seat}'s down card"
        got[table_id, player] += [d.card for d in event.cards if d.seat == seat and not d.up]
    for table_id, events in stored.items():
        owners = players[table_id]
        expected: dict[str, list[str]] = defaultdict(list)
        for version, event in enumerate(events, start=1):
            if isinstance(event, CardsDealt):
                for d in event.cards:
                    if not d.up:
                        expected[owners[version - 1][d.seat]].append(d.card)
        for player, cards in expected.items():
            assert got[table_id, player] == cards, f"{player} at {table_id}"
    # ... and the bots themselves got theirs on their own subject.
    for bot in room.bots:
        assert bot.transcript is not None and bot.transcript.private, f"{bot.player} got no private message"
        for received in bot.transcript.private:
            assert received.subject == subjects.private_events(bot.player, bot.table_id)
        mine = [card for _, card in bot.transcript.down_cards]
        assert mine == got[bot.table_id, bot.player]
    shutil.rmtree(log_dir, ignore_errors=True)


def test_room_command_runs_and_conserves_chips(room_command: RoomCommand) -> None:
    data_dir, result = room_command.data_dir, room_command.result
    out = result.stdout
    assert result.returncode == 0, f"exit {result.returncode}\n{out}\n{result.stderr}"
    assert "chips conserved: yes" in out, out
    assert "hands" in out and "actions" in out and "events" in out
    summary = out[out.index("summary"):]
    hands = int(summary.split("hands")[1].split()[0].replace(",", ""))   # 1,234
    assert hands > 0, out
    creds = data_dir / "auth" / "creds"
    assert "credentials: " in out and str(creds) in out, out
    issued = list(creds.glob("*.creds"))
    services = {"table", "relay", "timer", "cashier", "lobby", "history", "ledger"}
    identities = {f"service.{name}{door}.creds" for name in services for door in ("", "-door")}
    assert {f.name for f in issued} >= identities
    assert "system.warden.creds" in {f.name for f in issued}      # the embedded room caps connections
    # the services and their doors; floor, spectator; the bots; the warden; the console's desk reader
    assert "service.projections.creds" in {f.name for f in issued}
    assert len(issued) == len(identities) + 2 + ROOM_TABLES * ROOM_BOTS_PER_TABLE + 1 + 1
    secrets = [line for f in issued for line in f.read_text().splitlines() if len(line) > 40]
    secrets += [f.read_text().strip() for f in (data_dir / "auth").glob("*.nk")]
    secrets.append((data_dir / "postgres" / "password").read_text().strip())     # the database's
    logs = "".join(f.read_text(errors="replace") for f in (data_dir / "logs").glob("*.log"))
    assert not any(secret in out + result.stderr + logs for secret in secrets)
