"""The relay of one process: all its stores over one NATS connection at a time.

A connection is used until its first failure (no automatic reconnect, which would
resend buffered messages behind a gap): the session then ends, the relay backs off
(``RelayConfig.backoff``: 0.1 s doubling to 2 s, jittered), connects anew and every
store recovers its position. See docs/design/relay.md; ``bootstrap.py`` builds a
relay from the settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence
from typing import Any

import nats.errors

from ..runtime.processes import process
from ..wire import subjects
from ..wire.dead_letters import DeadLetters, open_bucket
from .bus import bus, pause, raise_if_cancelled
from .config import RelayConfig
from .errors import BusError
from .publisher import Publisher
from .store_relay import StoreRelay, StoreStats
from .streams import ensure_bucket, ensure_streams, position_bucket, public_max_msg_size

log = logging.getLogger(__name__)


class Relay:
    """All stores of one relay process over one NATS connection at a time, as the
    identity in ``creds`` (the service "relay"; None: an open server)."""

    def __init__(
        self,
        nats_url: str,
        stores: Sequence[StoreRelay],
        config: RelayConfig = RelayConfig(),
        creds: str | os.PathLike[str] | None = None,
    ) -> None:
        self.nats_url = ",".join(u.strip() for u in nats_url.split(",") if u.strip())
        self.creds = creds
        self.stores = list(stores)
        self.config = config
        self.sessions = 0
        self.connected = asyncio.Event()
        self.connected_at: float | None = None

    async def serve(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        pauses = self.config.backoff.pauses()
        waker = asyncio.ensure_future(self._wake_on(stop))
        listeners = [asyncio.ensure_future(s.commits.run()) for s in self.stores if s.commits is not None]
        try:
            while not stop.is_set():
                raise_if_cancelled()
                started = loop.time()
                try:
                    await self._session(stop)
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    if self.connected_at is not None and self.connected_at >= started:
                        pauses = self.config.backoff.pauses()   # it was up: retry soon
                    backoff = next(pauses)
                    log.warning("relay: NATS session ended: %s; reconnecting in %.1fs", error, backoff,
                                exc_info=not isinstance(error, (BusError, OSError, nats.errors.Error)))
                    await pause(stop, backoff)
        finally:
            waker.cancel()
            for listener in listeners:
                listener.cancel()
            await asyncio.gather(*listeners, return_exceptions=True)

    async def _wake_on(self, stop: asyncio.Event) -> None:
        await stop.wait()
        for store in self.stores:
            store.wake.set()

    async def _session(self, stop: asyncio.Event) -> None:
        lost = asyncio.Event()

        async def on_lost() -> None:
            lost.set()

        async def on_error(error: Exception) -> None:
            log.debug("relay: NATS error: %r", error)

        with bus("connect"):
            nc = await process.connect(
                self.nats_url,
                "studroom-relay",
                creds=self.creds,
                allow_reconnect=False,
                max_reconnect_attempts=0,
                connect_timeout=self.config.connect_timeout,
                disconnected_cb=on_lost,
                closed_cb=on_lost,
                error_cb=on_error,
            )
        tasks: list[asyncio.Future[Any]] = []
        try:
            self.sessions += 1
            with bus("setup"):
                js = nc.jetstream(
                    timeout=self.config.request_timeout, publish_async_max_pending=1_000_000
                )
                await ensure_streams(js, self.config)
                public_max = await public_max_msg_size(js)
                positions = await ensure_bucket(js, position_bucket(self.config))
                dead_letters = DeadLetters(js, "relay", kv=await open_bucket(js, self.config.replicas))
                publisher = Publisher(nc)
                await publisher.start()
                for store in self.stores:
                    await nc.subscribe(subjects.relay_nudge(store.name), cb=store.on_nudge)
            self.connected.set()
            self.connected_at = asyncio.get_running_loop().time()
            lost_task = asyncio.ensure_future(lost.wait())
            tasks = [asyncio.ensure_future(s.run(js, positions, dead_letters, stop, publisher, public_max))
                     for s in self.stores]
            tasks.append(lost_task)
            running = set(tasks) - {lost_task}
            while running:
                raise_if_cancelled()
                done, _ = await asyncio.wait(running | {lost_task}, return_when=asyncio.FIRST_COMPLETED)
                if lost_task in done:
                    raise BusError("connection to NATS lost")
                for task in done:
                    task.result()
                running -= done
        finally:
            self.connected.clear()
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await nc.close()

    def stats(self) -> dict[str, StoreStats]:
        return {s.name: s.stats for s in self.stores}
