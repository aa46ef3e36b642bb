"""The msgspec mapper (services/store/codec.py): every table event survives the store's
encoding, and a topic nobody knows is an error, not a silent None. No servers."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from eventsourcing.utils import TopicError

from studroom.domain.config import Stakes, TableConfig
from studroom.domain.events import (
    EVENT_TYPES,
    SeatOffered,
    WaitingListJoined,
    WaitingListLeft,
    Acted,
    Announced,
    AntePosted,
    AnteSkipped,
    AntesCollected,
    CardProof,
    CardsDealt,
    ChipsBought,
    DealtCard,
    HandCancelled,
    HandEnded,
    HandMucked,
    HandSeat,
    HandShown,
    HandStarted,
    LastCardsExposed,
    LeaveRequested,
    PauseEnded,
    PauseStarted,
    PlayerLeft,
    PlayerSatDown,
    PotAwarded,
    RoundEnded,
    RoundStarted,
    ShowdownStarted,
    SitOutChanged,
    TableClosed,
    TableClosing,
    TableConfigured,
    TableOpened,
    TablePaused,
    TableResumed,
    TimedOut,
    TurnStarted,
)
from studroom.services.store.codec import MsgspecMapper, NullTranscoder

CONFIG = TableConfig(game="seven_card_stud_hilo", stakes=Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40))

PROOF = CardProof(place=9, salt=bytes(range(16)), path=bytes(range(192)))   # R32: bytes travel too

# One of each, with the optional fields set where they have any (defaults must survive too).
SAMPLES: list[Any] = [
    TableOpened(table_id="t1", config=CONFIG, command_id="c-1"),
    PlayerSatDown(seat=2, player="ann", auto_ante=False),
    ChipsBought(seat=2, amount=1000),
    SitOutChanged(seat=2, sitting_out=True, reason="timed_out", since_ms=1_700_000_000_000),
    PlayerLeft(seat=2, player="ann", cashed_out=940, reason="sat_out_too_long"),
    LeaveRequested(seat=3, reason="removed"),
    TableConfigured(config=CONFIG, command_id="operator.floor#3"),
    TablePaused(),
    TableResumed(),
    TableClosing(),
    TableClosed(),
    WaitingListJoined(player="ann"),
    WaitingListLeft(player="ann", reason="offer_passed"),
    SeatOffered(player="ann", seat=3, until_ms=60_000),
    HandStarted(hand_no=7, button=1, seats=[HandSeat(2, "ann", 1000), HandSeat(3, "bob", 800)],
                commitment="ab" * 32, seed="cd" * 32),
    AntePosted(seat=3, amount=4, all_in=True, entropy="0f" * 32),
    AnteSkipped(seat=4),
    HandCancelled(hand_no=7, reason="fewer than two antes", refunds={2: 5}),
    AntesCollected(seats=[2, 3], deck_root="ef" * 32, deck_size=52),
    CardsDealt(street=4, cards=[DealtCard(2, "As", False, PROOF), DealtCard(3, None, True)], community="Kd",
               community_proof=PROOF, burned=["2c"], reshuffled=True, stub=["3c", "4c"]),
    LastCardsExposed(exposed_seat=2, turned=[DealtCard(3, "9h", True, PROOF)], skip_betting=True),
    RoundStarted(street=0, opener=3, first=2, bring_in=True, door_card="2c", open_pair=True),
    TurnStarted(turn=12, seat=None, kind="ante", deadline_ms=1_700_000_000_000, to_call=10,
                options=["call", "fold"]),
    Acted(seat=2, action="raise", amount=40, to=60, all_in=True, full=False),
    TimedOut(turn=12, seat=3, outcome="protected"),
    PauseStarted(turn=13, deadline_ms=1_700_000_001_500, pause_ms=1500, purpose="sit_out_limit"),
    PauseEnded(turn=13, command_id="service.timer#7"),
    Announced(seat=2, kind="pair", rank="A", draws=["flush"], en="pair of aces", de="Paar Asse"),
    RoundEnded(street=4, returned_seat=2, returned=20),
    ShowdownStarted(order=[3, 2]),
    HandShown(seat=2, cards=["As", "Ad", "Kc"], high="pair of aces", low="8-7-5-4-2", proofs=[PROOF] * 3),
    HandMucked(seat=3, cards=["2c", "7d"], proofs=[PROOF] * 2, participants=[2, 3]),
    PotAwarded(pot=0, amount=200, rake=5, eligible=[2, 3], high={2: 98}, low={3: 97}),
    HandEnded(hand_no=7, ended_on="showdown", stacks={2: 1100, 3: 700}, net={2: 100, 3: -100}, rake=5),
]


def test_the_samples_cover_every_table_event() -> None:
    assert sorted(type(e).__name__ for e in SAMPLES) == sorted(t.__name__ for t in EVENT_TYPES)


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_every_event_type_round_trips_through_the_mapper(event: Any) -> None:
    mapper = MsgspecMapper()
    topic, state = mapper.encode(event)
    assert topic == f"studroom.domain.events:{type(event).__name__}"
    assert isinstance(state, bytes) and msgspec.json.decode(state)["type"] == type(event).__name__
    decoded = MsgspecMapper().decode(topic, state)      # a fresh mapper: nothing cached
    assert decoded == event and type(decoded) is type(event)


def test_an_unknown_topic_is_an_error() -> None:
    mapper = MsgspecMapper()
    _, state = mapper.encode(SAMPLES[0])
    with pytest.raises(TopicError):
        mapper.decode("studroom.domain.events:NoSuchEvent", state)
    with pytest.raises(TopicError):
        mapper.decode("no_such_module:TableOpened", state)


def test_state_that_does_not_fit_its_topic_is_an_error() -> None:
    mapper = MsgspecMapper()
    _, state = mapper.encode(ChipsBought(seat=1, amount=5))
    with pytest.raises(msgspec.ValidationError):
        mapper.decode(mapper.topic(TableOpened), state)


def test_the_null_transcoder_passes_bytes_through() -> None:
    transcoder = NullTranscoder()
    assert transcoder.encode(b"\x00raw") == b"\x00raw"
    assert transcoder.decode(b"\x00raw") == b"\x00raw"
    assert transcoder.encode({"a": 1}) == b'{"a":1}'
