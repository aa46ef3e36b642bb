"""The one request-with-retry loop of the room's clients (the table client, the cashier
client).

A request is sent until a reply that is not retryable, or ``retry_for`` seconds are
over.  What changed nothing is sent again with the same body after a pause of the
room's retry policy (``runtime/retry.py``, ``REQUEST``): no responder yet, a code of
``protocol.RETRYABLE`` (``rate_limited`` waits at least its ``retry_after_ms``), a NATS
error.  A closed connection and a reply that cannot be decoded are answered at once.

A request whose reply was lost (a timeout, a NATS error) may have been carried out:
a retry of it is then refused as a duplicate.  The client's ``carried_out`` says what
such a refusal means; the loop asks it only after an attempt that may have got through.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import msgspec
import nats.errors

from ..runtime.retry import REQUEST, Backoff
from ..wire import protocol
from ..wire.protocol import ErrorBody


class Answer(Protocol):
    """What the loop reads of a service's reply (``protocol.Reply``, ``CashierReply``)."""

    @property
    def ok(self) -> bool: ...

    @property
    def error(self) -> ErrorBody | None: ...


A = TypeVar("A", bound=Answer)


class Requests(Generic[A]):
    """Requests to one service over ``nc``, retried; ``retries`` counts the repeated attempts.

    ``decode`` reads a reply (raising msgspec's errors), ``refusal(code, message)`` is
    an answer of the client's own (``unavailable``, ``bad_reply``), ``carried_out``
    the answer to a refusal of a retry after a lost reply, or None if that refusal does
    not mean the earlier attempt got through."""

    def __init__(self, nc: Any, *, retry_for: float, decode: Callable[[bytes], A],
                 refusal: Callable[[str, str], A], carried_out: Callable[[A], A | None],
                 backoff: Backoff = REQUEST, rng: random.Random | None = None) -> None:
        self.nc = nc
        self.retry_for = retry_for
        self.decode = decode
        self.refusal = refusal
        self.carried_out = carried_out
        self.backoff = backoff
        self.rng = rng
        self.retries = 0

    async def request(self, subject: str, data: bytes, timeout: float) -> A:
        """The reply to ``data`` on ``subject``; ``unavailable`` after ``retry_for``."""
        deadline = time.monotonic() + self.retry_for
        pauses = self.backoff.pauses(self.rng)
        maybe_done = False           # an earlier attempt may have been carried out
        while True:
            at_least = 0.0           # seconds the service asked us to wait
            try:
                msg = await self.nc.request(subject, data, timeout=timeout)
            except nats.errors.NoRespondersError:
                last = f"no responder on {subject}"
            except nats.errors.ConnectionClosedError:
                return self.refusal(protocol.UNAVAILABLE, "the NATS connection is closed")
            except nats.errors.TimeoutError:
                maybe_done, last = True, f"no reply within {timeout}s"
            except nats.errors.Error as e:       # reconnecting, buffer full, ...: it may have gone out
                maybe_done, last = True, f"NATS: {e!r}"
            else:
                try:
                    reply = self.decode(msg.data)
                except (msgspec.DecodeError, msgspec.ValidationError) as e:
                    return self.refusal(protocol.BAD_REPLY, str(e))
                error = reply.error
                if reply.ok or error is None:
                    return reply
                done = self.carried_out(reply) if maybe_done else None
                if done is not None:
                    return done
                if error.code not in protocol.RETRYABLE:
                    return reply
                last = f"{error.code}: {error.message}"
                at_least = (error.retry_after_ms or 0) / 1000
            pause = max(next(pauses), at_least)
            if time.monotonic() + pause > deadline:
                return self.refusal(protocol.UNAVAILABLE, f"gave up after {self.retry_for}s: {last}")
            self.retries += 1
            await asyncio.sleep(pause)
