"""Publishing a table's schedule the cheap way, as the relay publishes its events
(``relay/publisher.py``, docs/design/relay.md): a core NATS ``HPUB`` written straight
to the connection with a reply subject of the timer's own (``<inbox>.<n>``), every ack
read on ONE subscription of this instance and decoded with msgspec, and a future per
publish that its ack resolves.

Instead of nats-py's ``js.publish``: no request inbox (a NUID and random bytes), no
regular expressions over the subject and each header, no header block built piece by
piece, no ``wait_for``, no json parse nor ``PubAck`` dataclass per ack.  What it
raises is what ``js.publish`` raised: ``nats.errors.TimeoutError`` when no ack came in
time, ``nats.js.errors.APIError`` (its subclass by code) when JetStream refused the
message (``err_code`` 10071: the compare-and-set lost), ``NoStreamResponseError`` when
no stream listens.  One at a time per table: each publish awaits its ack before the
table's next write (the caller's lock).

The subscription survives a reconnect (nats-py subscribes its subscriptions again);
a publish written while the connection is down goes through ``nc.publish``, which
buffers it or refuses it as it always did; an ack lost with the connection is a
timeout, and the turn's message is redelivered."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

import msgspec
import nats.errors
import nats.js.errors

from ..wire.pub_ack import PubAck, decode_ack
from ..wire.raw import raw_writer, write_message, wrote

ACK_WAIT: Final = 5.0            # seconds for an ack (nats-py's JetStream default, as before)
NO_RESPONDERS: Final = "503"     # the status of a reply when no stream listens on the subject


class SchedulePublisher:
    """``publish`` a message to JetStream and return its ack; through ``js.publish``
    when the connection is no nats-py client (a test's stand-in) or before ``start``."""

    def __init__(self, nc: Any, js: Any, ack_wait: float = ACK_WAIT) -> None:
        self.nc = nc
        self.js = js
        self.ack_wait = ack_wait
        self.prefix = ""
        self._raw = raw_writer(nc)
        self._waiting: dict[str, asyncio.Future[PubAck]] = {}
        self._next = 0
        self._sub: Any = None

    async def start(self) -> None:
        """Subscribe to this instance's acks (a wildcard on an inbox of its own)."""
        if self._raw is None or self._sub is not None:
            return
        self.prefix = f"{self.nc.new_inbox()}."
        self._sub = await self.nc.subscribe(self.prefix + "*", cb=self._on_ack)

    async def stop(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str]) -> PubAck:
        """Store ``payload`` on ``subject`` and return where (its ``seq``; a stand-in's
        ``js.publish`` returns its own ack); raises as ``js.publish`` does (module
        docstring)."""
        if self._sub is None:
            return await self.js.publish(subject, payload, headers=headers)  # type: ignore[no-any-return]
        self._next += 1
        token = str(self._next)
        reply = self.prefix + token
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[PubAck] = loop.create_future()
        self._waiting[token] = answer
        expiry = loop.call_later(self.ack_wait, _expire, answer)
        try:
            raw = self._raw if self.nc.is_connected else None     # else nats-py buffers or refuses it
            if await write_message(self.nc, raw, subject, reply, headers, payload):
                await wrote(self.nc, 1, len(payload))
            ack = await answer
        finally:
            expiry.cancel()
            self._waiting.pop(token, None)
        if ack.error is not None:
            error = ack.error
            nats.js.errors.APIError.from_error(   # raises the subclass of its code, as js.publish
                {"code": error.code, "err_code": error.err_code, "description": error.description})
        return ack

    async def _on_ack(self, msg: Any) -> None:
        answer = self._waiting.pop(msg.subject[len(self.prefix):], None)
        if answer is None or answer.done():     # timed out already
            return
        status = msg.headers.get("Status") if msg.headers else None
        if status == NO_RESPONDERS:
            answer.set_exception(nats.js.errors.NoStreamResponseError())
        elif status:
            answer.set_exception(nats.js.errors.APIError(code=int(status), description=msg.headers.get("Description")))
        else:
            try:
                answer.set_result(decode_ack(msg.data))
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                answer.set_exception(nats.errors.Error(f"bad publish ack {msg.data[:200]!r}: {error}"))


def _expire(answer: asyncio.Future[PubAck]) -> None:
    if not answer.done():
        answer.set_exception(nats.errors.TimeoutError())
