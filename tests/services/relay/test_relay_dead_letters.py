"""Dead letters without servers: which messages of a stored event the outbox sets
aside (a name that is no subject token, a seat nobody holds, too big a message), what
a record says (never a card), and that recording one twice finds the first."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

import msgspec
import nats.js.errors
from studroom.domain import simulate, views
from relay_stack import renamed
from studroom.domain.events import CardsDealt, Event
from studroom.services.relay.dead_letters import DeadLetter
from studroom.services.wire.dead_letters import SHOWN, set_aside
from studroom.services.relay.outbox import Letters, Outbox, dead_letter, wire_size
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.wire import subjects

STORE = "studroom_p7"


def _one_hand(seed: int = 1) -> list[Event]:
    table, events = simulate.new_table("seven_card_stud", 3)
    return events + simulate.play_hand(table, random.Random(seed))


def _relay(table_id: str, events: list[Event], max_payload: int | None = None) -> list[Letters]:
    store = InMemoryEventStore(name=STORE)
    store.append([(table_id, 0, events)])
    outbox = Outbox(STORE, store.load)
    if max_payload is not None:
        outbox.max_payload = max_payload
    return [outbox.messages([n]) for n in store.read_notifications(1, 10**6)]   # one event a message


def _cards_of(events: list[Event], seat: int) -> set[str]:
    return {d.card for e in events if isinstance(e, CardsDealt) for d in e.cards if d.seat == seat and not d.up}


def test_a_player_whose_name_is_no_subject_token_loses_only_his_private_copies() -> None:
    events = renamed(_one_hand(), "p1", "Zoë")
    letters = _relay("t1", events)
    published = [m for each in letters for m in each.publish]
    dead = [d for each in letters for d in each.set_aside]
    assert len([m for m in published if m.stream == subjects.PUBLIC_STREAM]) == len(events)
    assert {m.subject for m in published if m.stream == subjects.PRIVATE_STREAM} == {
        subjects.private_events("p0", "t1"), subjects.private_events("p2", "t1")}
    dealt = [(i + 1, e) for i, e in enumerate(events) if isinstance(e, CardsDealt) and 1 in views.owners_of_private_cards(e)]
    assert dealt
    assert [(d.notification, d.version, d.seat, d.event) for d in dead] == [
        (n, n, 1, "CardsDealt") for n, _ in dealt]
    assert all(d.table == "t1" and "'Zoë'" in d.reason for d in dead)


def test_a_table_whose_id_is_no_subject_token_is_set_aside_whole() -> None:
    events = _one_hand()
    letters = _relay("table one", events)
    assert all(not each.publish for each in letters)
    dead = [d for each in letters for d in each.set_aside]
    assert len([d for d in dead if d.seat is None]) == len(events)
    assert {d.table for d in dead} == {"table one"}


def test_R33_a_private_copy_for_a_seat_nobody_holds_is_set_aside_never_guessed() -> None:
    events = _one_hand()
    dealt = next(e for e in events if isinstance(e, CardsDealt))
    opened, cards = _relay("t1", [events[0], dealt])        # nobody ever sat down
    assert not opened.set_aside
    [public] = cards.publish                                 # the public view still goes out
    assert public.stream == subjects.PUBLIC_STREAM
    assert [d.seat for d in cards.set_aside] == views.owners_of_private_cards(dealt)
    assert all("nobody holds seat" in d.reason for d in cards.set_aside)


def test_a_message_bigger_than_the_server_takes_is_set_aside() -> None:
    events = _one_hand()
    huge = msgspec.structs.replace(events[1], command_id="9" * 2_000_000)    # a 2 MB command id
    letters = _relay("t1", [events[0], huge, *events[2:]])
    [dead] = [d for each in letters for d in each.set_aside]
    assert (dead.notification, dead.seat, dead.event) == (2, None, "PlayerSatDown")
    assert "more than the server's max_payload of 1048576" in dead.reason
    assert sum(len(each.publish) for each in letters[2:]) == sum(
        1 + len(views.owners_of_private_cards(e)) for e in events[2:])


def test_the_size_limit_counts_the_headers_too() -> None:
    events = _one_hand()[:1]
    [message] = _relay("t1", events)[0].publish
    size = wire_size(message.headers, message.payload)
    assert size > len(message.payload) + sum(len(k) + len(v) for k, v in message.headers.items())
    assert _relay("t1", events, max_payload=size)[0].publish == [message]
    [dead] = _relay("t1", events, max_payload=size - 1)[0].set_aside
    assert f"{size} bytes" in dead.reason


def test_a_message_jetstream_refused_becomes_the_dead_letter_of_its_event_and_copy() -> None:
    events = _one_hand()
    letters = _relay("t1", events)
    dealt = next(each for each in letters if len(each.publish) > 1)
    public, private, *_ = dealt.publish
    assert dead_letter(public, "too big") == DeadLetter(
        STORE, int(public.msg_id.split(":")[1]), "t1", int(public.headers["Studroom-Version"]), "CardsDealt",
        None, "too big")
    seat = int(private.msg_id.split(":")[2])
    assert dead_letter(private, "too big").seat == seat
    assert dead_letter(private, "too big").key == f"{STORE}.{public.msg_id.split(':')[1]}.seat{seat}"


def test_a_record_names_the_event_and_copy_and_never_carries_a_card() -> None:
    events = renamed(_one_hand(), "p1", "Zoë")
    dead = [d for each in _relay("t1", events) for d in each.set_aside]
    cards = _cards_of(events, 1)
    for letter in dead:
        record = msgspec.json.encode(letter)
        assert not any(f'"{card}"'.encode() in record for card in cards)
        assert msgspec.json.decode(record, type=DeadLetter) == letter
        assert letter.key == f"{STORE}.{letter.notification}.seat1"
        assert f"notification {letter.notification} of store {STORE}" in letter.describe()


def test_a_huge_table_id_or_reason_is_cut_in_the_record() -> None:
    [opened] = _one_hand()[:1]
    [letters] = _relay("x" * 10_000, [opened])
    [dead] = letters.set_aside
    assert len(dead.table) < SHOWN + 40 and dead.table.endswith("(10000 characters)")
    assert len(dead.reason) < SHOWN + 40


class FakeBucket:
    """A KV bucket's create (refuses a key that exists) and get."""

    def __init__(self) -> None:
        self.entries: dict[str, bytes] = {}

    async def create(self, key: str, value: bytes) -> int:
        if key in self.entries:
            raise nats.js.errors.KeyWrongLastSequenceError
        self.entries[key] = value
        return len(self.entries)

    async def get(self, key: str) -> Any:
        return SimpleNamespace(value=self.entries[key], revision=1)


def test_setting_a_letter_aside_twice_finds_the_first() -> None:
    letter = DeadLetter(STORE, 7, "t1", 3, "CardsDealt", 2, "nobody holds seat 2")
    bucket = FakeBucket()

    async def twice() -> list[Any]:
        return [await set_aside(bucket, letter), await set_aside(bucket, letter)]

    assert asyncio.run(twice()) == [True, False]
    assert bucket.entries == {f"{STORE}.7.seat2": msgspec.json.encode(letter)}
