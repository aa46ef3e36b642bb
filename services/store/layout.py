"""Where a table's events are stored: the event stores of an installation.

Partition ``p`` (:mod:`..wire.partitioning`) is stored in event store ``p % n_stores``,
PostgreSQL schema ``studroom_p{j}``.  Every process of an installation must use the
same number of stores, or a table's history would be looked for in the wrong store:
the first start records the number in the database (``check_recorded_layout``), and
a process started with another refuses to run.  Stores may live on other PostgreSQL
servers than the room's database (``STUDROOM_STORE_URLS``, :mod:`.servers`): recorded
with the number, the same for every process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from ..wire import subjects
from ..wire.declared import Refused
from ..wire.partitioning import partition_of
from .servers import Placement, StoreMap, env_urls, id_of, record_placements, resolve, server_id

CASHIER_SCHEMA = "studroom_cashier"     # the cashier's event store: one stream per account
STORE_SCHEMA_PREFIX = "studroom_p"


def store_index(partition: int, n_stores: int) -> int:
    return partition % n_stores


def store_of_table(table_id: str, n_stores: int, partitions: int = subjects.PARTITIONS) -> int:
    return store_index(partition_of(table_id, partitions), n_stores)


def store_schema(index: int, prefix: str = STORE_SCHEMA_PREFIX) -> str:
    """The PostgreSQL schema of event store ``index``."""
    return f"{prefix}{index}"


def store_schemas(stores: int, prefix: str = STORE_SCHEMA_PREFIX) -> list[str]:
    """The schemas of an installation with ``stores`` event stores."""
    return [store_schema(j, prefix) for j in range(stores)]


class LayoutMismatch(Refused):
    """The process was started with another number of stores than its installation
    recorded: it must not run (one line, naming the fix)."""


LAYOUT_TABLE = "studroom_layout"


def check_recorded_layout(database_url: str, stores: int, prefix: str = STORE_SCHEMA_PREFIX,
                          urls: Mapping[int, str] | None = None) -> StoreMap:
    """Refuse (:class:`LayoutMismatch`) a number of stores other than the one recorded
    in the database for the stores ``prefix``; record ``stores`` if none is (the
    first start; stores written before the record are checked table by table), and
    with it the server of each store ``urls`` puts elsewhere (default:
    ``STUDROOM_STORE_URLS``).  Returns each store's URL (:class:`.servers.StoreMap`):
    every process of an installation finds each store on the same server."""
    import psycopg

    if stores < 1:
        raise LayoutMismatch(f"--stores must be 1 or more, not {stores}")
    given = {j: url for j, url in (env_urls() if urls is None else urls).items() if j < stores}
    select = f"SELECT stores, recorded_at FROM public.{LAYOUT_TABLE} WHERE prefix = %s"
    with psycopg.connect(database_url, autocommit=True) as conn:
        # Two processes starting together: IF NOT EXISTS does not keep the second from
        # failing on the catalog's unique index; the table is there then all the same.
        with contextlib.suppress(psycopg.errors.UniqueViolation):
            conn.execute(f"CREATE TABLE IF NOT EXISTS public.{LAYOUT_TABLE} (prefix text PRIMARY KEY, "
                         "stores integer NOT NULL, recorded_at timestamptz NOT NULL DEFAULT now())")
        row = conn.execute(select, (prefix,)).fetchone()
        if row is None:
            _check_unrecorded(database_url, stores, prefix)
            home = server_id(conn)
            with conn.transaction():      # the number and the servers: one record
                made = conn.execute(f"INSERT INTO public.{LAYOUT_TABLE} (prefix, stores) VALUES (%s, %s) "
                                    "ON CONFLICT (prefix) DO NOTHING RETURNING prefix", (prefix, stores)).fetchone()
                if made is not None:
                    record_placements(conn, prefix, {j: url for j, url in given.items() if id_of(url) != home})
            Placement.forget()            # this process read "nothing placed" while checking: read again
            row = conn.execute(select, (prefix,)).fetchone()
        recorded, since = row  # type: ignore[misc]
        if recorded != stores:
            raise LayoutMismatch(
                f"this installation keeps its tables in {recorded} event store(s) (recorded in "
                f"public.{LAYOUT_TABLE} on {since:%Y-%m-%d}), not {stores}: start every service with "
                f"--stores {recorded}")
        return resolve(conn, database_url, prefix, stores, given)


def _check_unrecorded(database_url: str, stores: int, prefix: str) -> None:
    """Stores written before the layout was recorded: every table where ``stores`` puts it."""
    from .inspect import store_layout_problem

    problem = store_layout_problem(database_url, stores, prefix)
    if problem is not None:
        raise LayoutMismatch(problem)
