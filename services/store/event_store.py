"""The event store: a port, its PostgreSQL adapter and an in-memory adapter.

Streams and versions
    A stream is one table's events, named by the table id string (``stream_id``).
    Versions count from 1: a stream's n-th event has version n. ``append`` takes
    ``expected_version_before`` = how many events of the stream the writer has seen
    (0 for a new stream); its events get versions ``expected+1, expected+2, ...``.
    If any of those versions exists already, another writer came first: the whole
    batch is refused with ``VersionConflict`` and nothing of it is written (reload,
    decide again, retry; or answer with an error). Neither adapter checks for gaps
    (an ``expected`` above the stream's length): writers take it from ``load``.

One transaction per batch
    ``append([(stream, expected, events), ...])`` writes all tuples in ONE
    transaction: the lever to commit several tables' commands at once. The
    PostgreSQL recorder locks its events table for every insert (so the
    notification log has no gaps): one store serialises its writers, and a
    commit (an fsync) is the unit of cost. Batch, and partition (below).

The notification log (the transactional outbox)
    Every stored event also gets a notification id, 1, 2, 3, ... in commit order
    across all streams of the store. ``read_notifications(start, limit)`` returns
    ``Notification(id, stream_id, version, event)`` with ``id >= start`` (inclusive,
    as eventsourcing does); ``max_notification_id()`` is 0 for an empty store. A
    relay publishes them with ``Nats-Msg-Id = <store name>:<id>``.

Encoding
    Events are msgspec Structs (of a tagged union or not). ``MsgspecMapper`` (an
    eventsourcing ``Mapper``) stores ``msgspec.json`` bytes (readable in SQL with
    ``convert_from(state, 'UTF8')::jsonb``) and the event's topic
    ``module:QualName``; ``NullTranscoder`` is the no-op transcoder the mapper is
    built with. A class may set a ``TOPIC`` class attribute (a name that survives
    moves) and ``eventsourcing.utils.register_topic`` maps old topics after a
    rename: both only resolve in processes that registered them, so register the
    event types at import with ``register_event_types(EventUnion)``.
    Decoding goes by the stored topic, so old events stay decodable as long as
    their class exists: evolve events by msgspec's rules (new fields get defaults;
    a new meaning gets a new event type).
    For eventsourcing Applications (projections, ``ProjectionRunner``):
    ``eventsourcing_env(database_url, schema=...)`` gives the ``POSTGRES_*``,
    ``MAPPER_TOPIC`` and ``TRANSCODER_TOPIC`` settings.

Stream ids are text
    eventsourcing 9.5 supports text originator ids (``originator_id_type="text"``,
    env ``ORIGINATOR_ID_TYPE=text``): the events table's primary key is
    ``(originator_id text, originator_version bigint)`` and holds the table id
    itself. No uuid5 mapping, nothing to reverse, readable in SQL.

Partitions (several stores)
    ``PostgresEventStore(url, schema=..., table=...)``: each (schema, table) is an
    independent store with its own notification log and its own table lock. Use
    one schema per partition, e.g. ``schema=f"studroom_p{k}"`` (same table name
    ``events``), in one database or spread over several databases (one URL per
    partition). Prefer schemas over several tables in one schema: eventsourcing
    names its composite type and insert function per schema.

Writing (one statement per batch)
    ``append`` does not go through eventsourcing's ``insert_events`` (a pipeline of
    five statements and one composite-type value per event, dumped in Python: most of
    the table service's CPU). It calls ``{schema}.{table}_append(ids, versions, topics,
    states, lock_timeout)``, a PL/pgSQL function created beside the table that does
    what eventsourcing does, in the same order: the ``EXCLUSIVE`` table lock (so
    notification ids are in commit order), ``NOTIFY`` on eventsourcing's channel, one
    ``INSERT ... SELECT FROM unnest(...)``. One prepared statement, four arrays, one
    round trip, one transaction (autocommit). Rows are the same as eventsourcing's, so
    its readers (``select_events``, notifications, projections) are unchanged. A store
    opened with ``create_table=False`` expects the function to exist (created by a
    start with ``create_table=True``).

Threads
    eventsourcing has no asyncio API. The PostgreSQL adapter is thread-safe (a
    psycopg connection pool: ``pool_size`` + ``max_overflow`` connections); call
    it from a thread pool of about that size (``asyncio.to_thread`` or an
    executor).
"""

from __future__ import annotations

import contextlib
import threading
import typing
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import msgspec
import psycopg
from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    Mapper,
    OperationalError,
    StoredEvent,
    Transcoder,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import get_topic, resolve_topic, retry
