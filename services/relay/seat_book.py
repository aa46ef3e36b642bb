"""The seat maps of the tables one store's relay meets (who gets a private copy).

The domain folds a table's seat map (``studroom.domain.seating``); this is the
relay's cache of them: the least recently used dropped beyond ``max_tables``, and a
table met at a version it has not followed (a restart, a recovery, a dropped map)
rebuilt from the store's events before that version. See docs/design/relay.md.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from studroom.domain.seating import Seating

from ..store.port import Notification
from .errors import RelayError


class SeatBook:
    """Seat -> player per table, rebuilt from the store for tables met mid-stream."""

    def __init__(self, load: Callable[[str], list[Any]], max_tables: int = 100_000) -> None:
        self._load = load
        self._tables: OrderedDict[str, Seating] = OrderedDict()
        self._max = max_tables
        self.rebuilds = 0

    def follows(self, notes: Sequence[Notification]) -> bool:
        """Whether ``notes`` can be turned into messages without reading the store
        (every table's first note here is its first event, or the next one known)."""
        seen: set[str] = set()
        for n in notes:
            if n.stream_id in seen:
                continue
            seen.add(n.stream_id)
            if n.version > 1:
                seats = self._tables.get(n.stream_id)
                if seats is None or seats.version != n.version - 1:
                    return False
        return True

    def before(self, table: str, version: int) -> Seating:
        """The seats of ``table`` just before its event ``version``."""
        seats = self._tables.get(table)
        if seats is not None and seats.version == version - 1:
            self._tables.move_to_end(table)
            return seats
        if version > 1:
            events = self._load(table)
            if len(events) < version - 1:
                msg = f"table {table!r}: the store has {len(events)} events, expected {version}+"
                raise RelayError(msg)
            seats = Seating.replay(events[: version - 1])
            self.rebuilds += 1
        else:
            seats = Seating()
        self._tables[table] = seats
        if len(self._tables) > self._max:
            self._tables.popitem(last=False)
        return seats
