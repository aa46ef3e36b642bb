"""The outbox and its seat book (no servers): which messages stored events become (a
table's consecutive events in one public message), their ids, headers and views, and to
whom the private copies go."""

from __future__ import annotations

import random

import msgspec
import pytest
from studroom.domain import simulate, views
from studroom.domain.commands import BuyIn, JoinWaitingList, Leave, SitDown
from studroom.domain.events import CardsDealt, Event, HandStarted, PlayerLeft, SeatOffered, TableOpened, TurnStarted
from studroom.domain.table import Table
from studroom.services.relay.errors import RelayError
from studroom.services.relay.outbox import Outbox, Outgoing
from studroom.services.relay.seat_book import SeatBook
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.store.port import Notification
from studroom.services.wire import event_messages, subjects

STORE = "studroom_p7"
encode = msgspec.json.encode


def _store(*tables: tuple[str, list[Event]]) -> InMemoryEventStore:
    store = InMemoryEventStore(name=STORE)
    for table_id, events in tables:
        store.append([(table_id, 0, events)])
    return store


def _one_hand(seed: int = 1) -> list[Event]:
    table, events = simulate.new_table("seven_card_stud", 3)
    return events + simulate.play_hand(table, random.Random(seed))


def _notes(store: InMemoryEventStore) -> list[Notification]:
    return store.read_notifications(1, 10**6)


def test_an_event_without_private_cards_is_one_public_message_with_its_id_and_headers() -> None:
    store = _store(("t1", _one_hand()))
    opened = _notes(store)[0]
    assert isinstance(opened.event, TableOpened)
    [message] = Outbox(STORE, store.load).messages([opened]).publish
    assert message.stream == subjects.PUBLIC_STREAM
    assert message.subject == subjects.public_message("t1", "plain")
    assert message.msg_id == f"{STORE}:1"
    assert message.headers == {
        "Nats-Msg-Id": f"{STORE}:1",
        "Nats-Expected-Stream": subjects.PUBLIC_STREAM,
        "Studroom-Version": "1",
        "Studroom-Events": "TableOpened",
    }
    assert message.payload == b"[" + encode(views.public(opened.event)) + b"]"
    assert message.table == "t1"


def test_R33_dealt_down_cards_go_to_each_holder_own_subject_as_his_private_view() -> None:
    store = _store(("t1", _one_hand()))
    outbox = Outbox(STORE, store.load)
    for n in _notes(store):
        messages = outbox.messages([n]).publish
        if isinstance(n.event, HandStarted):
            players = {s.seat: s.player for s in n.event.seats}
        if not isinstance(n.event, CardsDealt):
            assert len(messages) == 1
            continue
        public, *private = messages
        assert public.payload == b"[" + encode(views.public(n.event)) + b"]"
        owners = views.owners_of_private_cards(n.event)
        assert owners and [m.msg_id for m in private] == [f"{STORE}:{n.id}:{seat}" for seat in owners]
        for seat, message in zip(owners, private, strict=True):
            assert message.stream == subjects.PRIVATE_STREAM
            assert message.subject == subjects.private_events(players[seat], "t1")
            assert message.payload == b"[" + encode(views.private(n.event, seat)) + b"]"
            assert message.headers == {
                "Nats-Msg-Id": message.msg_id,
                "Nats-Expected-Stream": subjects.PRIVATE_STREAM,
                "Studroom-Version": str(n.version),
                "Studroom-Events": "CardsDealt",
            }
            assert message.table == "t1"
        break
    else:
        pytest.fail("no cards dealt")


def test_R33_a_newcomer_in_a_seat_gets_the_next_hand_private_cards() -> None:
    rng = random.Random(2)
    table, events = simulate.new_table("seven_card_stud", 3)
    events += simulate.play_hand(table, rng)
    events += table.execute(Leave(seat=1))
    events += table.execute(SitDown(seat=1, player="newcomer")) + table.execute(BuyIn(seat=1, amount=2000))
    events += simulate.top_up(table, 2000)
    second = len(events)
    events += simulate.play_hand(table, rng)
    store = _store(("t1", events))
    outbox = Outbox(STORE, store.load)
    subjects_of_seat_1 = [
        [m.subject for m in outbox.messages([n]).publish if m.stream == subjects.PRIVATE_STREAM and m.msg_id.endswith(":1")]
        for n in _notes(store)
    ]
    before, after = sum(subjects_of_seat_1[:second], []), sum(subjects_of_seat_1[second:], [])
    assert before and set(before) == {subjects.private_events("p1", "t1")}
    assert after and set(after) == {subjects.private_events("newcomer", "t1")}


