"""The table service: table commands from NATS, events into the event store(s).

    studroom serve table [--instance-id ID] [--stores N] [--pause-ms MS] ...
    python -m studroom.services.table.service ...          (the same)

Flow
    A client requests ``studroom.cmd.<table>``; the NATS server maps it to
    ``studroom.pcmd.<p>.<table>`` (``partitions.partition_of``); the one instance
    holding partition p's lease (``partitions.LeaseManager``) is subscribed to
    ``studroom.pcmd.<p>.*`` (in queue group ``studroom_table``, so that even two
    momentary owners never both run one request), decodes the command and hands it to
    the :class:`StoreWorker` of the table's store (``p % stores``).

Group commit (:class:`StoreWorker`)
    One loop and one worker thread per event store. While a batch is being executed
    and committed, new commands queue up; the next batch takes every table that has a
    command waiting (one command per table per batch: a table's commands run one at
    a time, in arrival order) and runs them through
    :meth:`CommandHandler.handle_batch`: one ``append``, one commit, for all of them.
    Replies go out only after the commit. Under load a batch holds as many tables
    as arrived during the previous commit, so commits/s stay roughly constant while
    events/s grow with the number of busy tables.

Hands one after another
    With ``pause_ms == 0`` (bots, benchmarks) the next hand starts in the same
    transaction as the command that ended the previous one. With ``pause_ms > 0``
    (a room for people: e.g. 500) the worker sends itself a ``StartHand`` (fresh seed)
    that long after the hand ended; it is refused harmlessly if something else
    started a hand meanwhile or the players left.

After each commit the worker publishes an empty core-NATS message on
``subjects.relay_nudge(<schema>)`` so the relay reads the store at once.

Ownership changes
    On winning a partition: its cached tables are dropped (someone else may have
    written), then the subscription starts. On giving one back (rebalancing, stop):
    drain the subscription, finish the queued commands, drop the cache, delete the
    lease. On losing one (lease taken after our heartbeats stalled): unsubscribe,
    answer queued commands ``unavailable`` (not executed; clients retry), drop the
    cache. Even with two writers the store's expected versions refuse the stale one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import msgspec

from studroom.domain.commands import Command, StartHand
from ..wire import subjects
from ..wire.protocol import BAD_REQUEST, INTERNAL, UNAVAILABLE
from .command_handling import (
    BadRequest,
    CommandHandler,
    Outcome,
    decode_request,
    error_reply,
)
from ..runtime.settings import Settings
from ..store.event_store import EventStore
from ..store.layout import STORE_SCHEMA_PREFIX, store_index, store_schema
from ..wire.partitioning import partition_of, partition_of_subject
from .partitions import DEFAULT_LEASE_TTL, LEASE_BUCKET, LeaseManager, spread
from ..wire.protocol import Reply

log = logging.getLogger("studroom.table_service")

QUEUE_GROUP = "studroom_table"
DEFAULT_MAX_BATCH = 512

_encode = msgspec.json.Encoder().encode

Publish = Callable[[str, bytes], Awaitable[None]]


@dataclass(slots=True)
class _Item:
    table_id: str
    partition: int
    command: Command
    reply_to: str | None = None
    future: asyncio.Future[Reply] | None = None
    internal: bool = False


@dataclass(slots=True)
class WorkerStats:
    batches: int = 0
    commands: int = 0
    largest_batch: int = 0
    unavailable: int = 0
    scheduled_starts: int = 0


class StoreWorker:
    """Group commit for one event store: see the module docstring.

    ``accepts(partition)`` (default: always) is asked when a batch is formed; a
    command of a partition no longer served is answered ``unavailable`` unexecuted.
    ``publish(subject, data)`` sends replies of NATS requests.
    """

    def __init__(
        self,
        handler: CommandHandler,
        *,
        name: str = "store",
        max_batch: int = DEFAULT_MAX_BATCH,
        publish: Publish | None = None,
        accepts: Callable[[int], bool] | None = None,
        partitions: int = subjects.PARTITIONS,
        nudge: str | None = None,
    ) -> None:
        self.handler = handler
        self.nudge = nudge
        self.name = name
        self.max_batch = max_batch
        self.publish = publish
        self.accepts = accepts or (lambda _p: True)
        self.partitions = partitions
        self.stats = WorkerStats()
        self._queues: dict[str, deque[_Item]] = {}
        self._ready: OrderedDict[str, None] = OrderedDict()   # tables with work, not busy
        self._busy: dict[str, _Item] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._wake = asyncio.Event()
        self._progress = asyncio.Condition()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"studroom-{name}")
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    # -- public

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"worker-{self.name}")

    def submit(
        self,
        table_id: str,
        partition: int,
        command: Command,
        *,
        reply_to: str | None = None,
        internal: bool = False,
    ) -> asyncio.Future[Reply] | None:
        """Queue a command. Without ``reply_to`` (and not internal) a Future of the
        Reply is returned."""
        future = None
        if reply_to is None and not internal:
            future = asyncio.get_running_loop().create_future()
        item = _Item(table_id, partition, command, reply_to, future, internal)
        if self._closing:
            self._finish_now(item, error_reply(UNAVAILABLE, "the table service is stopping"))
            return future
        queue = self._queues.get(table_id)
        if queue is None:
            queue = self._queues[table_id] = deque()
        queue.append(item)
        if table_id not in self._busy:
            self._ready[table_id] = None
        self._wake.set()
        return future

    def pending(self, partition: int | None = None) -> int:
        """Commands queued or being executed (of one partition)."""
        items = [i for q in self._queues.values() for i in q] + list(self._busy.values())
        return sum(1 for i in items if partition is None or i.partition == partition)

    async def flush(self, partition: int | None = None) -> None:
        """Wait until every queued command (of ``partition``) is answered."""
        while self.pending(partition):
            async with self._progress:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._progress.wait(), 0.05)

    def abort(self, partition: int) -> None:
        """Answer the queued (not yet running) commands of ``partition``
        ``unavailable``, and forget its pending hand starts."""
        for table_id in list(self._queues):
            queue = self._queues[table_id]
            keep = deque(i for i in queue if i.partition != partition)
            for item in queue:
                if item.partition == partition:
                    self._finish_now(item, error_reply(UNAVAILABLE, "the table changed owners; try again"))
            if keep:
                self._queues[table_id] = keep
            else:
                del self._queues[table_id]
                self._ready.pop(table_id, None)
        for table_id in [t for t in self._timers if partition_of(t, self.partitions) == partition]:
            self._timers.pop(table_id).cancel()

    async def drop_cache(self, partition: int) -> None:
        """Forget the cached tables of ``partition`` (after any running batch)."""
        loop = asyncio.get_running_loop()
        n = self.partitions
        await loop.run_in_executor(
            self._executor, self.handler.drop_where, lambda t: partition_of(t, n) == partition
        )

    async def close(self) -> None:
        """Finish the queued commands, then stop."""
        self._closing = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._task is not None:
            await self.flush()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._executor.shutdown(wait=True)

    # -- the loop

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._drain_ready()
            except Exception:   # noqa: BLE001 (a bug here must not stop the store's loop)
                log.exception("store worker %s: batch loop failed", self.name)
                self._wake.set()

    async def _drain_ready(self) -> None:
        loop = asyncio.get_running_loop()
        while self._ready:
            batch: list[_Item] = []
            while self._ready and len(batch) < self.max_batch:
                table_id, _ = self._ready.popitem(last=False)
                queue = self._queues[table_id]
                item = queue.popleft()
                if not queue:
                    del self._queues[table_id]
                if not self.accepts(item.partition):
                    self._finish_now(item, error_reply(UNAVAILABLE, "this instance no longer serves the table; try again"))
                    if table_id in self._queues:
                        self._ready[table_id] = None
                    continue
                self._busy[table_id] = item
                batch.append(item)
            if not batch:
                continue
            appends = self.handler.stats.appends
            try:
                outcomes = await loop.run_in_executor(
                    self._executor, self.handler.handle_batch, [(i.table_id, i.command) for i in batch]
                )
            except Exception:   # noqa: BLE001 (handle_batch catches; belt and braces)
                log.exception("batch of %d commands failed", len(batch))
                outcomes = [Outcome(error_reply(INTERNAL, "internal error"))] * len(batch)
            self.stats.batches += 1
            self.stats.commands += len(batch)
            self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
            if self.nudge and self.publish is not None and self.handler.stats.appends != appends:
                try:   # the relay reads the store at once
                    await self.publish(self.nudge, b"")
                except Exception:   # noqa: BLE001 (it polls anyway)
                    log.debug("relay nudge failed", exc_info=True)
            for item, outcome in zip(batch, outcomes):
                del self._busy[item.table_id]
                if item.table_id in self._queues:
                    self._ready[item.table_id] = None
                if outcome.start_due and not item.internal:
                    self._schedule_start(item.table_id, item.partition)
                await self._deliver(item, outcome.reply)
            async with self._progress:
                self._progress.notify_all()

    async def _deliver(self, item: _Item, reply: Reply) -> None:
        if item.future is not None:
            if not item.future.done():
                item.future.set_result(reply)
        elif item.reply_to and self.publish is not None:
            try:
                await self.publish(item.reply_to, _encode(reply))
            except Exception:   # noqa: BLE001 (connection gone: the client retries)
                log.warning("could not send a reply to %s", item.reply_to, exc_info=True)

    def _finish_now(self, item: _Item, reply: Reply) -> None:
        if reply.error is not None and reply.error.code == UNAVAILABLE:
            self.stats.unavailable += 1
        if item.future is not None:
            if not item.future.done():
                item.future.set_result(reply)
        elif item.reply_to and self.publish is not None:
            asyncio.get_running_loop().create_task(self._deliver(item, reply))

    def _schedule_start(self, table_id: str, partition: int) -> None:
        """Start the table's next hand after the pause (an internal command)."""
        if table_id in self._timers or self._closing:
            return
        self.stats.scheduled_starts += 1
        delay = max(self.handler.pause_ms, 0) / 1000

        def fire() -> None:
            self._timers.pop(table_id, None)
            if self._closing or not self.accepts(partition):
                return
            command = StartHand(seed=self.handler.new_seed())
            self.submit(table_id, partition, command, internal=True)

        self._timers[table_id] = asyncio.get_running_loop().call_later(delay, fire)


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
    ) -> None:
        if not stores:
            raise ValueError("the table service needs at least one event store")
        self.nc = nc
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
                nudge=_nudge_subject(store),
            )
            for j, store in enumerate(stores)
        ]
        self.leases: LeaseManager | None = None
        if self.static_partitions is None:
            self.leases = LeaseManager(
                nc.jetstream(),
                instance_id,
                partitions=partitions,
                bucket=lease_bucket,
                ttl=lease_ttl,
                on_acquire=self._acquire,
                on_release=self._release,
            )
        self._stop = asyncio.Event()
        self._lease_task: asyncio.Task[None] | None = None

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
        await self.nc.flush()
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
        log.info("table service %s stopped: %s", self.instance_id, self.stats()["stores"])

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instance": self.instance_id, "partitions": self.owned(), "stores": []}
        for w in self.workers:
            h = w.handler.stats
            out["stores"].append({
                "batches": w.stats.batches, "commands": w.stats.commands,
                "largest_batch": w.stats.largest_batch, "appends": h.appends, "events": h.events,
                "conflicts": h.conflicts, "hands_started": h.hands_started, "loads": h.loads,
                "internal_errors": h.internal_errors, "unavailable": w.stats.unavailable,
            })
        return out

    # -- partitions

    async def _acquire(self, partition: int) -> None:
        if partition in self.subscriptions:
            return
        await self.worker(partition).drop_cache(partition)   # someone else may have written
        subject = subjects.partition_commands(partition)
        self.subscriptions[partition] = await self.nc.subscribe(subject, queue=self.queue, cb=self._on_message)

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

    async def _publish(self, subject: str, data: bytes) -> None:
        await self.nc.publish(subject, data)

    async def _on_message(self, msg: Any) -> None:
        reply_to = msg.reply or None
        try:
            partition = partition_of_subject(msg.subject)
            table_id = subjects.table_of_partition_subject(msg.subject)
        except (ValueError, IndexError):
            await self._answer(reply_to, error_reply(BAD_REQUEST, f"bad subject {msg.subject!r}"))
            return
        if partition_of(table_id, self.partitions) != partition:
            # published to a partition subject directly, past the server's mapping
            await self._answer(reply_to, error_reply(
                BAD_REQUEST, f"table {table_id!r} is not in partition {partition}; send to {subjects.PREFIX}.cmd.<table>"))
            return
        if not self.serves(partition):
            await self._answer(reply_to, error_reply(UNAVAILABLE, "this instance no longer serves the table; try again"))
            return
        try:
            command = decode_request(table_id, msg.data)
        except BadRequest as e:
            await self._answer(reply_to, error_reply(BAD_REQUEST, e.message))
            return
        self.worker(partition).submit(table_id, partition, command, reply_to=reply_to)

    async def _answer(self, reply_to: str | None, reply: Reply) -> None:
        if reply_to:
            with contextlib.suppress(Exception):
                await self.nc.publish(reply_to, _encode(reply))


