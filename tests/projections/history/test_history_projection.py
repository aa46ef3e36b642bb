"""The history projection on a real PostgreSQL: from the table stores' notification
logs, every hand of every player with his result and his copy of the hand (R23),
exactly once: a projector killed in the middle of a batch and started again ends
with the same rows as one never stopped, and so does a rebuild from zero."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import psycopg
import pytest
from psycopg import sql
from studroom.domain.events import Event
from studroom.projections.history import queries
from studroom.domain.hands import spans
from studroom.projections.history.projector import Projector
from studroom.domain.hand_record import HandRecord, make_record, seated_before
from studroom.projections.history.results import results
from studroom.projections.history.schema import drop
from studroom.domain.simulate import SimulatedTable
from studroom.services.store.layout import store_of_table, store_schema
from studroom.services.store.postgres import PostgresEventStore

pytestmark = pytest.mark.integration

STORES = 2
GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")


class Room:
    def __init__(self, database_url: str) -> None:
        self.url = database_url
        self.prefix = f"h{uuid.uuid4().hex[:8]}_p"
        self.streams = {f"t{i:02}": SimulatedTable(f"t{i:02}", GAMES[i % 3], 4 + i, seed=i).play(25) for i in range(5)}

    @property
    def stores(self) -> list[str]:
        return [store_schema(j, self.prefix) for j in range(STORES)]

    def store(self, chunk: int = 37) -> None:
        """The tables' events, appended a few at a time round robin (so that hands run
        across the projector's batches, as in a live room)."""
        stores = [PostgresEventStore(self.url, schema=s) for s in self.stores]
        try:
            written = dict.fromkeys(self.streams, 0)
            while any(written[t] < len(e) for t, e in self.streams.items()):
                for table_id, events in self.streams.items():
                    start = written[table_id]
                    if start < len(events):
                        store = stores[store_of_table(table_id, STORES)]
                        store.append([(table_id, start, events[start:start + chunk])])
                        written[table_id] = min(start + chunk, len(events))
        finally:
            for store in stores:
                store.close()

    def projector(self, history: str, **options: Any) -> Projector:
        return Projector(self.url, self.stores, history_schema=history, **options)

    def drop(self, *schemas: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(scope="module")
def room(database_url: str) -> Iterator[Room]:
    room = Room(database_url)
    room.store()
    yield room
    room.drop(*room.stores)


def _rows(url: str, schema: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql.SQL("SELECT * FROM {}.hands ORDER BY player, table_id, hand_no").format(
            sql.Identifier(schema))).fetchall()


def _expected(streams: dict[str, list[Event]]) -> dict[tuple[str, str, int], tuple[Any, HandRecord]]:
    """Each (player, table, hand) row's result and record, from the streams in memory."""
    out = {}
    for table_id, stream in streams.items():
        config = stream[0].config  # type: ignore[attr-defined]
        for span in spans(stream):
            if span.end is None or span.cancelled:
                continue
            hand = stream[span.start:span.end]
            for r in results(hand):
                record = make_record(table_id, config, seated_before(stream, span.start), hand, r.seat)
                out[(r.player, table_id, span.hand_no)] = (r, record)
    return out


def test_R23_every_players_hand_with_his_result_and_his_copy(room: Room) -> None:
    history = f"{room.prefix}history"
    projector = room.projector(history, batch_size=53)
    try:
        assert projector.catch_up() == sum(len(e) for e in room.streams.values())
        assert projector.catch_up() == 0
    finally:
        projector.close()
    expected = _expected(room.streams)
    rows = _rows(room.url, history)
    assert len(rows) == len(expected) > 300
    with psycopg.connect(room.url) as conn:
        for (player, table_id, hand_no), (result, record) in expected.items():
            assert queries.hand(conn, player, table_id, hand_no, schema=history) == record
        player = max({p for p, _, _ in expected}, key=lambda p: sum(k[0] == p for k in expected))
        mine = {k: v for k, v in expected.items() if k[0] == player}
        listed = queries.hands(conn, player, schema=history, limit=500)
        assert {(h.table_id, h.hand_no): (h.net, h.won, h.rake_paid) for h in listed} == {
            (t, n): (r.net, r.won, r.rake_paid) for (_, t, n), (r, _) in mine.items()}
        assert [h.played_ms for h in listed] == sorted((h.played_ms for h in listed), reverse=True)
        sittings, totals = queries.sessions(conn, player, schema=history)
        assert sum(s.hands for s in sittings) == len(mine) == sum(t.hands for t in totals)
        assert sum(s.net for s in sittings) == sum(r.net for r, _ in mine.values())
    room.drop(history)


class Killed(Exception):
    pass


def test_a_projector_killed_mid_batch_ends_as_one_never_stopped_and_a_rebuild_from_zero_too(room: Room) -> None:
    steady, killed = f"{room.prefix}steady", f"{room.prefix}killed"
    projector = room.projector(steady, batch_size=41)
    projector.catch_up()
    projector.close()
    commits = 0

    def kill_now_and_then(store: str, rows: int) -> None:
        nonlocal commits
        commits += 1
        if commits % 7 == 0:
            raise Killed(f"killed before committing {rows} rows of {store}")

    kills = 0
    while True:
        projector = room.projector(killed, batch_size=41, before_commit=kill_now_and_then)
        try:
            projector.catch_up()
            break
        except Killed:
            kills += 1
        finally:
            projector.close()
    assert kills > 3
    assert _rows(room.url, killed) == _rows(room.url, steady)

    with psycopg.connect(room.url, autocommit=True) as conn:
        drop(conn, steady)
    projector = room.projector(steady, batch_size=500)
    projector.catch_up()
    projector.close()
    assert _rows(room.url, killed) == _rows(room.url, steady)
    record = msgspec.json.decode(_rows(room.url, steady)[0][-1], type=HandRecord)
    assert record.events[0].seed is None  # type: ignore[attr-defined]
    room.drop(steady, killed)
