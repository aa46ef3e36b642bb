"""What the relay publishes (rules R32, R33), without servers.

Thousands of events of random hands (``domain.simulate``-style play: every game,
timeouts, players leaving and new players taking their seats, live-dealer tables
with exposed 7th cards) go through an in-memory store and the relay's message
builder (``relay.outbox.Outbox``), exactly as the relay would publish them.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

import msgspec
import pytest
from studroom.domain.commands import (
    BuyIn,
    Command,
    DealStreet,
    Leave,
    OpenTable,
    PostAnte,
    Show,
    SitDown,
    SitOut,
    StartHand,
    Timeout,
)
from studroom.domain.config import TableConfig
from studroom.domain import errors
from studroom.domain.errors import DomainError
from studroom.domain.events import (
    CardsDealt,
    HandCancelled,
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    LastCardsExposed,
    Event,
    TurnStarted,
)
from studroom.domain.table import Table
from studroom.domain import simulate
from studroom.services.wire import event_messages, subjects
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.relay.outbox import Outbox, Outgoing

STORE = "studroom_p0"


def decode_event(data: bytes) -> Event:
    """A message of one event (here each notification is relayed alone)."""
    [event] = event_messages.decode_events(data)
    return event


# ----------------------------------------------------------------------- simulation


def _play_hand(table: Table, rng: random.Random, timeout_rate: float) -> list:
    """simulate.play_hand, plus a live dealer's console (R28: sometimes a 7th card
    comes up exposed).  Players sat out by a timed-out turn (R34) sit in again first."""
    events = [e for seat in simulate.sat_out(table) for e in table.execute(SitOut(seat=seat, sitting_out=False))]
    events += table.execute(StartHand(seed=rng.randbytes(32).hex()))
    while table.hand is not None:
        hand = table.hand
        assert table.config is not None and table.game is not None
        if hand.phase == "deal" and not table.config.auto_deal:
            last = hand.street + 1 == table.game.last_street
            live = [p.seat for p in hand.live()]
            exposed = [rng.choice(live)] if last and rng.random() < 0.5 else []
            events += table.execute(DealStreet(exposed=exposed))
            continue
        turn = next(e for e in reversed(events) if isinstance(e, TurnStarted))
        if rng.random() < timeout_rate:
            command: Command = Timeout(turn=turn.turn)
        elif turn.kind == "ante":
            command = PostAnte(seat=next(s for s, p in hand.players.items() if not p.posted and not p.folded))
        else:
            command = simulate.choose(turn, rng)
        try:
            events += table.execute(command)
        except DomainError as refused:
            if refused.code != errors.MUST_SHOW:
                raise
            events += table.execute(Show(seat=command.seat))  # type: ignore[attr-defined]
    return events


def play_table(table_id: str, game: str, players: int, hands: int, rng: random.Random, *,
               live_dealer: bool = False, churn: float = 0.0, timeout_rate: float = 0.0) -> list[list]:
    """A table's events as the commits that wrote them (one list per command group)."""
    table = Table()
    config = TableConfig(game=game, stakes=simulate.STAKES, auto_deal=not live_dealer)
    commits = [table.execute(OpenTable(table_id=table_id, config=config))]
    for seat in range(players):
        commits.append(table.execute(SitDown(seat=seat, player=f"{table_id}-p{seat}"))
                       + table.execute(BuyIn(seat=seat, amount=2000)))
    newcomers = 0
    for _ in range(hands):
        if rng.random() < churn:   # someone leaves; a new player takes the seat
            seat = rng.choice(sorted(table.seats))
            newcomers += 1
            commits.append(table.execute(Leave(seat=seat)))
            commits.append(table.execute(SitDown(seat=seat, player=f"{table_id}-n{newcomers}"))
                           + table.execute(BuyIn(seat=seat, amount=2000)))
        commits.append(_play_hand(table, rng, timeout_rate))
        if (more := simulate.top_up(table, 2000)):
            commits.append(more)
    return commits


