"""The operator's day on a secure room (the shared room, tests/live_room.py: NATS in
operator mode, the table service, the relay, the timer, the cashier, the lobby and the
ledger as processes): ``studroom table`` (its ``main``, run in the test's process:
tests/in_process.py) under the floor's credentials opens a table; bots (the room's own, funded and buying in through the cashier) sit and
play; one is sat out, then removed and cashed out; the table is configured, paused,
resumed and closed, every seat cashed out; the accounts hold every chip but the rake
and the ledger reconciles the table; a player's attempt at each operator command is
refused ``forbidden``, and a closed table refuses commands ``table_closed``."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors
import psycopg
import pytest
from in_process import studroom
from live_room import LiveRoom
from studroom.domain.account import CashedOut, Deposited
from studroom.domain.commands import (
    CloseTable,
    ConfigureTable,
    JoinWaitingList,
    OpenTable,
    PauseTable,
    RemovePlayer,
    ResumeTable,
    SitDown,
    SitOutPlayer,
)
from studroom.domain.errors import FORBIDDEN, TABLE_CLOSED
from studroom.domain.events import (
    Event,
    HandEnded,
    HandStarted,
    PlayerLeft,
    SeatOffered,
    TableClosed,
)
from studroom.domain.views import TableView
from studroom.projections.ledger.reconcile import Scope, reconcile
from studroom.projections.lobby.queries import LobbyQuery, decode_answer, encode_query
from studroom.projections.ledger.sources import all_sources
from studroom.services.client.cashier import CashierClient
from studroom.services.client.table import TableClient
from studroom.services.client.waiting import wait_at
from studroom.services.room.bots import Room
from studroom.services.room.plans import TablePlan
from studroom.services.runtime.processes import process
from studroom.services.runtime.settings import NATS_CREDS_VAR, NATS_URL_VAR
from studroom.services.store.inspect import load_tables
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import events_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

OPEN = ["--game", "seven_card_stud", "--stakes", "10-20", "--ante", "1", "--rake", "5%", "--rake-cap", "30",
        "--buy-in", "100-4000", "--turn-seconds", "5", "--seats", "6"]


class Floor:
    """``studroom table ...`` as the room's operator, and what it asks the room directly."""

    def __init__(self, room: LiveRoom, table_id: str) -> None:
        self.room = room
        self.table_id = table_id
        self.env = {NATS_URL_VAR: room.url, NATS_CREDS_VAR: str(room.authority.ensure("operator", "floor"))}
        self.viewer: TableClient | None = None

    async def cli(self, *args: str, code: int = 0) -> str:
        done = await asyncio.to_thread(studroom, ["table", *args], self.env)
        assert done.returncode == code, f"table {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
        if code:
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr
            return done.stderr
        return done.stdout

    async def view(self) -> TableView:
        assert self.viewer is not None
        return await self.viewer.view(self.table_id)

    async def until(self, check: Callable[[TableView], bool], what: str, within: float = 15.0) -> TableView:
        deadline = time.monotonic() + within
        while True:
            view = await self.view()
            if check(view):
                return view
            assert time.monotonic() < deadline, f"not within {within} s: {what}; the table: {view}"
            await asyncio.sleep(0.1)

    def events(self) -> list[Event]:
        return load_tables(self.room.database_url, self.room.schemas, only=[self.table_id]).get(self.table_id, [])


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, f"not within {within} s: {what}"
        await asyncio.sleep(0.2)


async def refused_to_a_player(player: TableClient, table_id: str, config: Any, other: str) -> None:
    """Each operator command, sent by a seated player: ``forbidden``, nothing changed."""
    for command in (OpenTable(table_id=table_id, config=config), ConfigureTable(config=config), PauseTable(),
                    ResumeTable(), CloseTable(), SitOutPlayer(player=other), RemovePlayer(player=other)):
        reply = await player.send(table_id, command)
        assert reply.error is not None and reply.error.code == FORBIDDEN, (command, reply)


def test_R34_an_operator_opens_runs_and_closes_a_table_from_the_command_line(live_room: LiveRoom) -> None:
    table_id = f"fl{uuid.uuid4().hex[:6]}"
    asyncio.run(_day(live_room, table_id))


