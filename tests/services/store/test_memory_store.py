"""The in-memory event store's optimistic concurrency and the port's batch rules
(services/store/memory.py, port.py). No servers: the same semantics as PostgreSQL are
proven against both adapters in test_event_store.py."""

from __future__ import annotations

import pytest

from studroom.domain.events import ChipsBought, SitOutChanged
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.store.port import EventStore, VersionConflict, conflicting


def bought(seat: int, amount: int = 100) -> ChipsBought:
    return ChipsBought(seat=seat, amount=amount)


@pytest.fixture
def store() -> InMemoryEventStore:
    return InMemoryEventStore()


def test_the_memory_store_is_the_port(store: InMemoryEventStore) -> None:
    assert isinstance(store, EventStore)


def test_a_stale_expected_version_is_refused_and_writes_nothing(store: InMemoryEventStore) -> None:
    store.append([("t1", 0, [bought(0), bought(1)])])
    with pytest.raises(VersionConflict) as refused:
        store.append([("t2", 0, [bought(5)]), ("t1", 1, [bought(2)])])   # t1 has 2 events
    assert refused.value.stream_ids == ("t1",)
    assert store.load("t2") == [] and store.load("t1") == [bought(0), bought(1)]
    assert store.max_notification_id() == 2
    store.append([("t1", 2, [bought(2)])])                                # the fresh version: fine
    assert store.load("t1", after_version=2) == [bought(2)]


def test_every_conflicting_stream_of_a_batch_is_named(store: InMemoryEventStore) -> None:
    store.append([("a", 0, [bought(0)]), ("b", 0, [bought(0)])])
    with pytest.raises(VersionConflict) as refused:
        store.append([("b", 0, [bought(1)]), ("c", 0, [bought(1)]), ("a", 0, [bought(1)])])
    assert refused.value.stream_id == "b" and refused.value.stream_ids == ("b", "a")


def test_two_tuples_of_one_batch_may_chain_but_not_claim_the_same_version(store: InMemoryEventStore) -> None:
    store.append([("t1", 0, [bought(0)]), ("t1", 1, [SitOutChanged(seat=0, sitting_out=True)])])
    assert [n.version for n in store.read_notifications(1, 10)] == [1, 2]
    with pytest.raises(VersionConflict):
        store.append([("t1", 2, [bought(1)]), ("t1", 2, [bought(2)])])
    assert store.max_notification_id() == 2


def test_two_writers_of_one_version_the_second_reloads_and_wins_next_time(store: InMemoryEventStore) -> None:
    store.append([("t1", 0, [bought(0)])])
    first = second = len(store.load("t1"))              # both writers saw version 1
    store.append([("t1", first, [bought(1)])])
    with pytest.raises(VersionConflict):
        store.append([("t1", second, [bought(2)])])
    second = len(store.load("t1"))                      # reload, decide again, retry
    store.append([("t1", second, [bought(2)])])
    assert store.load("t1") == [bought(0), bought(1), bought(2)]


@pytest.mark.parametrize(("batch", "error"), [
    ([("", 0, [])], ValueError),                     # no stream id
    ([("t1", -1, [])], ValueError),                  # a negative version
    ([("t1", True, [])], ValueError),                # a bool is not a version
    ([("t1", 0, "events")], TypeError),              # not a list of events
])
def test_a_malformed_batch_is_refused_before_anything_is_written(
    store: InMemoryEventStore, batch: list, error: type[Exception]
) -> None:
    with pytest.raises(error):
        store.append([("ok", 0, [bought(0)]), *batch])
    assert store.max_notification_id() == 0


def test_conflicting_asks_the_store_only_for_the_new_versions() -> None:
    asked: list[tuple[str, int]] = []

    def exists(stream: str, version: int) -> bool:
        asked.append((stream, version))
        return stream == "x" and version <= 3

    assert conflicting([("x", 3, [1, 2]), ("y", 0, [1])], exists) == []
    assert asked == [("x", 4), ("x", 5), ("y", 1)]
    assert conflicting([("y", 0, [1]), ("x", 2, [1])], exists) == ["x"]
