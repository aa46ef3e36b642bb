"""Partition leases (services/table/partitions.py) on a real JetStream, heartbeat by
heartbeat (``tick``, no clock): the keys a heartbeat reads in one direct get are those
present (given back ones left out), renewals keep every lease, a second instance gets
its share, the last one left takes everything; a bucket made before reads directly
once its service starts; with as many instances as stores, each serves one store's
partitions."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from studroom.services.table.partitions import LeaseManager
from studroom.services.wire import subjects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ALL = list(range(subjects.PARTITIONS))


@contextlib.asynccontextmanager
async def _two_instances(nats_url: str, stores: int = 1) -> AsyncIterator[tuple[LeaseManager, LeaseManager, dict[str, set[int]]]]:
    """Instances "a" and "b" on a bucket of their own (deleted after), and the
    partitions each serves."""
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    bucket = f"test_leases_{uuid.uuid4().hex[:8]}"
    served: dict[str, set[int]] = {"a": set(), "b": set()}
    try:
        yield _manager(js, bucket, "a", served, stores), _manager(js, bucket, "b", served, stores), served
    finally:
        await js.delete_key_value(bucket)
        await nc.close()


def _manager(js: object, bucket: str, name: str, served: dict[str, set[int]], stores: int = 1) -> LeaseManager:
    """An instance whose partitions served are kept in ``served[name]``."""
    async def acquire(partition: int) -> None:
        served[name].add(partition)

    async def release(partition: int, lost: bool) -> None:
        assert not lost
        served[name].discard(partition)

    # A long TTL: nothing expires between two ticks of a slow machine.
    return LeaseManager(js, name, bucket=bucket, stores=stores, ttl=60.0, on_acquire=acquire, on_release=release)


def test_heartbeats_read_the_keys_present_renew_and_share_the_partitions(nats_url: str) -> None:
    async def main() -> None:
        async with _two_instances(nats_url) as (a, b, served):
            js: Any = a.js
            await a.start()
            assert a.owned() == ALL and served["a"] == set(ALL)
            assert sorted(await a._keys()) == sorted(["i.a"] + [f"p.{p}" for p in ALL])

            # A bucket made before direct reads: the next start turns them on.
            stream = subjects.bucket_stream(a.bucket)
            await js.update_stream((await js.stream_info(stream)).config.evolve(allow_direct=False))
            await a._ensure_bucket()
            assert (await js.stream_info(stream)).config.allow_direct

            revisions = {p: lease.revision for p, lease in a.leases.items()}
            await a.tick()
            assert a.owned() == ALL and all(a.leases[p].revision > revisions[p] for p in ALL)

            await b.start()                           # everything taken: b announces itself only
            assert b.owned() == []
            await a.tick()                            # two instances: a gives half back (deleted keys)
            assert len(a.owned()) == len(ALL) // 2
            assert set(await b._keys()) == {"i.a", "i.b"} | {f"p.{p}" for p in a.owned()}
            await b.tick()
            assert sorted(a.owned() + b.owned()) == ALL and served["b"] == set(b.owned())

            await a.close()                           # gives everything back, says it is gone
            await b.tick()
            assert b.owned() == ALL and served["a"] == set()
            await b.close()
            assert await b._keys() == []

    asyncio.run(main())


def test_two_instances_on_two_stores_each_serve_the_partitions_of_one_store(nats_url: str) -> None:
    """Store affinity: the instance that took everything alone gives back the partitions
    of the other store first, so each instance commits to one store only."""
    async def main() -> None:
        async with _two_instances(nats_url, stores=2) as (a, b, served):
            await a.start()
            assert a.owned() == ALL
            await b.start()
            await a.tick()
            await b.tick()
            assert a.owned() == [p for p in ALL if p % 2 == 0]      # "a", first by id: store 0
            assert b.owned() == [p for p in ALL if p % 2 == 1] and served["b"] == set(b.owned())
            await a.close()
            await b.tick()
            assert b.owned() == ALL
            await b.close()

    asyncio.run(main())


def test_two_instances_started_together_on_two_stores_each_serve_one_store(nats_url: str) -> None:
    """Started at the same moment, each sees the other before it claims (an instance
    announces itself and looks a moment later), so neither claims the other's store:
    their first claims are disjoint."""
    async def main() -> None:
        async with _two_instances(nats_url, stores=2) as (a, b, _):
            await a._ensure_bucket()
            await asyncio.gather(a.start(), b.start())
            assert a.owned() == [p for p in ALL if p % 2 == 0]
            assert b.owned() == [p for p in ALL if p % 2 == 1]
            await asyncio.gather(a.close(), b.close())

    asyncio.run(main())