async def _day(live_room: LiveRoom, table_id: str) -> None:
    floor = Floor(live_room, table_id)
    assert f"{table_id}: opened, seven_card_stud, stakes 10-20" in await floor.cli("open", table_id, *OPEN)
    assert "already_open" in await floor.cli("open", table_id, *OPEN, code=1)
    assert "too_many_seats" in await floor.cli("open", f"{table_id}x", *OPEN[:-1], "11", code=1)
    nc = await process.connect(live_room.url, "test-floor", creds=live_room.authority.ensure("operator", "floor"))
    floor.viewer = TableClient(nc, "operator", "floor")
    config = (await floor.view()).config
    seats = {seat: f"{table_id}-p{seat}" for seat in range(3)}
    bots = Room(live_room.url, [TablePlan(table_id, config, seats)], authority=live_room.authority, seed=18)
    player_nc = await process.connect(live_room.url, "test-player", creds=live_room.authority.ensure("player", seats[0]))
    try:
        await bots.start()          # the room's start opens the table too: already open is no error
        await floor.until(lambda v: v.hand_no >= 3, "three hands")
        await refused_to_a_player(TableClient(player_nc, "player", seats[0]), table_id, config, seats[2])

        # An absent player: sat out (dealt no hand), then removed and cashed out.
        assert f"{seats[2]} sat out" in await floor.cli("sitout", table_id, seats[2])
        sat_out = await floor.until(lambda v: any(s.player == seats[2] and s.sitting_out for s in v.seats), "sat out")
        shown = await floor.cli("show", table_id)
        assert f"{seats[2]}" in shown and "(by the floor)" in shown and ": open, " in shown
        await floor.until(lambda v: v.hand_no > sat_out.hand_no + 1, "a hand without him")
        assert "removed" in await floor.cli("remove", table_id, seats[2])
        await floor.until(lambda v: all(s.player != seats[2] for s in v.seats), "removed")
        events = floor.events()
        left = [e for e in events if isinstance(e, PlayerLeft) and e.player == seats[2]]
        assert [e.reason for e in left] == ["removed"]
        dealt = [e for e in events if isinstance(e, HandStarted) and e.hand_no == sat_out.hand_no + 2]
        assert dealt and 2 not in {s.seat for s in dealt[0].seats}, "a player sat out is dealt no hand"
        cashier = CashierClient(nc, "operator", "floor")

        async def credited() -> bool:
            movements = await _movements(cashier, seats[2])
            return any(isinstance(m.event, CashedOut) and m.event.amount == left[0].cashed_out for m in movements)

        await eventually(credited, f"{seats[2]}'s cash-out of {left[0].cashed_out}")

        # Settings for the next hand; a pause; the table deals again.
        assert "from the next hand" in await floor.cli("configure", table_id, "--turn-seconds", "7", "--rake", "4%")
        await floor.until(lambda v: v.config.action_seconds == 7 and v.config.rake.basis_points == 400, "configured")
        assert "paused" in await floor.cli("pause", table_id)
        paused = await floor.until(lambda v: v.hand is None, "the hand in play finished")
        await asyncio.sleep(1.0)
        assert (await floor.view()).hand_no == paused.hand_no, "no new hand while paused"
        assert "deals again" in await floor.cli("resume", table_id)
        await floor.until(lambda v: v.hand_no > paused.hand_no, "a hand after the pause")
        assert table_id in await floor.cli("list")

        # Closed: every seat cashed out, every command refused.
        assert "closing" in await floor.cli("close", table_id)
        await eventually(lambda: asyncio.to_thread(lambda: any(isinstance(e, TableClosed) for e in floor.events())),
                         "TableClosed stored")
        events = floor.events()
        closed = [e for e in events if isinstance(e, PlayerLeft) and e.reason == "table_closed"]
        assert sorted(e.player for e in closed) == [seats[0], seats[1]]
        assert "table_closed" in await floor.cli("pause", table_id, code=1)
        reply = await TableClient(player_nc, "player", seats[0]).send(table_id, SitDown(seat=0, player=seats[0]))
        assert reply.error is not None and reply.error.code == TABLE_CLOSED
        await bots.stop()
        rake = sum(e.rake for e in events if isinstance(e, HandEnded))
        await eventually(lambda: _accounts_hold_all_but(cashier, list(seats.values()), rake),
                         "every chip back in the accounts but the rake")
        await eventually(lambda: asyncio.to_thread(_reconciled, live_room, table_id), "the ledger reconciles")
    finally:
        await bots.stop()
        await player_nc.drain()
        await nc.drain()


def test_R34_a_player_who_stops_answering_is_sat_out_then_removed_and_cashed_out(live_room: LiveRoom) -> None:
    """R34 on a live table: a bot stops answering; the timer times his turn out, the table
    sits him out (dealt no hand) and, past the table's limit (1 s here), removes him and
    cashes him out, all without an operator."""
    table_id = f"ab{uuid.uuid4().hex[:6]}"
    asyncio.run(_absent(live_room, table_id))


