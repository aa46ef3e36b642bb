"""Continuous pulling from a durable JetStream pull consumer, and what a handler needs
to answer its messages: when to ask for a redelivery, when the server stored one.

Not tied to one service: the timer service runs two of these loops, the lobby and the
cashier one each.  Several processes may pull from the same consumer; the server hands
each message to one of them (see docs/design/timer.md, "Ordering and scale").  No
message wedges a consumer: one its handler cannot handle is set aside as a dead letter
(``dead_letters.py``; docs/design/relay.md, "Dead letters").
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, NamedTuple

import nats.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from .dead_letters import DeadLetters, Undelivered
from .subjects import consumer_next

log = logging.getLogger("studroom.pull")

FIRST_RETRY = 0.2      # seconds before the first redelivery of a message nak'ed once
LAST_RETRY = 5.0       # the delay doubles with every delivery up to this
# Deliveries after which a message is set aside unhandled: with the back-off above, a
# message asked for again at every delivery rides out about an hour of outage (a table
# service or a database away must not turn timeouts or cash-outs into dead letters).
MAX_DELIVERIES = 720
# Handler failures that are about the system, not the message: asked for again later.
TRANSIENT: tuple[type[BaseException], ...] = (TimeoutError, OSError, nats.errors.Error)


def backoff(delivered: int) -> float:
    """Seconds to wait before redelivering a message delivered ``delivered`` times.
    Not the room's retry policy (runtime/retry.py): a NAK's delay, by delivery count."""
    return min(FIRST_RETRY * 2 ** (max(delivered, 1) - 1), LAST_RETRY)


class Delivery(NamedTuple):
    """What a JetStream delivery's reply subject says (nats-py's ``msg.metadata``
    without its datetime and frozen dataclasses, a good part of a message's cost in
    the pull loop: issue 20)."""

    delivered: int          # how often the server has delivered it
    seq: int                # its sequence in the stream
    stored_ns: int          # when JetStream stored it, ns since the epoch


def delivery(msg: Any) -> Delivery | None:
    """The delivery ``msg`` is, from its reply subject (None: not a JetStream ack subject):
    ``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<stored>.<pending>``,
    or with ``<domain>.<account hash>.`` after ``$JS.ACK.`` (and a token more at the end)."""
    reply = getattr(msg, "reply", None)
    tokens = reply.split(".") if reply else ()
    if len(tokens) == 9:
        first = 4
    elif len(tokens) >= 11:
        first = 6
    else:
        return None
    if tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    try:
        return Delivery(int(tokens[first]), int(tokens[first + 1]), int(tokens[first + 3]))
    except ValueError:
        return None


def delivered(msg: Any) -> int:
    """How often the server has delivered ``msg`` (1 when it does not say)."""
    known = delivery(msg)
    if known is not None:
        return known.delivered or 1
    try:                                          # another reply subject: nats-py's reading
        return msg.metadata.num_delivered or 1
    except Exception:  # noqa: BLE001 (not a JetStream message)
        return 1


async def retry_later(msg: Any) -> None:
    """Ask for ``msg`` again after a growing delay (nak); a lost nak just means the
    server redelivers it after the consumer's ack wait."""
    with contextlib.suppress(Exception):
        await msg.nak(delay=backoff(delivered(msg)))


def shared_consumer(durable: str, filter_subject: str | Sequence[str], ack_wait: float,
                    description: str) -> ConsumerConfig:
    """A durable pull consumer every instance fetches from, from the stream's first
    message: each message goes to one of them, and is redelivered (never dropped) if it
    is not acknowledged in time.  ``filter_subject``: one subject, or a list of them
    (the server sends only what matches one; NATS 2.10+), e.g. ``event_messages.marked_subjects``.
    Acks stay explicit, one a message: several instances share the consumer, and an
    "ack all" of one would acknowledge the messages another is still handling
    (docs/design/timer.md, "Acks")."""
    several = not isinstance(filter_subject, str)
    return ConsumerConfig(
        durable_name=durable,
        description=description,
        filter_subject=None if several else filter_subject,
        filter_subjects=list(filter_subject) if several else None,
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_deliver=-1,
        max_ack_pending=20_000,
        max_waiting=512,
    )


