"""The dealer's record: tables' stored events, read straight from PostgreSQL.

The tools that answer disputes and export hands read the event stores, the source of
truth, and nothing else.  They work on a running room and on a stopped one: the
database is ``STUDROOM_DATABASE_URL``; else the embedded PostgreSQL a room runs in the
data folder (its lock is held, its port file says where); else an embedded PostgreSQL
started on the data folder for the time of the command.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from studroom.domain.events import Event

from ..runtime.servers.embedded_postgres import EmbeddedPostgres, embedded_url
from ..runtime.settings import Settings
from ..store.inspect import open_stores, stores_found, stream_ids
from ..store.layout import STORE_SCHEMA_PREFIX, store_schema


class NoSuchTable(LookupError):
    """No event store holds that table."""


def running_postgres(data_dir: Path) -> str | None:
    """The URL of the embedded PostgreSQL another process runs in ``data_dir``, or None."""
    home = data_dir / EmbeddedPostgres.name
    try:
        lock = (home / f"{EmbeddedPostgres.name}.lock").open("r")
    except OSError:
        return None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass                                  # held: a room runs there
        else:
            fcntl.flock(lock, fcntl.LOCK_UN)
            return None
    try:
        port = int((home / "port").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return embedded_url(data_dir, port)


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[str]:
    """The URL of the room's database for the time of a command (see the module doc)."""
    url = settings.database_url or running_postgres(settings.data_dir)
    if url is not None:
        yield url
        return
    if not (settings.data_dir / EmbeddedPostgres.name).is_dir():
        raise SystemExit(f"no room's data in {settings.data_dir}: set STUDROOM_DATABASE_URL or STUDROOM_DATA_DIR")
    with EmbeddedPostgres(settings.data_dir) as server:
        yield server.url


def _stores(database_url: str, prefix: str) -> list[Any]:
    schemas = [store_schema(i, prefix) for i in stores_found(database_url, prefix)]
    return open_stores(database_url, schemas, create=False)


def table_stream(database_url: str, table_id: str, prefix: str = STORE_SCHEMA_PREFIX) -> list[Event]:
    """Every stored event of one table, in order (NoSuchTable if no store holds it)."""
    stores = _stores(database_url, prefix)
    try:
        for store in stores:
            events = store.load(table_id)
            if events:
                return events
    finally:
        for store in stores:
            store.close()
    raise NoSuchTable(f"no event store holds a table {table_id!r}")


def all_streams(database_url: str, prefix: str = STORE_SCHEMA_PREFIX) -> Iterator[tuple[str, list[Event]]]:
    """``(table_id, events)`` of every stored table, one table at a time."""
    stores = _stores(database_url, prefix)
    try:
        for store in stores:
            for table_id in stream_ids(store):
                yield table_id, store.load(table_id)
    finally:
        for store in stores:
            store.close()
