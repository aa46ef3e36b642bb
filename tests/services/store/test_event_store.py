"""The event store port: the PostgreSQL adapter and the in-memory one behave alike."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar
from uuid import UUID

import msgspec
import psycopg
import pytest
from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.utils import Environment
from psycopg import sql
from studroom.services.store.codec import MsgspecMapper, register_event_types
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.store.prepared import PreparedStatement, numbered
from studroom.services.store.port import (
    EventStore,
    Latest,
    Notification,
    Snapshot,
    VersionConflict,
)
from studroom.services.store.postgres import (
    PostgresEventStore,
    ensure_schema,
    eventsourcing_env,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


# A tagged union of test events (the domain's real events live in studroom.domain).
class Anted(msgspec.Struct, frozen=True, tag="anted"):
    seat: int
    amount: int


class CardDealt(msgspec.Struct, frozen=True, tag="card_dealt"):
    seat: int
    card: str
    face_up: bool = False


class HandEnded(msgspec.Struct, frozen=True, tag="hand_ended"):
    TOPIC: ClassVar[str] = "tests:HandEnded"  # a topic that survives a move
    winners: list[int]


SampleEvent = Anted | CardDealt | HandEnded
register_event_types(SampleEvent)  # "tests:HandEnded" resolves from now on


def _drop_schema(database_url: str, schema: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def schemas(database_url: str) -> Iterator[list[str]]:
    """Fresh schema names for a test; dropped afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        _drop_schema(database_url, name)


@pytest.fixture
def new_store(request: pytest.FixtureRequest, schemas: list[str]) -> Iterator[Any]:
    """A factory of fresh, independent stores of the parametrised kind."""
    kind = request.param
    opened: list[Any] = []

    def make() -> EventStore:
        if kind == "memory":
            store: Any = InMemoryEventStore()
        else:
            schema = f"es_{uuid.uuid4().hex[:10]}"
            schemas.append(schema)
            store = PostgresEventStore(request.getfixturevalue("database_url"), schema=schema)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


both = pytest.mark.parametrize("new_store", ["postgres", "memory"], indirect=True)


@both
def test_append_and_load_round_trip(new_store: Any) -> None:
    store = new_store()
    assert isinstance(store, EventStore)
    hand = [Anted(seat=1, amount=5), CardDealt(seat=1, card="As"), HandEnded(winners=[1])]
    store.append([("table-1", 0, hand[:2])])
    store.append([("table-1", 2, hand[2:])])
    loaded = store.load("table-1")
    assert loaded == hand
    assert [type(e) for e in loaded] == [Anted, CardDealt, HandEnded]
    assert store.load("table-1", after_version=2) == hand[2:]
    assert store.load("table-1", after_version=3) == []
    assert store.load("no-such-table") == []
    store.append([])  # nothing to do
    store.append([("table-2", 0, [])])
    assert store.max_notification_id() == 3


@both
def test_a_batch_of_several_streams_is_one_commit(new_store: Any) -> None:
    store = new_store()
    store.append([("table-a", 0, [Anted(1, 5)])])
    store.append(
        [
            ("table-a", 1, [CardDealt(1, "Kd", face_up=True)]),
            ("table-b", 0, [Anted(2, 5), Anted(3, 5)]),
            ("table-c", 0, [HandEnded([4])]),
            ("table-a", 2, [CardDealt(1, "Qs")]),  # the same stream again, chained
        ]
    )
    assert store.load("table-a") == [Anted(1, 5), CardDealt(1, "Kd", True), CardDealt(1, "Qs")]
    assert store.load("table-b") == [Anted(2, 5), Anted(3, 5)]
    assert store.load("table-c") == [HandEnded([4])]
    notes = store.read_notifications(1, 100)
    assert [n.id for n in notes] == [1, 2, 3, 4, 5, 6]
    assert [(n.stream_id, n.version) for n in notes[1:]] == [
        ("table-a", 2), ("table-b", 1), ("table-b", 2), ("table-c", 1), ("table-a", 3)
    ]  # fmt: skip


