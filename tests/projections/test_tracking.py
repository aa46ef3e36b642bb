"""The tracking projector (projections/tracking.py) on a real PostgreSQL, with a fold of
its own: one row per event, numbered per stream by a state kept between batches.  A
batch and its position commit together; a second projector on the same position waits
for the first; a crash between the claim and the advance leaves nothing, and the fold
afterwards folds every event once; the run loop finds a new store and gets over a
failing batch."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import psycopg
import pytest
from psycopg import sql
from studroom.domain.events import PlayerSatDown
from studroom.projections import tracking
from studroom.projections.tracking import Batch, TrackingProjector
from studroom.projections.tracking_schema import TrackedSchema
from studroom.services.store.inspect import stores_on
from studroom.services.store.layout import store_schema
from studroom.services.store.postgres import PostgresEventStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SEEN = TrackedSchema(
    ddl_lock=0x5452_4143_4B,  # "TRACK"
    ddl=("CREATE TABLE IF NOT EXISTS {s}.seen (store text, notification bigint, stream text, nth bigint)",),
    rows_table="seen",
    columns=(("store", "text"), ("notification", "int8"), ("stream", "text"), ("nth", "int8")),
    states_table="counts",
    stream_column="stream",
)


class Count(msgspec.Struct):
    n: int = 0


class Crash(Exception):
    pass


class Counting(TrackingProjector):
    """Every event a row ``(store, notification, stream, nth of its stream)``; the
    stores ``<prefix><n>`` found; ``crash_in`` batches (counted from 1) fail mid-fold."""

    name = "counting"

    def __init__(self, url: str, schema: str, prefix: str, *, crash_in: tuple[int, ...] = (), **options: Any) -> None:
        super().__init__(url, SEEN, schema, **options)
        self.prefix = prefix
        self.crash_in = crash_in
        self.batches = 0

    def find_stores(self) -> list[str]:
        return [store_schema(i, self.prefix) for i in stores_on(self._connection(), self.prefix)]

    def state_type(self, store: str) -> type:
        return Count

    def rows(self, batch: Batch) -> list[tuple[Any, ...]]:
        self.batches += 1
        rows = []
        for n in batch.notes:
            count = batch.states[n.stream_id]
            count.n += 1
            rows.append((batch.store, n.id, n.stream_id, count.n))
        if self.batches in self.crash_in:
            raise Crash(f"batch {self.batches} crashes between its claim and its advance")
        return rows


class Stores:
    """Event stores ``<prefix>0``, ``<prefix>1``: tables of seated players."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.prefix = f"k{uuid.uuid4().hex[:8]}_p"
        self.schemas: list[str] = []

    def fill(self, index: int, tables: int = 3, events: int = 40) -> int:
        schema = store_schema(index, self.prefix)
        self.schemas.append(schema)
        with PostgresEventStore(self.url, schema=schema) as store:
            for k in range(0, events, 10):
                store.append([(f"t{t}", k, [PlayerSatDown(seat=s, player=f"p{s}") for s in range(k, k + 10)])
                              for t in range(tables)])
        return tables * events

    def projector(self, view: str, **options: Any) -> Counting:
        self.schemas.append(view)
        return Counting(self.url, view, self.prefix, **options)

    def seen(self, view: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            query = sql.SQL("SELECT store, notification, stream, nth FROM {}.seen ORDER BY 1, 2")
            return conn.execute(query.format(sql.Identifier(view))).fetchall()

    def positions(self, view: str) -> dict[str, int]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            query = sql.SQL("SELECT store, position FROM {}.positions").format(sql.Identifier(view))
            return dict(conn.execute(query).fetchall())

    def drop(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            for schema in self.schemas:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def stores(database_url: str) -> Iterator[Stores]:
    s = Stores(database_url)
    yield s
    s.drop()


def once_each(rows: list[tuple[Any, ...]], events: int) -> bool:
    """Every event folded once, each stream's events numbered 1, 2, ... in order."""
    notes = [(store, n) for store, n, _, _ in rows]
    nths: dict[tuple[str, str], list[int]] = {}
    for store, _, stream, nth in rows:
        nths.setdefault((store, stream), []).append(nth)
    return len(notes) == len(set(notes)) == events and all(v == list(range(1, len(v) + 1)) for v in nths.values())


def test_a_batch_and_its_position_commit_together(stores: Stores) -> None:
    events = stores.fill(0)
    view = f"{stores.prefix}view"
    outside: list[tuple[int, dict[str, int]]] = []

    def look(store: str, rows: int) -> None:             # just before the commit, from another connection
        outside.append((len(stores.seen(view)), stores.positions(view)))

    projector = stores.projector(view, batch_size=50, before_commit=look)
    try:
        assert projector.fold_batch(stores.schemas[0]) == 50
        assert outside == [(0, {})]
        assert len(stores.seen(view)) == 50 and stores.positions(view) == {stores.schemas[0]: 50}
        assert projector.catch_up() == events - 50
    finally:
        projector.close()
    assert once_each(stores.seen(view), events)


def test_a_second_projector_on_the_same_position_waits_for_the_first(stores: Stores) -> None:
    events = stores.fill(0)
    store, view = stores.schemas[0], f"{stores.prefix}view"
    in_batch, go_on = threading.Event(), threading.Event()

    def hold(store: str, rows: int) -> None:
        in_batch.set()
        assert go_on.wait(30)

    first = stores.projector(view, batch_size=50, before_commit=hold)
    second = stores.projector(view, batch_size=50)
    folded: dict[str, int] = {}
    threads = [threading.Thread(target=lambda: folded.update(first=first.fold_batch(store)))]
    threads.append(threading.Thread(target=lambda: (in_batch.wait(30), folded.update(second=second.fold_batch(store)))))
    try:
        for t in threads:
            t.start()
        with psycopg.connect(stores.url, autocommit=True) as conn:      # the second waits on the position's row
            while not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                   "AND query LIKE %s", (f"%{view}%positions%",)).fetchone()[0]:
                assert "second" not in folded
                time.sleep(0.01)
        go_on.set()
        for t in threads:
            t.join(30)
        assert folded == {"first": 50, "second": 50}
        assert stores.positions(view) == {store: 100}
        assert first.catch_up() + second.catch_up() == events - 100
    finally:
        go_on.set()
        first.close()
        second.close()
    assert once_each(stores.seen(view), events)


def test_a_crash_between_claim_and_advance_folds_nothing_twice(stores: Stores) -> None:
    events = stores.fill(0) + stores.fill(1)
    view = f"{stores.prefix}view"
    crashing = stores.projector(view, batch_size=35, crash_in=(3, 4, 9))
    crashes = 0
    while True:
        try:
            crashing.catch_up()
            break
        except Crash:
            crashes += 1                      # the same projector goes on: its cache of the batch is gone
    crashing.close()
    assert crashes == 3
    assert once_each(stores.seen(view), events)

    again = f"{stores.prefix}again"           # a crash that ends the process: a new projector goes on
    crashed = stores.projector(again, batch_size=35, crash_in=(5,))
    with pytest.raises(Crash):
        crashed.catch_up()
    crashed.close()
    assert len(stores.seen(again)) == 4 * 35
    projector = stores.projector(again, batch_size=35)
    try:
        assert projector.catch_up() == events - 4 * 35
    finally:
        projector.close()
    assert stores.seen(again) == stores.seen(view)


def test_the_run_loop_finds_a_new_store_and_gets_over_a_failing_batch(stores: Stores,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(tracking, "DISCOVER_EVERY_S", 0.0)
    events = stores.fill(0)
    view = f"{stores.prefix}view"
    projector = stores.projector(view, batch_size=50, crash_in=(2,))

    async def run() -> None:
        stop = asyncio.Event()
        running = asyncio.create_task(projector.run(stop, idle_s=0.05))
        try:
            while projector.folded < events:
                await asyncio.sleep(0.05)
            more = stores.fill(1)                # a store made while it runs
            while projector.folded < events + more:
                await asyncio.sleep(0.05)
        finally:
            stop.set()
            await running

    with caplog.at_level(logging.ERROR, logger=tracking.__name__):
        asyncio.run(asyncio.wait_for(run(), 60))
    projector.close()
    assert [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()] != []
    assert once_each(stores.seen(view), events * 2)


def test_an_idle_run_loop_sleeps_until_a_store_notifies_an_append(stores: Stores) -> None:
    """With ``listen`` the loop looks at the stores only when one notifies an append
    (or after ``idle_s``, here far longer than the test): idle, it folds nothing and
    runs no step; an append wakes it."""
    events = stores.fill(0)
    view = f"{stores.prefix}view"
    projector = stores.projector(view, batch_size=50)
    steps = [0]
    step = projector.step

    def counted() -> int:
        steps[0] += 1
        return step()

    projector.step = counted  # type: ignore[method-assign]

    async def run() -> tuple[int, int]:
        stop = asyncio.Event()
        running = asyncio.create_task(projector.run(stop, idle_s=600, pace_s=0.1, listen=True))
        try:
            while projector.folded < events:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)                 # caught up: it listens and sleeps
            asleep = steps[0]
            await asyncio.sleep(1.0)
            idle_steps = steps[0] - asleep
            with PostgresEventStore(stores.url, schema=stores.schemas[0], create_table=False) as store:
                store.append([("t0", 40, [PlayerSatDown(seat=99, player="late")])])
            while projector.folded < events + 1:
                await asyncio.sleep(0.05)
            return idle_steps, steps[0]
        finally:
            stop.set()
            await running

    idle_steps, total = asyncio.run(asyncio.wait_for(run(), 60))
    projector.close()
    assert idle_steps == 0
    assert total < 20, total
    assert once_each(stores.seen(view), events + 1)


def test_a_busy_run_loop_folds_at_its_pace(stores: Stores) -> None:
    """While a store keeps appending, the loop folds a batch at most once a ``pace_s``
    (the services': ``PACE_S``), each batch holding every append since the last: the
    batch's fixed cost (its round trips) is paid once a pace, not once an append."""
    events = stores.fill(0)
    view = f"{stores.prefix}view"
    projector = stores.projector(view, batch_size=2000)
    pace, appends, every = 0.4, 40, 0.05

    async def run() -> int:
        stop = asyncio.Event()
        running = asyncio.create_task(projector.run(stop, idle_s=600, pace_s=pace, listen=True))
        try:
            while projector.folded < events:
                await asyncio.sleep(0.05)
            before, began = projector.batches, time.monotonic()
            with PostgresEventStore(stores.url, schema=stores.schemas[0], create_table=False) as store:
                for k in range(appends):
                    store.append([("t0", 40 + k, [PlayerSatDown(seat=100 + k, player=f"late{k}")])])
                    await asyncio.sleep(every)
            while projector.folded < events + appends:
                await asyncio.sleep(0.05)
            busy = time.monotonic() - began
            batches = projector.batches - before
            assert batches <= busy / pace + 2, (batches, busy)
            return batches
        finally:
            stop.set()
            await running

    batches = asyncio.run(asyncio.wait_for(run(), 60))
    projector.close()
    assert batches < appends / 3, batches           # several appends a batch
    assert once_each(stores.seen(view), events + appends)
