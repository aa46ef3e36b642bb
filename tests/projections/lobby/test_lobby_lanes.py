"""The lobby's lanes without servers (lobby_fakes.py): a fake bucket with JetStream's
compare-and-set, a fake public stream of the relay's messages (one event each here;
several: test_lobby_messages.py), a table played in-process.  Each event counts once
and in order: batches are written once, a redelivery changes nothing, a write refused
because another instance wrote first is done again from the bucket's value, an event
after a gap takes its predecessors from the stream, versions the stream lost are
replaced by the table's own view, and a value in the bucket that is missing or not the
lobby's own is rebuilt from the stream."""

from __future__ import annotations

import asyncio
import datetime
import random
from types import SimpleNamespace

import msgspec
import pytest
from lobby_fakes import TABLE, Setup, message, stored_at
from lobby_tables import entry_of, played
from studroom.domain import views
from studroom.domain.commands import StartHand
from studroom.domain.deck import SEED_BYTES
from studroom.domain.events import Event, HandEnded
from studroom.domain.simulate import new_table
from studroom.domain.table import Table
from studroom.projections.lobby.entry import encode
from studroom.projections.lobby.lanes import Lanes
from studroom.projections.lobby.messages import item_of
from studroom.projections.lobby.mirror import Mirror
from studroom.projections.lobby.stream import stored_ms
from studroom.services.wire import subjects
from studroom.services.wire.pull import stamp_ms


def test_a_table_s_events_are_applied_in_order_and_a_batch_is_written_once() -> None:
    setup = Setup(played())
    msgs = setup.stream.in_order()
    asyncio.run(setup.deliver(msgs))
    assert all(m.acked and not m.naks for m in msgs)
    assert setup.bucket.entry() == entry_of(setup.events)
    assert setup.bucket.writes < len(msgs) / 10                 # many events a write
    assert setup.lanes.stats.applied == len(msgs)


def test_an_event_delivered_again_changes_nothing() -> None:
    setup = Setup(played())
    asyncio.run(setup.deliver(setup.stream.in_order()))
    before = dict(setup.bucket.values)
    again = [setup.stream.fresh(v) for v in sorted(setup.stream.messages, reverse=True)]
    asyncio.run(setup.deliver(again))
    assert all(m.acked for m in again)
    assert setup.bucket.values == before
    assert setup.lanes.stats.seen == len(again)


def test_a_write_refused_because_another_instance_wrote_first_is_done_again_from_its_value() -> None:
    events = played()
    setup = Setup(events)
    half = len(events) // 2
    other = entry_of(events[:half])                               # another instance's entry

    setup.bucket.before_write = lambda bucket: bucket.put(TABLE, encode(other))
    msgs = setup.stream.in_order()
    asyncio.run(setup.deliver(msgs))
    assert setup.lanes.stats.conflicts == 1
    assert all(m.acked for m in msgs)
    final = setup.bucket.entry()
    assert final == entry_of(events)                              # nothing counted twice
    assert final.hands == sum(isinstance(e, HandEnded) for e in events)


def test_an_event_after_a_gap_takes_its_predecessor_from_the_stream() -> None:
    setup = Setup(played(hands=1))
    msgs = setup.stream.messages
    first = [msgs[v] for v in range(1, 11)]
    asyncio.run(setup.deliver(first))
    early = setup.stream.fresh(12)                                # 11 is still on its way (or was lost here)
    asyncio.run(setup.deliver([early]))
    assert early.acked and not early.naks and setup.bucket.entry().version == 12
    assert setup.lanes.stats.read_back == 1
    rest = [setup.stream.fresh(v) for v in range(11, len(msgs) + 1)]
    asyncio.run(setup.deliver(rest))
    assert all(m.acked for m in rest)
    assert setup.bucket.entry() == entry_of(setup.events)
    assert not setup.views


@pytest.mark.parametrize(("lost", "sizes", "first"), [
    (11, (1,), 10),            # one event a message
    (14, (4,), 3),             # a message of several events (13 to 16)
])
def test_versions_the_stream_lost_are_replaced_by_the_table_s_own_view(lost: int, sizes: tuple[int, ...],
                                                                       first: int) -> None:
    events = played(hands=1)
    setup = Setup(events, lost={lost}, sizes=sizes)               # a dead letter of the relay
    msgs = setup.stream.in_order()
    asyncio.run(setup.deliver(msgs[:first]))
    asyncio.run(setup.deliver(msgs[first:]))
    assert all(m.acked for m in msgs)
    entry = setup.bucket.entry()
    assert entry.version == len(events) and entry.resyncs == 1 and setup.views
    table = views.table_view(Table.replay(events), None)
    assert [(r.seat, r.player, r.stack) for r in entry.players] == [(s.seat, s.player, s.stack) for s in table.seats]


def test_a_message_without_a_version_is_no_item() -> None:
    async def main() -> None:
        msg = message(1, played(hands=0)[:1], seq=7)
        without = SimpleNamespace(headers={}, subject=msg.subject, data=b"{}", reply=msg.reply)
        assert item_of(without) is None
        placed = item_of(msg)
        assert placed is not None and placed[0] == TABLE
        assert (placed[1].version, placed[1].seq, placed[1].at_ms) == (1, 7, stored_at(7))

    asyncio.run(main())


