"""The cashier receives only the public messages its cash-outs are made of (R3: a
player who leaves gets his seat's chips back): its consumer's filter is the mark the
relay gives a message with a ``PlayerLeft``, and credits each of a message's
``PlayerLeft`` once, with its own version.  A consumer of an older version, on an
existing data folder, which took every public event, gets the filter in place and
keeps its position (the timer's consumer too); a message marked for nobody reaches
neither."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from studroom.domain.events import (
    EVENT_TYPES,
    Acted,
    ChipsBought,
    Event,
    PauseStarted,
    PlayerLeft,
    TimedOut,
    TurnStarted,
)
from studroom.services.cashier.account_store import Books
from studroom.services.cashier.cash_outs import INTEREST, CashOuts, Unreadable, consumer_config
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.timer.streams import turns_consumer_config
from studroom.services.wire import event_messages, subjects
from studroom.services.wire.declared import ensure_consumer
from studroom.services.wire.event_messages import LEAVES, TURNS, Interest
from studroom.services.wire.pull import shared_consumer
from subject_matching import matches


class Msg:
    """A JetStream message as the handler sees it: it records its ack or nak."""

    def __init__(self, subject: str, data: bytes, headers: dict[str, str] | None) -> None:
        self.subject, self.data, self.headers = subject, data, headers
        self.metadata = SimpleNamespace(num_delivered=1)
        self.acked = False
        self.naks: list[float | None] = []

    async def ack(self) -> None:
        self.acked = True

    async def nak(self, delay: float | None = None) -> None:
        self.naks.append(delay)


def public(table_id: str, first_version: int, *events: Event) -> Msg:
    """The relay's message of ``table_id``'s events from ``first_version`` on."""
    message = event_messages.public_message(table_id, first_version, events)
    return Msg(message.subject, message.payload, message.headers)


class Recorded(CashOuts):
    """The cash-outs' handler, its credits recorded instead of booked."""

    def __init__(self) -> None:
        super().__init__(books=None)  # type: ignore[arg-type]
        self.credits: list[tuple[str, int, str]] = []

    async def credit(self, table_id: str, version: int, left: Any) -> None:
        self.credits.append((table_id, version, left.player))


def test_R3_the_events_a_cash_out_reads_are_the_ones_the_relay_marks_for_it() -> None:
    assert INTEREST is LEAVES and LEAVES.events == {PlayerLeft.__name__}
    config = consumer_config()
    assert config.filter_subject is None
    assert config.filter_subjects == event_messages.marked_subjects(LEAVES)
    assert config.ack_policy == AckPolicy.EXPLICIT                  # several instances share it


def test_R3_every_event_a_cash_out_is_made_of_is_in_the_cashiers_filter_and_no_other() -> None:
    filters = consumer_config().filter_subjects or []
    acted = set()
    for event_type in EVENT_TYPES:
        kind = event_type.__name__
        body = event_messages.body([msgspec.json.encode({"type": kind, "seat": 1, "player": "alice",
                                                         "cashed_out": 500})])
        msg = Msg(subjects.public_message("t1", event_messages.mark_of([kind])), body,
                  event_messages.headers(9, [kind]))
        cash_outs = Recorded()
        asyncio.run(cash_outs.on_public(msg))
        assert msg.acked
        if cash_outs.credits:
            assert cash_outs.credits == [("t1", 9, "alice")]
            acted.add(event_type)
        assert any(matches(f, msg.subject) for f in filters) == (event_type in acted), kind
    assert acted == {PlayerLeft}


# ------------------------------------------------------ a message of several events, booked


class Failing(InMemoryEventStore):
    """Its ``fail_at``-th append (1 = the first) fails once, writing nothing."""

    def __init__(self, fail_at: int = 0) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.appends = 0

    def append(self, batch: Any, snapshots: Any = ()) -> None:
        self.appends += 1
        if self.appends == self.fail_at:
            raise ConnectionError("the database went away")
        super().append(batch, snapshots)


def _leaving_two(table_id: str = "t1") -> Msg:
    """One commit at versions 20-24: alice leaves (21), bob leaves (23)."""
    return public(table_id, 20, ChipsBought(seat=3, amount=100), PlayerLeft(seat=1, player="alice", cashed_out=300),
                  Acted(seat=3, action="call", amount=20), PlayerLeft(seat=2, player="bob", cashed_out=500),
                  TurnStarted(turn=8, seat=3, kind="act", deadline_ms=1, options=["fold"]))


async def _cashed(books: Books, player: str) -> tuple[int, dict[str, set[int]]]:
    account = await books.account(player)
    return account.balance, account.cashed_out


