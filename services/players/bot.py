"""A bot: a plain NATS client that sits at one table and plays random legal poker.

It uses nothing a real client could not use: commands go to the table service by
request/reply (:class:`~studroom.services.players.client.TableClient`), and it learns what
happens from the relay's public subject of its table and its own private subject
(its down cards).  Decisions come from :func:`studroom.domain.simulate.choose`.

    bot = Bot(nc, TableClient(nc), "t01", seat=2, player="bot-t01-2", rng=random.Random(7))
    await bot.start()          # subscribe, sit down, buy in
    ...                        # it plays on its own (message callbacks + tasks)
    await bot.stop()

What it does
    * sits down with ``auto_ante=True`` and buys in ``buy_in_bets`` small bets (the
      table minimum is ten); a seat it already holds (a restart) is kept;
    * answers every ``TurnStarted`` naming its seat (kinds ``act`` and ``show``)
      after ``pace_ms`` with ``simulate.choose``; ``open_pair`` comes from the latest
      ``RoundStarted`` until the round's ``Acted`` events show a big bet made (R12);
      an ante window it has not posted in gets a ``PostAnte``;
    * tracks its stack (``HandStarted.seats``, ``HandEnded.stacks``, its accepted
      ``BuyIn``) and tops up between hands when it is below the table minimum. The
      service deals the next hand in the same transaction that ends the last one,
      so a top-up is often refused (``hand_in_progress``, R3): the bot then sits
      out (``SitOut``), and when the hand it is in has ended it buys in (it is in
      no hand now) and sits in again;
    * refusals: ``must_show`` -> ``Show``; a stale turn (``not_your_turn``,
      ``illegal_action``, ``duplicate_command``, ...) is ignored; a lost reply or
      an unavailable service is retried with the same ``command_id`` (the table
      refuses a command it already carried out, so a retry never acts twice);
    * on start, and whenever its table has been quiet for ``stall_seconds`` (a lost
      message, a room restarted in the middle of a hand), it reads the table's last
      public message from the relay's JetStream stream and answers it if it is its
      turn;
    * ``stop()`` keeps the seat (the room sits down again next time); ``leave()``
      gives it up (``studroom serve bot`` does on Ctrl-C).

Everything it saw is kept for tests when ``record=True``: ``public`` and
``private`` (decoded events, in arrival order, with their raw bytes), and
``down_cards`` (its own down cards, ``(hand_no, card)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from studroom.domain.commands import (
    BuyIn,
    Command,
    Leave,
    PostAnte,
    Show,
    SitDown,
    SitOut,
)
from studroom.domain.config import Stakes
from studroom.domain.events import (
    Acted,
    AntePosted,
    CardsDealt,
    Event,
    HandCancelled,
    HandEnded,
    HandStarted,
    PlayerLeft,
    PlayerSatDown,
    RoundStarted,
    SitOutChanged,
    TableEvent,
    TableOpened,
    TurnStarted,
)
from studroom.domain import simulate
from studroom.domain.errors import STALE_ANSWER
from ..wire import protocol, subjects

log = logging.getLogger(__name__)


LATENCY_SAMPLES = 200_000

_event_decoder = msgspec.json.Decoder(TableEvent)


def decode_event(data: bytes) -> Event:
    """A relay message's body: one table event (public or private view) as msgspec
    JSON of the tagged union ``TableEvent``."""
    return _event_decoder.decode(data)


@dataclass
class BotStats:
    """Counters shared by the bots of one process (the room's progress line)."""

    actions: int = 0               # accepted Act / Show / Muck / PostAnte
    commands: int = 0              # every command sent
    refused_stale: int = 0         # turns that were over when the answer arrived
    errors: int = 0                # unexpected refusals, timeouts, bad messages
    hands: int = 0                 # HandEnded seen (counted once per table by seat owner)
    # seconds, request -> reply, of the latest commands (bounded: a room runs for days)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    error_codes: dict[str, int] = field(default_factory=dict)
    keep_latencies: bool = True

    def error(self, code: str) -> None:
        self.errors += 1
        self.error_codes[code] = self.error_codes.get(code, 0) + 1


@dataclass(frozen=True)
class Received:
    """One message as the bot got it."""

    subject: str
    data: bytes
    event: Event
    at: float
    headers: dict[str, str] | None = None


class Bot:
    def __init__(
        self,
        nc: Any,
        client: Any,
        table_id: str,
        seat: int,
        player: str,
        rng: random.Random,
        pace_ms: int = 0,
        *,
        buy_in_bets: int = 50,
        stats: BotStats | None = None,
        record: bool = True,
        count_hands: bool = False,
        stall_seconds: float = 3.0,
        timeout: float = 2.0,
        js: Any = None,
        on_event: Callable[[Bot, Event], None] | None = None,
    ) -> None:
        self.nc = nc
        self.client = client
        self.table_id = subjects.check_name(table_id)
        self.seat = seat
        self.player = subjects.check_name(player)
        self.rng = rng
        self.pace = max(pace_ms, 0) / 1000
        self.buy_in_bets = buy_in_bets
        self.stats = stats if stats is not None else BotStats()
        self.record = record
        self.count_hands = count_hands
        self.stall_seconds = stall_seconds
        self.timeout = timeout
        self.js = js
        self.on_event = on_event

        # what it saw
        self.public: list[Received] = []
        self.private: list[Received] = []
        self.down_cards: list[tuple[int, str]] = []

        # what it knows about the table
        self.small_bet: int | None = None
        self.big_bet: int | None = None
        self.bring_in: int | None = None
        self.min_buy_in: int | None = None
        self.seated = False
        self.stack: int | None = None        # None: unknown (a seat kept from a restart)
        self.in_hand = False
        self.posted = False
        self.sitting_out = False
        self.hand_no = 0
        self.open_pair = False               # R12: this street allows a big bet ...
        self.big_made = False                # ... until one has been made
        self.current_bet = 0
        self.last_turn = 0                   # the highest turn number seen
        self.answered_turn = 0               # the last turn this bot answered
        self.last_event_at = time.monotonic()

        self._subs: list[Any] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._topping_up = False
        self._want_sit_in = False
        self._stopped = False
        self._paused = False
        self._watchdog: asyncio.Task[Any] | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def target_stack(self) -> int:
        return self.buy_in_bets * (self.small_bet or simulate.STAKES.small_bet)

    async def start(self, *, stakes: Stakes | None = None, stack: int | None = None,
                    seated: bool = False, subscribe_public: bool = True) -> None:
        """Subscribe, sit down and buy in.  ``stakes``/``stack``/``seated``: what the
        caller already knows of the table (e.g. the room after a restart).
        ``subscribe_public=False``: the caller feeds the table's public messages in
        (:meth:`take_public`), e.g. one subscription for all bots of a table."""
        self._set_stakes(stakes or simulate.STAKES)
        if subscribe_public:
            self._subs.append(await self.nc.subscribe(
                subjects.public_events(self.table_id), cb=self._on_public))
        self._subs.append(await self.nc.subscribe(
            subjects.private_events(self.player, self.table_id), cb=self._on_private))
        await self.nc.flush()
        if seated:
            self.seated, self.stack = True, stack
        else:
            await self._sit_down()
        if self.seated:
            await self._top_up_if_short()
            if self.stack is None or self.stack > 0:
                # A kept seat may have been left sitting out by a stopped top-up.
                await self._send(SitOut(seat=self.seat, sitting_out=False), quiet={"no_change"})
        await self._recover()
        self._watchdog = asyncio.create_task(self._watch())

    async def leave(self) -> None:
        """Give the seat up (cashed out now, or when the hand in play ends)."""
        if self.seated:
            reply = await self._send(Leave(seat=self.seat), quiet={"unknown_seat", "already_leaving"})
            if reply is not None and reply.ok:
                self.seated = False

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
        reply = await self._send(SitDown(seat=self.seat, player=self.player, auto_ante=True),
                                 quiet={"seat_taken", "already_seated"})
        if reply is None:
            return
        if reply.ok:
            self.seated, self.stack = True, 0
            return
        code = reply.error.code if reply.error else ""
        if code in ("seat_taken", "already_seated"):
            # A restart: the seat is (probably) ours already.  Its stack is learnt from
            # the next hand; the watchdog buys in if nothing happens.
            self.seated, self.stack = True, None

    # ------------------------------------------------------------------- messages

    async def _on_public(self, msg: Any) -> None:
        try:
            event = decode_event(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            self.stats.error("bad_message")
            log.warning("%s: undecodable public message on %s: %s", self.player, msg.subject, e)
            return
        self.take_public(msg, event)

    def take_public(self, msg: Any, event: Event) -> None:
        """One public message of the table (``msg``), decoded (``event``)."""
        if self._stopped:
            return
        if self.record:
            self.public.append(Received(msg.subject, msg.data, event, time.monotonic(),
                                        dict(msg.headers) if msg.headers else None))
        self.last_event_at = time.monotonic()
        self._see(event)

    async def _on_private(self, msg: Any) -> None:
        try:
            event = decode_event(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            self.stats.error("bad_message")
            log.warning("%s: undecodable private message on %s: %s", self.player, msg.subject, e)
            return
        if self.record:
            self.private.append(Received(msg.subject, msg.data, event, time.monotonic(),
                                         dict(msg.headers) if msg.headers else None))
            if isinstance(event, CardsDealt):
                self.down_cards += [
                    (self.hand_no, d.card) for d in event.cards
                    if d.seat == self.seat and not d.up and d.card is not None
                ]

    def _see(self, event: Event) -> None:
        """Update what the bot knows; start an answer when the table waits on it."""
        if self.on_event is not None:
            self.on_event(self, event)
        me = self.seat
        if isinstance(event, TurnStarted):
            self.last_turn = max(self.last_turn, event.turn)
            if event.kind == "ante":
                if self.in_hand and not self.posted and event.turn > self.answered_turn:
                    self.answered_turn = event.turn
                    self._spawn(self._answer_ante(event.turn))
            elif event.seat == me and event.turn > self.answered_turn:
                self.answered_turn = event.turn
                self._spawn(self._answer(event, self.open_pair and not self.big_made))
        elif isinstance(event, Acted):
            self._acted(event)
        elif isinstance(event, RoundStarted):
            self.open_pair, self.big_made, self.current_bet = event.open_pair, False, 0
        elif isinstance(event, HandStarted):
            self.hand_no = event.hand_no
            mine = next((s for s in event.seats if s.seat == me), None)
            self.in_hand, self.posted, self.open_pair = mine is not None, False, False
            self.big_made, self.current_bet = False, 0
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
        elif isinstance(event, TableOpened):
            self._set_stakes(event.config.stakes)

    def _acted(self, event: Acted) -> None:
        """Follow the round's bet, to know when R12's big bet has been made."""
        if event.action == "bring_in":
            self.current_bet = max(self.current_bet, self.bring_in or event.to)
        elif event.action in ("complete", "bet", "raise"):
            if event.full and self.big_bet is not None and event.to - self.current_bet >= self.big_bet:
                self.big_made = True
            self.current_bet = max(self.current_bet, event.to)

    def _set_stakes(self, stakes: Stakes) -> None:
        self.small_bet, self.big_bet = stakes.small_bet, stakes.big_bet
        self.bring_in = stakes.bring_in_amount
        self.min_buy_in = 10 * stakes.small_bet

    def _spawn(self, coro: Any) -> None:
        if self._stopped or self._paused:
            coro.close()
            return
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -------------------------------------------------------------------- answers

    async def _answer(self, turn: TurnStarted, open_pair: bool) -> None:
        if self.pace:
            await asyncio.sleep(self.pace)
        command = simulate.choose(turn, self.rng, open_pair)
        command = msgspec.structs.replace(command, command_id=self._command_id(turn.turn))
        reply = await self._send(command, action=True)
        if reply is not None and not reply.ok and reply.error and reply.error.code == "must_show":
            # R22: the last claimant may not muck.
            await self._send(Show(seat=self.seat, command_id=self._command_id(turn.turn, "show")),
                             action=True)

    async def _answer_ante(self, turn: int) -> None:
        if self.pace:
            await asyncio.sleep(self.pace)
        await self._send(PostAnte(seat=self.seat, command_id=self._command_id(turn, "ante")),
                         action=True)

    def _command_id(self, turn: int, what: str = "turn") -> str:
        # Turn numbers never repeat at a table: a retry of this answer carries the
        # same id and is refused (duplicate_command) if the first one got through.
        return f"{self.player}:{turn}:{what}"

    async def _top_up_if_short(self) -> None:
        """Buy chips up to the target when short; only between hands (R3)."""
        if self._topping_up or not self.seated or self.stack is None:
            return
        minimum = self.min_buy_in or 10 * simulate.STAKES.small_bet
        if self.stack >= minimum and not self.sitting_out:
            return
        if self.stack >= minimum and self.sitting_out:
            if self._want_sit_in:
                self._want_sit_in = False
                await self._send(SitOut(seat=self.seat, sitting_out=False), quiet={"no_change"})
            return
        self._topping_up = True
        try:
            amount = self.target_stack - self.stack
            reply = await self._send(BuyIn(seat=self.seat, amount=amount),
                                     quiet={"hand_in_progress"})
            if reply is None:
                return
            if reply.ok:
                self.stack += amount
                if self.sitting_out or self._want_sit_in:
                    self._want_sit_in = False
                    await self._send(SitOut(seat=self.seat, sitting_out=False), quiet={"no_change"})
            elif reply.error and reply.error.code == "hand_in_progress" and not self.sitting_out:
                # Dealt into the hand already: sit out the next one to top up before it.
                self._want_sit_in = True
                await self._send(SitOut(seat=self.seat, sitting_out=True), quiet={"no_change"})
        finally:
            self._topping_up = False

    # -------------------------------------------------------------------- sending

    async def _send(self, command: Command, *, action: bool = False,
                    quiet: set[str] | frozenset[str] = frozenset(), attempts: int = 4) -> Any:
        """Send a command; retry lost replies and ``conflict``/``unavailable``.
        Returns the Reply, or None when it never got one."""
        for attempt in range(attempts):
            if self._stopped:
                return None
            self.stats.commands += 1
            started = time.perf_counter()
            try:
                reply = await self.client.send(self.table_id, command, timeout=self.timeout)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 (nats timeouts, no responders, closed)
                code = protocol.TIMEOUT if isinstance(e, asyncio.TimeoutError) else type(e).__name__
                log.debug("%s: %s on %s (attempt %d)", self.player, code, type(command).__name__, attempt)
                if attempt + 1 == attempts:
                    self.stats.error(code)
                    return None
                await asyncio.sleep(0.05 * 2**attempt)
                continue
            elapsed = time.perf_counter() - started
            if self.stats.keep_latencies:
                self.stats.latencies.append(elapsed)
            if reply.ok:
                if action:
                    self.stats.actions += 1
                return reply
            code = reply.error.code if reply.error else "?"
            if code in protocol.RETRYABLE and attempt + 1 < attempts:
                await asyncio.sleep(0.02 * 2**attempt)
                continue
            if code in STALE_ANSWER:
                self.stats.refused_stale += 1
            elif code not in quiet and code != "must_show":
                self.stats.error(code)
                log.info("%s: %s refused: %s", self.player, type(command).__name__,
                         reply.error.message if reply.error else code)
            return reply
        return None

    # ------------------------------------------------------------------- recovery

    async def _watch(self) -> None:
        """Look the table up when it has been quiet too long."""
        while not self._stopped:
            await asyncio.sleep(max(self.stall_seconds / 3, 0.2))
            quiet = time.monotonic() - self.last_event_at
            if quiet < self.stall_seconds + self.pace:
                continue
            self.last_event_at = time.monotonic()
            await self._recover(again=True)
            if self.seated and self.stack is None:
                # A kept seat whose stack we never learnt, on a table that does not
                # play: maybe every other seat waits on our chips.
                self.stack = 0
                await self._top_up_if_short()

    async def _recover(self, again: bool = False) -> None:
        """Answer the table's last public message if it is our turn (the relay's
        JetStream stream keeps it)."""
        if self.js is None:
            return
        try:
            raw = await self.js.get_last_msg(subjects.PUBLIC_STREAM, subjects.public_events(self.table_id))
        except Exception:  # noqa: BLE001 (no stream or no message yet)
            return
        try:
            event = decode_event(raw.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if not isinstance(event, TurnStarted):
            return
        if event.seat == self.seat and event.kind != "ante":
            if again and event.turn == self.answered_turn:
                # Our answer got lost: send it again (same command id, never twice).
                self.answered_turn = event.turn - 1
            if event.turn > self.answered_turn:
                self.answered_turn = event.turn
                self._spawn(self._answer(event, self.open_pair and not self.big_made))


# ----------------------------------------------------------------- one bot alone


def nats_url_for(settings: Any) -> str:
    """``STUDROOM_NATS_URL``, or the embedded NATS a room runs in the data folder."""
    if settings.nats_url:
        return settings.nats_url
    port_file = Path(settings.data_dir) / "nats" / "port"
    try:
        port = int(port_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        msg = (f"no NATS: set STUDROOM_NATS_URL, or start `studroom room` with the data "
               f"folder {settings.data_dir} first")
        raise SystemExit(msg) from None
    return f"nats://127.0.0.1:{port}"


async def serve_bot(nats_url: str, table_id: str, seat: int, player: str, *, pace_ms: int = 500,
                    seed: int | None = None, buy_in_bets: int = 50,
                    stop: asyncio.Event | None = None) -> BotStats:
    """Run one bot until ``stop`` is set; then it leaves its seat."""
    import nats
    from .client import TableClient

    stop = stop or asyncio.Event()
    nc = await nats.connect(nats_url, name=f"studroom-bot-{player}", max_reconnect_attempts=-1)
    bot = Bot(nc, TableClient(nc), table_id, seat, player, random.Random(seed), pace_ms,
              buy_in_bets=buy_in_bets, record=False, count_hands=True, js=nc.jetstream())
    try:
        await bot.start()
        if not bot.seated:
            raise SystemExit(f"{player} could not sit down in seat {seat} of {table_id}")
        log.info("%s plays seat %d of %s", player, seat, table_id)
        await stop.wait()
        bot.pause()
        await bot.leave()         # nobody plays this seat any more
    finally:
        await bot.stop()
        await nc.drain()
    return bot.stats
