"""The table service: table commands from NATS, replies back, events into the stores.

A sender requests his own command subject (``studroom.cmd.<table>.<player>``, or an
operator's or a service's); the NATS server maps it to
``studroom.pcmd.<p>.<table>.<role>.<name>``; the one instance holding partition p's
lease (:class:`.partitions.LeaseManager`) is subscribed to ``studroom.pcmd.<p>.>`` (in
a queue group), reads the sender from the subject (his permissions let him publish
only there: docs/design/trust.md), decodes the request and hands both to the
:class:`.worker.StoreWorker` of the table's store.  Winning, giving back and losing a
partition: see docs/design/table-service.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec
from studroom.domain.authority import Sender

from ..runtime.observability.logs import fields
from ..store.layout import store_index
from ..store.port import EventStore
from ..wire import subjects
from ..wire.door import QUOTAS, Door, Quota, identified
from ..wire.partitioning import partition_of, partition_of_subject
from ..wire.protocol import BAD_REQUEST, UNAVAILABLE, Reply, refusal
from .command_handling import CommandHandler
from .metrics import CommandMeter
from .partitions import DEFAULT_LEASE_TTL, LEASE_BUCKET, LeaseManager, spread
from .request_decoding import BadRequest, decode_request
from .worker import DEFAULT_MAX_BATCH, StoreWorker

log = logging.getLogger("studroom.table_service")

QUEUE_GROUP = "studroom_table"

_encode = msgspec.json.Encoder().encode


class TableService:
    """One instance of the table service on a NATS connection.

    ``stores`` are the event stores (partition p -> ``stores[p % len(stores)]``).
    Partitions are served by lease (:class:`LeaseManager`), or, for tests only, the
    fixed ``static_partitions`` (no leases at all: two services given the same
    partition are two writers on the same tables).
    """

    def __init__(
        self,
        nc: Any,
        stores: Sequence[EventStore],
        *,
        instance_id: str,
        partitions: int = subjects.PARTITIONS,
        pause_ms: int = 0,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        lease_bucket: str = LEASE_BUCKET,
        static_partitions: Iterable[int] | None = None,
        queue: str = QUEUE_GROUP,
        max_batch: int = DEFAULT_MAX_BATCH,
        replicas: int = 1,
        quotas: Mapping[str, Quota] = QUOTAS,
        door_nc: Any = None,
    ) -> None:
        if not stores:
            raise ValueError("the table service needs at least one event store")
        self.nc = nc
        self.door_nc = door_nc if door_nc is not None else nc     # requests in, replies out
        self.instance_id = subjects.check_name(instance_id)
        self.partitions = partitions
        self.queue = queue
        self.static_partitions = None if static_partitions is None else sorted(set(static_partitions))
        self.subscriptions: dict[int, Any] = {}
        self.workers = [
            StoreWorker(
                CommandHandler(store, pause_ms=pause_ms),
                name=f"{instance_id}-s{j}",
                max_batch=max_batch,
                publish=self._publish,
                accepts=self.serves,
                partitions=partitions,
                nudge=self._nudger(_nudge_subject(store)),
            )
            for j, store in enumerate(stores)
        ]
        self.leases: LeaseManager | None = None
        if self.static_partitions is None:
            self.leases = LeaseManager(
                nc.jetstream(),
                instance_id,
                partitions=partitions,
                stores=len(stores),
                bucket=lease_bucket,
                ttl=lease_ttl,
                on_acquire=self._acquire,
                on_release=self._release,
                replicas=replicas,
            )
        self._stop = asyncio.Event()
        self._lease_task: asyncio.Task[None] | None = None
        self.meter = CommandMeter()             # latency and error codes (metrics.py)
        self.door = Door("table", _command_sender, identities=identified(self.door_nc), quotas=quotas)

    def worker(self, partition: int) -> StoreWorker:
        return self.workers[store_index(partition, len(self.workers))]

    def serves(self, partition: int) -> bool:
        if partition not in self.subscriptions:
            return False
        return self.leases is None or self.leases.valid(partition)

    def owned(self) -> list[int]:
        return sorted(self.subscriptions)

    async def start(self) -> None:
        for worker in self.workers:
            worker.start()
        if self.leases is None:
            for partition in self.static_partitions or ():
                await self._acquire(partition)
        else:
            await self.leases.start()
            self._lease_task = asyncio.get_running_loop().create_task(
                self.leases.run(self._stop), name=f"leases-{self.instance_id}"
            )
        await self.door_nc.flush()
        log.info("table service %s up: partitions %s", self.instance_id, spread(self.owned()))

    async def close(self) -> None:
        """Give the partitions back (finishing their queued commands) and stop."""
        self._stop.set()
        if self._lease_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._lease_task
            self._lease_task = None
        if self.leases is not None:
            await self.leases.close()
        for partition in list(self.subscriptions):
            await self._release(partition, False)
        for worker in self.workers:
            await worker.close()
        for j, store in enumerate(self.stats()["stores"]):
            log.info("table service stopped", extra=fields(instance=self.instance_id, store=j, **store))

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instance": self.instance_id, "partitions": self.owned(), "stores": []}
        for w in self.workers:
            h = w.handler.stats
            out["stores"].append({
                "batches": w.stats.batches, "commands": w.stats.commands,
                "largest_batch": w.stats.largest_batch, "appends": h.appends, "events": h.events,
                "conflicts": h.conflicts, "hands_started": h.hands_started, "loads": h.loads,
                "replayed": h.replayed, "snapshots": h.snapshots,
                "internal_errors": h.internal_errors, "unavailable": w.stats.unavailable,
            })
        return out

    # -- partitions

    async def _acquire(self, partition: int) -> None:
        if partition in self.subscriptions:
            return
        await self.worker(partition).drop_cache(partition)   # someone else may have written
        subject = subjects.commands_in_partition(partition)
        self.subscriptions[partition] = await self.door_nc.subscribe(subject, queue=self.queue, cb=self._on_message)

    async def _release(self, partition: int, lost: bool) -> None:
        sub = self.subscriptions.get(partition)
        worker = self.worker(partition)
        if sub is not None:
            try:
                if lost:
                    await sub.unsubscribe()
                else:
                    await sub.drain()
            except Exception:   # noqa: BLE001 (connection closed or reconnecting)
                log.debug("unsubscribing partition %d failed", partition, exc_info=True)
        if lost:
            self.subscriptions.pop(partition, None)
            worker.abort(partition)
        else:
            await worker.flush(partition)     # still ours: finish what was asked
            self.subscriptions.pop(partition, None)
            worker.abort(partition)           # (pending hand starts)
        await worker.drop_cache(partition)

    # -- messages

    def _nudger(self, subject: str | None) -> Callable[[], Awaitable[None]] | None:
        """A store's nudge to the relay, on the service's own connection (its door
        publishes replies only)."""
        if subject is None:
            return None
        return lambda: self.nc.publish(subject, b"")

    async def _publish(self, subject: str, data: bytes) -> None:
        """A reply, on the door's connection."""
        self.meter.replied(subject, data)
        await self.door_nc.publish(subject, data)

    async def _on_message(self, msg: Any) -> None:
        visitor = await self.door.enter(msg)        # the sender's own inbox, within his quota
        if visitor is None:
            return
        reply_to = visitor.reply
        self.meter.received(reply_to)
        try:
            partition = partition_of_subject(msg.subject)
            table_id, role, name = subjects.sender_of(msg.subject)
        except ValueError:       # subjects.BadName too
            await self._answer(reply_to, refusal(BAD_REQUEST, f"bad subject {msg.subject!r}"))
            return
        if partition_of(table_id, self.partitions) != partition:
            # published to a partition subject directly, past the server's mapping
            await self._answer(reply_to, refusal(
                BAD_REQUEST, f"table {table_id!r} is not in partition {partition}; "
                             f"send to {subjects.command_from(role, name, table_id)}"))
            return
        if not self.serves(partition):
            await self._answer(reply_to, refusal(UNAVAILABLE, "this instance no longer serves the table; try again"))
            return
        try:
            request = decode_request(table_id, msg.data)
        except BadRequest as e:
            await self._answer(reply_to, refusal(BAD_REQUEST, e.message))
            return
        sender = Sender(role, name)    # type: ignore[arg-type] (sender_of checked the role)
        self.worker(partition).submit(table_id, partition, request, sender=sender, reply_to=reply_to)

    async def _answer(self, reply_to: str | None, reply: Reply) -> None:
        if reply_to:
            with contextlib.suppress(Exception):
                await self._publish(reply_to, _encode(reply))


def _command_sender(subject: str) -> tuple[str, str]:
    """The (role, name) of a command subject (the door's question)."""
    _table, role, name = subjects.sender_of(subject)
    return role, name


def _nudge_subject(store: EventStore) -> str | None:
    """Where to tell the relay that ``store`` has new events (its name is the
    store's schema, e.g. ``studroom_p3``)."""
    name = getattr(store, "schema", None) or getattr(store, "name", None)
    try:
        return subjects.relay_nudge(name) if isinstance(name, str) else None
    except subjects.BadName:
        return None
