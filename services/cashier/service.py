"""One cashier instance: its requests, its cash-outs and its recovery loop over one NATS
connection and the cashier's event store (docs/design/cashier.md).

- requests on ``studroom.cashier.*.*`` (a queue group: each request goes to one
  instance), each answered in a task of its own (:mod:`.requests`);
- ``PlayerLeft`` from the public stream through the shared durable consumer
  (:mod:`.cash_outs`), once the relay has created the stream;
- the buy-ins left open that this instance may finish (:mod:`.recovery`): every second
  while any is in flight, otherwise when a commit is heard in its database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import nats.errors
import nats.js.errors

from ..client.table import TableClient
from ..runtime.retry import RECONNECT
from ..store.commits import Commits
from ..store.port import EventStore
from ..wire import subjects
from ..wire.cashier_protocol import encode
from ..wire.declared import ensure_consumer, wait_for_stream
from ..wire.door import Door, identified
from ..wire.pull import PullLoop
from .account_store import Books
from .cash_outs import CONSUMER, CashOuts, consumer_config
from .recovery import Recovery
from .requests import Requests
from .saga import SENDER, TAKEOVER_MS, BuyInSaga, Step

log = logging.getLogger("studroom.cashier")

QUEUE = "studroom_cashier"
TABLE_RETRY_FOR = 4.0          # seconds a buy-in's BuyIn is retried before it is left pending


class CashierService:
    def __init__(self, nc: Any, store: EventStore, *, instance_id: str, takeover_ms: int = TAKEOVER_MS,
                 consumer: str = CONSUMER, after_step: Step | None = None, sweep_every: float = 1.0,
                 door_nc: Any = None, commits: Commits | None = None) -> None:
        self.nc = nc
        self.door_nc = door_nc if door_nc is not None else nc     # requests in, replies out
        self.consumer = consumer
        self.books = Books(store)
        client = TableClient(nc, "service", SENDER, retry_for=TABLE_RETRY_FOR)
        self.saga = BuyInSaga(self.books, client, instance_id, takeover_ms=takeover_ms, after_step=after_step)
        self.requests = Requests(self.books, self.saga)
        self.cash_outs = CashOuts(self.books)
        self.recovery = Recovery(store, self.saga, every=sweep_every, commits=commits)
        self.loop: PullLoop | None = None
        self._sub: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.answered = 0               # requests answered (the metrics')
        self.door = Door("cashier", subjects.cashier_sender, identities=identified(self.door_nc))

    async def start(self) -> None:
        """Answer requests from now on."""
        self._sub = await self.door_nc.subscribe(subjects.all_cashier_requests(), queue=QUEUE, cb=self._on_request)
        await self.door_nc.flush()

    async def run(self, stop: asyncio.Event) -> None:
        """Cash-outs and recovery until ``stop`` (call :meth:`start` first)."""
        await asyncio.gather(self.recovery.run(stop), self._follow_cash_outs(stop))

    async def _follow_cash_outs(self, stop: asyncio.Event) -> None:
        js = self.nc.jetstream()
        config = consumer_config(self.consumer)
        pauses = RECONNECT.pauses()
        while True:
            try:
                if not await wait_for_stream(js, subjects.PUBLIC_STREAM, stop):
                    return                     # stopped first
                await ensure_consumer(js, subjects.PUBLIC_STREAM, config)
                break
            except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as e:
                log.info("cash-out consumer not set up yet (%r): trying again", e)
                await asyncio.sleep(next(pauses))
        self.loop = PullLoop(self.nc, subjects.PUBLIC_STREAM, self.consumer, self.cash_outs.on_public,
                             recreate=lambda: ensure_consumer(js, subjects.PUBLIC_STREAM, config))
        try:
            await self.loop.run(stop)
        finally:
            await self.loop.drain()

    def reconnected(self) -> None:
        """After a reconnect: the open pull requests are lost, ask again."""
        if self.loop is not None:
            self.loop.reset()

    async def close(self) -> None:
        """Stop taking requests; let those being answered finish."""
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=10)

    async def _on_request(self, msg: Any) -> None:
        if await self.door.enter(msg) is None:      # not the sender's own inbox, or beyond his quota
            return
        task = asyncio.create_task(self._answer(msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, msg: Any) -> None:
        try:
            reply = await self.requests.answer(msg.subject, msg.data)
        except Exception:
            log.exception("request on %s failed", msg.subject)
            return                     # no reply: the client retries (nothing was half-done)
        self.answered += 1
        with contextlib.suppress(Exception):
            await msg.respond(encode(reply))
