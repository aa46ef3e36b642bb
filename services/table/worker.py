"""Group commit: one worker per event store runs the commands of many tables in one
append.

Commands queue per table; while a batch is executed and committed (in the event
loop, the append awaited on the store's own asyncio connection: no worker thread),
new ones queue up, and the next batch takes one command of every table that has one
waiting (a table's commands run one at a time, in arrival order), runs them through
:meth:`CommandHandler.handle_batch_async` (one append, one commit) and only then
replies.  After a commit it nudges the relay.  It keeps no timers: a pause
between hands is a stored turn the timer service ends (docs/design/timer.md).  See
docs/design/table-service.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec
from studroom.domain.authority import Sender

from ..wire import subjects
from ..wire.partitioning import partition_of
from ..wire.protocol import INTERNAL, UNAVAILABLE, Reply, refusal
from .command_handling import CommandHandler, Outcome
from .request_decoding import Request, Submission

log = logging.getLogger("studroom.table_service")

DEFAULT_MAX_BATCH = 512

_encode = msgspec.json.Encoder().encode

Publish = Callable[[str, bytes], Awaitable[None]]


@dataclass(slots=True)
class _Item:
    table_id: str
    partition: int
    request: Request
    sender: Sender | None = None
    reply_to: str | None = None
    future: asyncio.Future[Reply] | None = None


@dataclass(slots=True)
class WorkerStats:
    batches: int = 0
    commands: int = 0
    largest_batch: int = 0
    unavailable: int = 0


class StoreWorker:
    """Group commit for one event store: see the module docstring.

    ``accepts(partition)`` (default: always) is asked when a batch is formed; a
    command of a partition no longer served is answered ``unavailable`` unexecuted.
    ``publish(subject, data)`` sends replies of NATS requests; ``nudge()`` tells the
    relay after a commit that the store has new events.
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
        nudge: Callable[[], Awaitable[None]] | None = None,
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
        self._wake = asyncio.Event()
        self._progress = asyncio.Condition()
        self._running = asyncio.Lock()      # held by a batch, and by a cache drop between batches
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
        request: Request,
        *,
        sender: Sender | None = None,
        reply_to: str | None = None,
    ) -> asyncio.Future[Reply] | None:
        """Queue a request of ``sender`` (None: the room's own). Without ``reply_to``
        a Future of the Reply is returned."""
        future = None
        if reply_to is None:
            future = asyncio.get_running_loop().create_future()
        item = _Item(table_id, partition, request, sender, reply_to, future)
        if self._closing:
            self._finish_now(item, refusal(UNAVAILABLE, "the table service is stopping"))
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
        ``unavailable``."""
        for table_id in list(self._queues):
            queue = self._queues[table_id]
            keep = deque(i for i in queue if i.partition != partition)
            for item in queue:
                if item.partition == partition:
                    self._finish_now(item, refusal(UNAVAILABLE, "the table changed owners; try again"))
            if keep:
                self._queues[table_id] = keep
            else:
                del self._queues[table_id]
                self._ready.pop(table_id, None)

    async def drop_cache(self, partition: int) -> None:
        """Forget the cached tables of ``partition`` (after any running batch)."""
        n = self.partitions
        async with self._running:
            self.handler.drop_where(lambda t: partition_of(t, n) == partition)

    async def close(self) -> None:
        """Finish the queued commands, then stop."""
        self._closing = True
        if self._task is not None:
            await self.flush()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

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
        while self._ready:
            batch: list[_Item] = []
            while self._ready and len(batch) < self.max_batch:
                table_id, _ = self._ready.popitem(last=False)
                queue = self._queues[table_id]
                item = queue.popleft()
                if not queue:
                    del self._queues[table_id]
                if not self.accepts(item.partition):
                    self._finish_now(item, refusal(UNAVAILABLE, "this instance no longer serves the table; try again"))
                    if table_id in self._queues:
                        self._ready[table_id] = None
                    continue
                self._busy[table_id] = item
                batch.append(item)
            if not batch:
                continue
            appends = self.handler.stats.appends
            try:
                async with self._running:
                    outcomes = await self.handler.handle_batch_async(
                        [Submission(i.table_id, i.request, i.sender) for i in batch])
            except Exception:   # noqa: BLE001 (handle_batch catches; belt and braces)
                log.exception("batch of %d commands failed", len(batch))
                outcomes = [Outcome(refusal(INTERNAL, "internal error"))] * len(batch)
            self.stats.batches += 1
            self.stats.commands += len(batch)
            self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
            if self.nudge is not None and self.handler.stats.appends != appends:
                try:   # the relay reads the store at once
                    await self.nudge()
                except Exception:   # noqa: BLE001 (it polls anyway)
                    log.debug("relay nudge failed", exc_info=True)
            for item, outcome in zip(batch, outcomes):
                del self._busy[item.table_id]
                if item.table_id in self._queues:
                    self._ready[item.table_id] = None
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
