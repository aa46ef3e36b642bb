"""Which PostgreSQL server holds each event store (docs/design/event-store.md, "Stores
on several servers").

The room's database (``STUDROOM_DATABASE_URL`` or the embedded one) is its **home**
server: the cashier's store, the books, the histories, the layout's record and every
store named nowhere else.  ``STUDROOM_STORE_URLS`` (``1=postgresql://...``) puts stores
on other servers.  A server is known by an id of its own, made once in it
(``public.studroom_server``), not by its URL (an embedded server's port changes from
start to start, a password may be rotated, a host renamed): the home database records
which server holds each store placed elsewhere (``public.studroom_store_servers``,
with the URL it was seen at, masked, to name it in an error), and every process finds
that server among the URLs it was given.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ..wire.declared import Refused

SERVER_TABLE = "studroom_server"            # on every server holding a store: its id, one row
PLACEMENT_TABLE = "studroom_store_servers"  # on the home server: (prefix, store) -> server id
STORE_URLS_VAR = "STUDROOM_STORE_URLS"      # (the setting; runtime/settings.py reads it for the services)
_USERINFO = re.compile(r"//[^/@]*@")


class StoreElsewhere(Refused):
    """A store lives on a server this process was not told the URL of (one line, naming the fix)."""


def masked(url: str) -> str:
    """``url`` without its password (user and host kept: it names a server in an error)."""
    return _USERINFO.sub(lambda m: "//" + m.group(0)[2:-1].partition(":")[0] + "@", url)


def server_key(url: str) -> tuple[str, str, str]:
    """(host, port, database) of a URL: the same server reached with other credentials."""
    info = conninfo_to_dict(url)
    return str(info.get("host", "")), str(info.get("port", "5432")), str(info.get("dbname", ""))


def conn_key(conn: psycopg.Connection[Any]) -> tuple[str, str, str]:
    return str(conn.info.host), str(conn.info.port), str(conn.info.dbname)


def server_id(conn: psycopg.Connection[Any]) -> str:
    """This server's (database's) id, made on first ask."""
    with contextlib.suppress(psycopg.errors.UniqueViolation):
        conn.execute(f"CREATE TABLE IF NOT EXISTS public.{SERVER_TABLE} "
                     "(one boolean PRIMARY KEY DEFAULT true CHECK (one), id text NOT NULL)")
    conn.execute(f"INSERT INTO public.{SERVER_TABLE} (id) VALUES (%s) ON CONFLICT DO NOTHING",
                 (uuid.uuid4().hex,))
    return str(conn.execute(f"SELECT id FROM public.{SERVER_TABLE}").fetchone()[0])  # type: ignore[index]


_lock = threading.Lock()
_ids: dict[str, str] = {}                   # URL -> its server's id (asked once a process)
_known: dict[str, str] = {}                 # server id -> a URL that reaches it (this process's)


def id_of(url: str) -> str:
    """The id of the server at ``url`` (asked once; remembered with the URL)."""
    with _lock:
        found = _ids.get(url)
    if found is None:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            found = server_id(conn)
        with _lock:
            _ids[url] = found
            _known.setdefault(found, url)
    return found


def env_urls(env: Mapping[str, str] | None = None) -> dict[int, str]:
    """``STUDROOM_STORE_URLS`` of this process: store index -> URL."""
    from ..runtime.settings import parse_store_urls

    return dict(parse_store_urls((os.environ if env is None else env).get(STORE_URLS_VAR, "")))


def url_of_server(server: str, seen_at: str, urls: Iterable[str] = ()) -> str:
    """A URL of this process that reaches the server ``server`` (its own, then the
    ones it was told in ``STUDROOM_STORE_URLS``), or :class:`StoreElsewhere`."""
    from ..runtime.servers.attach import OTHER_SERVERS

    for url in [*urls, *env_urls().values(), *OTHER_SERVERS]:
        id_of(url)
    with _lock:
        found = _known.get(server)
    if found is None:
        raise StoreElsewhere(f"a store of this installation lives on another PostgreSQL server ({seen_at}, "
                             f"server id {server}): name it in {STORE_URLS_VAR} (<store>=<URL>)")
    return found


# --------------------------------------------------------------- the record on the home server

def placements(conn: psycopg.Connection[Any]) -> dict[tuple[str, int], tuple[str, str]]:
    """Every store recorded elsewhere than home: (prefix, store) -> (server id, URL seen at)."""
    row = conn.execute("SELECT to_regclass(%s)", (f"public.{PLACEMENT_TABLE}",)).fetchone()
    if row is None or row[0] is None:
        return {}
    rows = conn.execute(f"SELECT prefix, store, server, seen_at FROM public.{PLACEMENT_TABLE}").fetchall()
    return {(prefix, store): (server, seen_at) for prefix, store, server, seen_at in rows}


def record_placements(conn: psycopg.Connection[Any], prefix: str, urls: Mapping[int, str]) -> None:
    """Record where the stores ``urls`` live (in the transaction that records the layout)."""
    with contextlib.suppress(psycopg.errors.UniqueViolation):
        conn.execute(f"CREATE TABLE IF NOT EXISTS public.{PLACEMENT_TABLE} (prefix text, store integer, "
                     "server text NOT NULL, seen_at text NOT NULL, PRIMARY KEY (prefix, store))")
    for index, url in sorted(urls.items()):
        conn.execute(f"INSERT INTO public.{PLACEMENT_TABLE} (prefix, store, server, seen_at) VALUES (%s, %s, %s, %s) "
                     "ON CONFLICT DO NOTHING", (prefix, index, id_of(url), masked(url)))


@dataclass(frozen=True)
class StoreMap:
    """The URL of each store of an installation (``urls[j]``: store ``j``); ``home``: the room's database."""

    home: str
    urls: tuple[str, ...]

    def url(self, index: int) -> str:
        return self.urls[index]

    def servers(self) -> int:
        return len({server_key(url) for url in self.urls})