from psycopg import sql
from psycopg.rows import tuple_row

if TYPE_CHECKING:
    from types import TracebackType

    from eventsourcing.cipher import Cipher
    from eventsourcing.compressor import Compressor

__all__ = [
    "Batch",
    "EventStore",
    "InMemoryEventStore",
    "MsgspecMapper",
    "Notification",
    "NotificationReader",
    "NullTranscoder",
    "PostgresEventStore",
    "VersionConflict",
    "ensure_schema",
    "eventsourcing_env",
    "register_event_types",
]

Batch = Sequence[tuple[str, int, Sequence[Any]]]
"""``[(stream_id, expected_version_before, [event, ...]), ...]``."""

DEFAULT_SCHEMA = "studroom"
DEFAULT_TABLE = "events"
_DDL_LOCK_KEY = 0x5354_5544_524F_4F4D  # "STUDROOM": serialises schema/table creation


class VersionConflict(Exception):
    """Another writer appended to ``stream_id`` first; nothing of the batch was written.

    ``stream_ids`` lists every conflicting stream of the batch found (at least one).
    """

    def __init__(self, stream_id: str, stream_ids: Sequence[str] = ()) -> None:
        super().__init__(f"version conflict on stream {stream_id!r}")
        self.stream_id = stream_id
        self.stream_ids = tuple(stream_ids) or (stream_id,)


class Notification(msgspec.Struct, frozen=True):
    """One entry of a store's notification log."""

    id: int
    stream_id: str
    version: int
    event: Any


@runtime_checkable
class EventStore(Protocol):
    """The port. Implemented by ``PostgresEventStore`` and ``InMemoryEventStore``."""

    def append(self, batch: Batch) -> None:
        """Write all tuples of the batch in one transaction, or raise VersionConflict."""
        ...

    def load(self, stream_id: str, after_version: int = 0) -> list[Any]:
        """The stream's events with version > after_version, in order."""
        ...

    def read_notifications(self, start: int, limit: int) -> list[Notification]:
        """Up to ``limit`` notifications with id >= start, in id order."""
        ...

    def max_notification_id(self) -> int:
        """The highest notification id, 0 if the store is empty."""
        ...


# ------------------------------------------------------------------------- encoding


class NullTranscoder(Transcoder):
    """The no-op transcoder: bytes in, bytes out (msgspec did the work)."""

    def encode(self, obj: Any) -> bytes:
        if isinstance(obj, bytes):
            return obj
        return msgspec.json.encode(obj)

    def decode(self, data: bytes) -> Any:
        return data


class MsgspecMapper(Mapper):  # type: ignore[type-arg]
    """Stores msgspec Structs as ``msgspec.json`` bytes under their class's topic.

    Works for this module's stores (``encode``/``decode``) and as an eventsourcing
    ``MAPPER_TOPIC`` for Applications whose events are Structs that carry
    ``originator_id`` and ``originator_version`` fields.
    """

    def __init__(
        self,
        transcoder: Transcoder | None = None,
        compressor: Compressor | None = None,
        cipher: Cipher | None = None,
    ) -> None:
        super().__init__(transcoder or NullTranscoder(), compressor, cipher)
        self._decoders: dict[str, msgspec.json.Decoder[Any]] = {}
        self._topics: dict[type, str] = {}
        self._encode = msgspec.json.Encoder().encode

    def topic(self, cls: type) -> str:
        """The topic of an event class (cached: one dict lookup per event)."""
        topic = self._topics.get(cls)
        if topic is None:
            topic = self._topics[cls] = get_topic(cls)
        return topic

    def encode(self, event: Any) -> tuple[str, bytes]:
        """``(topic, state)`` of an event."""
        data = self._encode(event)
        if self.compressor:
            data = self.compressor.compress(data)
        if self.cipher:
            data = self.cipher.encrypt(data)
        return self.topic(type(event)), data

    def decode(self, topic: str, data: bytes) -> Any:
        """The event stored as ``(topic, state)``."""
        decoder = self._decoders.get(topic)
        if decoder is None:
            decoder = msgspec.json.Decoder(resolve_topic(topic))
            self._decoders[topic] = decoder
        if self.cipher:
            data = self.cipher.decrypt(data)
        if self.compressor:
            data = self.compressor.decompress(data)
        return decoder.decode(data)

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        topic, state = self.encode(domain_event)
        return StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=domain_event.originator_version,
            topic=topic,
            state=state,
        )

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        return self.decode(stored_event.topic, stored_event.state)