def _nudge_subject(store: EventStore) -> str | None:
    """Where to tell the relay that ``store`` has new events (its name is the
    store's schema, e.g. ``studroom_p3``)."""
    name = getattr(store, "schema", None) or getattr(store, "name", None)
    try:
        return subjects.relay_nudge(name) if isinstance(name, str) else None
    except subjects.BadName:
        return None


# --------------------------------------------------------------------- entry point


def default_instance_id() -> str:
    raw = f"{socket.gethostname()}-{os.getpid()}"
    return re.sub(r"[^A-Za-z0-9_-]", "-", raw)[-64:]


async def serve_table(
    settings: Settings,
    *,
    instance_id: str | None = None,
    stores: int = 1,
    partitions: int = subjects.PARTITIONS,
    stop: asyncio.Event | None = None,
    pause_ms: int = 0,
    lease_ttl: float = DEFAULT_LEASE_TTL,
    lease_bucket: str = LEASE_BUCKET,
    schema_prefix: str = STORE_SCHEMA_PREFIX,
    on_ready: Callable[[TableService], None] | None = None,
) -> None:
    """Run one table-service instance until ``stop`` is set.

    ``settings`` name the NATS and PostgreSQL servers (embedded ones are started in
    ``settings.data_dir`` when unset). ``partitions`` must match the server's subject
    mapping and ``stores`` must be the same for every instance of an installation:
    tables live in schema ``{schema_prefix}{partition % stores}``.
    """
    import nats

    from ..runtime.embedded import servers
    from ..store.event_store import PostgresEventStore

    stop = stop or asyncio.Event()
    instance_id = instance_id or default_instance_id()
    with ExitStack() as stack:
        nats_url, database_url = stack.enter_context(servers(settings))
        event_stores = []
        for j in range(stores):
            store = await asyncio.to_thread(
                PostgresEventStore, database_url, schema=store_schema(j, schema_prefix),
                pool_size=2, max_overflow=2,
            )
            stack.callback(store.close)
            event_stores.append(store)
        nc = await nats.connect(
            nats_url.split(","),
            name=f"studroom-table-{instance_id}",
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
        )
        service = TableService(
            nc, event_stores, instance_id=instance_id, partitions=partitions, pause_ms=pause_ms,
            lease_ttl=lease_ttl, lease_bucket=lease_bucket,
        )
        try:
            await service.start()
            if on_ready is not None:
                on_ready(service)
            await stop.wait()
        finally:
            try:
                await service.close()
            finally:
                with contextlib.suppress(Exception):
                    await nc.drain()