async def _absent(live_room: LiveRoom, table_id: str) -> None:
    floor = Floor(live_room, table_id)
    quick = [*OPEN[:OPEN.index("--turn-seconds")], "--turn-seconds", "1", "--seats", "6", "--sit-out-seconds", "1"]
    await floor.cli("open", table_id, *quick)
    nc = await process.connect(live_room.url, "test-absent", creds=live_room.authority.ensure("operator", "floor"))
    floor.viewer = TableClient(nc, "operator", "floor")
    config = (await floor.view()).config
    seats = {seat: f"{table_id}-p{seat}" for seat in range(3)}
    bots = Room(live_room.url, [TablePlan(table_id, config, seats)], authority=live_room.authority, seed=34)
    try:
        await bots.start()
        await floor.until(lambda v: v.hand_no >= 2, "two hands")
        bots.bots[2].pause()                                   # seat 2 stops answering
        await floor.until(lambda v: any(s.player == seats[2] and s.sit_out_reason == "timed_out" for s in v.seats),
                          "sat out after a timed-out turn", within=30.0)
        await floor.until(lambda v: all(s.player != seats[2] for s in v.seats), "removed past the limit", within=30.0)
        left = [e for e in floor.events() if isinstance(e, PlayerLeft) and e.player == seats[2]]
        assert [e.reason for e in left] == ["sat_out_too_long"]
        cashier = CashierClient(nc, "operator", "floor")

        async def credited() -> bool:
            movements = await _movements(cashier, seats[2])
            return left[0].cashed_out == 0 or any(
                isinstance(m.event, CashedOut) and m.event.amount == left[0].cashed_out for m in movements)

        await eventually(credited, f"{seats[2]}'s cash-out of {left[0].cashed_out}")
        await floor.cli("close", table_id)
    finally:
        await bots.stop()
        await nc.drain()


def test_a_player_waits_for_a_seat_and_takes_the_one_offered_to_him(live_room: LiveRoom) -> None:
    """The waiting list on a live table: a full table; a player joins its list (the lobby
    counts him); the floor removes a player; the seat is offered to the waiting one on his
    own private subject, and he takes it."""
    table_id = f"wl{uuid.uuid4().hex[:6]}"
    asyncio.run(_waiting(live_room, table_id))


async def _waiting(live_room: LiveRoom, table_id: str) -> None:
    floor = Floor(live_room, table_id)
    await floor.cli("open", table_id, *OPEN[:-1], "2")                  # two seats
    nc = await process.connect(live_room.url, "test-waiting", creds=live_room.authority.ensure("operator", "floor"))
    floor.viewer = TableClient(nc, "operator", "floor")
    config = (await floor.view()).config
    seats = {seat: f"{table_id}-p{seat}" for seat in range(2)}
    waiting = f"{table_id}-w"
    bots = Room(live_room.url, [TablePlan(table_id, config, seats)], authority=live_room.authority, seed=7)
    player_nc = await process.connect(live_room.url, "test-waiter", creds=live_room.authority.ensure("player", waiting))
    offers: list[Event] = []

    async def received(msg: Any) -> None:
        offers.extend(event for _, event in events_of(msg))

    await player_nc.subscribe(subjects.private_events(waiting, table_id), cb=received)
    waiter = TableClient(player_nc, "player", waiting)
    try:
        await bots.start()
        await floor.until(lambda v: v.hand_no >= 1, "a hand")
        assert (await waiter.send(table_id, JoinWaitingList(player=waiting))).ok
        await floor.until(lambda v: v.waiting == [waiting], "on the list")
        assert f"waiting {waiting}" in await floor.cli("show", table_id)

        async def counted() -> bool:
            try:
                msg = await nc.request(subjects.lobby_query("operator", "floor"),
                                       encode_query(LobbyQuery(table=table_id)), timeout=1.0)
            except (nats.errors.NoRespondersError, nats.errors.TimeoutError):       # the lobby still starting
                return False
            answer = decode_answer(msg.data)
            return answer.ok and [t.waiting for t in answer.tables] == [1]

        await eventually(counted, "the lobby counts one waiting")
        assert "removed" in await floor.cli("remove", table_id, seats[1])
        await eventually(lambda: asyncio.sleep(0, any(isinstance(e, SeatOffered) for e in offers)),
                         "the offer on his private subject")
        offer = next(e for e in offers if isinstance(e, SeatOffered))
        assert (offer.player, offer.seat) == (waiting, 1)
        assert (await waiter.send(table_id, SitDown(seat=offer.seat, player=waiting))).ok
        view = await floor.until(lambda v: any(s.player == waiting for s in v.seats), "seated from the list")
        assert view.waiting == []
        await floor.cli("close", table_id)
    finally:
        await bots.stop()
        await player_nc.drain()
        await nc.drain()