def fill_store(seed: int = 33) -> InMemoryEventStore:
    """Many tables of every kind, their commits interleaved in one store."""
    rng = random.Random(seed)
    tables = {
        "stud7": play_table("stud7", "seven_card_stud", 8, 60, rng, timeout_rate=0.05),
        "hilo": play_table("hilo", "seven_card_stud_hilo", 5, 60, rng, churn=0.2),
        "five": play_table("five", "five_card_stud", 10, 60, rng, timeout_rate=0.1, churn=0.1),
        "live": play_table("live", "seven_card_stud", 6, 60, rng, live_dealer=True, churn=0.2),
        "duel": play_table("duel", "seven_card_stud", 2, 60, rng, timeout_rate=0.2),
    }
    store = InMemoryEventStore(name=STORE)
    versions = dict.fromkeys(tables, 0)
    queues = {t: list(commits) for t, commits in tables.items()}
    while any(queues.values()):
        table_id = rng.choice([t for t, q in queues.items() if q])
        events = queues[table_id].pop(0)
        store.append([(table_id, versions[table_id], events)])
        versions[table_id] += len(events)
    return store


@dataclass
class Relayed:
    store: InMemoryEventStore
    notes: list = field(default_factory=list)
    messages: list[list[Outgoing]] = field(default_factory=list)   # per notification, relayed alone


@pytest.fixture(scope="module")
def relayed() -> Relayed:
    store = fill_store()
    outbox = Outbox(STORE, store.load)
    result = Relayed(store, store.read_notifications(1, 10**9))
    letters = [outbox.messages([n]) for n in result.notes]
    assert not any(each.set_aside for each in letters)
    result.messages = [each.publish for each in letters]
    assert outbox.seats.rebuilds == 0
    return result


def test_the_simulation_is_big_and_varied(relayed: Relayed) -> None:
    kinds = {type(n.event).__name__ for n in relayed.notes}
    assert len(relayed.notes) > 10_000
    assert sum(isinstance(n.event, HandStarted) for n in relayed.notes) == 300
    assert {"HandShown", "HandMucked", "LastCardsExposed", "PlayerLeft", "TimedOut"} <= kinds


# ------------------------------------------------------------------------- R32 / R33


def _hands(relayed: Relayed):
    """Per hand: (its notifications' indices, dealer's down cards, cards per seat)."""
    by_table: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(relayed.notes):
        by_table[n.stream_id].append(i)
    for indices in by_table.values():
        current: list[int] | None = None
        for i in indices:
            event = relayed.notes[i].event
            if isinstance(event, HandStarted):
                current = []
            if current is not None:
                current.append(i)
            if isinstance(event, (HandEnded, HandCancelled)) and current is not None:
                events = [relayed.notes[j].event for j in current]
                down: set[str] = set()
                cards_of: dict[int, set[str]] = defaultdict(set)
                for e in events:
                    if isinstance(e, CardsDealt):
                        for d in e.cards:
                            assert d.card is not None
                            cards_of[d.seat].add(d.card)
                            if not d.up:
                                down.add(d.card)
                yield current, down, cards_of
                current = None


def test_R33_public_copies_never_show_a_down_card_before_the_hand_ends(relayed: Relayed) -> None:
    checked = 0
    for indices, down, cards_of in _hands(relayed):
        assert down
        for i in indices:
            event = relayed.notes[i].event
            public = relayed.messages[i][0]
            assert public.stream == subjects.PUBLIC_STREAM
            assert public.subject == subjects.public_message(relayed.notes[i].stream_id, event_messages.mark_of([type(event).__name__]))
            if isinstance(event, HandEnded):
                break
            copy = decode_event(public.payload)
            payload = public.payload
            if isinstance(copy, HandShown):           # a showdown reveals his own cards
                assert set(copy.cards) <= cards_of[copy.seat]
                continue
            if isinstance(copy, LastCardsExposed):    # R28: turned up, now public
                for d in copy.turned:
                    assert d.up and d.card in cards_of[d.seat]
                payload = msgspec.json.encode(msgspec.structs.replace(copy, turned=[]))
            leaked = [c for c in down if f'"{c}"'.encode() in payload]
            assert not leaked, (type(event).__name__, leaked, payload)
            for value in public.headers.values():
                assert value not in down
            checked += 1
    assert checked > 10_000


def test_R33_public_card_lists_hide_every_down_card(relayed: Relayed) -> None:
    for n, messages in zip(relayed.notes, relayed.messages, strict=True):
        if isinstance(n.event, CardsDealt):
            copy = decode_event(messages[0].payload)
            assert [d.card is None for d in copy.cards] == [not d.up for d in n.event.cards]
            assert [d.card for d in copy.cards if d.up] == [d.card for d in n.event.cards if d.up]
            assert copy.burned == [] and copy.stub == []
        elif type(n.event).__name__ == "HandMucked":
            assert decode_event(messages[0].payload).cards == []   # R23: never public


