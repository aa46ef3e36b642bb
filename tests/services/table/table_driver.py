"""Drive tables through the table service, as bots would, for the integration tests.

:class:`TableDriver` plays one table with random legal moves
(:func:`studroom.domain.simulate.choose`) through
:class:`~studroom.services.client.table.TableClient` objects (NATS request/reply, no think
time): each seat's commands as its player, the opening as the operator ``floor``,
the buy-ins as the service ``cashier``.  All of them share one connection, so the
server must be an open one (the session's ``nats_url``): under authorization a
connection is one identity.
It learns the table's state the way a trusted tool may: by reading the table's
events from the event store after each reply and replaying them into a local
:class:`~studroom.domain.table.Table` (a read-only mirror; the service alone writes).
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from studroom.domain.commands import BuyIn, Command, OpenTable, PostAnte, Show, SitDown
from studroom.domain.config import TableConfig
from studroom.domain.errors import MUST_SHOW
from studroom.domain.events import TurnStarted
from studroom.domain.simulate import STAKES, choose
from studroom.domain.table import Table
from studroom.services.client.table import TableClient
from studroom.services.store.port import EventStore
from studroom.services.wire.protocol import Reply


def table_config(game: str = "seven_card_stud", **extra: Any) -> TableConfig:
    return TableConfig(game=game, stakes=STAKES, **extra)


class TableDriver:
    """Plays one table: ``setup()`` opens it and seats ``players`` with chips (the
    service then deals by itself), ``step()`` sends the next legal command.  Refusals
    other than ``tolerate`` (and ``must_show``, answered with a Show) are kept in
    ``errors``."""

    def __init__(
        self,
        nc: Any,
        store: EventStore,
        table_id: str,
        *,
        players: int = 4,
        stack: int = 1000,
        rng: random.Random | None = None,
        config: TableConfig | None = None,
        tolerate: frozenset[str] = frozenset(),
        retry_for: float = 10.0,
    ) -> None:
        self.floor = TableClient(nc, "operator", "floor", retry_for=retry_for)
        self.cashier = TableClient(nc, "service", "cashier", retry_for=retry_for)
        self.seated = {seat: TableClient(nc, "player", f"{table_id}-p{seat}", retry_for=retry_for)
                       for seat in range(players)}
        self.tolerate = tolerate | {MUST_SHOW}   # refusals that are not errors
        self.store = store
        self.table_id = table_id
        self.players = players
        self.stack = stack
        self.rng = rng or random.Random()
        self.config = config or table_config()
        self.mirror = Table()
        self.turn: TurnStarted | None = None
        self.latencies: list[float] = []
        self.sent = 0
        self.errors: list[tuple[str, str, str]] = []   # (command, code, message)
        self.must_show: int | None = None

    def client(self, command: Command) -> TableClient:
        """Who gives ``command``: the seat's player, the operator (the table) or the cashier (chips)."""
        if isinstance(command, BuyIn):
            return self.cashier
        if isinstance(command, OpenTable):
            return self.floor
        return self.seated[command.seat]   # type: ignore[attr-defined]

    async def request(self, command: Command) -> Reply:
        started = time.perf_counter()
        reply = await self.client(command).send(self.table_id, command)
        self.latencies.append(time.perf_counter() - started)
        self.sent += 1
        if not reply.ok and reply.error is not None and reply.error.code not in self.tolerate:
            self.errors.append((type(command).__name__, reply.error.code, reply.error.message))
        return reply

    async def setup(self) -> None:
        replies = [await self.request(OpenTable(table_id=self.table_id, config=self.config))]
        for seat in range(self.players):
            replies.append(await self.request(SitDown(seat=seat, player=self.seated[seat].name)))
            replies.append(await self.request(BuyIn(seat=seat, amount=self.stack, player=self.seated[seat].name)))
        bad = [r for r in replies if not r.ok and r.error is not None and r.error.code not in self.tolerate]
        if bad:
            raise RuntimeError(f"setting up {self.table_id} failed: {bad}")

    async def refresh(self) -> None:
        events = await asyncio.to_thread(self.store.load, self.table_id, self.mirror.version)
        for event in events:
            self.mirror.apply(event)
            if isinstance(event, TurnStarted):
                self.turn = event

    def next_command(self) -> Command | None:
        table = self.mirror
        hand = table.hand
        for seat, state in sorted(table.seats.items()):   # busted and not in the hand: buy again
            if state.stack == 0 and (hand is None or seat not in hand.players):
                return BuyIn(seat=seat, amount=self.stack, player=self.seated[seat].name)
        if hand is None or self.turn is None or self.turn.turn != table.turn:
            return None
        turn = self.turn
        if turn.kind == "ante":
            seat = next((s for s, p in hand.players.items() if not p.posted and not p.folded), None)
            return None if seat is None else PostAnte(seat=seat)
        if hand.to_act is None or not turn.options:
            return None
        if turn.kind == "show" and self.must_show == hand.to_act:
            return Show(seat=hand.to_act)
        return choose(turn, self.rng)

    async def step(self) -> Reply | None:
        """Refresh the mirror and send the next command (None: nothing to do now)."""
        await self.refresh()
        command = self.next_command()
        if command is None:
            return None
        reply = await self.request(command)
        if not reply.ok and reply.error is not None and reply.error.code == MUST_SHOW:
            self.must_show = getattr(command, "seat", None)
        else:
            self.must_show = None
        return reply
