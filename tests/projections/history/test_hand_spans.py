"""A table's stream cut into hands: numbered from 1, a cancelled attempt (R5) keeps its
number, and each hand's time comes back from its first turn."""

from __future__ import annotations

import random

import pytest
from studroom.domain.commands import (
    BuyIn,
    OpenTable,
    PostAnte,
    SitDown,
    SkipAnte,
    StartHand,
)
from studroom.domain.config import TableConfig
from studroom.domain.events import HandCancelled, HandEnded, HandStarted, TurnStarted
from studroom.domain.simulate import STAKES, new_table, play_hand
from studroom.domain.table import Table
from studroom.domain.hands import (
    NoSuchHand,
    config_of,
    find,
    spans,
    started_ms,
    turn_clock,
)


def _cancelled_then_played() -> list:
    """Hand 1 played, then an attempt at hand 2 cancelled for want of antes (R5), then
    hand 2 played.  The players post their antes themselves."""
    rng = random.Random(3)
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for seat in (0, 1):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}", auto_ante=False))
        events += table.execute(BuyIn(seat=seat, amount=1000))
    events += play_hand(table, rng)
    events += table.execute(StartHand(seed="ab" * 32, now_ms=5_000))
    events += table.execute(SkipAnte(seat=0))
    events += table.execute(SkipAnte(seat=1))
    events += play_hand(table, rng)
    return events


def test_R5_a_cancelled_attempt_keeps_its_number_and_the_played_hand_is_found() -> None:
    events = _cancelled_then_played()
    found = spans(events)
    assert [(s.hand_no, s.cancelled) for s in found] == [(1, False), (2, True), (2, False)]
    assert all(isinstance(events[s.start], HandStarted) for s in found)
    assert isinstance(events[found[1].end - 1], HandCancelled)
    assert isinstance(events[found[2].end - 1], HandEnded)
    assert find(events, 2) == found[2]
    with pytest.raises(NoSuchHand, match="hands played: 1..2"):
        find(events, 3)


def test_a_hand_under_way_has_no_end() -> None:
    table, events = new_table("five_card_stud", 3)
    events += table.execute(StartHand(seed="cd" * 32))
    (span,) = spans(events)
    assert span.end is None and not span.finished
    assert find(events, 1) == span


def test_the_turns_give_back_the_services_clock() -> None:
    table = Table()
    config = TableConfig(game="seven_card_stud", stakes=STAKES, ante_seconds=7, action_seconds=13)
    events = table.execute(OpenTable(table_id="t", config=config))
    for seat in (0, 1):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}", auto_ante=seat == 1))
        events += table.execute(BuyIn(seat=seat, amount=1000))
    events += table.execute(StartHand(seed="ef" * 32, now_ms=1_000_000))
    events += table.execute(PostAnte(seat=0, now_ms=1_004_000))
    turns = [e for e in events if isinstance(e, TurnStarted)]
    assert config_of(events) == config
    assert [turn_clock(t, config) for t in turns] == [1_000_000, 1_004_000]
    hand = events[spans(events)[0].start:]
    assert started_ms(hand, config) == 1_000_000
