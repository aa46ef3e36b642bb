"""The timer service: every turn ends, on time, exactly once (rules R5, R18, R19, R20).

    studroom serve timer [--instance-id ID]

A NATS client with the credentials of the service "timer".  It reads the relay's
public events: each ``TurnStarted`` becomes ONE JetStream message schedule for its
table (the next turn's replaces it).  When a schedule fires, the service sends ``Timeout(turn,
seat)`` to the table as the service "timer" (no clock in it: the table dates it) and
acks after the table's reply; a busy or unreachable table gets the message again
later.  Why schedules, the guarantees and the lateness: see docs/design/timer.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import nats.errors
import nats.js.errors
from studroom.domain.commands import Timeout
from studroom.domain.errors import DUPLICATE_COMMAND, NO_HAND, STALE_TIMEOUT
from ..wire import protocol, subjects
from ..wire.pull import PullLoop, retry_later, stamp_ms
from .schedule import TimerPayload, decode_payload, encode_payload, now_ms, schedule_headers
from .streams import (
    FIRES_CONSUMER,
    TURNS_CONSUMER,
    ensure_consumer,
    ensure_timer_stream,
    fires_consumer_config,
    turns_consumer_config,
    wait_for_stream,
)

log = logging.getLogger("studroom.timer")

EVENT_HEADER: Final = "Studroom-Event"       # the relay names each public event's type
WANTED_EVENT: Final = "TurnStarted"
SENDER: Final = "timer"                      # the service identity timeouts come from
OK: Final = "ok"                             # the outcome of a Timeout the table carried out
# The turn this timer was set for is over (answered, or its hand ended): drop the timer.
STALE_CODES: Final = frozenset({STALE_TIMEOUT, NO_HAND})
WRONG_LAST_SEQUENCE: Final = 10071           # JetStream API error code
PUBLISH_ATTEMPTS: Final = 10                 # compare-and-set rounds before a redelivery
# What the counters call the messages it cannot use (they are acked and dropped).
BAD_EVENT: Final = "bad_event"               # a public message that is no event
BAD_TURN: Final = "bad_turn"                 # a TurnStarted without turn or deadline
BAD_TIMER: Final = "bad_timer"               # a fired message that is no TimerPayload


class _Head(msgspec.Struct, frozen=True):
    """The few fields of a public event this service reads (others are ignored)."""

    type: str
    turn: int | None = None
    seat: int | None = None
    kind: str | None = None
    deadline_ms: int | None = None


_head_decoder = msgspec.json.Decoder(_Head)


@dataclass
class TimerStats:
    """What one instance did (logged every ``stats_every`` seconds and at the end)."""

    turns_seen: int = 0          # TurnStarted events read
    scheduled: int = 0           # schedules published
    superseded: int = 0          # TurnStarted older than the pending schedule: skipped
    fired: int = 0               # fired timers received
    timed_out: int = 0           # Timeout accepted by the table
    stale: int = 0               # stale_timeout: the player acted in time (R20)
    duplicate: int = 0           # duplicate_command: another instance's id was higher (retried)
    retried: int = 0             # nak'ed for redelivery (no reply, conflict, ...)
    errors: dict[str, int] = field(default_factory=dict)
    # fire lateness, ms: server's fire stamp - deadline; reply received - deadline
    fire_lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    done_lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1

    def line(self) -> str:
        errors = ", ".join(f"{k}={v}" for k, v in sorted(self.errors.items())) or "none"
        return (f"turns={self.turns_seen} scheduled={self.scheduled} superseded={self.superseded} "
                f"fired={self.fired} timed_out={self.timed_out} stale={self.stale} "
                f"duplicate={self.duplicate} retried={self.retried} errors: {errors}")


def table_client(nc: Any, retry_for: float = 2.0) -> Any:
    """A :class:`~studroom.services.players.client.TableClient` of the service "timer"
    (its commands carry the client's sequence ids) that retries a busy or moving table
    only briefly: longer outages are the fire consumer's redelivery's job."""
    from ..players.client import TableClient

    return TableClient(nc, "service", SENDER, retry_for=retry_for)


class TimerService:
    """One instance: both consumers' loops over one NATS connection."""

    def __init__(
        self,
        nc: Any,
        *,
        instance_id: str | None = None,
        client: Any = None,
        request_timeout: float = 2.0,
        max_inflight: int = 512,
        replicas: int = 1,
        stats: TimerStats | None = None,
        on_fire_done: Callable[[TimerPayload, str, int | None], None] | None = None,
    ) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.instance_id = instance_id or f"{socket.gethostname()}-{os.getpid()}"
        self.client = client if client is not None else table_client(nc)
        self.request_timeout = request_timeout
        self.max_inflight = max_inflight
        self.replicas = replicas
        self.stats = stats if stats is not None else TimerStats()
        self.on_fire_done = on_fire_done     # (payload, outcome, fire stamp): benchmarks
        self._locks: dict[str, asyncio.Lock] = {}
        self.loops: list[PullLoop] = []

    # -- setup

    async def setup(self, stop: asyncio.Event | None = None, *, wait_public: bool = True) -> bool:
        """Declare the stream and the consumers; False if ``stop`` came while waiting
        for the relay's public stream."""
        await ensure_timer_stream(self.js, self.replicas)
        await ensure_consumer(self.js, subjects.TIMER_STREAM, fires_consumer_config())
        if wait_public:
            if not await wait_for_stream(self.js, subjects.PUBLIC_STREAM, stop):
                return False
            await ensure_consumer(self.js, subjects.PUBLIC_STREAM, turns_consumer_config())
        return True

    async def run(self, stop: asyncio.Event, *, turns: bool = True, fires: bool = True) -> None:
        """Pull until ``stop`` is set (call :meth:`setup` first)."""
        if fires:
            self.loops.append(PullLoop(
                self.nc, subjects.TIMER_STREAM, FIRES_CONSUMER, self._on_fire,
                max_inflight=self.max_inflight,
                recreate=lambda: ensure_consumer(self.js, subjects.TIMER_STREAM, fires_consumer_config())))
        if turns:
            self.loops.append(PullLoop(
                self.nc, subjects.PUBLIC_STREAM, TURNS_CONSUMER, self._on_public,
                max_inflight=self.max_inflight,
                recreate=lambda: ensure_consumer(self.js, subjects.PUBLIC_STREAM, turns_consumer_config())))
        try:
            await asyncio.gather(*(loop.run(stop) for loop in self.loops))
        finally:
            for loop in self.loops:
                await loop.drain()

    def reconnected(self) -> None:
        """After a reconnect: the open pull requests are lost, ask again."""
        for loop in self.loops:
            loop.reset()

    # -- public events

    async def _on_public(self, msg: Any) -> None:
        kind = msg.headers.get(EVENT_HEADER) if msg.headers else None
        if kind is not None and kind != WANTED_EVENT:
            await msg.ack()
            return
        try:
            head = _head_decoder.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.stats.error(BAD_EVENT)
            log.warning("undecodable public message on %s: skipped", msg.subject)
            await msg.ack()
            return
        if head.type != WANTED_EVENT:
            await msg.ack()
            return
        table_id = msg.subject.rsplit(".", 1)[1]
        lock = self._locks.get(table_id)
        if lock is None:
            lock = self._locks[table_id] = asyncio.Lock()
        try:
            async with lock:
                await self._schedule(table_id, head)
        except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as e:
            log.info("%s %s of %s not handled (%r): redelivery", head.type, head.turn, table_id, e)
            await self._retry_later(msg)
            return
        finally:
            if not lock.locked() and not lock._waiters:
                self._locks.pop(table_id, None)
        await msg.ack()

    async def _schedule(self, table_id: str, head: _Head) -> None:
        """Publish the turn's schedule unless a newer turn's is pending (compare-and-set)."""
        self.stats.turns_seen += 1
        if head.turn is None or head.deadline_ms is None:
            self.stats.error(BAD_TURN)
            return
        payload = encode_payload(TimerPayload(
            table_id=table_id, turn=head.turn, deadline_ms=head.deadline_ms, seat=head.seat,
            kind=head.kind or "act"))
        subject = subjects.timer_schedule(table_id)
        for _ in range(PUBLISH_ATTEMPTS):
            try:
                pending = await self.js.get_last_msg(subjects.TIMER_STREAM, subject, direct=True)
            except nats.js.errors.NotFoundError:
                pending = None
            expected = 0
            if pending is not None:
                try:
                    if decode_payload(pending.data).turn >= head.turn:
                        self.stats.superseded += 1
                        return
                except (msgspec.DecodeError, msgspec.ValidationError):
                    pass                               # not ours: replace it
                expected = pending.seq
            try:
                await self.js.publish(subject, payload,
                                      headers=schedule_headers(table_id, head.deadline_ms, expected))
            except nats.js.errors.APIError as e:
                if e.err_code == WRONG_LAST_SEQUENCE:
                    continue                          # someone wrote meanwhile: look again
                raise
            self.stats.scheduled += 1
            return
        raise nats.errors.TimeoutError  # pragma: no cover (ten lost races: retry later)

    # -- fired timers

    async def _on_fire(self, msg: Any) -> None:
        try:
            timer = decode_payload(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.stats.error(BAD_TIMER)
            await msg.ack()
            return
        self.stats.fired += 1
        fired_ms = stamp_ms(msg)
        command = Timeout(turn=timer.turn, seat=timer.seat)     # the client numbers it; the table dates it
        try:
            reply = await self.client.send(timer.table_id, command, timeout=self.request_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 (no reply, no responders, disconnected)
            log.info("timeout of %s turn %d: no answer (%s): redelivery", timer.table_id, timer.turn,
                     type(e).__name__)
            await self._retry_later(msg)
            return
        code = OK if reply.ok else (reply.error.code if reply.error else "?")
        if code == DUPLICATE_COMMAND:
            # Not carried out: another instance, its clock ahead of ours, numbered a
            # timeout of this table higher. The redelivery gets a later id.
            self.stats.duplicate += 1
            log.warning("timeout of %s turn %d refused as a duplicate (a timer instance's clock is "
                        "ahead of this one's): again later", timer.table_id, timer.turn)
        if code in protocol.RETRYABLE or code == DUPLICATE_COMMAND:
            await self._retry_later(msg)
            return
        done = now_ms()
        self._count_outcome(timer, code, reply)
        if fired_ms is not None:
            self.stats.fire_lateness_ms.append(fired_ms - timer.deadline_ms)
        self.stats.done_lateness_ms.append(done - timer.deadline_ms)
        await msg.ack()
        if self.on_fire_done is not None:
            self.on_fire_done(timer, code, fired_ms)

    def _count_outcome(self, timer: TimerPayload, code: str, reply: protocol.Reply) -> None:
        """Count the table's final answer to a timeout (the message is acked after it)."""
        if code == OK:
            self.stats.timed_out += 1
            log.debug("timed out %s turn %d seat %s", timer.table_id, timer.turn, timer.seat)
        elif code in STALE_CODES:
            self.stats.stale += 1
        else:
            self.stats.error(code)
            log.warning("timeout of %s turn %d refused: %s", timer.table_id, timer.turn,
                        reply.error.message if reply.error else code)

    async def _retry_later(self, msg: Any) -> None:
        self.stats.retried += 1
        await retry_later(msg)
