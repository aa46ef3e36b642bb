"""One statement prepared on a psycopg ``AsyncConnection`` and run through its libpq
handle (``psycopg.pq``, psycopg's documented low-level API), awaited in the event loop:
the table service's append, a few hundred commits a second under play.

``await conn.execute(query, params, prepare=True)`` goes through a cursor, the
parameters' adaptation and psycopg's generic wait at each step of the protocol; the
parameters here come ready (bytes in PostgreSQL's binary format, ``binary_arrays``, or
text), so the statement is sent as they are and its answer waited for on the socket
(docs/design/event-store.md, "The append's statement": about 80 us less CPU a commit).
Failures are psycopg's own errors (``errors.error_from_result``; a lost connection is an
``OperationalError``), so callers catch what they caught before.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors, pq

_PLACEHOLDER = re.compile(rb"%[sb]")


def numbered(query: bytes) -> bytes:
    """psycopg's placeholders (``%s``, ``%b``) as PostgreSQL's (``$1``, ``$2``, ...); our
    statements hold no other ``%``."""
    if b"%%" in query:
        raise ValueError("a literal % in a prepared statement is not supported")
    count = itertools.count(1)
    return _PLACEHOLDER.sub(lambda _: b"$%d" % next(count), query)


class PreparedStatement:
    """``query`` (psycopg's placeholders) prepared as ``name`` on each connection it runs
    on, its parameter types taken from the casts in it (``%s::text[]``)."""

    def __init__(self, name: bytes, query: bytes) -> None:
        self.name = name
        self.query = numbered(query)
        self._prepared_on: pq.abc.PGconn | None = None

    async def run(self, conn: psycopg.AsyncConnection[Any], params: Sequence[bytes | str]) -> None:
        """Run it once with ``params``: bytes go in the binary format, str as text."""
        async with conn.lock:        # psycopg's own: no other statement of the connection meanwhile
            pgconn = conn.pgconn
            encoding = conn.info.encoding
            if self._prepared_on is not pgconn:
                pgconn.send_prepare(self.name, self.query)
                await _outcome(pgconn, encoding)
                self._prepared_on = pgconn
            values = [p.encode() if isinstance(p, str) else p for p in params]
            formats = [0 if isinstance(p, str) else 1 for p in params]
            pgconn.send_query_prepared(self.name, values, param_formats=formats)
            await _outcome(pgconn, encoding)


async def _outcome(pgconn: pq.abc.PGconn, encoding: str) -> None:
    """Send what is buffered, then read every result of the statement; its error raised."""
    while pgconn.flush():                        # 1: more to send, wait until writable
        await _ready(pgconn.socket, writing=True)
    error: psycopg.Error | None = None
    while True:
        pgconn.consume_input()
        while not pgconn.is_busy():              # a result is there: taking it cannot block
            result = pgconn.get_result()
            if result is None:                   # the statement is done
                if error is not None:
                    raise error
                return
            if result.status == pq.ExecStatus.FATAL_ERROR and error is None:
                error = errors.error_from_result(result, encoding=encoding)
        await _ready(pgconn.socket)


async def _ready(fd: int, *, writing: bool = False) -> None:
    """Until ``fd`` can be read (or written)."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    watch, unwatch = (loop.add_writer, loop.remove_writer) if writing else (loop.add_reader, loop.remove_reader)
    watch(fd, _settle, ready)
    try:
        await ready
    finally:
        unwatch(fd)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