def test_R3_each_player_left_of_a_message_is_credited_with_its_own_version_once() -> None:
    cash_outs = CashOuts(Books(InMemoryEventStore()))

    async def main() -> None:
        first, again = _leaving_two(), _leaving_two()
        await cash_outs.on_public(first)
        assert first.acked and cash_outs.credited == 2
        await cash_outs.on_public(again)                   # redelivered (a lost ack)
        assert again.acked and not again.naks
        assert (cash_outs.credited, cash_outs.repeated) == (2, 2)
        assert await _cashed(cash_outs.books, "alice") == (300, {"t1": {21}})
        assert await _cashed(cash_outs.books, "bob") == (500, {"t1": {23}})

    asyncio.run(main())


def test_R3_a_message_booked_in_part_is_retried_and_its_rest_booked_once() -> None:
    """The store fails at bob's credit: the message comes again, alice is not credited
    twice (her account knows version 21), bob is, and only then is it acked."""
    cash_outs = CashOuts(Books(Failing(fail_at=2)))

    async def main() -> None:
        first, again = _leaving_two(), _leaving_two()
        await cash_outs.on_public(first)
        assert not first.acked and len(first.naks) == 1
        await cash_outs.on_public(again)
        assert again.acked
        assert (cash_outs.credited, cash_outs.repeated) == (2, 1)
        assert await _cashed(cash_outs.books, "alice") == (300, {"t1": {21}})
        assert await _cashed(cash_outs.books, "bob") == (500, {"t1": {23}})

    asyncio.run(main())


def test_a_player_left_of_the_first_format_is_still_credited() -> None:
    """One event, an object, with its own version (a stream written before 2026-12-03)."""
    left = PlayerLeft(seat=1, player="alice", cashed_out=300)
    msg = Msg(subjects.public_message("t1", LEAVES.token), msgspec.json.encode(left),
              event_messages.headers(9, [PlayerLeft.__name__]))
    cash_outs = Recorded()
    asyncio.run(cash_outs.on_public(msg))
    assert msg.acked and cash_outs.credits == [("t1", 9, "alice")]


@pytest.mark.parametrize(("data", "headers"), [
    (b"not json", event_messages.headers(9, [PlayerLeft.__name__])),
    (b'[{"type":"PlayerLeft","seat":1}]', event_messages.headers(9, [PlayerLeft.__name__])),
    (msgspec.json.encode([PlayerLeft(seat=1, player="alice", cashed_out=300)]), None),
], ids=["no_json", "no_player_left", "no_version"])
def test_a_message_the_cashier_cannot_read_is_set_aside_never_acked(data: bytes, headers: dict[str, str] | None) -> None:
    """It may hold a cash-out: the pull loop records it as a dead letter (its body
    kept) and raises the alarm, rather than it being acked and the cash-out lost."""
    msg = Msg(subjects.public_message("t1", LEAVES.token), data, headers)
    cash_outs = Recorded()
    with pytest.raises(Unreadable, match="cannot read"):
        asyncio.run(cash_outs.on_public(msg))
    assert not msg.acked and not cash_outs.credits


def test_a_message_not_marked_for_the_cashier_is_acked_unread() -> None:
    """A consumer the server kept unfiltered: the mark says there is no PlayerLeft."""
    msg = Msg(subjects.public_message("t1", TURNS.token), b"not even json", None)
    cash_outs = Recorded()
    asyncio.run(cash_outs.on_public(msg))
    assert msg.acked and not cash_outs.credits


# ------------------------------------------------------ an older consumer, updated in place


@pytest.fixture(scope="module")
def own_nats() -> Iterator[str]:
    folder = Path(tempfile.mkdtemp(prefix="studroom-it-filter-"))
    try:
        with EmbeddedNats(folder, auth=False) as server:
            yield server.url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _old(config: ConsumerConfig) -> ConsumerConfig:
    """The same consumer as the version before the filters made it: every public event."""
    return shared_consumer(config.durable_name or "", subjects.all_public_events(), config.ack_wait or 5.0,
                           "before the filters")


