"""A player's wait for a seat at any table of a game and stakes.

The lists themselves are the tables' (domain/waiting_list.py: event-sourced, in each
table's record, shown by the lobby). Waiting "per game and stakes" is the union of
those lists: the player joins the list of every open table of that game and stakes (the
lobby names them: ``LobbyQuery(game=..., stakes=...)``), takes the first seat offered
to him (the offer comes on his private subject), and then leaves the other lists, so
that their next players are offered their seats at once instead of after his offers
pass unanswered.

    waiting = await wait_at(table_client, ["t1", "t2", "t7"])
    ...                                  # a SeatOffered arrives: SitDown there
    await waiting.seated_at("t2")        # off the other lists
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from studroom.domain.commands import JoinWaitingList, LeaveWaitingList
from studroom.domain.errors import ALREADY_SEATED, ALREADY_WAITING, NOT_WAITING, TABLE_CLOSED

from .table import Refused, TableClient

# A table that cannot take him on its list (he sits there already, it is closing): skipped.
NOT_THERE: Final = frozenset({ALREADY_SEATED, TABLE_CLOSED})


@dataclass
class Waiting:
    """The tables on whose lists the player waits."""

    client: TableClient
    tables: list[str] = field(default_factory=list)

    async def seated_at(self, table_id: str) -> None:
        """He took a seat at ``table_id`` (that table took him off its list): off the others."""
        await self._leave([t for t in self.tables if t != table_id])
        if table_id in self.tables:
            self.tables.remove(table_id)

    async def stop(self) -> None:
        """He waits no more, anywhere."""
        await self._leave(list(self.tables))

    async def _leave(self, tables: list[str]) -> None:
        for table_id in tables:
            reply = await self.client.send(table_id, LeaveWaitingList(player=self.client.name))
            if reply.ok or (reply.error is not None and reply.error.code in (NOT_WAITING, TABLE_CLOSED)):
                self.tables.remove(table_id)


async def wait_at(client: TableClient, tables: Iterable[str]) -> Waiting:
    """Put ``client``'s player on the waiting list of each of ``tables`` (those that
    cannot take him, where he sits or that close, are skipped); Refused otherwise."""
    waiting = Waiting(client)
    for table_id in tables:
        reply = await client.send(table_id, JoinWaitingList(player=client.name))
        if reply.ok or (reply.error is not None and reply.error.code == ALREADY_WAITING):
            waiting.tables.append(table_id)
        elif reply.error is not None and reply.error.code not in NOT_THERE:
            raise Refused(reply.error.code, f"{table_id}: {reply.error.message}")
    return waiting
