"""A room whose two event stores live on two PostgreSQL servers (issue 20, "scale out
for real"; docs/design/event-store.md "Stores on several servers").

Store 0 stays on the session's PostgreSQL (the home server: the cashier's store, the
books), store 1 is placed on a second embedded server by ``STUDROOM_STORE_URLS``.  The
room's services (a table service, the relay, the cashier, the ledger) play hands on
tables of both stores; then: store 1's events are on the second server only, the relay
published both (its positions; and the bots, who act only on what the relay
publishes, finished hands on tables of both), the books reconcile with no difference
as of a cut over both servers, taken once while the bots play and once after (every
chip bought in, R3, and raked, R27, accounted for), the history folds both, and a
hand of the second server replays consistent with its deck (R32).  A process told another server for a store than the one recorded refuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from studroom.domain.events import HandEnded
from studroom.domain.hands import spans
from studroom.projections.history.projector import Projector as HistoryProjector
from studroom.projections.ledger.cut import book_to_cut
from studroom.projections.ledger.reconcile import reconcile
from studroom.projections.ledger.sources import all_sources
from studroom.services.disputes.checks import check_hand
from studroom.services.disputes.stored_events import table_stream
from studroom.services.disputes.stored_verify import jobs, verify_stored
from studroom.services.disputes.verify import Period
from studroom.services.relay.position import PositionRecord
from studroom.services.room.bots import Room
from studroom.services.room.plans import TablePlan, table_config
from studroom.services.runtime.processes import process
from studroom.services.runtime.processes.supervisor import Services, child_env
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.store.inspect import load_tables, stores_found
from studroom.services.store.layout import LayoutMismatch, check_recorded_layout, store_of_table, store_schemas
from studroom.services.wire.subjects import RELAY_BUCKET

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

STORES = 2
TABLES_PER_STORE = 1
SEATS = 3
HANDS = 3


@contextlib.contextmanager
def _started(second: EmbeddedPostgres, nats: EmbeddedNats) -> Iterator[tuple[EmbeddedPostgres, EmbeddedNats]]:
    """Both servers, started side by side (the second PostgreSQL's initdb is most of the wait)."""
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(2) as pool:
        for server in pool.map(lambda s: s.start(), (second, nats)):
            stack.callback(server.stop)
        yield second, nats


def _tables(name: str) -> list[str]:
    """Table ids, ``TABLES_PER_STORE`` in each store."""
    found: dict[int, list[str]] = {j: [] for j in range(STORES)}
    n = 0
    while any(len(ids) < TABLES_PER_STORE for ids in found.values()):
        n += 1
        table = f"{name}t{n}"
        ids = found[store_of_table(table, STORES)]
        if len(ids) < TABLES_PER_STORE:
            ids.append(table)
    return [t for ids in found.values() for t in ids]


def test_a_room_plays_reconciles_and_replays_with_a_store_on_each_of_two_servers(database_url: str,
                                                                               private_dir: Path) -> None:
    name = f"two{uuid.uuid4().hex[:6]}"
    prefix = f"{name}_p"
    folder = Path(tempfile.mkdtemp(prefix="studroom-it-two-"))
    t0 = time.monotonic()
    try:
        with _started(EmbeddedPostgres(private_dir), EmbeddedNats(folder)) as (second, nats):
            phases = {"servers": time.monotonic() - t0}
            elsewhere = {1: second.url}
            where = check_recorded_layout(database_url, STORES, prefix, urls=elsewhere)
            assert (where.url(0), where.url(1)) == (database_url, second.url)
            with pytest.raises(LayoutMismatch):             # a process told another server for store 1
                check_recorded_layout(database_url, STORES, prefix, urls={1: database_url})
            services = Services(child_env(nats.url, database_url, folder, elsewhere), folder / "logs",
                                instances=1, stores=STORES, name=name, schema_prefix=prefix,
                                authority=nats.authority, lobby=False, history=False)
            services.start()
            try:
                tables = _tables(name)
                phases["services"] = time.monotonic() - t0
                asyncio.run(_play(nats, tables, lambda: _reconcile(database_url, prefix)))
                phases["played"] = time.monotonic() - t0
                assert not services.dead(), services.dead()
            finally:
                problems = services.stop()
            assert not problems, problems
            phases["stopped"] = time.monotonic() - t0
            relayed = asyncio.run(_relayed(nats, store_schemas(STORES, prefix)))
            assert all(relayed.values()), f"the relay published both stores: {relayed}"
            _check(database_url, second.url, prefix, tables)
            phases["checked"] = time.monotonic() - t0
            print("two servers, seconds since the start: " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def _play(nats: EmbeddedNats, tables: list[str], while_playing: Callable[[], None]) -> None:
    """The bots play ``HANDS`` hands a table; ``while_playing`` is called (in a thread)
    once they played half of them, the bots playing on meanwhile."""
    plans = [TablePlan(t, table_config(i), {s: f"{t}-p{s}" for s in range(SEATS)}) for i, t in enumerate(tables)]
    assert nats.authority is not None
    bots = Room(nats.url, plans, authority=nats.authority, seed=20)
    try:
        await bots.start()
        deadline = time.monotonic() + 60
        checked = False
        while bots.stats.hands < HANDS * len(tables) and time.monotonic() < deadline:
            if not checked and bots.stats.hands >= HANDS * len(tables) // 2:
                await asyncio.to_thread(while_playing)
                checked = True
            await asyncio.sleep(0.2)
    finally:
        await bots.stop()


def _reconcile(database_url: str, prefix: str) -> None:
    """The books as of a cut over both servers taken while the bots play: no difference."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        sources = all_sources(conn, cashier_schema=f"{prefix}cashier", schemas=store_schemas(STORES, prefix))
    cut, _ = book_to_cut(database_url, sources, ledger_schema=f"{prefix}ledger")
    books = reconcile(database_url, sources, ledger_schema=f"{prefix}ledger", cut=cut)
    assert books.clean, [f"{d.check}: {d.event or d.table}: {d.what}" for d in books.differences[:5]]


async def _relayed(nats: EmbeddedNats, schemas: list[str]) -> dict[str, int]:
    """How far the relay recorded it published each store (its positions in NATS KV)."""
    assert nats.authority is not None
    nc = await process.connect(nats.url, "test-two-servers", creds=nats.authority.ensure("service", "relay"))
    try:
        kv = await nc.jetstream().key_value(RELAY_BUCKET)
        return {schema: PositionRecord.decode((await kv.get(schema)).value).position for schema in schemas}
    finally:
        await nc.close()


def _check(database_url: str, second_url: str, prefix: str, tables: list[str]) -> None:
    schemas = store_schemas(STORES, prefix)
    with psycopg.connect(second_url, autocommit=True) as conn:
        on_second = conn.execute(f"SELECT count(*) FROM {schemas[1]}.events").fetchone()[0]  # type: ignore[index]
    with psycopg.connect(database_url, autocommit=True) as conn:
        at_home = conn.execute("SELECT to_regclass(%s)", (f"{schemas[1]}.events",)).fetchone()[0]  # type: ignore[index]
        sources = all_sources(conn, cashier_schema=f"{prefix}cashier", schemas=schemas)
    assert on_second > 0 and at_home is None, "store 1 lives on the second server only"
    assert stores_found(database_url, prefix) == [0, 1]

    streams = load_tables(database_url, schemas, only=tables)       # found on both servers
    ended = {t: sum(isinstance(e, HandEnded) for e in streams.get(t, [])) for t in tables}
    for j in range(STORES):
        assert all(ended[t] > 0 for t in tables if store_of_table(t, STORES) == j), \
            f"hands played on every table of store {j} (the relay published it): {ended}"

    cut, _ = book_to_cut(database_url, sources, ledger_schema=f"{prefix}ledger")
    assert cut[schemas[1]] == on_second
    books = reconcile(database_url, sources, ledger_schema=f"{prefix}ledger", cut=cut)
    assert books.clean, [f"{d.check}: {d.event or d.table}: {d.what}" for d in books.differences[:5]]
    assert books.hands > 0

    histories = HistoryProjector(database_url, store_prefix=prefix, history_schema=f"{prefix}history")
    try:
        assert histories.catch_up() > 0
    finally:
        histories.close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        work = jobs(conn, prefix=prefix)
        dealt = dict(conn.execute(f"SELECT table_id, count(DISTINCT hand_no) FROM {prefix}history.hands "
                                  "GROUP BY table_id").fetchall())
    assert {job.schema for job in work} == set(schemas)
    assert all(dealt.get(t) for t in tables), f"the histories hold hands of both servers' tables: {dealt}"
    verdicts = list(verify_stored(database_url, work, Period(None, None), {}))
    assert all(v.hands and not v.different for v in verdicts), verdicts

    remote = next(t for t in tables if store_of_table(t, STORES) == 1)
    stream = table_stream(database_url, remote, prefix)
    span = next(s for s in spans(stream) if s.end is not None and not s.cancelled)
    check = check_hand(stream, span)
    assert check.consistent, check.difference
    assert check.deck is not None and check.deck.fair