# One table's commits, as the relay publishes them (one message each, marked).
COMMITS: list[list[Event]] = [
    [ChipsBought(seat=1, amount=100)],                                                     # plain
    [Acted(seat=1, action="call"), TurnStarted(turn=2, seat=2, kind="act", deadline_ms=1)],  # turn
    [PlayerLeft(seat=3, player="carol", cashed_out=40)],                                  # left
    [Acted(seat=2, action="check")],                                                      # plain
    [PauseStarted(turn=3, deadline_ms=1, pause_ms=1)],                                    # turn
    [TimedOut(turn=4, seat=1, outcome="fold"), PlayerLeft(seat=1, player="alice", cashed_out=0),
     TurnStarted(turn=5, seat=2, kind="act", deadline_ms=1)],                            # turn_left
    [PlayerLeft(seat=2, player="bob", cashed_out=90), ChipsBought(seat=2, amount=5)],     # left
    [ChipsBought(seat=4, amount=7)],                                                      # plain
]
CONSUMERS = [(consumer_config, LEAVES), (turns_consumer_config, TURNS)]


async def _publish(js: Any, commits: Sequence[list[Event]]) -> list[str]:
    """The relay's messages of ``commits`` (of table t1, from version 1 on): the
    version each names (one a message)."""
    versions, version = [], 1
    for events in commits:
        message = event_messages.public_message("t1", version, events)
        await js.publish(message.subject, message.payload, headers=message.headers)
        versions.append(message.headers[event_messages.VERSION_HEADER])
        version += len(events)
    return versions


async def _fetch(sub: Any, count: int) -> list[Any]:
    """The next ``count`` messages (a fetch may return fewer at once)."""
    got: list[Any] = []
    while len(got) < count:
        got += await sub.fetch(count - len(got), timeout=2)
    return got


def _versions(messages: list[Any]) -> list[str]:
    return [m.headers[event_messages.VERSION_HEADER] for m in messages]


def _wanted(commits: Sequence[list[Event]], interest: Interest) -> list[int]:
    """Which of ``commits`` hold an event ``interest`` wants (by their events, not marks)."""
    return [n for n, events in enumerate(commits) if interest.events & {type(e).__name__ for e in events}]


@pytest.mark.integration
@pytest.mark.parametrize(("made", "interest"), CONSUMERS, ids=["cashier", "timer"])
def test_an_older_consumer_gets_the_filter_in_place_and_keeps_its_position(
        own_nats: str, made: Callable[[], ConsumerConfig], interest: Interest) -> None:
    new = made()

    async def main() -> None:
        nc = await nats.connect(own_nats)
        js = nc.jetstream()
        try:
            await js.add_stream(StreamConfig(name=subjects.PUBLIC_STREAM, subjects=[subjects.all_public_events()]))
            await ensure_consumer(js, subjects.PUBLIC_STREAM, _old(new))
            versions = await _publish(js, COMMITS)
            durable = new.durable_name or ""
            sub = await js.pull_subscribe_bind(durable, subjects.PUBLIC_STREAM)
            for msg in await _fetch(sub, 3):                   # the old consumer handled three
                await msg.ack_sync()
            await ensure_consumer(js, subjects.PUBLIC_STREAM, new)       # the new version starts
            info = await js.consumer_info(subjects.PUBLIC_STREAM, durable)
            assert info.config.filter_subjects == new.filter_subjects and not info.config.filter_subject
            assert info.config.ack_policy == AckPolicy.EXPLICIT
            expected = [versions[n] for n in _wanted(COMMITS, interest) if n >= 3]
            assert info.num_pending == len(expected)
            assert _versions(await _fetch(sub, len(expected))) == expected
            await js.delete_stream(subjects.PUBLIC_STREAM)
        finally:
            await nc.close()

    asyncio.run(main())


@pytest.mark.integration
def test_the_filtered_consumers_get_their_marks_and_a_plain_message_reaches_neither(own_nats: str) -> None:
    async def main() -> None:
        nc = await nats.connect(own_nats)
        js = nc.jetstream()
        try:
            await js.add_stream(StreamConfig(name=subjects.PUBLIC_STREAM, subjects=[subjects.all_public_events()]))
            for made, _ in CONSUMERS:
                await ensure_consumer(js, subjects.PUBLIC_STREAM, made())
            versions = await _publish(js, COMMITS)
            plain = {versions[n] for n in (0, 3, 7)}          # the commits nobody wants
            for made, interest in CONSUMERS:
                durable = made().durable_name or ""
                expected = [versions[n] for n in _wanted(COMMITS, interest)]      # turn_left: both
                assert (await js.consumer_info(subjects.PUBLIC_STREAM, durable)).num_pending == len(expected)
                sub = await js.pull_subscribe_bind(durable, subjects.PUBLIC_STREAM)
                got = _versions(await _fetch(sub, len(expected)))
                assert got == expected and not plain & set(got)
            await js.delete_stream(subjects.PUBLIC_STREAM)
        finally:
            await nc.close()

    asyncio.run(main())
