"""The recovery reads the cashier's store when a commit is heard, not every second
(services/cashier/recovery.py, issue 20): on a real PostgreSQL store (a schema of the
test's own), the saga's fake table service of test_cashier_saga.py. Idle, it reads
nothing; another instance's reservation is heard, read, taken over after the take-over
time and settled; then it is idle again."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from studroom.services.cashier.recovery import Recovery
from studroom.services.store.commits import Commits
from studroom.services.store.postgres import PostgresEventStore
from test_cashier_saga import Crash, FakeTables, account_of, funded, saga_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def store(database_url: str) -> Iterator[PostgresEventStore]:
    schema = f"cashier_wakes_{uuid.uuid4().hex[:10]}"
    opened = PostgresEventStore(database_url, schema=schema)
    yield opened
    opened.close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


async def _until(condition: object) -> None:
    while not condition():  # type: ignore[operator]
        await asyncio.sleep(0.02)


async def _reads_while_idle(recovery: Recovery, commits: Commits, seconds: float) -> int:
    """The reads the recovery makes in ``seconds`` once it listens and has read."""
    await _until(lambda: commits.listening and not commits.wake.is_set())
    await asyncio.sleep(5 * recovery.every)           # the read after the wake-up finished
    before = recovery.reads
    await asyncio.sleep(seconds)
    return recovery.reads - before


def test_the_recovery_reads_its_store_only_when_a_commit_is_heard(
        store: PostgresEventStore, database_url: str) -> None:
    async def run() -> None:
        tables = FakeTables("t1")
        await funded(store)
        commits = Commits.of(store, database_url)
        assert commits is not None
        recovery = Recovery(store, saga_of(store, tables, "b", takeover_ms=300), every=0.05, commits=commits)
        stop = asyncio.Event()
        task = asyncio.create_task(recovery.run(stop))
        try:
            assert await _reads_while_idle(recovery, commits, 40 * recovery.every) == 0
            # Instance "a" reserves and stops before sending: "b" hears it, takes it over.
            with pytest.raises(Crash):
                await saga_of(store, tables, "a", crash_after="reserved").buy_in("alice", "t1", 0, 1000, "1")
            await _until(lambda: recovery.resumed == 1 and not recovery.open.in_flight)
            account = await account_of(store)       # type: ignore[arg-type]
            assert (account.balance, account.reserved) == (9000, 0)
            assert tables.bought("t1") == [1000]
            assert commits.heard >= 3               # reserved, claimed, confirmed
            assert await _reads_while_idle(recovery, commits, 40 * recovery.every) == 0
        finally:
            stop.set()
            await asyncio.wait_for(task, 10)
        assert not commits.listening

    asyncio.run(run())
