"""What the event stores hold against what the public stream carries, and the chips, read
as they grow (the fault drill's judge, :mod:`.drill`; docs/design/resilience.md).

Every stored event must be on the public stream exactly once, in order, as its public
view (no version lost, none twice); every table's chips must add up after every event.
Both sides are read incrementally: the stores from each table's last version read, the
stream from its last sequence read, each read on a fresh connection (servers come and
go while it runs)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Sequence
from typing import Any

from nats.js import api
from studroom.domain import views
from studroom.domain.events import Event
from studroom.projections.ledger.conservation import TableChips
from studroom.services.client.messages import UNREADABLE
from studroom.services.store.inspect import open_stores
from studroom.services.store.layout import store_of_table
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import events_of

FETCH = 1000                     # stream messages per fetch


class Consistency:
    """The stores of ``schemas`` against the public stream, for ``tables``.

    ``problems`` gathers what went wrong, each once, as it is found: a version on the
    stream twice or out of order, an event there that is not the stored one's public view,
    chips that do not add up; :meth:`missing` names stored versions the stream lacks."""

    def __init__(self, database_url: str, schemas: Sequence[str], tables: Sequence[str]) -> None:
        self.database_url = database_url
        self.schemas = list(schemas)
        self.tables = list(tables)
        self.stored: dict[str, list[Event]] = {t: [] for t in tables}
        self.published: dict[str, int] = dict.fromkeys(tables, 0)  # last version seen on the stream
        self.unchecked: dict[str, list[tuple[int, Event]]] = {t: [] for t in tables}
        self.chips = {t: TableChips(t) for t in tables}
        self.stream_seq = 0
        self.duplicates = 0
        self.problems: list[str] = []

    # ------------------------------------------------------------------ the stores

    def read_stores(self) -> None:
        """Load what the stores added since the last read (blocking: run it in a thread)."""
        stores = open_stores(self.database_url, self.schemas, create=False)
        try:
            for table_id in self.tables:
                store = stores[store_of_table(table_id, len(stores))]
                events = self.stored[table_id]
                self.learn(table_id, store.load(table_id, after_version=len(events)))
        finally:
            for store in stores:
                store.close()
        self.compare()

    def learn(self, table_id: str, events: Sequence[Event]) -> None:
        """Events the store holds after those known (in order)."""
        for event in events:
            self.stored[table_id].append(event)
            self.chips[table_id].add(event)

    def stored_versions(self) -> dict[str, int]:
        return {t: len(events) for t, events in self.stored.items()}

    def chip_problems(self) -> list[str]:
        """Each table's chips so far (a hand under way counted as in the hand)."""
        return [bad for chips in self.chips.values() for bad in chips.result().bad]

    # ------------------------------------------------------------------ the stream

    async def read_stream(self, js: Any, timeout: float = 5.0) -> None:
        """Read the public stream's messages after the last one read (a throwaway
        consumer from that sequence)."""
        name = f"faults_audit_{uuid.uuid4().hex}"
        config = api.ConsumerConfig(
            name=name, filter_subject=subjects.all_public_events(),
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self.stream_seq + 1,
            ack_policy=api.AckPolicy.NONE, mem_storage=True, num_replicas=1, inactive_threshold=30.0)
        info = await js.add_consumer(subjects.PUBLIC_STREAM, config=config)
        try:
            pending = info.num_pending
            if pending:
                sub = await js.pull_subscribe_bind(consumer=name, stream=subjects.PUBLIC_STREAM)
                try:
                    while pending > 0:
                        msgs = await sub.fetch(min(pending, FETCH), timeout=timeout)
                        pending -= len(msgs)
                        for msg in msgs:
                            self.take(msg)
                finally:
                    await sub.unsubscribe()
        finally:
            with contextlib.suppress(Exception):
                await js.delete_consumer(subjects.PUBLIC_STREAM, name)
        self.compare()

    def take(self, msg: Any) -> None:
        """One stream message (a nats-py JetStream message): its events' versions must
        follow the table's last one."""
        self.stream_seq = max(self.stream_seq, msg.metadata.sequence.stream)
        table_id = subjects.table_of_public(msg.subject)
        if table_id not in self.published:
            return
        try:
            events = events_of(msg)
        except UNREADABLE as e:
            self.problems.append(f"{table_id}: stream message {msg.metadata.sequence.stream} does not read: {e}")
            return
        last = self.published[table_id]
        again = [version for version, _ in events if version <= last]
        if again:
            self.duplicates += len(again)
            named = f"version {again[0]}" if len(again) == 1 else f"versions {again[0]}..{again[-1]}"
            self.problems.append(f"{table_id}: {named} on the stream again (after {last})")
        new = [(version, event) for version, event in events if version > last]
        if new and new[0][0] != last + 1:
            self.problems.append(f"{table_id}: versions {last + 1}..{new[0][0] - 1} skipped on the stream")
        if new:
            self.published[table_id] = new[-1][0]
            self.unchecked[table_id] += new

    def compare(self) -> None:
        """Each event read off the stream whose stored event is known: its public view?"""
        for table_id, waiting in self.unchecked.items():
            stored = self.stored[table_id]
            kept = []
            for version, event in waiting:
                if version > len(stored):
                    kept.append((version, event))
                elif event != views.public(stored[version - 1]):
                    self.problems.append(f"{table_id} v{version}: the stream's event is not the stored "
                                         f"event's public view")
            self.unchecked[table_id] = kept

    # ------------------------------------------------------------------ both

    def missing(self, upto: dict[str, int]) -> dict[str, tuple[int, int]]:
        """Tables whose stream lacks versions stored (up to ``upto``): the versions."""
        return {t: (self.published[t] + 1, v) for t, v in upto.items() if self.published[t] < v}

    async def stream_has(self, js: Any, upto: dict[str, int], wait: float) -> dict[str, tuple[int, int]]:
        """Read the stream until it holds every version of ``upto`` or ``wait`` seconds
        passed; what it still lacks (nothing: none lost)."""
        deadline = time.monotonic() + wait
        while True:
            with contextlib.suppress(Exception):        # NATS may be coming back
                await self.read_stream(js)
            lacking = self.missing(upto)
            if not lacking or time.monotonic() >= deadline:
                return lacking
            await asyncio.sleep(0.2)