def test_a_player_waits_at_every_table_of_a_game_and_stakes_and_sits_at_the_first_offer(
        live_room: LiveRoom) -> None:
    """Waiting per game and stakes: on the list of every table of them the lobby names;
    a seat frees at one, he takes it and is off the other lists."""
    tables = [f"gs{uuid.uuid4().hex[:6]}" for _ in range(2)]
    asyncio.run(_waiting_anywhere(live_room, tables))


async def _waiting_anywhere(live_room: LiveRoom, tables: list[str]) -> None:
    floor = Floor(live_room, tables[0])
    stakes = [*OPEN[:-1], "2"]
    stakes[stakes.index("--stakes") + 1] = "15-30"                     # stakes no other test plays
    stakes[stakes.index("--buy-in") + 1] = "150-4000"                  # ten small bets at least (R3)
    for table_id in tables:
        await floor.cli("open", table_id, *stakes)
    nc = await process.connect(live_room.url, "test-anywhere", creds=live_room.authority.ensure("operator", "floor"))
    floor.viewer = TableClient(nc, "operator", "floor")
    config = (await floor.view()).config
    plans = [TablePlan(t, config, {seat: f"{t}-p{seat}" for seat in range(2)}) for t in tables]
    waiting_player = f"{tables[0]}-w"
    bots = Room(live_room.url, plans, authority=live_room.authority, seed=9)
    player_nc = await process.connect(live_room.url, "test-anywhere-w",
                                      creds=live_room.authority.ensure("player", waiting_player))
    offers: list[Event] = []

    async def received(msg: Any) -> None:
        offers.extend(event for _, event in events_of(msg))

    for table_id in tables:
        await player_nc.subscribe(subjects.private_events(waiting_player, table_id), cb=received)
    waiter = TableClient(player_nc, "player", waiting_player)
    found: list[str] = []
    try:
        await bots.start()

        async def listed() -> bool:
            try:
                msg = await player_nc.request(subjects.lobby_query("player", waiting_player),
                                              encode_query(LobbyQuery(game="seven_card_stud", stakes="15/30")),
                                              timeout=1.0)
            except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
                return False
            found[:] = sorted(t.table_id for t in decode_answer(msg.data).tables)
            return found == sorted(tables)

        await eventually(listed, "the lobby names both tables of the game and stakes")
        waiting = await wait_at(waiter, found)
        assert sorted(waiting.tables) == sorted(tables)
        assert "removed" in await floor.cli("remove", tables[1], f"{tables[1]}-p1")
        await eventually(lambda: asyncio.sleep(0, any(isinstance(e, SeatOffered) for e in offers)), "an offer")
        offer = next(e for e in offers if isinstance(e, SeatOffered))
        assert (await waiter.send(tables[1], SitDown(seat=offer.seat, player=waiting_player))).ok
        await waiting.seated_at(tables[1])
        floor.table_id = tables[0]
        assert (await floor.view()).waiting == [] and waiting.tables == []
        for table_id in tables:
            await floor.cli("close", table_id)
    finally:
        await bots.stop()
        await player_nc.drain()
        await nc.drain()


async def _accounts_hold_all_but(cashier: CashierClient, players: list[str], rake: int) -> bool:
    """The players' balances are what was deposited less the table's rake; nothing reserved."""
    deposited = held = 0
    for player in players:
        account = await cashier.balance(player)
        movements = await _movements(cashier, player)
        if account.reserved:
            return False
        held += account.balance or 0
        deposited += sum(m.event.amount for m in movements if isinstance(m.event, Deposited))
    return held == deposited - rake


async def _movements(cashier: CashierClient, player: str) -> list[Any]:
    """Every movement of ``player``'s account, page after page."""
    movements: list[Any] = []
    while page := (await cashier.movements(player, after=len(movements))).movements:
        movements += page
    return movements


def _reconciled(live_room: LiveRoom, table_id: str) -> bool:
    prefix = f"{live_room.name}_p"
    with psycopg.connect(live_room.database_url, autocommit=True) as conn:
        sources = all_sources(conn, schemas=live_room.schemas, cashier_schema=f"{prefix}cashier")
    result = reconcile(live_room.database_url, sources, ledger_schema=f"{prefix}ledger", scope=Scope(table=table_id))
    return result.clean and result.hands >= 3