def test_a_batch_is_one_postgres_transaction(database_url: str, schemas: list[str]) -> None:
    schemas.append(schema := f"es_{uuid.uuid4().hex[:10]}")
    with PostgresEventStore(database_url, schema=schema) as store:
        store.append([(f"table-{i}", 0, [Anted(i, 5), Anted(i + 1, 5)]) for i in range(32)])
        store.append([("table-0", 2, [HandEnded([0])])])
    with psycopg.connect(database_url) as conn:
        query = sql.SQL("SELECT xmin::text::bigint, count(*) FROM {}.events GROUP BY 1 ORDER BY 1")
        rows = conn.execute(query.format(sql.Identifier(schema))).fetchall()
    assert [count for _, count in rows] == [64, 1]  # one transaction id per batch


@both
def test_version_conflict_writes_nothing_of_the_batch(new_store: Any) -> None:
    store = new_store()
    store.append([("table-a", 0, [Anted(1, 5)])])
    before = store.max_notification_id()
    with pytest.raises(VersionConflict) as conflict:
        store.append(
            [
                ("table-b", 0, [Anted(2, 5)]),  # fine on its own
                ("table-a", 0, [Anted(9, 5)]),  # stale: table-a has 1 event
            ]
        )
    assert conflict.value.stream_id == "table-a"
    assert conflict.value.stream_ids == ("table-a",)
    assert store.load("table-b") == []
    assert store.load("table-a") == [Anted(1, 5)]
    assert store.max_notification_id() == before
    # Two tuples of one batch that claim the same version conflict too.
    with pytest.raises(VersionConflict) as conflict:
        store.append([("table-c", 0, [Anted(1, 5)]), ("table-c", 0, [Anted(2, 5)])])
    assert conflict.value.stream_id == "table-c"
    assert store.load("table-c") == []
    # The retry on fresh state succeeds.
    store.append([("table-b", 0, [Anted(2, 5)]), ("table-a", 1, [Anted(9, 5)])])
    assert store.load("table-a") == [Anted(1, 5), Anted(9, 5)]