def test_R32_the_seed_is_never_published(relayed: Relayed) -> None:
    """R32 as revised: not in any public or private message of its hand, nor after."""
    hands = 0
    for indices, _down, _cards in _hands(relayed):
        started = relayed.notes[indices[0]].event
        assert isinstance(started, HandStarted) and started.seed
        assert started.deck == []         # a seeded deck is never listed: the seed fixes it
        seed = started.seed.encode()
        for i in indices:
            assert all(seed not in message.payload for message in relayed.messages[i])
            copy = decode_event(relayed.messages[i][0].payload)
            if isinstance(copy, HandStarted):
                assert copy.deck == [] and copy.seed is None
                assert copy.commitment == started.commitment
        hands += isinstance(relayed.notes[indices[-1]].event, HandEnded)
    assert hands > 250


def test_R33_each_private_copy_carries_exactly_its_owners_down_cards(relayed: Relayed) -> None:
    seat_player: dict[str, dict[int, str]] = {}
    copies = 0
    for n, messages in zip(relayed.notes, relayed.messages, strict=True):
        event = n.event
        if isinstance(event, HandStarted):
            seat_player[n.stream_id] = {s.seat: s.player for s in event.seats}
        private = messages[1:]
        if isinstance(event, HandMucked):        # R23: to the showdown's participants
            assert [m.msg_id for m in private] == [f"{STORE}:{n.id}:{s}" for s in sorted(event.participants)]
            continue
        if not isinstance(event, CardsDealt):
            assert private == []
            continue
        owners = sorted({d.seat for d in event.cards if not d.up})
        assert [m.msg_id for m in private] == [f"{STORE}:{n.id}:{s}" for s in owners]
        for seat, message in zip(owners, private, strict=True):
            assert message.stream == subjects.PRIVATE_STREAM
            assert message.subject == subjects.private_events(seat_player[n.stream_id][seat], n.stream_id)
            copy = decode_event(message.payload)
            assert isinstance(copy, CardsDealt)
            mine = [d.card for d in copy.cards if not d.up and d.card is not None]
            assert mine == [d.card for d in event.cards if d.seat == seat and not d.up]
            assert all(d.card is None for d in copy.cards if not d.up and d.seat != seat)
            assert [d.card for d in copy.cards if d.up] == [d.card for d in event.cards if d.up]
            assert copy.burned == [] and copy.stub == []
            copies += 1
    assert copies > 2_000


def test_R33_message_ids_and_headers(relayed: Relayed) -> None:
    ids = set()
    for n, messages in zip(relayed.notes, relayed.messages, strict=True):
        public = messages[0]
        assert public.msg_id == f"{STORE}:{n.id}"
        assert public.headers["Nats-Msg-Id"] == public.msg_id
        assert public.headers["Studroom-Version"] == str(n.version)
        assert public.headers["Studroom-Events"] == type(n.event).__name__
        for m in messages:
            assert m.headers["Nats-Msg-Id"] == m.msg_id
            assert m.headers["Nats-Expected-Stream"] == m.stream
            assert m.table == n.stream_id
            ids.add(m.msg_id)
    assert len(ids) == sum(map(len, relayed.messages))


def test_R33_a_relay_started_mid_stream_sends_private_cards_to_the_same_subjects(relayed: Relayed) -> None:
    """After a restart the relay meets tables mid-stream: it rebuilds seat -> player
    from the store (players came and went), and publishes exactly the same messages."""
    rng = random.Random(5)
    starts = sorted(rng.sample(range(2, len(relayed.notes)), 25))
    for start in starts:
        outbox = Outbox(STORE, relayed.store.load)
        for n in relayed.store.read_notifications(start, 400):
            assert outbox.messages([n]).publish == relayed.messages[n.id - 1]
        assert outbox.seats.rebuilds >= 1


def test_mucked_hand_events_exist_and_stay_hidden(relayed: Relayed) -> None:
    mucked = [(n, m) for n, m in zip(relayed.notes, relayed.messages, strict=True)
              if type(n.event).__name__ == "HandMucked"]
    assert mucked
    for n, messages in mucked:
        assert n.event.cards
        assert all(f'"{c}"'.encode() not in messages[0].payload for c in n.event.cards)
        assert len(messages) == 1 + len(n.event.participants)     # R23: privately to the showdown's players
