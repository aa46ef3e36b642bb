"""The outbox and its seat book, event by event (no servers): which messages a stored
event becomes, their ids, headers and views, and to whom the private copies go."""

from __future__ import annotations

import random

import msgspec
import pytest
from studroom.domain import simulate, views
from studroom.domain.commands import BuyIn, JoinWaitingList, Leave, SitDown
from studroom.domain.events import CardsDealt, Event, HandStarted, SeatOffered, TableOpened
from studroom.domain.table import Table
from studroom.services.relay.errors import RelayError
from studroom.services.relay.outbox import Outbox
from studroom.services.relay.seat_book import SeatBook
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.store.port import Notification
from studroom.services.wire import subjects

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
    [message] = Outbox(STORE, store.load).messages(opened).publish
    assert message.stream == subjects.PUBLIC_STREAM
    assert message.subject == subjects.public_event("t1", "TableOpened")
    assert message.msg_id == f"{STORE}:1"
    assert message.headers == {
        "Nats-Msg-Id": f"{STORE}:1",
        "Nats-Expected-Stream": subjects.PUBLIC_STREAM,
        "Studroom-Version": "1",
        "Studroom-Event": "TableOpened",
    }
    assert message.payload == encode(views.public(opened.event))
    assert message.table == "t1"


def test_R33_dealt_down_cards_go_to_each_holder_own_subject_as_his_private_view() -> None:
    store = _store(("t1", _one_hand()))
    outbox = Outbox(STORE, store.load)
    for n in _notes(store):
        messages = outbox.messages(n).publish
        if isinstance(n.event, HandStarted):
            players = {s.seat: s.player for s in n.event.seats}
        if not isinstance(n.event, CardsDealt):
            assert len(messages) == 1
            continue
        public, *private = messages
        assert public.payload == encode(views.public(n.event))
        owners = views.owners_of_private_cards(n.event)
        assert owners and [m.msg_id for m in private] == [f"{STORE}:{n.id}:{seat}" for seat in owners]
        for seat, message in zip(owners, private, strict=True):
            assert message.stream == subjects.PRIVATE_STREAM
            assert message.subject == subjects.private_events(players[seat], "t1")
            assert message.payload == encode(views.private(n.event, seat))
            assert message.headers == {
                "Nats-Msg-Id": message.msg_id,
                "Nats-Expected-Stream": subjects.PRIVATE_STREAM,
                "Studroom-Version": str(n.version),
                "Studroom-Event": "CardsDealt",
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
        [m.subject for m in outbox.messages(n).publish if m.stream == subjects.PRIVATE_STREAM and m.msg_id.endswith(":1")]
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
    publics = [outbox.messages(n).publish[0] for n in _notes(store)]
    assert [(m.msg_id, m.table, m.headers["Studroom-Version"]) for m in publics] == [
        (f"{STORE}:1", "a", "1"), (f"{STORE}:2", "a", "2"), (f"{STORE}:3", "a", "3"),
        (f"{STORE}:4", "b", "1"), (f"{STORE}:5", "b", "2"),
        (f"{STORE}:6", "a", "4"), (f"{STORE}:7", "a", "5"),
    ]


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
    expected = [following.messages(n) for n in notes]
    assert following.seats.rebuilds == 0
    for start in (2, len(notes) // 3, len(notes) - 5):
        restarted = Outbox(STORE, store.load)
        assert [restarted.messages(n) for n in notes[start:]] == expected[start:]
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
    *_, last = [outbox.messages(n).publish for n in _notes(store)]
    public, private = last
    assert public.payload == private.payload == encode(views.public(offered))
    assert private.subject == subjects.private_events("dan", "t1")
    assert private.stream == subjects.PRIVATE_STREAM and private.msg_id == f"{STORE}:{len(events)}:{offered.seat}"
