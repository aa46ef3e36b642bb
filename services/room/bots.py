"""The room's bots, all in this process: each table opened, its bots seated, one
NATS connection and one public subscription per table."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence
from typing import Any

import msgspec
from studroom.domain import errors
from studroom.domain.commands import OpenTable

from ..players.bot import Bot
from ..players.client import TableClient
from ..players.messages import decode_event
from ..players.stats import BAD_MESSAGE, BotStats
from ..runtime import process
from ..wire import protocol, subjects
from .plans import TablePlan


async def open_table(client: Any, plan: TablePlan, deadline: float) -> None:
    """OpenTable, retried until the table service answers; ``already_open`` is fine."""
    command = OpenTable(table_id=plan.table_id, config=plan.config)
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            reply = await client.send(plan.table_id, command, timeout=2.0)
        except Exception as e:  # noqa: BLE001 (no responders yet, timeout)
            last = f"{type(e).__name__}: {e}"
            await asyncio.sleep(0.25)
            continue
        if reply.ok or (reply.error and reply.error.code == errors.ALREADY_OPEN):
            return
        last = f"{reply.error.code}: {reply.error.message}" if reply.error else "refused"
        if reply.error and reply.error.code not in (*protocol.RETRYABLE, protocol.UNKNOWN_TABLE):
            break
        await asyncio.sleep(0.25)
    raise RuntimeError(f"could not open table {plan.table_id}: {last}")


class Room:
    """The bots of a room, in this process, on a running NATS with services."""

    def __init__(self, nats_url: str, plans: Sequence[TablePlan], *, pace_ms: int = 0,
                 seed: int | None = None, record: bool = False, keep_latencies: bool = True,
                 stall_seconds: float = 3.0) -> None:
        self.nats_url = nats_url
        self.plans = list(plans)
        self.pace_ms = pace_ms
        self.rng = random.Random(seed)
        self.record = record
        self.stall_seconds = stall_seconds
        self.stats = BotStats(keep_latencies=keep_latencies)
        self.bots: list[Bot] = []
        self._connections: list[Any] = []
        self._subs: list[Any] = []

    async def start(self, open_timeout: float = 60.0) -> None:
        deadline = time.monotonic() + open_timeout
        for plan in self.plans:
            nc = await process.connect(self.nats_url, f"studroom-room-{plan.table_id}")
            self._connections.append(nc)
            client = TableClient(nc)
            await open_table(client, plan, deadline)
            js = nc.jetstream()
            bots: list[Bot] = []
            self._subs.append(await nc.subscribe(subjects.public_events(plan.table_id),
                                                 cb=self._fan_out(bots)))
            for i, (seat, player) in enumerate(plan.seats.items()):
                bot = Bot(nc, client, plan.table_id, seat, player,
                          random.Random(self.rng.getrandbits(64)), self.pace_ms,
                          stats=self.stats, record=self.record, count_hands=i == 0,
                          stall_seconds=self.stall_seconds, js=js)
                bots.append(bot)
                self.bots.append(bot)
        await asyncio.gather(*(self._start_bot(bot) for bot in self.bots))

    def _fan_out(self, bots: list[Bot]) -> Any:
        """One subscription to a table's public subject for all its bots (decoded
        once: the room's CPU goes to playing, not to copies of the same message)."""

        async def deliver(msg: Any) -> None:
            try:
                event = decode_event(msg.data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                self.stats.error(BAD_MESSAGE)
                return
            for bot in bots:
                bot.take_public(msg, event)

        return deliver

    async def _start_bot(self, bot: Bot) -> None:
        plan = next(p for p in self.plans if p.table_id == bot.table_id)
        kept = bot.seat in plan.kept
        await bot.start(stakes=plan.config.stakes, stack=plan.kept.get(bot.seat), seated=kept,
                        subscribe_public=False)

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
