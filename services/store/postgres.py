"""The event store in PostgreSQL, through eventsourcing's recorder (psycopg 3).

One store is one (schema, table): its own notification log and its own table lock.
Rows are eventsourcing's own (text originator ids); a batch is written by one call of
a PL/pgSQL function created beside the table, ``{schema}.{table}_append``.  How and
why (the table lock, the function, threads, several stores) is in
docs/design/event-store.md.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Self

import psycopg
from eventsourcing.persistence import IntegrityError, InterfaceError, OperationalError
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import get_topic, retry
from psycopg import sql
from psycopg.rows import tuple_row

from .async_append import RETRIES, RETRY_WAIT, AsyncAppender
from .binary_arrays import append_arguments
from .codec import MsgspecMapper, NullTranscoder
from .commits import commits_channel
from .port import (
    Batch,
    Latest,
    Notification,
    Snapshot,
    VersionConflict,
    check_batch,
    check_snapshots,
    conflicting,
)

if TYPE_CHECKING:
    from types import TracebackType

DEFAULT_SCHEMA = "studroom"
DEFAULT_TABLE = "events"
_DDL_LOCK_KEY = 0x5354_5544_524F_4F4D  # "STUDROOM": serialises schema/table creation
RECONNECT_TIMEOUT = 1.0   # seconds a pool's reconnection attempt backs off before it gives up


def _connection_params(database_url: str) -> dict[str, Any]:
    params: dict[str, Any] = psycopg.conninfo.conninfo_to_dict(database_url)
    params.setdefault("host", "localhost")
    params.setdefault("port", "5432")
    params.setdefault("user", "postgres")
    params.setdefault("dbname", params["user"])
    params.setdefault("password", "")
    return params


@contextlib.contextmanager
def _ddl_lock(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection holding the advisory lock that serialises schema changes (several
    processes may create the same store at once)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_DDL_LOCK_KEY,))
        try:
            yield conn
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_DDL_LOCK_KEY,))


def ensure_schema(database_url: str, schema: str) -> None:
    """Create ``schema`` if missing (safe when several processes do it at once)."""
    with _ddl_lock(database_url) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))


def eventsourcing_env(
    database_url: str,
    *,
    schema: str = DEFAULT_SCHEMA,
    originator_id_type: str = "text",
    **extra: str,
) -> dict[str, str]:
    """eventsourcing settings (an Application's ``env``) for this database and schema,
    with the msgspec mapper and the null transcoder. Create the schema first
    (``ensure_schema``)."""
    params = _connection_params(database_url)
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": str(params["dbname"]),
        "POSTGRES_HOST": str(params["host"]),
        "POSTGRES_PORT": str(params["port"]),
        "POSTGRES_USER": str(params["user"]),
        "POSTGRES_PASSWORD": str(params["password"]),
        "POSTGRES_SCHEMA": schema,
        "ORIGINATOR_ID_TYPE": originator_id_type,
        "MAPPER_TOPIC": get_topic(MsgspecMapper),
        "TRANSCODER_TOPIC": get_topic(NullTranscoder),
        **extra,
    }


def _conflict(batch: Batch, lengths: dict[str, int]) -> VersionConflict:
    """The refusal of a batch whose insert broke the primary key, naming every stream
    of it that the stored ``lengths`` (or an earlier tuple of the batch) overlap."""
    conflicts = conflicting(batch, lambda s, v: v <= lengths.get(s, 0))
    return VersionConflict(conflicts[0] if conflicts else batch[0][0], conflicts)


def _notifications(rows: list[Any], mapper: MsgspecMapper) -> list[Notification]:
    """Notifications from ``(id, stream, version, topic, state)`` rows."""
    decode = mapper.decode
    return [
        Notification(id=n, stream_id=stream_id, version=version, event=decode(topic, bytes(state)))
        for n, stream_id, version, topic, state in rows
    ]


class PostgresEventStore:
    """The event store in table ``schema.table`` of a PostgreSQL database, through
    eventsourcing's ``PostgresApplicationRecorder`` (psycopg 3).

    The schema, table and append function are created when missing
    (``create_table=True``). Thread-safe: a pool of ``pool_size`` + ``max_overflow``
    connections; call it from a thread pool of about that size (``append_async``:
    from one event loop, on a connection of its own).  A request waits
    ``connect_timeout`` seconds for a connection; a lost one is replaced by attempts
    of ``reconnect_timeout`` seconds each (how it comes back after an outage:
    docs/design/event-store.md).
    """

    def __init__(
        self,
        database_url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        table: str = DEFAULT_TABLE,
        pool_size: int = 4,
        max_overflow: int = 4,
        lock_timeout: int = 0,
        connect_timeout: float = 2.0,
        reconnect_timeout: float = RECONNECT_TIMEOUT,
        mapper: MsgspecMapper | None = None,
        create_table: bool = True,
    ) -> None:
        params = _connection_params(database_url)
        self.name = f"{schema}.{table}"
        self.schema = schema
        self.table = table
        self.channel = commits_channel(schema, table)
        self.mapper = mapper or MsgspecMapper()
        if create_table:
            ensure_schema(database_url, schema)
        self.datastore = PostgresDatastore(
            dbname=params.pop("dbname"),
            host=params.pop("host"),
            port=params.pop("port"),
            user=params.pop("user"),
            password=params.pop("password"),
            schema=schema,
            originator_id_type="text",
            pool_size=pool_size,
            max_overflow=max_overflow,
            lock_timeout=lock_timeout,
            connect_timeout=connect_timeout,
            idle_in_transaction_session_timeout=5,
        )
        # Other connection parameters of the URL (sslmode, application_name, ...).
        if params and isinstance(self.datastore.pool.kwargs, dict):
            self.datastore.pool.kwargs.update(params)
        # psycopg_pool retries a lost connection with a doubling back-off (1, 2, 4 ...
        # seconds, 5 minutes long): after an outage the next attempt could be half the
        # outage away.  Short attempts instead, and short waits for a connection (a
        # request that gives up retries, and its wait starts a new attempt); a
        # connection attempt itself gives up after 2 s (libpq's connect_timeout).
        self.datastore.pool.reconnect_timeout = reconnect_timeout
        if isinstance(self.datastore.pool.kwargs, dict):
            self.datastore.pool.kwargs.setdefault("connect_timeout", 2)
        self.recorder = PostgresApplicationRecorder(self.datastore, events_table_name=table)
        if create_table:
            with _ddl_lock(database_url):
                self.recorder.create_table()
        self._append_function = sql.Identifier(schema, f"{table}_append")
        self._snapshots = sql.Identifier(schema, f"{table}_snapshots")
        self._append_statement = sql.SQL(
            "SELECT {}(%s::text[], %s::bigint[], %s::text[], %b::bytea[], %s::text, "
            "%s::text[], %s::bigint[], %s::text[], %b::bytea[])"
        ).format(self._append_function)
        self._lock_timeout = f"{int(lock_timeout)}s"
        if create_table:
            self._create_snapshots_table(database_url)
            self._create_append_function(database_url)
        self._database_url = database_url
        self._connect_params = {"connect_timeout": 2, **_connection_params(database_url)}
        self._notifications_statement = sql.SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {}.{} WHERE notification_id >= %s ORDER BY notification_id LIMIT %s"
        ).format(sql.Identifier(schema), sql.Identifier(table))
        self._lengths_statement = sql.SQL(
            "SELECT originator_id, max(originator_version) AS version "
            "FROM {}.{} WHERE originator_id = ANY(%s) GROUP BY originator_id"
        ).format(sql.Identifier(schema), sql.Identifier(table))
        self._snapshots_statement = sql.SQL(
            "SELECT stream_id, version, state FROM {} WHERE stream_id = ANY(%s) AND format = %s"
        ).format(self._snapshots)
        self._tails_statement = sql.SQL(  # OFFSET 0: one index range per stream, never a join
            "SELECT w.id, e.topic, e.state FROM unnest(%s::text[], %s::bigint[]) AS w(id, after) "
            "CROSS JOIN LATERAL (SELECT topic, state FROM {} WHERE originator_id = w.id "
            "AND originator_version > w.after ORDER BY originator_version OFFSET 0) AS e"
        ).format(sql.Identifier(schema, table))

    _append_query: bytes | None = None     # the append statement as sent (rendered on first use)
    _appender: AsyncAppender | None = None

    def append(self, batch: Batch, snapshots: Sequence[Snapshot] = ()) -> None:
        values = self._append_values(batch, snapshots)
        if values is None:
            return
        try:
            self._insert(values)
        except IntegrityError as error:
            raise _conflict(batch, self._stored_lengths(batch)) from error

    async def append_async(self, batch: Batch, snapshots: Sequence[Snapshot] = ()) -> None:
        """``append`` awaited in the running event loop, on a connection of its own
        (``async_append.py``): the same statement, transaction and refusals."""
        values = self._append_values(batch, snapshots)
        if values is None:
            return
        if self._appender is None:
            self._appender = AsyncAppender(self._connect_params, self._render_append)
        try:
            await self._appender.execute(values)
        except psycopg.IntegrityError as error:
            raise _conflict(batch, await asyncio.to_thread(self._stored_lengths, batch)) from error

    def _append_values(self, batch: Batch, snapshots: Sequence[Snapshot]) -> tuple[Any, ...] | None:
        """The append function's arguments (checked, encoded), or None: nothing to write."""
        check_batch(batch)
        check_snapshots(snapshots)
        return append_arguments(batch, snapshots, self.mapper.encode, self._lock_timeout)

    def _render_append(self, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bytes:
        """The append statement as sent, rendered once (not at every call)."""
        if self._append_query is None:
            self._append_query = self._append_statement.as_bytes(conn)
        return self._append_query

    @retry((InterfaceError, OperationalError), max_attempts=RETRIES, wait=RETRY_WAIT)
    def _insert(self, values: tuple[Any, ...]) -> None:
        """One call of the append function (the retries are eventsourcing's own for
        ``insert_events``: a broken pooled connection is replaced)."""
        with self.datastore.get_connection() as conn:
            conn.execute(self._render_append(conn), values, prepare=True)

    def _create_snapshots_table(self, database_url: str) -> None:
        """``{schema}.{table}_snapshots``: one row per stream, its latest snapshot (not
        an events table: no notification ids, nothing the relay reads)."""
        statement = sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (stream_id text PRIMARY KEY, version bigint NOT NULL, "
            "format text NOT NULL, state bytea NOT NULL)"
        ).format(self._snapshots)
        with _ddl_lock(database_url) as conn:
            conn.execute(statement)

    def _create_append_function(self, database_url: str) -> None:
        """``{schema}.{table}_append``: eventsourcing's insert (lock, notify, insert)
        as one function, so that a batch is one statement."""
        events = sql.Identifier(self.schema, self.table)
        body = sql.SQL(
            "CREATE OR REPLACE FUNCTION {function}("
            "ids text[], versions bigint[], topics text[], states bytea[], wait text, "
            "snapshot_ids text[], snapshot_versions bigint[], snapshot_formats text[], snapshot_states bytea[]) "
            "RETURNS void LANGUAGE plpgsql AS $body$ "
            "BEGIN "
            "PERFORM set_config('lock_timeout', wait, true); "
            "LOCK TABLE {events} IN EXCLUSIVE MODE; "
            "PERFORM pg_notify({channel}, ''); "   # the store's own channel (store/commits.py)
            "INSERT INTO {events} (originator_id, originator_version, topic, state) "
            "SELECT * FROM unnest(ids, versions, topics, states); "
            "IF cardinality(snapshot_ids) > 0 THEN "   # most appends store none: no statement for them
            "INSERT INTO {snapshots} AS old (stream_id, version, format, state) "
            "SELECT * FROM unnest(snapshot_ids, snapshot_versions, snapshot_formats, snapshot_states) "
            "ON CONFLICT (stream_id) DO UPDATE "
            "SET version = excluded.version, format = excluded.format, state = excluded.state "
            "WHERE old.format <> excluded.format OR old.version < excluded.version; "
            "END IF; "
            "END; $body$"
        ).format(
            function=self._append_function,
            events=events,
            snapshots=self._snapshots,
            channel=sql.Literal(self.channel),
        )
        with _ddl_lock(database_url) as conn:
            conn.execute(body)

    def load(self, stream_id: str, after_version: int = 0) -> list[Any]:
        rows = self.recorder.select_events(stream_id, gt=after_version or None)
        decode = self.mapper.decode
        return [decode(row.topic, row.state) for row in rows]

    @retry((InterfaceError, OperationalError), max_attempts=RETRIES, wait=RETRY_WAIT)
    def load_latest(self, stream_ids: Sequence[str], format: str | None) -> dict[str, Latest]:
        """Two statements for all the streams: their snapshots, then the events after them."""
        ids = list(dict.fromkeys(stream_ids))
        snapshots: dict[str, Snapshot] = {}
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            if format is not None:
                for stream_id, version, state in cursor.execute(
                        self._snapshots_statement, (ids, format), prepare=True).fetchall():
                    snapshots[stream_id] = Snapshot(stream_id, version, format, bytes(state))
            after = [snapshots[i].version if i in snapshots else 0 for i in ids]
            rows = cursor.execute(self._tails_statement, (ids, after), prepare=True).fetchall()
        events: dict[str, list[Any]] = {i: [] for i in ids}
        decode = self.mapper.decode
        for stream_id, topic, state in rows:
            events[stream_id].append(decode(topic, bytes(state)))
        return {i: Latest(snapshots.get(i), events[i]) for i in ids}

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def read_notifications(self, start: int, limit: int) -> list[Notification]:
        """The relay's read: a prepared statement and plain tuples (eventsourcing's
        ``select_notifications`` composes its SQL and builds two objects per row)."""
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            rows = cursor.execute(self._notifications_statement, (start, limit), prepare=True).fetchall()
        return _notifications(rows, self.mapper)

    def max_notification_id(self) -> int:
        return self.recorder.max_notification_id() or 0

    def notification_reader(self) -> NotificationReader:
        """An asyncio reader of the notification log on a connection of its own."""
        return NotificationReader(self._database_url, self._notifications_statement, self.mapper)

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
        self.datastore.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresEventStore({self.name!r})"

    def _stored_lengths(self, batch: Batch) -> dict[str, int]:
        streams = sorted({stream_id for stream_id, _, _ in batch})
        with self.datastore.get_connection() as conn:
            rows = conn.execute(self._lengths_statement, (streams,)).fetchall()
        return {row["originator_id"]: row["version"] for row in rows}


class NotificationReader:
    """``read_notifications`` for asyncio code (the relay), on one psycopg
    ``AsyncConnection``: no worker thread, so no thread hand-off and no GIL
    contention for each of the many small reads a relay makes under live load. The
    connection is opened on first use and dropped after an error (the next read
    opens a new one)."""

    def __init__(self, database_url: str, statement: sql.Composable, mapper: MsgspecMapper) -> None:
        self._url = database_url
        self._statement = statement
        self._mapper = mapper
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def read(self, start: int, limit: int) -> list[Notification]:
        """Up to ``limit`` notifications with id >= start, in id order."""
        try:
            if self._conn is None or self._conn.closed:
                self._conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
            cursor = await self._conn.execute(self._statement, (start, limit), prepare=True)
            rows = await cursor.fetchall()
        except BaseException:
            await self.close()
            raise
        return _notifications(rows, self._mapper)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            with contextlib.suppress(Exception):
                await conn.close()
