"""The floor's call that waits for the room: opening a table.

    floor = TableClient(nc, "operator", "floor")
    reply = await open_table(floor, "t1", config, within=30.0)

The room's start (``services/room/bots.py``) and ``studroom table open`` make this
same call; for a table it finds in its data folder the room waits until the table
answers instead (:func:`until_it_answers`: an ``OpenTable`` refused ``already_open`` at
every start would count as a command error); both wait out a room that is not ready yet
in one loop.  The operator's other table commands (configure, pause, close, sit out,
remove) are plain :meth:`TableClient.send`: the table exists, so a table service
answers it or the client's own retries give up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Final

from studroom.domain.commands import OpenTable
from studroom.domain.config import TableConfig

from ..runtime.retry import REQUEST
from ..wire import protocol
from ..wire.protocol import Reply
from .table import Refused, TableClient

# What a starting room answers before a table service owns the table's partition.
NOT_YET: Final = frozenset({protocol.UNAVAILABLE, protocol.UNKNOWN_TABLE})
LONGEST_WAIT: Final = 2.0   # seconds for one answer


async def open_table(client: TableClient, table_id: str, config: TableConfig, within: float) -> Reply:
    """``OpenTable`` as ``client``'s operator, sent again while the room is not ready
    to take it, for up to ``within`` seconds; the last reply (``already_open`` and the
    domain's refusals of the settings as they are)."""
    command = OpenTable(table_id=table_id, config=config)
    return await _while_not_ready(lambda timeout: client.send(table_id, command, timeout=timeout), within)


async def until_it_answers(client: TableClient, table_id: str, within: float) -> None:
    """Wait until a table already open answers a view (a table service owns it now), for
    up to ``within`` seconds; Refused with the last answer otherwise."""
    async def view(timeout: float) -> Reply:
        try:
            await client.view(table_id, timeout=timeout)
        except Refused as refused:
            return protocol.refusal(refused.code, refused.message)
        return Reply(ok=True)

    reply = await _while_not_ready(view, within)
    if reply.error is not None:
        raise Refused(reply.error.code, reply.error.message)


async def _while_not_ready(ask: Callable[[float], Awaitable[Reply]], within: float) -> Reply:
    """``ask`` (given how long to wait for the answer) again while the room answers that
    it is not ready (:data:`NOT_YET`), for up to ``within`` seconds, pausing as the room's
    one retry policy says (runtime/retry.py); the last reply."""
    deadline = time.monotonic() + within
    pauses = REQUEST.pauses()
    while True:
        left = deadline - time.monotonic()
        reply = await ask(min(LONGEST_WAIT, max(left, 0.1)))
        pause = next(pauses)
        if reply.ok or reply.error is None or reply.error.code not in NOT_YET or left <= pause:
            return reply
        await asyncio.sleep(pause)
