"""How a tool finds the room's servers: attached to a running room, or started for it.

Every tool that reads the stores or the books (``ledger``, ``history``, ``replay``,
``verify``) works on a running room and on a stopped one.  The database is
``STUDROOM_DATABASE_URL``; else the embedded PostgreSQL a room runs in the data folder
(its lock is held; its port file says where, its password file how to log in); else an
embedded PostgreSQL started on the data folder for the time of the command.  A tool
that talks to the room over NATS (the operator's, a bot, a service's observer) finds
it the same way, but starts none: ``STUDROOM_NATS_URL``, else the embedded NATS a room
runs in the data folder.  The room's other embedded PostgreSQL servers (stores placed
elsewhere by ``studroom room --db-servers``: ``postgres-<i>``) are attached to or
started alike (:data:`OTHER_SERVERS`).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from ..settings import Settings
from .embedded_nats import EmbeddedNats
from .embedded_postgres import EmbeddedPostgres, embedded_url


OTHER_SERVERS: list[str] = []
"""The URLs of the room's other embedded PostgreSQL servers (stores placed elsewhere:
``<data dir>/postgres-<i>``) that :func:`database` attached to or started: a reader of
the stores finds them here (services/store/servers.py) as it does in ``STUDROOM_STORE_URLS``."""


def running_postgres(data_dir: Path, folder: str = EmbeddedPostgres.name) -> str | None:
    """The URL of the embedded PostgreSQL (in ``folder``) another process runs in ``data_dir``, or None."""
    port = _running_port(data_dir, folder)
    return None if port is None else embedded_url(data_dir, port, folder=folder)


def running_nats(data_dir: Path) -> str | None:
    """The URL of the embedded NATS another process runs in ``data_dir``, or None."""
    port = _running_port(data_dir, EmbeddedNats.name)
    return None if port is None else f"nats://127.0.0.1:{port}"


def nats_url(settings: Settings) -> str | None:
    """``STUDROOM_NATS_URL``, else the embedded NATS a room runs in the data folder."""
    return settings.nats_url or running_nats(Path(settings.data_dir))


def needed_nats_url(settings: Settings) -> str:
    """:func:`nats_url` for a tool or a bot that cannot start its own NATS: none is a
    one-line error."""
    url = nats_url(settings)
    if url is None:
        raise SystemExit(f"no NATS: set STUDROOM_NATS_URL, or start `studroom room` with the data "
                         f"folder {settings.data_dir} first")
    return url


def _running_port(data_dir: Path, server: str) -> int | None:
    """The port of the embedded ``server`` (its folder's name) running in ``data_dir``:
    its lock is held (by the process running it) and its port file says where."""
    home = data_dir / server
    try:
        lock = (home / f"{server}.lock").open("r")
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
        return int((home / "port").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[str]:
    """The URL of the room's database for the time of a command (see the module doc)."""
    with contextlib.ExitStack() as stack:
        url = settings.database_url or running_postgres(settings.data_dir)
        if url is None:
            if not (settings.data_dir / EmbeddedPostgres.name).is_dir():
                raise SystemExit(f"no room's data in {settings.data_dir}: set STUDROOM_DATABASE_URL "
                                 "or STUDROOM_DATA_DIR")
            url = stack.enter_context(EmbeddedPostgres(settings.data_dir)).url
        if settings.database_url is None:
            for other in sorted(settings.data_dir.glob(f"{EmbeddedPostgres.name}-*")):
                if (other / "pgdata" / "PG_VERSION").is_file():
                    OTHER_SERVERS.append(running_postgres(settings.data_dir, other.name) or stack.enter_context(
                        EmbeddedPostgres(settings.data_dir, folder=other.name)).url)
        yield url
