"""The lobby reads the relay's messages of several events (one message per commit,
issue 20; services/wire/event_messages.py) as it read one event a message: a message
of several events folds to the entry of the same events one a message; a message
applied before (all its events at or below the entry's version) changes nothing and
is not even decoded; one that overlaps the entry applies only its later events; one
that starts past the entry's next version takes its predecessors from the stream, or
the table's view when the stream lost them; a first-format message (one event, an
object) still folds, delivered or read back; and ``studroom watch`` takes a message's
events one by one.  Without servers (lobby_fakes.py)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from lobby_fakes import Msg, Setup, message
from lobby_tables import T0, entry_of, played
from studroom.projections.lobby.watching import Follower
from studroom.services.wire.event_messages import events_of

SIZES = {"one a message": (1,), "two": (2,), "a commit's worth": (3, 5, 1, 8, 2), "64": (64,)}


@pytest.mark.parametrize("sizes", list(SIZES.values()), ids=list(SIZES))
def test_a_message_of_several_events_folds_to_the_entry_of_the_same_events_one_a_message(sizes: tuple[int, ...]) -> None:
    events = played()
    assert len(events) < 300        # all in one five-minute bucket: a message's one time changes no figure
    one, several = Setup(events), Setup(events, sizes=sizes)
    for setup in (one, several):
        msgs = setup.stream.in_order()
        asyncio.run(setup.deliver(msgs))
        assert all(m.acked and not m.naks for m in msgs)
        assert setup.lanes.stats.applied == len(events) and not setup.views
    assert several.bucket.entry() == one.bucket.entry() == entry_of(events)


def test_a_message_of_several_events_delivered_again_changes_nothing_and_is_not_decoded() -> None:
    setup = Setup(played(), sizes=SIZES["a commit's worth"])
    asyncio.run(setup.deliver(setup.stream.in_order()))
    before, applied = dict(setup.bucket.values), setup.lanes.stats.applied
    again = [setup.stream.fresh(v) for v in sorted(setup.stream.messages, reverse=True)]
    unreadable = Msg(again[-1].subject, again[-1].relayed, b"not json", again[-1].seq)   # told from its headers
    asyncio.run(setup.deliver([*again, unreadable]))
    assert all(m.acked and not m.naks for m in [*again, unreadable])
    assert setup.bucket.values == before and setup.lanes.stats.applied == applied
    assert setup.lanes.stats.seen == len(again) + 1 and not setup.views


def test_a_message_that_overlaps_the_entry_applies_only_its_later_events() -> None:
    events = played(hands=1)
    setup = Setup(events)
    asyncio.run(setup.deliver([setup.stream.fresh(v) for v in range(1, 21)]))
    overlapping = message(18, events[17:25])                  # versions 18 to 25, the entry at 20
    asyncio.run(setup.deliver([overlapping]))
    assert overlapping.acked and setup.bucket.entry() == entry_of(events[:25])
    assert setup.lanes.stats.applied == 25
    rest = [setup.stream.fresh(v) for v in range(21, len(events) + 1)]
    asyncio.run(setup.deliver(rest))
    assert all(m.acked for m in rest) and setup.bucket.entry() == entry_of(events)
    assert setup.lanes.stats.seen == 5 and not setup.views


def test_a_message_of_several_events_after_a_gap_takes_its_predecessors_from_the_stream() -> None:
    events = played(hands=1)
    setup = Setup(events, sizes=(4,))
    msgs = setup.stream.in_order()
    asyncio.run(setup.deliver(msgs[:3]))                      # versions 1 to 12
    early = msgs[4].again()                                   # 17 to 20; 13 to 16 still on their way
    asyncio.run(setup.deliver([early]))
    assert early.acked and not early.naks and setup.bucket.entry().version == 20
    assert setup.lanes.stats.read_back == 4
    rest = [m.again() for m in msgs[3:]]
    asyncio.run(setup.deliver(rest))
    assert all(m.acked for m in rest)
    assert setup.bucket.entry() == entry_of(events) and not setup.views


def test_a_first_format_message_still_folds_delivered_or_read_back() -> None:
    events = played()
    half = len(events) // 2
    setup = Setup(events, sizes=SIZES["a commit's worth"], old=half)
    msgs = setup.stream.in_order()
    assert msgs[0].data.startswith(b"{") and msgs[-1].data.startswith(b"[")
    asyncio.run(setup.deliver(msgs))
    assert all(m.acked for m in msgs) and setup.bucket.entry() == entry_of(events)

    again = Setup(events, sizes=SIZES["a commit's worth"], old=half)         # a lobby from zero
    last = again.stream.in_order()[-1]
    asyncio.run(again.deliver([last]))                        # everything before it read back
    assert again.bucket.entry() == entry_of(events)
    assert again.lanes.stats.read_back == len(events) - len(events_of(last)) and again.lanes.stats.rebuilt == 1


def test_studroom_watch_takes_a_message_s_events_one_by_one() -> None:
    events = played(hands=1)
    follower = Follower()
    follower.start(entry_of(events[:10]))
    later = message(16, events[15:30])                        # beyond a gap: waits
    for version, event in events_of(later):
        follower.offer(version, event, T0 + 1_000 * version)
    assert follower.entry is not None and follower.entry.version == 10 and follower.behind_since is not None
    for msg in (message(8, events[7:12]), message(13, events[12:15])):    # overlapping, then the rest
        for version, event in events_of(msg):
            follower.offer(version, event, T0 + 1_000 * version)
    assert follower.behind_since is None
    assert follower.entry == msgspec.structs.replace(entry_of(events[:30]), seq=10)