def register_event_types(*types: Any) -> None:
    """Register event classes (or unions of them) under their topics, so that any
    process can decode them, also classes with a ``TOPIC`` attribute."""
    for tp in types:
        members = typing.get_args(tp) if typing.get_args(tp) else (tp,)
        for member in members:
            get_topic(member)  # registers the topic -> class mapping


def _check_batch(batch: Batch) -> None:
    for stream_id, expected, events in batch:
        if not isinstance(stream_id, str) or not stream_id:
            raise ValueError(f"stream id must be a non-empty string: {stream_id!r}")
        if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
            msg = f"expected version of {stream_id!r} must be an int >= 0: {expected!r}"
            raise ValueError(msg)
        if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
            raise TypeError(f"events of {stream_id!r} must be a list: {events!r}")


def _conflicting(batch: Batch, exists: Callable[[str, int], bool]) -> list[str]:
    """Streams of the batch whose new versions are taken, by the store (``exists``)
    or by an earlier tuple of the same batch."""
    found: list[str] = []
    in_batch: dict[str, set[int]] = {}
    for stream_id, expected, events in batch:
        versions = range(expected + 1, expected + len(events) + 1)
        seen = in_batch.setdefault(stream_id, set())
        taken = any(v in seen or exists(stream_id, v) for v in versions)
        if taken and stream_id not in found:
            found.append(stream_id)
        seen.update(versions)
    return found


# ---------------------------------------------------------------------- PostgreSQL


def _connection_params(database_url: str) -> dict[str, Any]:
    params: dict[str, Any] = psycopg.conninfo.conninfo_to_dict(database_url)
    params.setdefault("host", "localhost")
    params.setdefault("port", "5432")
    params.setdefault("user", "postgres")
    params.setdefault("dbname", params["user"])
    params.setdefault("password", "")
    return params


def ensure_schema(database_url: str, schema: str) -> None:
    """Create ``schema`` if missing (safe when several processes do it at once)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_DDL_LOCK_KEY,))
        try:
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_DDL_LOCK_KEY,))


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


class PostgresEventStore:
    """The event store in table ``schema.table`` of a PostgreSQL database, through
    eventsourcing's ``PostgresApplicationRecorder`` (psycopg 3).

    The schema and table are created when missing (``create_table=True``).
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
        connect_timeout: float = 10.0,
        mapper: MsgspecMapper | None = None,
        create_table: bool = True,
    ) -> None:
        params = _connection_params(database_url)
        self.name = f"{schema}.{table}"
        self.schema = schema
        self.table = table
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
        self.recorder = PostgresApplicationRecorder(self.datastore, events_table_name=table)
        if create_table:
            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute("SELECT pg_advisory_lock(%s)", (_DDL_LOCK_KEY,))
                try:
                    self.recorder.create_table()
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (_DDL_LOCK_KEY,))
        self._append_function = sql.Identifier(schema, f"{table}_append")
        self._append_statement = sql.SQL(
            "SELECT {}(%s::text[], %s::bigint[], %s::text[], %b::bytea[], %s::text)"
        ).format(self._append_function)
        self._lock_timeout = f"{int(lock_timeout)}s"
        if create_table:
            self._create_append_function(database_url)
        self._database_url = database_url
        self._notifications_statement = sql.SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {}.{} WHERE notification_id >= %s ORDER BY notification_id LIMIT %s"
        ).format(sql.Identifier(schema), sql.Identifier(table))
        self._lengths_statement = sql.SQL(
            "SELECT originator_id, max(originator_version) AS version "
            "FROM {}.{} WHERE originator_id = ANY(%s) GROUP BY originator_id"
        ).format(sql.Identifier(schema), sql.Identifier(table))

    def append(self, batch: Batch) -> None:
        _check_batch(batch)
        ids: list[str] = []
        versions: list[int] = []
        topics: list[str] = []
        states: list[bytes] = []
        encode = self.mapper.encode
        for stream_id, expected, events in batch:
            for version, event in enumerate(events, start=expected + 1):
                topic, state = encode(event)
                ids.append(stream_id)
                versions.append(version)
                topics.append(topic)
                states.append(state)
        if not ids:
            return
        try:
            self._insert(ids, versions, topics, states)
        except IntegrityError as error:
            lengths = self._stored_lengths(batch)
            conflicts = _conflicting(batch, lambda s, v: v <= lengths.get(s, 0))
            raise VersionConflict(conflicts[0] if conflicts else batch[0][0], conflicts) from error

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def _insert(self, ids: list[str], versions: list[int], topics: list[str], states: list[bytes]) -> None:
        """One call of the append function (the retries are eventsourcing's own for
        ``insert_events``: a broken pooled connection is replaced)."""
        with self.datastore.get_connection() as conn:
            conn.execute(self._append_statement, (ids, versions, topics, states, self._lock_timeout),
                         prepare=True)

    def _create_append_function(self, database_url: str) -> None:
        """``{schema}.{table}_append``: eventsourcing's insert (lock, notify, insert)
        as one function, so that a batch is one statement (see the module docstring)."""
        events = sql.Identifier(self.schema, self.table)
        body = sql.SQL(
            "CREATE OR REPLACE FUNCTION {function}("
            "ids text[], versions bigint[], topics text[], states bytea[], wait text) "
            "RETURNS void LANGUAGE plpgsql AS $body$ "
            "BEGIN "
            "PERFORM set_config('lock_timeout', wait, true); "
            "LOCK TABLE {events} IN EXCLUSIVE MODE; "
            "NOTIFY {channel}; "
            "INSERT INTO {events} (originator_id, originator_version, topic, state) "
            "SELECT * FROM unnest(ids, versions, topics, states); "
            "END; $body$"
        ).format(
            function=self._append_function,
            events=events,
            channel=sql.Identifier(self.recorder.channel_name),
        )
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (_DDL_LOCK_KEY,))
            try:
                conn.execute(body)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_DDL_LOCK_KEY,))

    def load(self, stream_id: str, after_version: int = 0) -> list[Any]:
        rows = self.recorder.select_events(stream_id, gt=after_version or None)
        decode = self.mapper.decode
        return [decode(row.topic, row.state) for row in rows]

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def read_notifications(self, start: int, limit: int) -> list[Notification]:
        """The relay's read: a prepared statement and plain tuples (eventsourcing's
        ``select_notifications`` composes its SQL and builds two objects per row)."""
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            rows = cursor.execute(self._notifications_statement, (start, limit), prepare=True).fetchall()
        decode = self.mapper.decode
        return [
            Notification(id=n, stream_id=stream_id, version=version, event=decode(topic, bytes(state)))
            for n, stream_id, version, topic, state in rows
        ]

    def max_notification_id(self) -> int:
        return self.recorder.max_notification_id() or 0

    def notification_reader(self) -> NotificationReader:
        """An asyncio reader of the notification log on a connection of its own."""
        return NotificationReader(self._database_url, self._notifications_statement, self.mapper)

    def close(self) -> None:
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
        decode = self._mapper.decode
        return [
            Notification(id=n, stream_id=stream_id, version=version, event=decode(topic, bytes(state)))
            for n, stream_id, version, topic, state in rows
        ]

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            with contextlib.suppress(Exception):
                await conn.close()


