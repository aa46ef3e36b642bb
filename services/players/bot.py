"""A bot: a player, with his own NATS connection and credentials, who sits at one
table and plays random legal poker.

It uses nothing a real client could not use, and nothing a player may not: commands
go to the table service by request/reply on the player's own command subject
(:class:`~.client.TableClient`), and it learns what happens from the relay's public
subject of its table and its own private subject (its down cards), core NATS only (a
player may not use JetStream).  When it starts, reconnects or finds its table quiet,
it asks the table for its view (``ViewTable``: its seat, stack, the open turn).  Its
answers come from :class:`~.decisions.Decisions` (``studroom.domain.simulate``); its
chips from a :mod:`~.bank` (a player may not credit himself).

    client = TableClient(nc, "player", "bot-t01-2")       # nc: connected as bot-t01-2
    bot = Bot(client, "t01", seat=2, rng=random.Random(7), bank=floor)
    await bot.start()          # subscribe, look at the table, sit down, buy in
    ...                        # it plays on its own (message callbacks + tasks)
    await bot.stop()           # keeps the seat; leave() gives it up

How it sits, tops up between hands, retries, and finds its way back after a lost
message: see docs/design/players.md.  With ``record=True`` it keeps what it saw for
tests (``transcript``: :class:`~.transcript.Transcript`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from typing import Any

from studroom.domain.commands import Leave, SitDown, SitOut
from studroom.domain.errors import (ALREADY_LEAVING, ALREADY_SEATED, HAND_IN_PROGRESS, MUST_SHOW, NO_CHANGE,
                                    SEAT_TAKEN, UNKNOWN_SEAT)
from studroom.domain.events import (AntePosted, Event, HandCancelled, HandEnded, HandStarted, PlayerLeft,
                                    PlayerSatDown, SitOutChanged, TurnStarted)
from studroom.domain.views import TableView

from ..client.messages import UNREADABLE
from ..client.table import TableClient
from ..wire import subjects
from ..wire.event_messages import events_of
from ..wire.protocol import Reply
from .asking import Asking, code_of
from .bank import Bank
from .decisions import Decisions
from .stats import BAD_MESSAGE, BotStats
from .transcript import Transcript

log = logging.getLogger(__name__)

class Bot:
    def __init__(
        self,
        client: TableClient,
        table_id: str,
        seat: int,
        rng: random.Random,
        pace_ms: int = 0,
        *,
        bank: Bank | None = None,
        buy_in_bets: int = 50,
        stats: BotStats | None = None,
        record: bool = True,
        count_hands: bool = False,
        stall_seconds: float = 3.0,
        timeout: float = 2.0,
    ) -> None:
        if client.role != "player":
            raise ValueError(f"a bot is a player, not a {client.role}")
        self.client = client
        self.nc = client.nc
        self.table_id = subjects.check_name(table_id)
        self.seat = seat
        self.player = client.name
        self.decisions = Decisions(seat, rng)
        self.pace = max(pace_ms, 0) / 1000
        self.bank = bank
        self.buy_in_bets = buy_in_bets
        self.stats = stats if stats is not None else BotStats()
        self.count_hands = count_hands
        self.stall_seconds = stall_seconds
        self.asking = Asking(client, self.table_id, self.stats, timeout, lambda: self._stopped)

        # what it saw
        self.transcript = Transcript() if record else None

        # what it knows about its seat (the betting: self.decisions)
        self.seated = False
        self.stack: int | None = None        # None: unknown (a seat kept from a restart)
        self.in_hand = False
        self.posted = False
        self.sitting_out = False
        self.hand_no = 0
        self.last_turn = 0                   # the highest turn number seen
        self.answered_turn = 0               # the last turn this bot answered
        self.answering = 0                   # answers on their way (not yet replied)
        self.last_event_at = time.monotonic()

        self._subs: list[Any] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._topping_up = False
        self._want_sit_in = False
        self._staying_out = False            # sat out by its owner: never sits itself in
        self._stopped = False
        self._paused = False
        self._watchdog: asyncio.Task[Any] | None = None
        self._reconnects = 0                 # the connection's reconnects when we last looked

    # ------------------------------------------------------------------ lifecycle

    @property
    def min_buy_in(self) -> int:
        """The table minimum: ten small bets."""
        return 10 * self.decisions.stakes.small_bet

    @property
    def target_stack(self) -> int:
        return self.buy_in_bets * self.decisions.stakes.small_bet

    async def start(self, *, subscribe_public: bool = True) -> None:
        """Subscribe, look at the table, sit down (unless the seat is ours already), buy
        in and answer the open turn.  ``subscribe_public=False``: the caller feeds the
        table's public messages in (:meth:`take_public`), e.g. one subscription for all
        bots of a table."""
        if subscribe_public:
            self._subs.append(await self.nc.subscribe(
                subjects.public_events(self.table_id), cb=self._on_public))
        self._subs.append(await self.nc.subscribe(
            subjects.private_events(self.player, self.table_id), cb=self._on_private))
        await self.nc.flush()
        self._reconnects = self.nc.stats["reconnects"]     # a reconnect from now on: look again
        view = await self._look()
        if not self.seated:
            await self._sit_down()
        if self.seated:
            await self._top_up_if_short()
            if self.sitting_out and (self.stack is None or self.stack > 0):
                # A kept seat may have been left sitting out by a stopped top-up.
                await self._sit_in()
        if view is not None:
            self._answer_open_turn(view)
        self._watchdog = asyncio.create_task(self._watch())

    async def leave(self) -> None:
        """Give the seat up (cashed out now, or when the hand in play ends)."""
        if self.seated:
            reply = await self.asking.send(Leave(seat=self.seat), quiet={UNKNOWN_SEAT, ALREADY_LEAVING})
            if reply is not None and reply.ok:
                self.seated = False

    async def sit_out(self) -> Reply | None:
        """Sit out at its owner's wish, for good: a top-up in flight no longer sits it
        back in (it would otherwise, having sat out to top up before the next hand)."""
        self._staying_out, self._want_sit_in = True, False
        return await self.asking.send(SitOut(seat=self.seat, sitting_out=True), quiet={NO_CHANGE})

    def pause(self) -> None:
        """Stop answering and buying (it still records what it receives)."""
        self._paused = True

    async def stop(self) -> None:
        self._stopped = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs.clear()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if self._watchdog is not None:
            tasks.append(self._watchdog)
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _sit_down(self) -> None:
        reply = await self.asking.send(SitDown(seat=self.seat, player=self.player, auto_ante=True),
                                 quiet={SEAT_TAKEN, ALREADY_SEATED})
        if reply is None:
            return
        if reply.ok:
            self.seated, self.stack, self.sitting_out = True, 0, False
        elif code_of(reply) in (SEAT_TAKEN, ALREADY_SEATED):
            # Ours already, when the view could not tell: its stack is learnt from the
            # next hand or view.
            self.seated, self.stack = True, None

    # ------------------------------------------------------------------- messages

    def _read(self, msg: Any, where: str) -> list[tuple[int, Event]]:
        """A message's events, each with the table's version after it (none, counted
        and logged, when it is not a relay message)."""
        try:
            return events_of(msg)
        except UNREADABLE as e:
            self.stats.error(BAD_MESSAGE)
            log.warning("%s: undecodable %s message on %s: %s", self.player, where, msg.subject, e)
            return []

    async def _on_public(self, msg: Any) -> None:
        events = self._read(msg, "public")
        if events:
            self.take_public(msg, events)

    def take_public(self, msg: Any, events: list[tuple[int, Event]]) -> None:
        """One public message of the table (``msg``), read: its events in order, each
        with the table's version after it.  Of its turns only the last is open (the
        others ended within the message: an answer would be refused as stale)."""
        if self._stopped:
            return
        self.last_event_at = time.monotonic()
        last_turn = max((i for i, (_, event) in enumerate(events) if isinstance(event, TurnStarted)), default=-1)
        for i, (version, event) in enumerate(events):
            if self.transcript is not None:
                self.transcript.saw_public(msg, version, event)
            self._see(event, open_turn=i == last_turn)

    async def _on_private(self, msg: Any) -> None:
        for version, event in self._read(msg, "private"):
            if self.transcript is not None:
                self.transcript.saw_private(msg, version, event, self.seat, self.hand_no)

    def _see(self, event: Event, *, open_turn: bool = True) -> None:
        """Update what the bot knows; start an answer when the table waits on it
        (``open_turn``: a ``TurnStarted`` that no later event of its message ended)."""
        self.decisions.see(event)
        me = self.seat
        if isinstance(event, TurnStarted):
            self.last_turn = max(self.last_turn, event.turn)
            if open_turn:
                self._take_turn(event)
        elif isinstance(event, HandStarted):
            self.hand_no = event.hand_no
            mine = next((s for s in event.seats if s.seat == me), None)
            self.in_hand, self.posted = mine is not None, False
            if mine is not None:
                self.stack = mine.stack
            elif self.seated and not self.sitting_out and self.stack is None:
                self.stack = 0          # not dealt in although sitting in: no chips
            if mine is None and self.seated:
                self._spawn(self._top_up_if_short())
        elif isinstance(event, AntePosted):
            if event.seat == me:
                self.posted = True
        elif isinstance(event, HandEnded):
            if me in event.stacks:
                self.stack = event.stacks[me]
            self.in_hand = False
            if self.count_hands:
                self.stats.hands += 1
            if self.seated:
                self._spawn(self._top_up_if_short())
        elif isinstance(event, HandCancelled):
            self.in_hand = False
            if self.seated:
                self._spawn(self._top_up_if_short())
        elif isinstance(event, SitOutChanged):
            if event.seat == me:
                self.sitting_out = event.sitting_out
        elif isinstance(event, PlayerSatDown):
            if event.seat == me and event.player == self.player:
                self.seated = True
        elif isinstance(event, PlayerLeft):
            if event.seat == me:
                self.seated, self.stack = False, None

    def _take_turn(self, turn: TurnStarted) -> None:
        """Answer the open turn if it waits on us and we have not answered it yet."""
        ours = self.in_hand and not self.posted if turn.kind == "ante" else turn.seat == self.seat
        if ours and turn.turn > self.answered_turn:
            self.answered_turn = turn.turn
            self._spawn(self._answer(turn))

    def _spawn(self, coro: Any) -> None:
        if self._stopped or self._paused:
            coro.close()
            return
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -------------------------------------------------------------------- answers

    async def _answer(self, turn: TurnStarted) -> None:
        """Post the ante, or act on the turn (after the bot's pace)."""
        self.answering += 1
        try:
            if self.pace:
                await asyncio.sleep(self.pace)
            if turn.kind == "ante":
                await self.asking.send(self.decisions.post_ante(), action=True)
                return
            reply = await self.asking.send(self.decisions.answer(turn), action=True)
            if reply is not None and not reply.ok and code_of(reply) == MUST_SHOW:
                # R22: the last claimant may not muck.
                await self.asking.send(self.decisions.show(), action=True)
        finally:
            self.answering -= 1

    async def _sit_in(self) -> None:
        if self._staying_out:
            return
        await self.asking.send(SitOut(seat=self.seat, sitting_out=False), quiet={NO_CHANGE})

    async def _top_up_if_short(self) -> None:
        """Have the bank credit chips up to the target when short; only between hands
        (R3).  Without a bank it waits for someone to credit its seat."""
        if self._topping_up or not self.seated or self.stack is None:
            return
        if self.stack >= self.min_buy_in:
            if self.sitting_out and self._want_sit_in:
                self._want_sit_in = False
                await self._sit_in()
            return
        bank = self.bank
        if bank is None:
            return
        self._topping_up = True
        try:
            amount = self.target_stack - self.stack
            reply = await self.asking.credit(bank, self.seat, amount)
            if reply is None:
                return
            if reply.ok:
                self.stack += amount
                if self.sitting_out or self._want_sit_in:
                    self._want_sit_in = False
                    await self._sit_in()
            elif code_of(reply) == HAND_IN_PROGRESS and not self.sitting_out:
                # Dealt into the hand already: sit out the next one to top up before it.
                self._want_sit_in = True
                await self.asking.send(SitOut(seat=self.seat, sitting_out=True), quiet={NO_CHANGE})
        finally:
            self._topping_up = False

    # ------------------------------------------------------------------- recovery

    async def _watch(self) -> None:
        """Look at the table again when the connection came back (messages may have
        been lost meanwhile) or the table has been quiet too long."""
        while not self._stopped:
            await asyncio.sleep(max(self.stall_seconds / 3, 0.2))
            quiet = time.monotonic() - self.last_event_at
            if self.nc.stats["reconnects"] == self._reconnects and quiet < self.stall_seconds + self.pace:
                continue
            self._reconnects = self.nc.stats["reconnects"]
            self.last_event_at = time.monotonic()
            await self._recover()

    async def _recover(self) -> None:
        """Ask the table for its view, learn our seat from it, answer the open turn
        if it waits on us, and top up if we are short between hands."""
        view = await self._look()
        if view is None:
            return
        self._answer_open_turn(view, again=True)
        if not self.in_hand:
            await self._top_up_if_short()

    async def _look(self) -> TableView | None:
        """The table as we may see it (``ViewTable``), learnt; None when it did not answer."""
        try:
            view = await self.client.view(self.table_id, timeout=self.asking.timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 (refused, unavailable, no table yet)
            log.debug("%s: no view of %s: %s", self.player, self.table_id, e)
            return None
        self._learn(view)
        return view

    def _learn(self, view: TableView) -> None:
        """What the view says of our seat."""
        self.decisions.stakes = view.config.stakes
        if view.hand_no != self.hand_no:
            self.hand_no, self.posted = view.hand_no, False
        mine = next((s for s in view.seats if s.seat == self.seat and s.player == self.player), None)
        self.seated = mine is not None
        if mine is not None:
            self.stack, self.sitting_out = mine.stack, mine.sitting_out
        players = view.hand.players if view.hand is not None else []
        self.in_hand = any(p.seat == self.seat and p.player == self.player for p in players)
        self.last_event_at = time.monotonic()

    def _answer_open_turn(self, view: TableView, again: bool = False) -> None:
        """Answer the view's open turn if it waits on us.  ``again``: also a turn we
        answered already when no answer is on its way (it got lost)."""
        turn = view.turn
        if turn is None:
            return
        if again and turn.turn == self.answered_turn and not self.answering:
            self.answered_turn = turn.turn - 1
        self._see(turn)
