"""A small asyncio client of the table service (bots, tests, tools).

    client = TableClient(nc)
    reply = await client.send("t1", Act(seat=3, action="call"))
    if not reply.ok: print(reply.error.code)

``send`` encodes the command (:mod:`studroom.services.wire.protocol`), requests
``studroom.cmd.<table>`` and decodes the :class:`~studroom.services.wire.protocol.Reply`.
It retries what changed nothing (``protocol.RETRYABLE``, no responder, a NATS error)
with a growing pause (50 ms doubling up to 1 s) for up to ``retry_for`` seconds, then
answers ``unavailable``.  A command without an id gets a fresh ``command_id``, so that
a retry after a timeout is never carried out twice: if it is refused with
``duplicate_command``, the earlier attempt was carried out and ``send`` answers
``Reply(ok=True, version=None)``.  See docs/design/players.md.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import msgspec
import nats.errors
from studroom.domain.errors import DUPLICATE_COMMAND

from ..wire import protocol, subjects
from ..wire.protocol import ErrorBody, Reply

FIRST_PAUSE = 0.05      # seconds before the first retry; doubled each time ...
LONGEST_PAUSE = 1.0     # ... up to this


def _unavailable(message: str) -> Reply:
    return Reply(ok=False, error=ErrorBody(protocol.UNAVAILABLE, message))


class TableClient:
    def __init__(self, nc: Any, *, retry_for: float = 10.0) -> None:
        self.nc = nc
        self.retry_for = retry_for
        self.retries = 0          # how many attempts were repeated (all sends)

    async def send(self, table_id: str, command: Any, timeout: float = 2.0) -> Reply:
        if getattr(command, "command_id", "") is None:
            command = msgspec.structs.replace(command, command_id=uuid.uuid4().hex)
        subject = subjects.command(table_id)
        data = protocol.encode_command(command)
        deadline = time.monotonic() + self.retry_for
        pause = FIRST_PAUSE
        timed_out = False
        last = "no reply"
        while True:
            try:
                msg = await self.nc.request(subject, data, timeout=timeout)
            except nats.errors.NoRespondersError:
                last = "no table service serves this table now"
            except nats.errors.TimeoutError:
                timed_out = True
                last = f"no reply within {timeout}s"
            except nats.errors.ConnectionClosedError:
                return _unavailable("the NATS connection is closed")
            except nats.errors.Error as e:       # reconnecting, buffer full, ...: try again
                timed_out = True                 # it may have gone out
                last = f"NATS: {e!r}"
            else:
                try:
                    reply = protocol.decode_reply(msg.data)
                except (msgspec.DecodeError, msgspec.ValidationError) as e:
                    return Reply(ok=False, error=ErrorBody(protocol.BAD_REPLY, str(e)))
                if reply.ok or reply.error is None:
                    return reply
                if timed_out and reply.error.code == DUPLICATE_COMMAND:
                    return Reply(ok=True)       # the timed-out attempt was carried out
                if reply.error.code not in protocol.RETRYABLE:
                    return reply
                last = f"{reply.error.code}: {reply.error.message}"
            if time.monotonic() + pause > deadline:
                return _unavailable(f"gave up after {self.retry_for}s: {last}")
            self.retries += 1
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE)
