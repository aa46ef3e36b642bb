"""A store's append for asyncio code: the append function's one statement on a
psycopg ``AsyncConnection`` of its own, awaited in the event loop (prepared and run on
the connection's libpq handle: ``prepared.py``).

No worker thread: the table service's loop used to hand every group-commit append to
a thread and wait for it to come back (a queue, a wake-up, the GIL passed twice, the
loop's self-pipe), which at small batches cost as much CPU as the append itself
(docs/design/event-store.md, "Threads, and the append in an event loop").  The
connection is opened on first use in the running loop (another loop later opens its
own), and opened again after it is lost; transient errors are retried as the
blocking append retries them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import psycopg

from .prepared import PreparedStatement

RETRIES = 10          # attempts of an append (the blocking path's, eventsourcing's ``retry``)
RETRY_WAIT = 0.2      # seconds between two


class AsyncAppender:
    """One statement (rendered by ``render`` for a connection, once) on one
    ``AsyncConnection`` made with ``params`` (autocommit: the statement is the
    transaction).  Not for two event loops at once."""

    def __init__(self, params: Mapping[str, Any], render: Callable[[psycopg.AsyncConnection[Any]], bytes]) -> None:
        self._params = dict(params)
        self._render = render
        self._statement: PreparedStatement | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def execute(self, values: tuple[bytes | str, ...]) -> None:
        """Run the statement once with ``values``; retry what may pass (a lost
        connection, a server restarting, a lock wait): the rest is raised at once."""
        for attempt in range(RETRIES):
            try:
                conn = await self._connection()
                if self._statement is None:
                    self._statement = PreparedStatement(b"studroom_append", self._render(conn))
                await self._statement.run(conn, values)
                return
            except (psycopg.OperationalError, psycopg.InterfaceError):
                if attempt == RETRIES - 1:
                    raise
                await asyncio.sleep(RETRY_WAIT)
            except psycopg.Error:
                raise                # refused (e.g. a version taken): the connection is fine
            except BaseException:
                self.close()         # interrupted mid-statement: its state is not known
                raise

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        loop = asyncio.get_running_loop()
        if self._conn is None or self._conn.closed or self._loop is not loop:
            self.close()
            self._conn = await psycopg.AsyncConnection.connect(**self._params, autocommit=True)
            self._loop = loop
        return self._conn

    def close(self) -> None:
        """Close the connection (from any thread or loop: nothing to await)."""
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            conn.pgconn.finish()
