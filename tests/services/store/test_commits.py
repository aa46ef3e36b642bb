"""A store's commits are heard by its own listener only (services/store/commits.py,
issue 20): every append NOTIFYs its store's own channel, so the relay and the cashier
read when their own store moved, and nobody is signalled for another store's commits;
a channel name too long for PostgreSQL is shortened, still its store's own."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
from psycopg import sql
from studroom.domain.events import ChipsBought
from studroom.services.store.commits import Commits
from studroom.services.store.postgres import PostgresEventStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
def two_stores(database_url: str) -> Iterator[tuple[PostgresEventStore, PostgresEventStore]]:
    schemas = [f"commits_{uuid.uuid4().hex[:10]}" for _ in range(2)]
    stores = [PostgresEventStore(database_url, schema=schema) for schema in schemas]
    yield stores[0], stores[1]
    for store in stores:
        store.close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _bought(version: int) -> list[tuple[str, int, list[ChipsBought]]]:
    return [("t1", version, [ChipsBought(seat=0, amount=100)])]


@contextlib.asynccontextmanager
async def _listening(store: PostgresEventStore, database_url: str) -> AsyncIterator[Commits]:
    """The store's commits, listened to (and what was heard before taken) until the end."""
    commits = Commits.of(store, database_url)
    assert commits is not None
    listening = asyncio.create_task(commits.run())
    try:
        await _settled(commits)
        yield commits
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


async def _settled(commits: Commits) -> None:
    """Listening, and what it heard until now taken."""
    while not commits.listening:
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    commits.take()


def test_a_listener_hears_its_own_stores_commits_and_not_anothers(
        two_stores: tuple[PostgresEventStore, PostgresEventStore], database_url: str) -> None:
    ours, other = two_stores

    async def run() -> None:
        async with _listening(ours, database_url) as commits:
            for version in range(3):                       # another store of the database commits
                await other.append_async(_bought(version))
            await asyncio.sleep(0.5)
            assert not commits.wake.is_set() and commits.heard == 0
            await ours.append_async(_bought(0))            # ours does
            await asyncio.wait_for(commits.wake.wait(), 5)
            assert commits.heard == 1

    asyncio.run(run())


def test_a_store_with_a_long_name_notifies_a_channel_of_its_own_postgresql_accepts(
        database_url: str) -> None:
    """PostgreSQL refuses channel names over 63 bytes: two stores whose names differ
    only past that get two channels, each heard by its own listener."""
    schemas = [f"commits_{'x' * 50}_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    stores = [PostgresEventStore(database_url, schema=schema) for schema in schemas]
    try:
        assert len({store.channel for store in stores}) == 2
        assert all(len(store.channel.encode()) <= 63 for store in stores)

        async def run() -> None:
            async with _listening(stores[0], database_url) as commits:
                await stores[1].append_async(_bought(0))
                await asyncio.sleep(0.5)
                assert commits.heard == 0
                await stores[0].append_async(_bought(0))
                await asyncio.wait_for(commits.wake.wait(), 5)
                assert commits.heard == 1

        asyncio.run(run())
    finally:
        for store in stores:
            store.close()
        with psycopg.connect(database_url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def test_a_busy_reader_stops_listening_at_the_next_commit_and_an_idle_one_listens_again(
        two_stores: tuple[PostgresEventStore, PostgresEventStore], database_url: str) -> None:
    """Listening only while idle: after ``busy()`` the next commit heard is the last until
    ``idle()`` (the reader polls meanwhile: ``listening`` false); listening again wakes
    the reader, which reads what came while nobody listened."""
    ours, _ = two_stores

    async def run() -> None:
        async with _listening(ours, database_url) as commits:
            commits.busy()
            await ours.append_async(_bought(0))            # heard: the last one
            await asyncio.wait_for(commits.wake.wait(), 5)
            commits.take()
            while commits.listening:
                await asyncio.sleep(0.02)
            assert commits.heard == 1 and commits.wake.is_set()    # "poll now": it stopped
            commits.take()
            for version in range(1, 4):
                await ours.append_async(_bought(version))
            await asyncio.sleep(0.5)
            assert commits.heard == 1 and not commits.wake.is_set()
            commits.idle()
            await _settled(commits)
            await ours.append_async(_bought(4))
            await asyncio.wait_for(commits.wake.wait(), 5)
            assert commits.heard == 2

    asyncio.run(run())