def stamp_ms(msg: Any) -> int | None:
    """When JetStream stored ``msg``, in ms since the epoch (None: not a JetStream message)."""
    known = delivery(msg)
    if known is not None:
        return ms_of(known.stored_ns)
    try:                                          # another reply subject: nats-py's reading
        return int(msg.metadata.timestamp.timestamp() * 1000)
    except Exception:  # noqa: BLE001 (not a JetStream message)
        return None


def ms_of(stored_ns: int) -> int:
    """A delivery's time in ms, through the float and datetime nats-py's ``metadata``
    makes of it (``lobby/stream.py``'s ``stored_ms`` counts on the same rounding)."""
    return int(datetime.datetime.fromtimestamp(stored_ns / 1_000_000_000.0, datetime.timezone.utc).timestamp() * 1000)


class PullLoop:
    """Keeps pull requests open on a durable pull consumer and hands every message to
    ``handler`` the moment it arrives (what newer clients call ``consume``): a coroutine
    function's runs as a task, a handler may also return a future it completes itself.

    At most ``max_inflight`` messages are requested or being handled at once.  A pull
    request lives ``expires`` seconds with idle heartbeats every ``heartbeat`` seconds;
    when neither a message nor a heartbeat came for three heartbeats (a reconnect, a
    server restart), the requests are considered lost and asked for again.  Several
    processes may run a PullLoop on the same consumer: the server gives each message
    to one of them.
    """

    def __init__(
        self,
        nc: Any,
        stream: str,
        consumer: str,
        handler: Callable[[Any], Awaitable[None]],
        *,
        max_inflight: int = 512,
        batch: int = 256,
        expires: float = 5.0,
        heartbeat: float = 1.0,
        recreate: Callable[[], Awaitable[None]] | None = None,
        max_deliveries: int = MAX_DELIVERIES,
        transient: tuple[type[BaseException], ...] = TRANSIENT,
        dead_letters: DeadLetters | None = None,
    ) -> None:
        self.nc = nc
        self.stream = stream
        self.consumer = consumer
        self.handler = handler
        self.max_inflight = max_inflight
        self.batch = min(batch, max_inflight)
        self.expires = expires
        self.heartbeat = heartbeat
        self.recreate = recreate
        self.max_deliveries = max_deliveries
        self.transient = transient
        self._dead_letters = dead_letters
        self.requested = 0                 # asked for, not delivered yet
        self.handling = 0                  # delivered, handler running
        self._wake = asyncio.Event()
        self._last_seen = time.monotonic()
        self._tasks: set[asyncio.Future[None]] = set()     # handlers running, failures answered
        self._reset = False

    def reset(self) -> None:
        """Forget the open pull requests (after a reconnect): ask again."""
        self._reset = True
        self._wake.set()

    async def _on_msg(self, msg: Any) -> None:
        self._last_seen = time.monotonic()
        status = msg.headers.get("Status") if msg.headers else None
        if status:
            if status == "100":                      # idle heartbeat / flow control
                if msg.reply:
                    await self.nc.publish(msg.reply, b"")
                return
            description = msg.headers.get("Description", "")
            if status in ("408", "409", "404"):     # request expired / ended
                left = msg.headers.get("Nats-Pending-Messages")
                if left is not None and left.isdecimal():
                    self.requested = max(0, self.requested - int(left))
                else:
                    self.requested = 0
                if status == "409" and "Consumer Deleted" in description:
                    self._reset = True
                elif status == "409":
                    log.debug("%s: pull request ended: %s", self.consumer, description)
            else:                                   # 503 no responders: no such consumer
                log.info("%s: pull request refused: %s %s", self.consumer, status, description)
                self.requested = 0
                self._reset = True
            self._wake.set()
            return
        self.requested = max(0, self.requested - 1)
        self.handling += 1
        self._start(msg)

    @property
    def dead_letters(self) -> DeadLetters:
        """Where this loop sets messages aside (the bucket is opened on first use)."""
        if self._dead_letters is None:
            self._dead_letters = DeadLetters(self.nc.jetstream(), self.consumer)
        return self._dead_letters

    def _start(self, msg: Any) -> None:
        """Hand ``msg`` to the handler, unless it came too often, and watch what the
        handler returns: a coroutine runs as a task, a future (the lobby's: the message
        waits in its table's lane) is watched as it is, without a task per message
        (issue 20).  Only a failure takes a task of the loop's own."""
        times = delivered(msg)
        if times > self.max_deliveries:
            self._then_finish(self._set_aside(msg, times, f"delivered {times} times, never acknowledged"))
            return
        try:
            running = asyncio.ensure_future(self.handler(msg))
        except Exception as e:  # noqa: BLE001 (failed before it returned: as if it failed running)
            self._then_finish(self._failed(msg, times, e))
            return
        self._tasks.add(running)
        running.add_done_callback(functools.partial(self._handled, msg, times))

    def _handled(self, msg: Any, times: int, running: asyncio.Future[None]) -> None:
        self._tasks.discard(running)
        error = None if running.cancelled() else running.exception()
        if error is None:                # done, or cancelled (drain): not acknowledged, it comes again
            self._finish()
        else:
            self._then_finish(self._failed(msg, times, error))

    async def _failed(self, msg: Any, times: int, error: BaseException) -> None:
        """Ask for ``msg`` again when the handler failed for a reason that is not the
        message's (an outage), else set it aside (it would fail again)."""
        if isinstance(error, self.transient):
            log.info("%s: handler failed (%r): redelivery", self.consumer, error)
            await retry_later(msg)
        else:                                   # anything else: the message is the problem
            log.error("%s: handler failed on %s", self.consumer, msg.subject, exc_info=error)
            await self._set_aside(msg, times, f"{type(error).__name__}: {error}")

    def _then_finish(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (a failure's answer), then count its message handled."""
        async def finishing() -> None:
            try:
                await work
            finally:
                self._finish()

        task = asyncio.create_task(finishing())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _finish(self) -> None:
        self.handling -= 1
        if self._may_ask():           # else the loop has nothing to do: let it sleep
            self._wake.set()

    def _may_ask(self) -> bool:
        """Is there room for the next pull request (what :meth:`run` waits for)?"""
        free = self.max_inflight - self.requested - self.handling
        return free >= self.batch or (self.requested == 0 and free > 0)

    async def _set_aside(self, msg: Any, times: int, reason: str) -> None:
        """Record ``msg`` as a dead letter, then acknowledge it; if it cannot be recorded
        now (NATS away), it comes again and is recorded then."""
        letter = Undelivered.of(msg, self.stream, self.consumer, times, reason)
        try:
            await self.dead_letters.record(letter)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 (not recorded: not acknowledged either)
            log.error("%s: cannot record %s (%r): redelivery", self.consumer, letter.key, e)
            await retry_later(msg)
            return
        with contextlib.suppress(Exception):     # a lost ack: it comes again, found recorded
            await msg.ack()

    async def run(self, stop: asyncio.Event) -> None:
        inbox = self.nc.new_inbox()
        sub = await self.nc.subscribe(inbox, cb=self._on_msg)
        next_api = consumer_next(self.stream, self.consumer)
        stopper = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                silent = time.monotonic() - self._last_seen
                if self._reset or (self.requested and silent > 3 * self.heartbeat):
                    if self._reset and self.recreate is not None:
                        try:
                            await self.recreate()     # the consumer (or its stream) is gone
                        except Exception as e:  # noqa: BLE001 (stream not back yet: later)
                            log.info("%s: cannot create the consumer yet: %r", self.consumer, e)
                            with contextlib.suppress(TimeoutError):
                                await asyncio.wait_for(stop.wait(), self.heartbeat)
                            continue
                    self._reset = False
                    self.requested = 0
                    self._last_seen = time.monotonic()
                if self._may_ask():
                    ask = min(self.max_inflight - self.requested - self.handling, self.batch)
                    request = {"batch": ask, "expires": int(self.expires * 1e9),
                               "idle_heartbeat": int(self.heartbeat * 1e9)}
                    try:
                        await self.nc.publish(next_api, json.dumps(request).encode(), reply=inbox)
                        self.requested += ask
                        self._last_seen = time.monotonic()
                    except Exception as e:  # noqa: BLE001 (disconnected: try again soon)
                        log.debug("%s: pull request not sent: %r", self.consumer, e)
                self._wake.clear()
                waiter = asyncio.create_task(self._wake.wait())
                await asyncio.wait({waiter, stopper}, timeout=self.heartbeat,
                                   return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
        finally:
            stopper.cancel()
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait for the handlers that are running, and the answers to their failures
        (messages not acked are redelivered)."""
        end = time.monotonic() + timeout
        while self._tasks and time.monotonic() < end:
            await asyncio.wait(set(self._tasks), timeout=end - time.monotonic())
        for task in list(self._tasks):
            task.cancel()
