"""One history instance: the projection loop and the requests, over one NATS connection.

- the projector (projector.py, its run loop projections/tracking.py) in a thread: a
  batch of each store every ``pace_s`` seconds while there is work (at once while
  batches are full), woken by the stores' own NOTIFY when there is none (and a look
  every ``idle_s``), after a pause when a batch failed;
- requests on ``studroom.history.*.*`` (a queue group: each request goes to one
  instance), the sender read from the subject, each answered in a thread (desk.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

from studroom.services.wire import subjects
from studroom.services.wire.door import QUERY_QUOTAS, Door, identified
from studroom.services.wire.protocol import BAD_REQUEST, MAX_REQUEST_BYTES

from ..tracking import LOOK_S, PACE_S
from .answers import HistoryDesk
from .projector import Projector
from .protocol import encode, refused

QUEUE: Final = "studroom_history"


class HistoryService:
    def __init__(self, nc: Any, projector: Projector, desk: HistoryDesk, *, idle_s: float = LOOK_S,
                 pace_s: float = PACE_S) -> None:
        self.nc = nc
        self.projector = projector
        self.desk = desk
        self.idle_s = idle_s
        self.pace_s = pace_s
        self._sub: Any = None
        self.door = Door("history", subjects.history_sender, identities=identified(nc), quotas=QUERY_QUOTAS)

    async def start(self) -> None:
        """Answer requests from now on."""
        self._sub = await self.nc.subscribe(subjects.all_history_requests(), queue=QUEUE, cb=self._on_request)
        await self.nc.flush()

    async def run(self, stop: asyncio.Event) -> None:
        """Project until ``stop`` (a failing batch is logged and tried again after a pause)."""
        await self.projector.run(stop, idle_s=self.idle_s, pace_s=self.pace_s, listen=True)

    async def _on_request(self, msg: Any) -> None:
        visitor = await self.door.enter(msg)        # the sender's own inbox, within his quota
        if visitor is None:
            return
        if len(msg.data) > MAX_REQUEST_BYTES:
            reply = refused(BAD_REQUEST, f"a request is at most {MAX_REQUEST_BYTES} bytes")
        else:
            reply = await asyncio.to_thread(self.desk.answer, visitor.role, visitor.name, msg.data)
        await msg.respond(encode(reply))

    async def close(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        await asyncio.to_thread(self.projector.close)
        await asyncio.to_thread(self.desk.close)
