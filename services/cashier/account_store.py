"""The accounts in the cashier's event store (PostgreSQL schema ``studroom_cashier``,
through the store port), for asyncio code.

Each account is kept in memory as last stored.  A read catches it up first (its
events after the version in memory: other instances write too); a write may start
from the kept copy without reading (``fresh=False``): if anyone stored since, the
append is refused as a ``VersionConflict`` and nothing is written, so the writer
reads fresh and decides again.  Callers work on a copy; :meth:`Books.save` appends the
copies' new events, all streams in ONE transaction, and the copies then replace the
kept ones.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any, Final

from studroom.domain import account as accounts
from studroom.domain.account import Account, AccountEventType

from ..store.codec import register_event_types
from ..store.port import EventStore
from .retired_desks import DeskEventType

MAX_KEPT: Final = 50_000            # aggregates kept in memory (all dropped when more)

register_event_types(AccountEventType, DeskEventType)      # desks: old stores' streams, still read


def _stream(aggregate: Account) -> str:
    return accounts.stream_id(aggregate.player)


class Books:
    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._kept: dict[str, Account] = {}

    async def account(self, player: str, *, fresh: bool = True) -> Account:
        """A copy of ``player``'s account as stored now (``fresh=False``: as kept)."""
        return await self._load(accounts.stream_id(player), lambda: Account(player), fresh)

    async def movements(self, player: str, after: int) -> list[AccountEventType]:
        """``player``'s account events after version ``after``, in order."""
        return await asyncio.to_thread(self.store.load, accounts.stream_id(player), after)

    async def save(self, *changes: tuple[Account, list[Any]]) -> None:
        """Store each copy's new ``events`` (already applied to it) in one transaction,
        or raise ``VersionConflict`` and store none."""
        batch = [(_stream(aggregate), aggregate.version - len(events), events)
                 for aggregate, events in changes if events]
        if not batch:
            return
        await asyncio.to_thread(self.store.append, batch)
        for aggregate, _ in changes:
            self._keep(_stream(aggregate), aggregate)

    async def _load(self, stream: str, new: Callable[[], Account], fresh: bool) -> Account:
        while True:
            kept: Any = self._kept.get(stream)
            if kept is not None and not fresh:
                return copy.deepcopy(kept)  # type: ignore[no-any-return]
            kept = kept or new()
            after = kept.version
            events = await asyncio.to_thread(self.store.load, stream, after)
            if self._kept.get(stream, kept) is not kept:
                continue                      # replaced meanwhile: read again
            for version, event in enumerate(events, start=after + 1):
                if version > kept.version:    # another task may have caught it up meanwhile
                    kept.apply(event)
            self._keep(stream, kept)
            return copy.deepcopy(kept)  # type: ignore[no-any-return]

    def _keep(self, stream: str, aggregate: Account) -> None:
        kept = self._kept.get(stream)
        if kept is not None and kept.version > aggregate.version:
            return
        if kept is None and len(self._kept) >= MAX_KEPT:
            self._kept.clear()
        self._kept[stream] = aggregate
