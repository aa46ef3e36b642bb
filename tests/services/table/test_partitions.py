"""Partition leases (services/table/partitions.py) on a real JetStream, heartbeat by
heartbeat (``tick``, no clock): the keys a heartbeat reads in one direct get are those
present (given back ones left out), renewals keep every lease, a second instance gets
its share, the last one left takes everything; a bucket made before reads directly
once its service starts."""

from __future__ import annotations

import asyncio
import uuid

import nats
import pytest
from studroom.services.table.partitions import LeaseManager
from studroom.services.wire import subjects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ALL = list(range(subjects.PARTITIONS))


def test_heartbeats_read_the_keys_present_renew_and_share_the_partitions(nats_url: str) -> None:
    async def main() -> None:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        bucket = f"test_leases_{uuid.uuid4().hex[:8]}"
        served: dict[str, set[int]] = {"a": set(), "b": set()}

        def manager(name: str) -> LeaseManager:
            async def acquire(partition: int) -> None:
                served[name].add(partition)

            async def release(partition: int, lost: bool) -> None:
                assert not lost
                served[name].discard(partition)

            # A long TTL: nothing expires between two ticks of a slow machine.
            return LeaseManager(js, name, bucket=bucket, ttl=60.0, on_acquire=acquire, on_release=release)

        try:
            a, b = manager("a"), manager("b")
            await a.start()
            assert a.owned() == ALL and served["a"] == set(ALL)
            assert sorted(await a._keys()) == sorted(["i.a"] + [f"p.{p}" for p in ALL])

            # A bucket made before direct reads: the next start turns them on.
            stream = subjects.bucket_stream(bucket)
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
        finally:
            await js.delete_key_value(bucket)
            await nc.close()

    asyncio.run(main())
