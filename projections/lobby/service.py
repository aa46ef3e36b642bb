"""The lobby service: the public stream into KV bucket ``studroom_lobby``, and the
answers on ``studroom.lobby.query.<role>.<name>``.

    studroom serve lobby [--instance-id ID]

A NATS client with the credentials of the service "lobby".  It pulls every public
event from its own durable consumer (named after its instance id) and hands it to its
table's lane (:mod:`.lanes`: in order, exactly once, compare-and-set); it watches the
bucket (:mod:`.mirror`) and answers queries from it (:mod:`.queries`), each table
marked served or not from the table services' leases (:mod:`.leases`).  Several
instances may run, each with its own instance id: each event counts once, whichever
writes it first, and each query is answered by one of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Final

from studroom.domain.views import TableView
from studroom.services.client.table import TableClient
from studroom.services.wire import subjects
from studroom.services.wire.declared import ensure_consumer, wait_for_stream
from studroom.services.wire.door import QUERY_QUOTAS, Door, identified
from studroom.services.wire.pull import PullLoop

from .jetstream import consumer_config, consumer_name, ensure_bucket
from .lanes import EVERY, Lanes, LaneStats
from .leases import Leases
from .messages import item_of
from .mirror import Mirror
from .queries import answer

log = logging.getLogger("studroom.lobby")

SENDER: Final = "lobby"                 # the service identity (it asks tables for their view)
QUEUE: Final = "studroom_lobby"         # the query subscribers' queue group
IDLE_PULL: Final = (30.0, 5.0)          # seconds: a pull request's life and its idle heartbeat (the
                                        # pull loop's are 5 and 1): idle, one wake-up in 5 s, not each
                                        # second; a reconnect asks again at once (reconnected)


@dataclass
class LobbyStats:
    lanes: LaneStats = field(default_factory=LaneStats)
    bad: int = 0                 # public messages without a version: acknowledged, skipped
    queries: int = 0

    def line(self) -> str:
        s = self.lanes
        return (f"applied={s.applied} seen={s.seen} waited={s.waited} writes={s.writes} "
                f"conflicts={s.conflicts} resyncs={s.resyncs} failed={s.failed} bad={self.bad} "
                f"queries={self.queries}")


def default_instance_id() -> str:
    """The host's name as a name (an instance keeps its consumer across restarts; a
    second instance on the same host needs an ``--instance-id`` of its own)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:48] or "lobby"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class LobbyService:
    """One instance: the pull loop, the lanes, the bucket's mirror, the query answers."""

    def __init__(self, nc: Any, *, instance_id: str | None = None, replicas: int = 1,
                 max_inflight: int = 4096, stats: LobbyStats | None = None, door_nc: Any = None,
                 leases: Leases | None = None, every: float = EVERY) -> None:
        self.nc = nc
        self.every = every                     # seconds: a table's entry written at most once in this
        self.door_nc = door_nc if door_nc is not None else nc     # queries in, answers out
        self.js = nc.jetstream()
        self.instance_id = instance_id or default_instance_id()
        self.replicas = replicas
        self.max_inflight = max_inflight
        self.stats = stats if stats is not None else LobbyStats()
        self.client = TableClient(nc, "service", SENDER, retry_for=2.0)
        self.mirror = Mirror()
        self.leases = leases if leases is not None else Leases()
        self.kv: Any = None
        self.lanes: Lanes | None = None
        self.loop: PullLoop | None = None
        self.door = Door("lobby", subjects.lobby_asker, identities=identified(self.door_nc), quotas=QUERY_QUOTAS)

    async def setup(self, stop: asyncio.Event | None = None) -> bool:
        """The bucket and the consumer; False if ``stop`` came while waiting for the
        relay's public stream."""
        self.kv = await ensure_bucket(self.js, self.replicas)
        if not await wait_for_stream(self.js, subjects.PUBLIC_STREAM, stop):
            return False
        await ensure_consumer(self.js, subjects.PUBLIC_STREAM, consumer_config(self.instance_id))
        self.lanes = Lanes(self.js, self.kv, self._view_of, self.mirror, self.stats.lanes, self.every, self.nc)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Apply and answer until ``stop`` (call :meth:`setup` first)."""
        assert self.lanes is not None
        config = consumer_config(self.instance_id)
        self.loop = PullLoop(
            self.nc, subjects.PUBLIC_STREAM, consumer_name(self.instance_id), self._on_public,
            max_inflight=self.max_inflight, recreate=lambda: ensure_consumer(self.js, subjects.PUBLIC_STREAM, config),
            expires=IDLE_PULL[0], heartbeat=IDLE_PULL[1])
        mirror = asyncio.create_task(self.mirror.follow(self.kv, stop))
        leases = asyncio.create_task(self.leases.follow(self.js, stop))
        sub = None
        try:
            if await _first(self.mirror.ready.wait(), stop):
                sub = await self.door_nc.subscribe(subjects.all_lobby_queries(), queue=QUEUE, cb=self._on_query)
                await self.loop.run(stop)
        finally:
            if sub is not None:
                await sub.unsubscribe()
            await self.loop.drain()
            await self.lanes.drain()
            for task in (mirror, leases):
                if not stop.is_set():
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def reconnected(self) -> None:
        """After a reconnect: the open pull requests are lost, ask again."""
        if self.loop is not None:
            self.loop.reset()

    def _on_public(self, msg: Any) -> Awaitable[None]:
        """The message into its table's lane: done when it is acknowledged or given back
        (a future, not a coroutine: the pull loop needs no task for it)."""
        assert self.lanes is not None
        placed = item_of(msg)
        if placed is None:
            self.stats.bad += 1
            log.warning("public message on %s without a version: skipped", msg.subject)
            return asyncio.ensure_future(msg.ack())
        return self.lanes.take(*placed)

    async def _on_query(self, msg: Any) -> None:
        if await self.door.enter(msg) is None:      # not the asker's own inbox, or beyond his quota
            return
        self.stats.queries += 1
        await msg.respond(answer(self.mirror.entries(), msg.data, now_ms(), self.leases.served))

    async def _view_of(self, table_id: str) -> TableView:
        return await self.client.view(table_id)


async def _first(wanted: Any, stop: asyncio.Event) -> bool:
    """Wait for ``wanted`` unless ``stop`` comes first; True if it came."""
    waiting = asyncio.ensure_future(wanted)
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not waiting.done():
        waiting.cancel()
        return False
    return True
