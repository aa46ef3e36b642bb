"""How a tool finds the room's database: attached to a running room, or started for it.

Every tool that reads the stores or the books (``ledger``, ``history``, ``replay``,
``verify``) works on a running room and on a stopped one.  The database is
``STUDROOM_DATABASE_URL``; else the embedded PostgreSQL a room runs in the data folder
(its lock is held; its port file says where, its password file how to log in); else an
embedded PostgreSQL started on the data folder for the time of the command.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from ..settings import Settings
from .embedded_postgres import EmbeddedPostgres, embedded_url


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
