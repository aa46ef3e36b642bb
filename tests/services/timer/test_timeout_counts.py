"""The lobby's per-table timeout record (KV bucket ``studroom_timeouts``), without servers:
the record update, and the compare-and-set against a fake bucket."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import nats.js.errors
from studroom.services.timer.timeout_counts import RECENT_TIMEOUTS, add_timeout, count_timeout


def _entry(turn: int, ms: int = 0) -> dict[str, Any]:
    return {"turn": turn, "seat": 1, "outcome": "fold", "ms": ms}


def test_the_first_timeout_of_a_table_starts_its_record() -> None:
    assert add_timeout({}, turn=7, seat=2, outcome="fold", ms=1_000) == {
        "timeouts": 1,
        "last_ms": 1_000,
        "recent": [{"turn": 7, "seat": 2, "outcome": "fold", "ms": 1_000}],
    }


def test_a_timeout_adds_to_the_total_and_keeps_the_recent_list_in_turn_order() -> None:
    record = {"timeouts": 5, "last_ms": 900, "recent": [_entry(3, 500), _entry(9, 900)]}
    updated = add_timeout(record, turn=6, seat=0, outcome="check", ms=800)
    assert updated is not None
    assert updated["timeouts"] == 6
    assert updated["last_ms"] == 900                  # an earlier stamp never moves it back
    assert [r["turn"] for r in updated["recent"]] == [3, 6, 9]
    assert record["recent"] == [_entry(3, 500), _entry(9, 900)]     # the input is not changed


def test_a_redelivered_timeout_is_not_counted_twice() -> None:
    record = add_timeout({}, turn=4, seat=1, outcome="fold", ms=10)
    assert record is not None
    assert add_timeout(record, turn=4, seat=1, outcome="fold", ms=20) is None


def test_the_record_keeps_only_the_last_twenty_timeouts() -> None:
    record: dict[str, Any] = {}
    for turn in range(1, RECENT_TIMEOUTS + 6):
        updated = add_timeout(record, turn=turn, seat=0, outcome="fold", ms=turn)
        assert updated is not None
        record = updated
    assert RECENT_TIMEOUTS == 20
    assert record["timeouts"] == RECENT_TIMEOUTS + 5
    assert [r["turn"] for r in record["recent"]] == list(range(6, RECENT_TIMEOUTS + 6))


def test_a_turn_older_than_a_full_recent_list_is_taken_for_a_redelivery() -> None:
    record = {"timeouts": 20, "last_ms": 0, "recent": [_entry(t) for t in range(10, 50, 2)]}
    assert add_timeout(record, turn=5, seat=0, outcome="fold", ms=1) is None
    updated = add_timeout(record, turn=15, seat=0, outcome="fold", ms=1)   # a gap: new
    assert updated is not None
    assert [r["turn"] for r in updated["recent"]][:3] == [12, 14, 15]   # the oldest, 10, left


# ------------------------------------------------------------------ compare-and-set


@dataclass
class _Entry:
    value: bytes
    revision: int


class FakeBucket:
    """A KV bucket that refuses a write based on a stale revision, like JetStream's;
    ``interfere`` writes of another instance land between a read and a write."""

    def __init__(self, interfere: int = 0) -> None:
        self.data: dict[str, _Entry] = {}
        self.interfere = interfere
        self.writes = 0

    async def get(self, key: str) -> _Entry:
        if key not in self.data:
            raise nats.js.errors.KeyNotFoundError
        return self.data[key]

    async def create(self, key: str, value: bytes) -> None:
        if self._another_instance_writes(key) or key in self.data:
            raise nats.js.errors.KeyWrongLastSequenceError
        self._put(key, value)

    async def update(self, key: str, value: bytes, last: int) -> None:
        if self._another_instance_writes(key) or self.data[key].revision != last:
            raise nats.js.errors.KeyWrongLastSequenceError
        self._put(key, value)

    def _another_instance_writes(self, key: str) -> bool:
        if self.interfere <= 0:
            return False
        self.interfere -= 1
        record = json.loads(self.data[key].value) if key in self.data else {}
        updated = add_timeout(record, turn=1000 + self.interfere, seat=9, outcome="fold", ms=1)
        self._put(key, json.dumps(updated).encode())
        return True

    def _put(self, key: str, value: bytes) -> None:
        revision = self.data[key].revision + 1 if key in self.data else 1
        self.data[key] = _Entry(value, revision)
        self.writes += 1

    def record(self, key: str) -> dict[str, Any]:
        return json.loads(self.data[key].value)


def test_count_timeout_writes_compact_json_and_counts_each_turn_once() -> None:
    kv = FakeBucket()

    async def main() -> list[bool]:
        return [await count_timeout(kv, "t1", turn, 0, "fold", 100 + turn) for turn in (3, 3, 4)]

    assert asyncio.run(main()) == [True, False, True]
    assert kv.data["t1"].value == (b'{"timeouts":2,"last_ms":104,"recent":['
                                   b'{"turn":3,"seat":0,"outcome":"fold","ms":103},'
                                   b'{"turn":4,"seat":0,"outcome":"fold","ms":104}]}')


def test_count_timeout_reads_again_when_another_instance_wrote_first() -> None:
    kv = FakeBucket(interfere=2)
    assert asyncio.run(count_timeout(kv, "t1", 5, 0, "fold", 100)) is True
    record = kv.record("t1")
    assert record["timeouts"] == 3                   # the two others' and ours, none lost
    assert sorted(r["turn"] for r in record["recent"]) == [5, 1000, 1001]
