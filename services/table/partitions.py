"""Partition leases: which table-service instance serves which partitions.

A table's partition is :func:`..wire.partitioning.partition_of`; its store is
:func:`..store.layout.store_of_table`.  One owner per partition: a lease key per
partition in a JetStream KV bucket (TTL 3 s by default), claimed, renewed each TTL/3
and given back with revision checks; every live instance announces itself, and each
holds its fair share.  Keys, timings, the local guard and what a heartbeat costs:
docs/design/table-service.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable

from ..store.layout import store_index
from ..wire import subjects
from ..wire.partitioning import fnv1a_32

log = logging.getLogger(__name__)

from ..wire.subjects import LEASE_BUCKET

DEFAULT_LEASE_TTL = 3.0          # seconds
LEASE_MAX_VALUE = 1024           # bytes of a lease or an instance's announcement (under 100 in fact)
LEASE_MAX_BYTES = 1 << 20        # the bucket: the partitions' leases and every live instance's, many times over
KEYS_BATCH = 1024                # keys one heartbeat reads at most (partitions + live instances: far fewer)
KEYS_TIMEOUT = 5.0               # seconds the server may take to send them
FIRST_LOOK = 0.2                 # seconds from an instance's first announcement to its first claims
_DELETED = ("DEL", "PURGE")      # the KV-Operation of a key deleted (its marker is its last message)

# --------------------------------------------------------------------------- leases


class LeaseError(Exception):
    """The server refused to tell the bucket's keys (the heartbeat fails, and is tried again)."""


OnAcquire = Callable[[int], Awaitable[None]]
OnRelease = Callable[[int, bool], Awaitable[None]]   # (partition, lost)


def _lease_key(partition: int) -> str:
    return f"p.{partition}"


def _instance_key(instance_id: str) -> str:
    return f"i.{instance_id}"


class _Lease:
    __slots__ = ("revision", "renewed_at")

    def __init__(self, revision: int, renewed_at: float) -> None:
        self.revision = revision
        self.renewed_at = renewed_at   # monotonic time the last successful write was SENT


