"""A small asyncio client of the table service (bots, tests, tools).

    client = TableClient(nc)
    reply = await client.send("t1", Act(seat=3, action="call"))
    if not reply.ok: print(reply.error.code)

``send`` encodes the command (:mod:`studroom.services.wire.protocol`), requests
``studroom.cmd.<table>`` and decodes the :class:`~studroom.services.wire.protocol.Reply`.

Retries. Partitions change owners (an instance stops, dies or joins): for a few
seconds a request may find no responder, time out, or be answered ``unavailable``
or ``conflict`` (nothing was carried out). ``send`` retries those with a growing
pause (50 ms doubling up to 1 s) for up to ``retry_for`` seconds (10 by default),
then answers ``unavailable``.

So that a retry after a timeout (the command may have been carried out and only the
reply lost) is never carried out twice, ``send`` gives a command without an id a
fresh ``command_id``. If such a retry is refused with ``duplicate_command``, the
earlier attempt was carried out: ``send`` answers ``Reply(ok=True, version=None)``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import msgspec

from ..wire import protocol
from ..wire import subjects
from ..wire.protocol import ErrorBody, Reply

def _unavailable(message: str) -> Reply:
    return Reply(ok=False, error=ErrorBody(protocol.UNAVAILABLE, message))


class TableClient:
    def __init__(self, nc: Any, *, retry_for: float = 10.0, assign_ids: bool = True) -> None:
        self.nc = nc
        self.retry_for = retry_for
        self.assign_ids = assign_ids
        self.retries = 0          # how many attempts were repeated (all sends)

    async def send(self, table_id: str, command: Any, timeout: float = 2.0) -> Reply:
        import nats.errors

        if self.assign_ids and getattr(command, "command_id", "") is None:
            command = msgspec.structs.replace(command, command_id=uuid.uuid4().hex)
        subject = subjects.command(table_id)
        data = protocol.encode_command(command)
        deadline = time.monotonic() + self.retry_for
        pause = 0.05
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
                    return Reply(ok=False, error=ErrorBody("bad_reply", str(e)))
                if reply.ok or reply.error is None:
                    return reply
                if timed_out and reply.error.code == "duplicate_command":
                    return Reply(ok=True)       # the timed-out attempt was carried out
                if reply.error.code not in protocol.RETRYABLE:
                    return reply
                last = f"{reply.error.code}: {reply.error.message}"
            if time.monotonic() + pause > deadline:
                return _unavailable(f"gave up after {self.retry_for}s: {last}")
            self.retries += 1
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