def test_ids_count_notifications_of_the_store_across_tables() -> None:
    store = InMemoryEventStore(name=STORE)
    a, b = _one_hand(1), _one_hand(2)
    store.append([("a", 0, a[:3]), ("b", 0, b[:2])])
    store.append([("a", 3, a[3:5])])
    outbox = Outbox(STORE, store.load)
    publics = [outbox.messages([n]).publish[0] for n in _notes(store)]
    assert [(m.msg_id, m.table, m.headers["Studroom-Version"]) for m in publics] == [
        (f"{STORE}:1", "a", "1"), (f"{STORE}:2", "a", "2"), (f"{STORE}:3", "a", "3"),
        (f"{STORE}:4", "b", "1"), (f"{STORE}:5", "b", "2"),
        (f"{STORE}:6", "a", "4"), (f"{STORE}:7", "a", "5"),
    ]


def _public(letters: list[Outgoing]) -> list[Outgoing]:
    return [m for m in letters if m.stream == subjects.PUBLIC_STREAM]


def _events(message: Outgoing) -> list[tuple[int, Event]]:
    events = event_messages.decode_events(message.payload)
    first = event_messages.first_version(message.headers, len(events))
    return list(zip(range(first, first + len(events)), events))


def test_a_tables_consecutive_events_read_together_are_one_public_message() -> None:
    """One message per commit (issue 20): a batch's events of a table in one message,
    another table's in between or not; each its own table's versions, in order."""
    store = InMemoryEventStore(name=STORE)
    a, b = _one_hand(1), _one_hand(2)
    store.append([("a", 0, a[:3]), ("b", 0, b[:2])])
    store.append([("a", 3, a[3:5])])
    letters = Outbox(STORE, store.load).messages(_notes(store))
    assert not letters.set_aside
    first, second = _public(letters.publish)
    assert (first.table, first.msg_id, first.headers["Studroom-Version"]) == ("a", f"{STORE}:1", "5")
    assert (second.table, second.msg_id, second.headers["Studroom-Version"]) == ("b", f"{STORE}:4", "2")
    assert _events(first) == [(v, views.public(e)) for v, e in enumerate(a[:5], start=1)]
    assert _events(second) == [(v, views.public(e)) for v, e in enumerate(b[:2], start=1)]
    assert first.headers["Studroom-Events"] == ",".join(type(e).__name__ for e in a[:5])
    assert first.payload == b"[" + b",".join(encode(views.public(e)) for e in a[:5]) + b"]"


def test_the_mark_says_who_wants_a_message_and_private_copies_come_after_the_public() -> None:
    events = _one_hand()
    store = _store(("t1", events))
    messages = Outbox(STORE, store.load).messages(_notes(store)).publish
    [public] = _public(messages)
    assert messages[0] is public                       # a player hears of the hand before its cards
    assert any(isinstance(e, TurnStarted) for e in events) and not any(isinstance(e, PlayerLeft) for e in events)
    assert public.subject == subjects.public_message("t1", "turn")
    assert event_messages.mark_of(["Acted", "PlayerLeft"]) == "left"
    assert event_messages.mark_of(["PlayerLeft", "PauseStarted"]) == "turn_left"
    assert event_messages.mark_of(["Acted"]) == "plain"


def test_a_run_is_cut_at_the_most_events_a_message_holds_and_at_the_size_limit() -> None:
    events = _one_hand() + _one_hand(5)[len(simulate.new_table("seven_card_stud", 3)[1]):]
    store = _store(("t1", events))
    assert len(events) > event_messages.MAX_EVENTS
    publics = _public(Outbox(STORE, store.load).messages(_notes(store)).publish)
    assert [len(_events(m)) for m in publics][0] == event_messages.MAX_EVENTS
    assert [v for m in publics for v, _ in _events(m)] == list(range(1, len(events) + 1))
    small = Outbox(STORE, store.load)
    small.max_payload = 4096 + 2_000
    cut = _public(small.messages(_notes(store)).publish)
    assert len(cut) > len(publics) and all(len(m.payload) <= 2_000 for m in cut)
    assert [v for m in cut for v, _ in _events(m)] == list(range(1, len(events) + 1))


def test_a_view_set_aside_ends_its_run_so_that_each_message_holds_consecutive_versions() -> None:
    events = _one_hand()
    huge = msgspec.structs.replace(events[4], command_id="9" * 2_000_000)
    store = _store(("t1", [*events[:4], huge, *events[5:]]))
    letters = Outbox(STORE, store.load).messages(_notes(store))
    [dead] = letters.set_aside
    assert (dead.version, dead.seat) == (5, None)
    before, after = _public(letters.publish)
    assert [v for v, _ in _events(before)] == [1, 2, 3, 4]
    assert [v for v, _ in _events(after)] == list(range(6, len(events) + 1))