# ------------------------------------------------------------------------ in memory


class InMemoryEventStore:
    """The same semantics in a dict (events are encoded and decoded as in the
    database, so encoding problems show up in fast tests too). Thread-safe."""

    def __init__(self, mapper: MsgspecMapper | None = None, name: str = "memory") -> None:
        self.name = name
        self.mapper = mapper or MsgspecMapper()
        self._streams: dict[str, dict[int, int]] = {}  # stream -> version -> log index
        self._log: list[tuple[str, int, str, bytes]] = []
        self._lock = threading.Lock()

    def append(self, batch: Batch) -> None:
        _check_batch(batch)
        encoded = [
            (stream_id, version, *self.mapper.encode(event))
            for stream_id, expected, events in batch
            for version, event in enumerate(events, start=expected + 1)
        ]
        with self._lock:
            streams = self._streams
            conflicts = _conflicting(batch, lambda s, v: v in streams.get(s, ()))
            if conflicts:
                raise VersionConflict(conflicts[0], conflicts)
            for stream_id, version, topic, state in encoded:
                self._log.append((stream_id, version, topic, state))
                self._streams.setdefault(stream_id, {})[version] = len(self._log)

    def load(self, stream_id: str, after_version: int = 0) -> list[Any]:
        with self._lock:
            stream = self._streams.get(stream_id, {})
            rows = [self._log[stream[v] - 1] for v in sorted(stream) if v > after_version]
        return [self.mapper.decode(topic, state) for _, _, topic, state in rows]

    def read_notifications(self, start: int, limit: int) -> list[Notification]:
        first = max(start, 1)
        with self._lock:
            rows = self._log[first - 1 : first - 1 + max(limit, 0)]
        return [
            Notification(id=i, stream_id=s, version=v, event=self.mapper.decode(t, d))
            for i, (s, v, t, d) in enumerate(rows, start=first)
        ]

    def max_notification_id(self) -> int:
        with self._lock:
            return len(self._log)

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
