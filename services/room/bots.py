"""The room's bots, all in this process, each a player with his own NATS connection
and credentials; the room's operator ("floor") opens the tables and deposits each
bot's bankroll at the cashier, from which the bots buy in and top up (their own
requests to the cashier); one spectator connection subscribes to each table's public
subject and hands every message, read once, to the table's bots, event by event."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence
from typing import Any, Final

from studroom.domain import errors

from ..auth.authority import Authority
from ..client import floor as floor_calls
from ..client.cashier import CashierClient
from ..client.messages import read_events
from ..client.table import TableClient
from ..players.bank import CashierBank
from ..players.bot import Bot
from ..players.stats import BAD_MESSAGE, BotStats
from ..runtime.processes import process
from ..wire import subjects
from .plans import TablePlan

FLOOR: Final = "floor"          # the room's operator: opens tables, deposits the bots' bankrolls
SPECTATOR: Final = "public"     # the room's spectator identity: public events only
BANKROLL_BUY_INS: Final = 100   # each start tops a bot's account up to this many of its buy-ins


async def open_table(floor: TableClient, plan: TablePlan, deadline: float) -> None:
    """The floor opens the plan's table (``client.floor.open_table``, as ``studroom table
    open`` does); a reused one is not opened again (a refused ``OpenTable`` at every start
    would count as a command error): the room waits until it answers a view."""
    if plan.reused:
        await floor_calls.until_it_answers(floor, plan.table_id, within=deadline - time.monotonic())
        return
    reply = await floor_calls.open_table(floor, plan.table_id, plan.config, within=deadline - time.monotonic())
    if not reply.ok and not (reply.error and reply.error.code == errors.ALREADY_OPEN):
        last = f"{reply.error.code}: {reply.error.message}" if reply.error else "refused"
        raise RuntimeError(f"could not open table {plan.table_id}: {last}")


async def fund_bankroll(floor: CashierClient, player: str, bankroll: int) -> None:
    """Deposit what ``player``'s account lacks of ``bankroll``, under a reference of
    this start (a retried deposit is not booked twice)."""
    account = await floor.balance(player)
    new = account.error is not None and account.error.code == errors.UNKNOWN_PLAYER    # no account yet
    if not account.ok and not new:
        raise RuntimeError(f"the cashier did not answer for {player}: {account.error}")
    short = bankroll - (account.balance or 0) - (account.reserved or 0)
    if short > 0:
        reply = await floor.deposit(player, short, f"bankroll-{int(time.time() * 1000)}")
        if not reply.ok:
            raise RuntimeError(f"could not deposit {player}'s bankroll: {reply.error}")


class Room:
    """The bots of a room, in this process, on a running NATS with services.

    ``authority`` issues the identities (the floor, the spectator, each bot); None:
    an open server without credentials (the "auth off" benchmark)."""

    def __init__(self, nats_url: str, plans: Sequence[TablePlan], *, authority: Authority | None,
                 pace_ms: int = 0, seed: int | None = None, record: bool = False,
                 keep_latencies: bool = True, stall_seconds: float = 3.0) -> None:
        self.nats_url = nats_url
        self.plans = list(plans)
        self.authority = authority
        self.pace_ms = pace_ms
        self.rng = random.Random(seed)
        self.record = record
        self.stall_seconds = stall_seconds
        self.stats = BotStats(keep_latencies=keep_latencies)
        self.bots: list[Bot] = []
        self.opened = 0               # tables opened so far by start()
        self._connections: list[Any] = []
        self._subs: list[Any] = []

    async def start(self, open_timeout: float = 60.0) -> None:
        deadline = time.monotonic() + open_timeout
        floor = await self._client("operator", FLOOR)
        cashier = CashierClient(floor.nc, "operator", FLOOR, retry_for=open_timeout)
        spectator = await self._connect("spectator", SPECTATOR)
        for plan in self.plans:
            await open_table(floor, plan, deadline)
            self.opened += 1
            clients = await asyncio.gather(*(self._client("player", p) for p in plan.seats.values()))
            bots = [
                Bot(client, plan.table_id, seat, random.Random(self.rng.getrandbits(64)), self.pace_ms,
                    bank=CashierBank(CashierClient(client.nc, "player", client.name)), stats=self.stats,
                    record=self.record, count_hands=i == 0, stall_seconds=self.stall_seconds)
                for i, (seat, client) in enumerate(zip(plan.seats, clients))
            ]
            small_bet = plan.config.stakes.small_bet
            await asyncio.gather(*(fund_bankroll(cashier, bot.player, BANKROLL_BUY_INS * bot.buy_in_bets * small_bet)
                                   for bot in bots))
            self._subs.append(await spectator.subscribe(subjects.public_events(plan.table_id),
                                                        cb=self._fan_out(bots)))
            self.bots += bots
        await spectator.flush()
        await asyncio.gather(*(bot.start(subscribe_public=False) for bot in self.bots))

    async def _connect(self, role: str, name: str) -> Any:
        creds = None if self.authority is None else self.authority.ensure(role, name)
        nc = await process.connect(self.nats_url, f"studroom-room-{role}-{name}", creds=creds)
        self._connections.append(nc)
        return nc

    async def _client(self, role: str, name: str) -> TableClient:
        return TableClient(await self._connect(role, name), role, name)

    def _fan_out(self, bots: list[Bot]) -> Any:
        """One subscription to a table's public subject for all its bots (each message
        read once: the room's CPU goes to playing, not to copies of the same message)."""

        async def deliver(msg: Any) -> None:
            self.stats.public_messages += 1
            events = read_events(msg)
            if events is None:
                self.stats.error(BAD_MESSAGE)
                return
            for bot in bots:
                bot.take_public(msg, events)

        return deliver

    async def stop(self) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs.clear()
        await asyncio.gather(*(bot.stop() for bot in self.bots), return_exceptions=True)
        for nc in self._connections:
            with contextlib.suppress(Exception):
                await nc.drain()
        self._connections.clear()