def test_versions_already_published_are_left_out_of_the_public_messages_only() -> None:
    """A recovery's scan says how far each table's public views got; the private
    copies are judged by their ids (store_relay)."""
    events = _one_hand()
    store = _store(("t1", events), ("t2", events))
    dealt = next(v for v, e in enumerate(events, start=1) if isinstance(e, CardsDealt))
    letters = Outbox(STORE, store.load).messages(_notes(store), {"t1": dealt})
    t1, t2 = _public(letters.publish)
    assert [v for v, _ in _events(t1)] == list(range(dealt + 1, len(events) + 1))
    assert [v for v, _ in _events(t2)] == list(range(1, len(events) + 1))
    assert any(m.stream == subjects.PRIVATE_STREAM and m.table == "t1" and m.msg_id.startswith(f"{STORE}:{dealt}:")
               for m in letters.publish)


def test_the_outbox_refuses_a_store_name_that_is_no_subject_token() -> None:
    with pytest.raises(subjects.BadName):
        Outbox("studroom p0", _store().load)


# ------------------------------------------------------------------- the seat book


def test_a_table_met_mid_stream_is_rebuilt_once_then_followed() -> None:
    events = _one_hand()
    store = _store(("t1", events))
    notes = _notes(store)
    book = SeatBook(store.load)
    assert book.follows(notes)                        # from the table's first event on
    assert not book.follows(notes[5:])
    seats = book.before("t1", 6)
    assert book.rebuilds == 1
    assert seats.version == 5
    assert seats.holder(0) == "p0"
    seats.apply(notes[5].event)
    assert book.follows(notes[6:])
    assert book.before("t1", 7) is seats
    assert book.rebuilds == 1


def test_a_rebuild_gives_the_same_messages_as_following_from_the_start() -> None:
    store = _store(("t1", _one_hand(3)), ("t2", _one_hand(4)))
    notes = _notes(store)
    following = Outbox(STORE, store.load)
    expected = [following.messages([n]) for n in notes]
    assert following.seats.rebuilds == 0
    for start in (2, len(notes) // 3, len(notes) - 5):
        restarted = Outbox(STORE, store.load)
        assert [restarted.messages([n]) for n in notes[start:]] == expected[start:]
        assert restarted.seats.rebuilds >= 1


def test_the_least_recently_used_seat_map_is_dropped_and_rebuilt_when_met_again() -> None:
    store = _store(("a", _one_hand(1)), ("b", _one_hand(2)))
    book = SeatBook(store.load, max_tables=1)
    a = book.before("a", 1)
    a.apply(store.load("a")[0])
    book.before("b", 1)                               # a is dropped
    assert book.before("a", 2) is not a
    assert book.rebuilds == 1


def test_a_store_shorter_than_the_version_asked_for_is_an_error() -> None:
    store = _store(("t1", _one_hand()[:4]))
    with pytest.raises(RelayError, match="the store has 4 events"):
        SeatBook(store.load).before("t1", 9)


def test_seat_maps_follow_the_aggregate() -> None:
    """The outbox's seat maps are the domain's: rebuilt from a table's events they
    agree with the table's own seats."""
    events = _one_hand()
    store = _store(("t1", events))
    seats = SeatBook(store.load).before("t1", len(events) + 1)
    assert seats.seated == {seat: s.player for seat, s in Table.replay(events).seats.items()}


def test_a_seat_offered_from_the_waiting_list_reaches_its_player_who_holds_no_seat() -> None:
    """The player offered a seat sits nowhere: his copy goes by name (``__addressee__``),
    not to the seat's last holder, and is the public copy (the offer holds no secret)."""
    table, events = simulate.new_table("seven_card_stud", 2, seats=2)     # full
    events += table.execute(JoinWaitingList(player="dan"))
    events += table.execute(Leave(seat=1))
    offered = events[-1]
    assert isinstance(offered, SeatOffered) and offered.player == "dan"
    store = _store(("t1", events))
    outbox = Outbox(STORE, store.load)
    *_, last = [outbox.messages([n]).publish for n in _notes(store)]
    public, private = last
    assert public.payload == private.payload == b"[" + encode(views.public(offered)) + b"]"
    assert private.subject == subjects.private_events("dan", "t1")
    assert private.stream == subjects.PRIVATE_STREAM and private.msg_id == f"{STORE}:{len(events)}:{offered.seat}"