@both
def test_concurrent_writers_one_wins(new_store: Any) -> None:
    store = new_store()
    store.append([("table-1", 0, [Anted(1, 5)])])
    results: list[str] = []
    barrier = threading.Barrier(8)

    def writer(seat: int) -> None:
        barrier.wait()
        try:
            store.append([("table-1", 1, [Anted(seat, 10)])])
            results.append("ok")
        except VersionConflict as error:
            assert error.stream_id == "table-1"
            results.append("conflict")

    threads = [threading.Thread(target=writer, args=(seat,)) for seat in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["conflict"] * 7 + ["ok"]
    assert len(store.load("table-1")) == 2


@both
def test_notifications_in_commit_order_across_streams(new_store: Any) -> None:
    store = new_store()
    assert store.max_notification_id() == 0
    assert store.read_notifications(1, 10) == []
    expected: list[Notification] = []
    versions: dict[str, int] = {}
    for i in range(12):
        stream = f"table-{i % 3}"
        event = Anted(seat=i, amount=i * 10)
        store.append([(stream, versions.get(stream, 0), [event])])
        versions[stream] = versions.get(stream, 0) + 1
        expected.append(Notification(i + 1, stream, versions[stream], event))
    assert store.read_notifications(1, 100) == expected
    assert store.read_notifications(0, 3) == expected[:3]
    assert store.read_notifications(5, 2) == expected[4:6]  # start is inclusive
    assert store.read_notifications(13, 10) == []
    assert store.max_notification_id() == 12
    # A relay pages through the log.
    relayed, position = [], 1
    while page := store.read_notifications(position, 5):
        relayed += page
        position = page[-1].id + 1
    assert relayed == expected


@both
def test_a_second_store_is_independent(new_store: Any) -> None:
    first, second = new_store(), new_store()
    first.append([("table-1", 0, [Anted(1, 5), Anted(2, 5)])])
    second.append([("table-1", 0, [HandEnded([3])])])  # same stream id, other store
    assert first.load("table-1") == [Anted(1, 5), Anted(2, 5)]
    assert second.load("table-1") == [HandEnded([3])]
    assert [n.id for n in second.read_notifications(1, 10)] == [1]
    assert first.max_notification_id() == 2 and second.max_notification_id() == 1


def test_stores_in_the_same_schema_with_other_table_names(
    database_url: str, schemas: list[str]
) -> None:
    schemas.append(schema := f"es_{uuid.uuid4().hex[:10]}")
    with (
        PostgresEventStore(database_url, schema=schema, table="events_p0") as p0,
        PostgresEventStore(database_url, schema=schema, table="events_p1") as p1,
    ):
        p0.append([("table-1", 0, [Anted(1, 5)])])
        p1.append([("table-1", 0, [Anted(2, 5)])])
        assert p0.load("table-1") == [Anted(1, 5)]
        assert p1.load("table-1") == [Anted(2, 5)]


def test_a_new_store_object_sees_the_stored_events(database_url: str, schemas: list[str]) -> None:
    schemas.append(schema := f"es_{uuid.uuid4().hex[:10]}")
    with PostgresEventStore(database_url, schema=schema) as store:
        store.append([("table-1", 0, [CardDealt(2, "7h", face_up=True)])])
    with PostgresEventStore(database_url, schema=schema) as again:
        assert again.load("table-1") == [CardDealt(2, "7h", face_up=True)]
        assert again.read_notifications(1, 1)[0].event == CardDealt(2, "7h", face_up=True)
    with psycopg.connect(database_url) as conn:  # readable in SQL, for disputes
        query = sql.SQL(
            "SELECT originator_id, topic, convert_from(state, 'UTF8')::jsonb FROM {}.events"
        ).format(sql.Identifier(schema))
        assert conn.execute(query).fetchone() == (
            "table-1",
            f"{__name__}:CardDealt",
            {"type": "card_dealt", "seat": 2, "card": "7h", "face_up": True},
        )


class Renamed(msgspec.Struct, frozen=True):
    """An eventsourcing-style event: it carries its originator id and version."""

    originator_id: UUID
    originator_version: int
    note: str


def test_eventsourcing_env_for_applications(database_url: str, schemas: list[str]) -> None:
    """MAPPER_TOPIC/TRANSCODER_TOPIC plug the msgspec mapper into eventsourcing."""
    schemas.append(schema := f"es_{uuid.uuid4().hex[:10]}")
    ensure_schema(database_url, schema)
    env = eventsourcing_env(database_url, schema=schema, originator_id_type="uuid")
    with InfrastructureFactory.construct(Environment(env=env)) as factory:
        mapper = factory.mapper(factory.transcoder())
        assert isinstance(mapper, MsgspecMapper)
        recorder = factory.application_recorder()
        event = Renamed(originator_id=uuid.uuid4(), originator_version=1, note="hi")
        recorder.insert_events([mapper.to_stored_event(event)])
        (stored,) = recorder.select_events(event.originator_id)
        assert mapper.to_domain_event(stored) == event


@both
def test_snapshots_are_stored_with_an_append_and_never_notified(new_store: Any) -> None:
    store = new_store()
    hand = [Anted(seat=1, amount=5), CardDealt(seat=1, card="As")]
    assert _kept(store, "t1", "f1") is None
    store.append([("t1", 0, hand)], [Snapshot("t1", 2, "f1", b"state at 2")])
    assert _kept(store, "t1", "f1") == Snapshot("t1", 2, "f1", b"state at 2")
    assert _kept(store, "t1", "f2") is None                  # another format: not read
    assert [n.stream_id for n in store.read_notifications(1, 10)] == ["t1", "t1"]   # events only
    store.append([("t1", 2, hand[:1])], [Snapshot("t1", 1, "f1", b"older")])
    assert _kept(store, "t1", "f1").state == b"state at 2"    # an older one never wins
    store.append([("t1", 3, hand[:1])], [Snapshot("t1", 1, "f2", b"new format")])
    assert _kept(store, "t1", "f2").state == b"new format"    # another format replaces it
    with pytest.raises(VersionConflict):
        store.append([("t1", 0, hand), ("t2", 0, hand)], [Snapshot("t2", 2, "f2", b"t2")])
    assert _kept(store, "t2", "f2") is None                   # refused with its batch
    with pytest.raises(ValueError, match="two snapshots"):
        store.append([("t2", 0, hand)], [Snapshot("t2", 1, "f2", b"a"), Snapshot("t2", 2, "f2", b"b")])
    assert store.load("t2") == [] and store.max_notification_id() == 4


def _kept(store: Any, stream_id: str, format: str) -> Snapshot | None:
    return store.load_latest([stream_id], format)[stream_id].snapshot


@both
def test_load_latest_reads_snapshots_and_the_events_after_them(new_store: Any) -> None:
    store = new_store()
    hand = [Anted(seat=1, amount=5), CardDealt(seat=1, card="As"), HandEnded(winners=[1])]
    store.append([("t1", 0, hand[:2]), ("t2", 0, hand)], [Snapshot("t1", 1, "f", b"t1@1")])
    found = store.load_latest(["t1", "t2", "nowhere", "t1"], "f")
    assert list(found) == ["t1", "t2", "nowhere"]
    assert found["t1"] == Latest(Snapshot("t1", 1, "f", b"t1@1"), hand[1:2])
    assert found["t2"] == Latest(None, hand) and found["nowhere"] == Latest(None, [])
    assert store.load_latest(["t1"], None)["t1"] == Latest(None, hand[:2])     # no snapshot asked for


@both
def test_append_async_is_the_same_append(new_store: Any) -> None:
    """The table service's append, awaited in an event loop (each ``asyncio.run`` is
    another loop: the store follows it)."""
    store = new_store()
    hand = [Anted(seat=1, amount=5), CardDealt(seat=1, card="As")]
    asyncio.run(store.append_async([("t1", 0, hand), ("t2", 0, hand[:1]), ("t1", 2, hand[1:])],
                                   [Snapshot("t2", 1, "f", b"t2@1")]))
    asyncio.run(store.append_async([]))                                  # nothing to write
    assert store.load("t1") == [*hand, hand[1]] and store.load("t2") == hand[:1]
    assert _kept(store, "t2", "f") == Snapshot("t2", 1, "f", b"t2@1")
    with pytest.raises(VersionConflict) as conflict:
        asyncio.run(store.append_async([("t3", 0, hand), ("t2", 0, hand), ("t1", 1, hand)]))
    assert conflict.value.stream_ids == ("t2", "t1")
    assert store.load("t3") == [] and store.max_notification_id() == 4   # nothing of the batch
    asyncio.run(store.append_async([("t3", 0, hand)]))
    assert [(n.stream_id, n.version) for n in store.read_notifications(5, 10)] == [("t3", 1), ("t3", 2)]


def test_append_async_notifies_and_outlives_its_connection(database_url: str, schemas: list[str]) -> None:
    """The projectors' NOTIFY comes with an awaited append too; a connection lost
    between two appends is opened again (the append retries)."""
    schemas.append(schema := f"es_{uuid.uuid4().hex[:10]}")
    with PostgresEventStore(database_url, schema=schema) as store, \
            psycopg.connect(database_url, autocommit=True) as listener:
        listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(store.channel)))

        async def main() -> None:
            await store.append_async([("t1", 0, [Anted(1, 5)])])
            assert [n.channel for n in listener.notifies(timeout=10, stop_after=1)] == [store.channel]
            with psycopg.connect(database_url, autocommit=True) as admin:   # the appender's backend killed
                killed = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND query LIKE %s", (f"%{schema}%_append%",)).fetchone()
            assert killed == (1,)
            await store.append_async([("t1", 1, [Anted(2, 5)])])

        asyncio.run(main())
        assert store.load("t1") == [Anted(1, 5), Anted(2, 5)]


