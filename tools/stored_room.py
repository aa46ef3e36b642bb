"""A simulated room (domain/simulate.py) written to real event stores: the tables'
streams in the stores the layout gives them, the players' accounts in the cashier's
store.  ``bench ledger`` books such a room, and the ledger's tests check the books of one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from studroom.domain.account import stream_id as account_stream
from studroom.domain.simulate import simulated_room
from studroom.services.store.inspect import store_url
from studroom.services.store.layout import store_of_table
from studroom.services.store.postgres import PostgresEventStore


class _Appender:
    """Appends to the stores, one transaction per store for many streams."""

    def __init__(self, database_url: str, schemas: Sequence[str]) -> None:
        self.stores = [PostgresEventStore(store_url(database_url, s), schema=s) for s in schemas]
        self.versions: dict[tuple[int, str], int] = {}
        self.pending: dict[int, list[tuple[str, int, list[Any]]]] = {}

    def add(self, index: int, stream: str, events: list[Any]) -> None:
        if events:
            before = self.versions.get((index, stream), 0)
            self.pending.setdefault(index, []).append((stream, before, events))
            self.versions[(index, stream)] = before + len(events)

    def flush(self) -> None:
        for index, batch in self.pending.items():
            self.stores[index].append(batch)
        self.pending.clear()

    def close(self) -> None:
        for store in self.stores:
            store.close()


def store_room(database_url: str, schemas: Sequence[str], cashier_schema: str, *, events: int, tables: int,
               seed: int = 1, prefix: str = "sim") -> int:
    """Play ``tables`` simulated tables until about ``events`` events are stored in the
    table stores ``schemas`` and the cashier's store ``cashier_schema``: how many."""
    appender = _Appender(database_url, [*schemas, cashier_schema])
    cashier = len(schemas)
    stored = played = 0
    try:
        for table_id, new, accounts in simulated_room(tables, seed, prefix):
            appender.add(store_of_table(table_id, len(schemas)), table_id, new)
            for player, account_events in accounts.items():
                appender.add(cashier, account_stream(player), account_events)
                stored += len(account_events)
            stored += len(new)
            played += 1
            if played % tables == 0 or stored >= events:
                appender.flush()
            if stored >= events:
                return stored
    finally:
        appender.close()
    return stored