def resolve(conn: psycopg.Connection[Any], home: str, prefix: str, stores: int,
            given: Mapping[int, str]) -> StoreMap:
    """Each store's URL as recorded on the home server (``conn``), checked against the
    URLs this process was ``given``: ``LayoutMismatch`` when they disagree,
    :class:`StoreElsewhere` when a recorded server is none of the URLs it knows."""
    from .layout import LayoutMismatch

    recorded = placements(conn)
    home_id = server_id(conn)
    with _lock:
        _known.setdefault(home_id, home)
    urls = []
    for index in range(stores):
        server, seen_at = recorded.get((prefix, index), (home_id, masked(home)))
        url = given.get(index)
        if url is not None and id_of(url) != server:
            raise LayoutMismatch(f"store {index} of {prefix!r} lives on {seen_at} (server id {server}), "
                                 f"not on {masked(url)}: fix {STORE_URLS_VAR}")
        urls.append(url or url_of_server(server, seen_at, given.values()))
    return StoreMap(home, tuple(urls))


class Placement:
    """Where each store schema lives, as the home server of ``conn`` records it, read
    again every few seconds (a store placed while a reader runs is found)."""

    EVERY = 5.0
    _cache: dict[tuple[str, str, str], tuple[float, dict[str, tuple[str, str]]]] = {}  # noqa: RUF012

    @classmethod
    def of(cls, conn: psycopg.Connection[Any]) -> dict[str, tuple[str, str]]:
        """schema -> (server id, seen at) of every store recorded elsewhere than home."""
        key = conn_key(conn)
        with _lock:
            cached = cls._cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < cls.EVERY:
            return cached[1]
        found = {f"{prefix}{index}": where for (prefix, index), where in placements(conn).items()}
        with _lock:
            cls._cache[key] = (time.monotonic(), found)
        return found

    @classmethod
    def forget(cls) -> None:
        """Read the placements again at the next ask."""
        with _lock:
            cls._cache.clear()