def test_a_prepared_statement_numbers_psycopgs_placeholders_and_refuses_a_literal_percent() -> None:
    """``prepared.py`` sends the statement as PostgreSQL reads it: ``%s``/``%b`` become
    ``$1``, ``$2``, ... in order; a literal ``%%`` (which psycopg would un-escape) is refused."""
    assert numbered(b"SELECT f(%s::text[], %b::bytea[], %s::text)") == b"SELECT f($1::text[], $2::bytea[], $3::text)"
    assert numbered(b"SELECT 1") == b"SELECT 1"
    with pytest.raises(ValueError):
        numbered(b"SELECT %s LIKE 'a%%'")


def test_a_failed_prepared_statement_raises_psycopgs_error_and_leaves_the_connection_usable(database_url: str) -> None:
    """A statement that fails (a unique key taken) raises the error psycopg would
    (``IntegrityError``: the append's conflict), and the connection runs the next."""
    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await conn.execute("CREATE TEMPORARY TABLE once (k text PRIMARY KEY)")
            insert = PreparedStatement(b"insert_once", b"INSERT INTO once VALUES (%s::text)")
            await insert.run(conn, ["a"])
            with pytest.raises(psycopg.errors.UniqueViolation):
                await insert.run(conn, ["a"])
            await insert.run(conn, ["b"])
            assert await (await conn.execute("SELECT k FROM once ORDER BY k")).fetchall() == [("a",), ("b",)]

    asyncio.run(main())
