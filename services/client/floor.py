"""The floor's call that waits for the room: opening a table.

    floor = TableClient(nc, "operator", "floor")
    reply = await open_table(floor, "t1", config, within=30.0)

The room's start (``services/room/bots.py``) and ``studroom table open`` make this
same call; for a table it finds in its data folder the room waits until the table
answers instead (:func:`until_it_answers`: an ``OpenTable`` refused ``already_open`` at
every start would count as a command error).  The operator's other table commands (configure, pause, close, sit out,
remove) are plain :meth:`TableClient.send`: the table exists, so a table service
answers it or the client's own retries give up.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from studroom.domain.commands import OpenTable
from studroom.domain.config import TableConfig

from ..wire import protocol
from ..wire.protocol import Reply
from .table import Refused, TableClient

# What a starting room answers before a table service owns the table's partition.
NOT_YET: Final = frozenset({protocol.UNAVAILABLE, protocol.UNKNOWN_TABLE})
PAUSE: Final = 0.25     # seconds between attempts


async def open_table(client: TableClient, table_id: str, config: TableConfig, within: float) -> Reply:
    """``OpenTable`` as ``client``'s operator, sent again while the room is not ready
    to take it, for up to ``within`` seconds; the last reply (``already_open`` and the
    domain's refusals of the settings as they are)."""
    deadline = time.monotonic() + within
    command = OpenTable(table_id=table_id, config=config)
    while True:
        left = deadline - time.monotonic()
        reply = await client.send(table_id, command, timeout=min(2.0, max(left, 0.1)))
        if reply.ok or reply.error is None or reply.error.code not in NOT_YET or left <= PAUSE:
            return reply
        await asyncio.sleep(PAUSE)


async def until_it_answers(client: TableClient, table_id: str, within: float) -> None:
    """Wait until a table already open answers a view (a table service owns it now), for
    up to ``within`` seconds; Refused with the last answer otherwise."""
    deadline = time.monotonic() + within
    while True:
        try:
            await client.view(table_id)
            return
        except Refused as refused:
            if refused.code not in NOT_YET or deadline - time.monotonic() <= PAUSE:
                raise
        await asyncio.sleep(PAUSE)
