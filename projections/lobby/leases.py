"""Which tables a table service holds now: the lobby reads the table services' partition
leases (bucket ``studroom_leases``, docs/design/table-service.md), never writes them.

A table is served while its partition's lease key was written within the bucket's TTL
(the holder renews it every third of it).  The bucket keeps its keys for a TTL
(``max_age``) and says nothing when one ages out, so the age is counted here, from when
the lobby saw the write.  No bucket (no table service ran since NATS started: the lease
bucket lives in memory) means no table is served.  Until the first look, every table
counts as served: the lobby does not call a table stopped before it knows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from studroom.services.wire.partitioning import partition_of
from studroom.services.wire.subjects import LEASE_BUCKET, bucket_stream

from .mirror import stop_when

log = logging.getLogger("studroom.lobby")

PREFIX = "p."                   # a partition's lease key: p.<partition>


class Leases:
    def __init__(self, bucket: str = LEASE_BUCKET) -> None:
        self.bucket = bucket
        self.ttl: float | None = None              # None: not looked yet
        self._written: dict[int, float] = {}        # partition -> monotonic time its lease was seen written

    def served(self, table_id: str) -> bool:
        if self.ttl is None:
            return True
        seen = self._written.get(partition_of(table_id))
        return seen is not None and time.monotonic() - seen < self.ttl

    def seen(self, key: str, deleted: bool) -> None:
        """A write of the lease bucket (``deleted``: a lease given back)."""
        if not key.startswith(PREFIX) or not key[len(PREFIX):].isdecimal():
            return
        partition = int(key[len(PREFIX):])
        if deleted:
            self._written.pop(partition, None)
        else:
            self._written[partition] = time.monotonic()

    async def follow(self, js: Any, stop: asyncio.Event, retry: float = 1.0) -> None:
        """Watch the leases until ``stop`` (again after an error, or while no bucket)."""
        import nats.js.errors

        while not stop.is_set():
            try:
                kv = await js.key_value(self.bucket)
                info = await js.stream_info(bucket_stream(self.bucket))
                watcher = await kv.watch(PREFIX + "*")
            except nats.js.errors.BucketNotFoundError:
                self.ttl, watcher = 0.0, None        # no table service: none served
            except Exception as e:  # noqa: BLE001 (NATS away: look again soon)
                log.info("cannot watch the table services' leases (%r): again", e)
                watcher = None
            if watcher is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), retry)
                continue
            self.ttl = float(info.config.max_age or 0) or None
            await self._read(watcher, stop)

    async def _read(self, watcher: Any, stop: asyncio.Event) -> None:
        stopper = asyncio.create_task(stop_when(stop, watcher))
        try:
            async for update in watcher:
                if update is not None:
                    self.seen(update.key, bool(update.operation))
        finally:
            stopper.cancel()
