"""An asyncio client of the table service, as one identity (players, operators,
services; bots, tests, tools).

    client = TableClient(nc, "player", "alice")
    reply = await client.send("t1", Act(seat=3, action="call"))
    if not reply.ok: print(reply.error.code)
    view = await client.view("t1")      # the table as alice may see it (her down cards too)

``nc`` is connected with that identity's credentials (``runtime/processes/process.connect``):
the client sends to its own command subject, ``subjects.command_from(role, name,
table)``, the only one the NATS server lets it publish to, and the table service reads
the sender from that subject.

``send`` gives a command without an id the next of the client's sequence ids
(:mod:`.ids`, one counter for all its tables) and sends one command at a time per
table, so that the ids reach the table in the order they were given.  It retries what
changed nothing with the same id (:mod:`.requests`: the room's request retry policy,
for up to ``retry_for`` seconds, then ``unavailable``).  A retry after a lost reply
that is refused with ``duplicate_command`` means the earlier attempt was carried out:
``send`` answers ``Reply(ok=True, version=None)``.  ``view`` asks for the table as
this identity may see it (``protocol.ViewTable``: no id, nothing changes), with the
same retries.  See docs/design/players.md.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import msgspec
from studroom.domain.commands import Command
from studroom.domain.errors import DUPLICATE_COMMAND
from studroom.domain.views import TableView

from ..wire import protocol, subjects
from ..wire.protocol import Reply
from .ids import CommandIds
from .requests import Requests

C = TypeVar("C", bound=Command)


def _carried_out(reply: Reply) -> Reply | None:
    """A retry refused ``duplicate_command`` after a lost reply: the earlier attempt
    was carried out (its version is not known)."""
    return Reply(ok=True) if reply.error is not None and reply.error.code == DUPLICATE_COMMAND else None


class Refused(Exception):
    """A request the table service did not answer as asked: ``code`` and ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


_VIEW_TABLE = protocol.encode_command(protocol.ViewTable())


class TableClient:
    def __init__(self, nc: Any, role: str, name: str, *, retry_for: float = 10.0,
                 ids: CommandIds | None = None) -> None:
        self.nc = nc
        self.role = role
        self.name = subjects.check_name(name)
        self.ids = ids or CommandIds()
        self.requests = Requests(nc, retry_for=retry_for, decode=protocol.decode_reply, refusal=protocol.refusal,
                                 carried_out=_carried_out)
        self._sending: dict[str, asyncio.Lock] = {}      # per table: one command at a time

    def subject(self, table_id: str) -> str:
        """Where this identity sends a table's commands."""
        return subjects.command_from(self.role, self.name, table_id)

    def stamp(self, command: C) -> C:
        """``command`` with the next sequence id, unless it has one (a retry keeps it)."""
        if command.command_id is not None:
            return command
        return msgspec.structs.replace(command, command_id=self.ids.next())

    async def send(self, table_id: str, command: Command, timeout: float = 2.0) -> Reply:
        lock = self._sending.setdefault(table_id, asyncio.Lock())
        async with lock:
            data = protocol.encode_command(self.stamp(command))
            return await self.requests.request(self.subject(table_id), data, timeout)

    async def view(self, table_id: str, timeout: float = 2.0) -> TableView:
        """The table as this identity may see it; raises :class:`Refused` otherwise."""
        reply = await self.requests.request(self.subject(table_id), _VIEW_TABLE, timeout)
        if reply.error is not None:
            raise Refused(reply.error.code, reply.error.message)
        if reply.view is None:
            raise Refused(protocol.BAD_REPLY, "a reply to ViewTable without a view")
        return reply.view