def test_a_hand_that_runs_is_in_the_bucket_as_it_runs() -> None:
    rng = random.Random(1)
    table, events = new_table("five_card_stud", 3)
    events += table.execute(StartHand(seed=rng.randbytes(SEED_BYTES).hex()))
    setup = Setup(events)
    asyncio.run(setup.deliver(setup.stream.in_order()))
    entry = setup.bucket.entry()
    assert entry.running and entry.hand is not None and entry.hand.hand_no == 1


# ---------------------------------------------------------------------------- healing


def _forged(events: list[Event]) -> bytes:
    """A well-formed entry at a version the stream never had (a later event would be
    'seen' and the table frozen), with a stack nobody holds."""
    entry = entry_of(events)
    entry.players[0].stack = 1_000_000
    return encode(msgspec.structs.replace(entry, version=entry.version + 1_000))


CORRUPTIONS = {
    "not an entry": lambda bucket, events, half: bucket.put(TABLE, b'{"ok": true, "tables": []}'),
    "deleted": lambda bucket, events, half: bucket.values.pop(TABLE),
    "another table's": lambda bucket, events, half: bucket.put(
        TABLE, encode(msgspec.structs.replace(entry_of(events[:half]), table_id="other"))),
    "a version the stream never had": lambda bucket, events, half: bucket.put(TABLE, _forged(events[:half])),
    "an older value put back": lambda bucket, events, half: bucket.put(TABLE, encode(entry_of(events[:half // 2]))),
}


@pytest.mark.parametrize("restarted", [False, True], ids=["same instance", "restarted"])
@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_value_missing_or_not_the_lobby_s_own_is_rebuilt_from_the_stream(corruption: str, restarted: bool) -> None:
    """The instance that wrote the table last starts again from its own last value (and
    reads back what came since); one restarted meanwhile reads back the whole table."""
    events = played()
    setup = Setup(events)
    msgs = setup.stream.in_order()
    half = len(msgs) // 2
    asyncio.run(setup.deliver(msgs[:half]))
    CORRUPTIONS[corruption](setup.bucket, events, half)
    if restarted:
        setup.lanes = Lanes(setup.stream, setup.bucket, setup._view_of, Mirror())
    asyncio.run(setup.deliver(msgs[half:]))
    assert all(m.acked and not m.naks for m in msgs)
    assert setup.bucket.entry() == entry_of(events)           # as from zero: nothing counted twice or lost
    assert not setup.views
    stats, older = setup.lanes.stats, corruption == "an older value put back"
    assert stats.foreign == (corruption in ("not an entry", "another table's", "a version the stream never had"))
    assert stats.rebuilt == (not older)
    if older or restarted:
        assert stats.read_back >= half // 2 - 1


def test_a_quiet_table_s_value_deleted_comes_back_without_a_new_event() -> None:
    events = played(hands=1)
    setup = Setup(events)

    async def main() -> None:
        await setup.deliver(setup.stream.in_order())
        setup.bucket.values.pop(TABLE)
        setup.lanes.mirror.put(TABLE, setup.bucket.revision + 1, None)    # the watcher sees the delete
        await asyncio.sleep(0)
        await setup.lanes.drain()

    asyncio.run(main())
    assert setup.bucket.entry() == entry_of(events) and setup.lanes.stats.rebuilt == 1


def test_a_value_no_table_has_is_removed() -> None:
    setup = Setup(played(hands=1))
    setup.bucket.put("nosuchtable", b"garbage")

    async def main() -> None:
        setup.lanes.mirror.put("nosuchtable", setup.bucket.revision, b"garbage")   # the watcher sees it
        await asyncio.sleep(0)
        await setup.lanes.drain()

    asyncio.run(main())
    assert "nosuchtable" not in setup.bucket.values and setup.lanes.stats.removed == 1


def test_a_message_read_back_has_the_time_its_delivery_had() -> None:
    """A direct get's time (RFC 3339, ns) gives the milliseconds the pull loop gives the
    same message delivered (its ns through a float), at millisecond edges too."""
    base = 1_764_000_000 * 1_000_000_000
    for ns in (base, base + 999_999, base + 1_000_000, base + 123_999_600, base + 999_999_999, base + 7):
        msg = SimpleNamespace(reply=f"$JS.ACK.{subjects.PUBLIC_STREAM}.lobby.1.1.1.{ns}.0")
        seconds, fraction = divmod(ns, 1_000_000_000)
        text = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        assert stored_ms(f"{text}.{fraction:09d}".rstrip("0").rstrip(".") + "Z") == stamp_ms(msg), ns


def test_a_table_s_entry_is_written_at_most_once_an_interval_and_the_first_event_at_once() -> None:
    """Issue 20: events that come one by one are written together, at most once in the
    lanes' interval; the first after a quiet spell is not kept waiting."""
    setup = Setup(played(hands=2))
    setup.lanes.every = 0.2
    msgs = setup.stream.in_order()

    async def main() -> tuple[float, float]:
        started = asyncio.get_running_loop().time()
        await setup.deliver(msgs[:1])
        first = asyncio.get_running_loop().time() - started
        tasks = []
        for m in msgs[1:]:                                        # a steady trickle, 3 ms apart
            placed = item_of(m)
            assert placed is not None
            tasks.append(setup.lanes.take(*placed))
            await asyncio.sleep(0.003)
        await asyncio.gather(*tasks)
        return first, asyncio.get_running_loop().time() - started

    first, took = asyncio.run(main())
    assert first < 0.1                                            # the first: at once
    assert 2 <= setup.bucket.writes <= 2 + took / 0.2             # the rest: once an interval at most
    assert all(m.acked and not m.naks for m in msgs)
    assert setup.bucket.entry() == entry_of(setup.events)
