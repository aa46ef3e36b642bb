"""The lobby's bucket in memory: what an instance answers queries from.

It watches the bucket (every instance's writes) and takes its own writes at once;
per table it keeps the value of the highest revision, decoded when first asked for.
A value deleted, purged or unreadable is reported to ``damaged`` (the lanes heal it:
docs/design/lobby.md, "Healing").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import msgspec

from .entry import LobbyEntry, decode

log = logging.getLogger("studroom.lobby")


class Mirror:
    def __init__(self) -> None:
        self._values: dict[str, tuple[int, bytes]] = {}          # table -> (revision, value)
        self._decoded: dict[str, LobbyEntry] = {}
        self.ready = asyncio.Event()                              # the bucket's values are in
        self.damaged: Callable[[str], None] | None = None        # told of a value deleted or unreadable

    def put(self, table_id: str, revision: int, value: bytes | None) -> None:
        """A value of the bucket (None: deleted or purged) unless a newer one is known."""
        known = self._values.get(table_id)
        if known is not None and known[0] >= revision:
            return
        self._decoded.pop(table_id, None)
        if value is None:
            self._values.pop(table_id, None)
            self._report(table_id)
        else:
            self._values[table_id] = (revision, value)
            if not value.startswith(b'{"table_id":"%s"' % table_id.encode()):
                self._report(table_id)      # no entry, or another table's (an entry's first field is its table)

    def _report(self, table_id: str) -> None:
        if self.damaged is not None:
            self.damaged(table_id)

    def entries(self) -> list[LobbyEntry]:
        out = []
        for table_id in list(self._values):
            entry = self._entry(table_id)
            if entry is not None:
                out.append(entry)
        return out

    def _entry(self, table_id: str) -> LobbyEntry | None:
        entry = self._decoded.get(table_id)
        if entry is None:
            try:
                entry = self._decoded[table_id] = decode(self._values[table_id][1])
            except (msgspec.DecodeError, msgspec.ValidationError):
                log.warning("lobby value of %s is no entry: left out", table_id)
                self._report(table_id)
                return None
        return entry

    async def follow(self, kv: Any, stop: asyncio.Event, retry: float = 1.0) -> None:
        """Watch the bucket until ``stop`` (again after an error)."""
        while not stop.is_set():
            try:
                watcher = await kv.watchall()
            except Exception as e:  # noqa: BLE001 (NATS away: watch again soon)
                log.info("cannot watch the lobby bucket (%r): again", e)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), retry)
                continue
            stopper = asyncio.create_task(stop_when(stop, watcher))
            try:
                async for update in watcher:
                    if update is None:                # the bucket's values are all in
                        self.ready.set()
                    else:
                        self.put(update.key, update.revision, None if update.operation else update.value)
            finally:
                stopper.cancel()


async def stop_when(stop: asyncio.Event, watcher: Any) -> None:
    """Stop ``watcher`` (a KV watch) when ``stop`` comes."""
    await stop.wait()
    await watcher.stop()


async def read_all(nc: Any) -> list[LobbyEntry]:
    """Every entry in the lobby's bucket, read once (a stopped room's data; needs the
    lobby service's powers).  The keys come from the stream's subjects, not from
    nats-py's ``kv.keys()``: its watcher may signal "no more" before the deliveries
    already on their way were counted, and a loaded machine then read an empty lobby."""
    import nats.js.errors
    from studroom.services.wire.subjects import LOBBY_BUCKET

    js = nc.jetstream()
    try:
        kv = await js.key_value(LOBBY_BUCKET)
    except nats.js.errors.BucketNotFoundError:
        return []
    prefix = f"$KV.{LOBBY_BUCKET}."
    info = await js.stream_info(f"KV_{LOBBY_BUCKET}", subjects_filter=prefix + ">")
    entries = []
    for subject in sorted(info.state.subjects or {}):
        with contextlib.suppress(nats.js.errors.KeyNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
            entries.append(decode((await kv.get(subject.removeprefix(prefix))).value or b""))
    return entries