class LeaseManager:
    """Claims, renews and gives back partition leases for one instance.

    ``on_acquire(p)`` runs after a lease is won (subscribe then); ``on_release(p,
    lost)`` runs before a lease is given back (``lost=False``: stop taking commands,
    finish the queued ones) or after it was lost (``lost=True``: someone else may
    already serve it; drop everything). Call :meth:`start`, then :meth:`run` until
    stopped, then :meth:`close` (gives every lease back at once).
    """

    def __init__(
        self,
        js: object,
        instance_id: str,
        *,
        partitions: int = subjects.PARTITIONS,
        stores: int = 1,
        bucket: str = LEASE_BUCKET,
        ttl: float = DEFAULT_LEASE_TTL,
        on_acquire: OnAcquire,
        on_release: OnRelease,
        replicas: int = 1,
    ) -> None:
        subjects.check_name(instance_id)
        self.js = js
        self.instance_id = instance_id
        self.partitions = partitions
        self.bucket = bucket
        self.ttl = ttl
        self.replicas = replicas
        self.on_acquire = on_acquire
        self.on_release = on_release
        self.leases: dict[int, _Lease] = {}
        self.kv: object | None = None
        self.instances: int = 1
        self._lock = asyncio.Lock()
        self._bucket_ok = False
        self.stores = stores
        # Order in which this instance tries free partitions: differs per instance,
        # so that instances starting together rarely race for the same key.
        self._mixed = sorted(range(partitions), key=lambda p: fnv1a_32(f"{instance_id}:{p}".encode()))
        self._order = self._mixed

    @property
    def interval(self) -> float:
        return self.ttl / 3

    def owned(self) -> list[int]:
        return sorted(self.leases)

    def valid(self, partition: int) -> bool:
        """True while this instance may serve ``partition`` (lease held and renewed
        within 0.8 TTL)."""
        lease = self.leases.get(partition)
        return lease is not None and time.monotonic() - lease.renewed_at < 0.8 * self.ttl

    async def start(self) -> None:
        """The first heartbeat, a moment after this instance announced itself: instances
        started together each see the others before claiming, so their home stores
        (store affinity, :meth:`_preference`) differ from the first claim."""
        await self._ensure_bucket()
        try:
            await self._announce()
            await asyncio.sleep(FIRST_LOOK)
            await self.tick()
        except Exception as error:   # noqa: BLE001 (a replicated bucket just created has no leader yet)
            log.warning("first lease heartbeat failed: %r; the next ones try again", error)
            self._bucket_ok = False

    async def _ensure_bucket(self) -> None:
        """Open the lease bucket, creating it if missing (also after a NATS restart
        lost the memory-stored bucket)."""
        import nats.js.api as api
        import nats.js.errors as jserr

        from ..wire.declared import ensure_limits

        try:
            self.kv = await self.js.key_value(self.bucket)  # type: ignore[attr-defined]
        except jserr.BucketNotFoundError:
            try:
                self.kv = await self.js.create_key_value(  # type: ignore[attr-defined]
                    bucket=self.bucket,
                    history=1,
                    ttl=self.ttl,
                    storage=api.StorageType.MEMORY,
                    replicas=self.replicas,
                    description="studroom table-service partition leases",
                    max_value_size=LEASE_MAX_VALUE,
                    max_bytes=LEASE_MAX_BYTES,
                    direct=True,
                )
            except jserr.APIError:      # created meanwhile by another instance
                self.kv = await self.js.key_value(self.bucket)  # type: ignore[attr-defined]
        # Bounded and read directly (:meth:`_keys`), also a bucket made before (its TTL is kept: below).
        await ensure_limits(self.js, api.StreamConfig(name=subjects.bucket_stream(self.bucket),
                                                      max_bytes=LEASE_MAX_BYTES, max_msg_size=LEASE_MAX_VALUE,
                                                      discard=None, allow_direct=True))
        info = await self.js.stream_info(subjects.bucket_stream(self.bucket))  # type: ignore[attr-defined]
        if info.config.max_age:
            if abs(info.config.max_age - self.ttl) > 1e-3:
                log.warning("lease bucket %s has TTL %.3fs (asked for %.3fs): using it",
                            self.bucket, info.config.max_age, self.ttl)
            self.ttl = float(info.config.max_age)
        self._bucket_ok = True

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval)
            if stop.is_set():
                break
            try:
                await self.tick()
            except Exception as error:   # noqa: BLE001 (NATS down for a moment: try again)
                log.warning("lease heartbeat failed: %r", error)
                self._bucket_ok = False          # check the bucket is still there next time
                await self._drop_invalid()

    async def tick(self) -> None:
        """One heartbeat: announce, renew, rebalance."""
        async with self._lock:
            if not self._bucket_ok:
                await self._ensure_bucket()
            await self._announce()
            await self._renew()
            await self._rebalance()

    async def close(self) -> None:
        """Give every lease back (others take over at their next heartbeat)."""
        async with self._lock:
            for partition in sorted(self.leases):
                await self._give_back(partition)
            if self.kv is not None:
                with contextlib.suppress(Exception):
                    await self.kv.delete(_instance_key(self.instance_id))  # type: ignore[attr-defined]

    # -- internals

    async def _announce(self) -> None:
        value = json.dumps({"at": int(time.time() * 1000)}).encode()
        await self.kv.put(_instance_key(self.instance_id), value)  # type: ignore[attr-defined]

    async def _renew(self) -> None:
        """Every lease at once: the updates go out in one flush and their replies come
        back together (one after the other cost about three times the CPU: table-service.md)."""
        import nats.js.errors as jserr

        me = self.instance_id.encode()
        leases = [(partition, self.leases[partition]) for partition in sorted(self.leases)]
        sent = time.monotonic()             # before every update: the guard counts from here
        results = await asyncio.gather(
            *(self.kv.update(_lease_key(partition), me, last=lease.revision)  # type: ignore[attr-defined]
              for partition, lease in leases),
            return_exceptions=True)
        for (partition, lease), result in zip(leases, results, strict=True):
            if isinstance(result, jserr.KeyWrongLastSequenceError):
                log.warning("%s lost the lease of partition %d", self.instance_id, partition)
                await self._lose(partition)
            elif isinstance(result, Exception):     # timeout: keep it while still valid
                log.warning("renewing partition %d failed: %r", partition, result)
                if not self.valid(partition):
                    await self._lose(partition)
            elif isinstance(result, BaseException):
                raise result
            else:
                lease.revision, lease.renewed_at = result, sent

    async def _drop_invalid(self) -> None:
        async with self._lock:
            for partition in sorted(self.leases):
                if not self.valid(partition):
                    await self._lose(partition)

    async def _lose(self, partition: int) -> None:
        self.leases.pop(partition, None)
        try:
            await self.on_release(partition, True)
        except Exception:   # noqa: BLE001
            log.exception("releasing lost partition %d failed", partition)

    async def _give_back(self, partition: int) -> None:
        lease = self.leases.get(partition)
        if lease is None:
            return
        try:
            await self.on_release(partition, False)
        except Exception:   # noqa: BLE001
            log.exception("releasing partition %d failed", partition)
        self.leases.pop(partition, None)
        with contextlib.suppress(Exception):   # gone or taken already: fine
            await self.kv.delete(_lease_key(partition), last=lease.revision)  # type: ignore[attr-defined]

    async def _keys(self) -> list[str]:
        """The keys present (deleted ones left out), in one request: the last message
        of every key by a batched direct get (NATS 2.11). ``kv.keys()`` made, asked and
        deleted a consumer at every heartbeat, five times the CPU (issue 20, table-service.md)."""
        nc = self.js._nc  # type: ignore[attr-defined]  # the connection under nats-py's JetStream context
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        try:
            prefix = f"$KV.{self.bucket}."
            ask = json.dumps({"multi_last": [prefix + ">"], "batch": KEYS_BATCH}).encode()
            await nc.publish(f"$JS.API.DIRECT.GET.{subjects.bucket_stream(self.bucket)}", ask, reply=inbox)
            keys: list[str] = []
            while True:
                headers = (await sub.next_msg(KEYS_TIMEOUT)).headers or {}
                status = headers.get("Status")
                if status in ("204", "404"):        # the end of the batch; no key at all
                    return keys
                if status is not None:
                    raise LeaseError(f"reading the keys of {self.bucket}: {status} {headers.get('Description', '')}")
                if headers.get("KV-Operation") not in _DELETED:
                    keys.append(headers["Nats-Subject"][len(prefix):])
        finally:
            await sub.unsubscribe()

    def _preference(self, rank: int) -> list[int]:
        """The partitions in the order this instance, ``rank``-th of the live ones by
        id, claims them (and gives them back, the last first): those of its home store
        (``rank % stores``) first.  Where there are as many instances as stores each
        serves one store's partitions, so each commits to one store only: fewer and
        fuller group commits than every instance writing to every store
        (table-service.md, "Store affinity").  Only a preference: who may serve a
        partition is still its lease alone."""
        home = rank % self.stores
        return sorted(self._mixed, key=lambda p: store_index(p, self.stores) != home)

    async def _rebalance(self) -> None:
        import nats.js.errors as jserr

        keys = await self._keys()
        instances = {k[2:] for k in keys if k.startswith("i.")} | {self.instance_id}
        taken = {int(k[2:]) for k in keys if k.startswith("p.") and k[2:].isdecimal()}
        self.instances = len(instances)
        self._order = self._preference(sorted(instances).index(self.instance_id))
        share = math.ceil(self.partitions / self.instances)
        if len(self.leases) > share:
            # Give back the extra ones (the last in our preference order first).
            extra = [p for p in reversed(self._order) if p in self.leases][: len(self.leases) - share]
            for partition in extra:
                log.info("%s gives partition %d back (share %d)", self.instance_id, partition, share)
                await self._give_back(partition)
            return
        me = self.instance_id.encode()
        for partition in self._order:
            if len(self.leases) >= share:
                break
            if partition in self.leases or partition in taken:
                continue
            sent = time.monotonic()
            try:
                revision = await self.kv.create(_lease_key(partition), me)  # type: ignore[attr-defined]
            except jserr.KeyWrongLastSequenceError:
                continue                    # someone else was quicker
            self.leases[partition] = _Lease(revision, sent)
            log.info("%s serves partition %d", self.instance_id, partition)
            try:
                await self.on_acquire(partition)
            except Exception:   # noqa: BLE001
                log.exception("serving partition %d failed: giving it back", partition)
                await self._give_back(partition)


async def lease_owners(js: object, bucket: str = LEASE_BUCKET) -> dict[int, str]:
    """Who holds which partition now (for tests and operators)."""
    import nats.js.errors as jserr

    kv = await js.key_value(bucket)  # type: ignore[attr-defined]
    try:
        keys = await kv.keys()
    except jserr.NoKeysError:
        return {}
    owners: dict[int, str] = {}
    for key in keys:
        if key.startswith("p.") and key[2:].isdecimal():
            with contextlib.suppress(jserr.KeyNotFoundError):
                owners[int(key[2:])] = (await kv.get(key)).value.decode()
    return owners


def spread(partitions: Iterable[int]) -> str:
    """``0-3,7``: a short text of a set of partitions (logs)."""
    ps = sorted(partitions)
    out: list[str] = []
    i = 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        out.append(str(ps[i]) if i == j else f"{ps[i]}-{ps[j]}")
        i = j + 1
    return ",".join(out)
