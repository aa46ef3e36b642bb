"""A table's stream cut into hands: numbered from 1, a cancelled attempt (R5) keeps its
number, and each hand's time comes back from its first turn."""

from __future__ import annotations

import random

import msgspec
import pytest
from studroom.domain.authority import Sender
from studroom.domain.commands import (
    BuyIn,
    ConfigureTable,
    OpenTable,
    PostAnte,
    SitDown,
    SkipAnte,
    StartHand,
    Timeout,
)
from studroom.domain.config import TableConfig
from studroom.domain.events import HandCancelled, HandEnded, HandStarted, TurnStarted
from studroom.domain.hands import (
    ConfigTimeline,
    NoSuchHand,
    config_of,
    find,
    spans,
    started_ms,
    turn_clock,
)
from studroom.domain.simulate import STAKES, new_table, play_hand
from studroom.domain.table import Table


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


def test_each_hand_runs_on_the_settings_stored_before_it() -> None:
    """An operator's new settings (TableConfigured, stored mid-hand) are those of the
    next hand: the timeline of settings gives each hand its own (the history's export,
    verify's clock of a hand)."""
    rng = random.Random(5)
    table, events = new_table("seven_card_stud", 2)
    events += play_hand(table, rng)
    events += table.execute(StartHand(seed=rng.randbytes(32).hex()))
    second = len(events) - 1
    while not isinstance(events[second], HandStarted):
        second -= 1
    assert table.config is not None
    slower = msgspec.structs.replace(table.config, action_seconds=30)
    floor = Sender("operator", "floor")
    events += table.execute(ConfigureTable(config=slower, command_id="1"), floor)   # mid-hand: from the next
    while table.hand is not None:
        events += table.execute(Timeout(turn=table.last_turn.turn))  # type: ignore[union-attr]
    events += play_hand(table, rng)
    third = max(i for i, e in enumerate(events) if isinstance(e, HandStarted))
    timeline = ConfigTimeline(events)
    assert timeline.at(second).action_seconds == config_of(events).action_seconds == 10
    assert timeline.at(third).action_seconds == 30
    first_turn = next(e for e in events[third:] if isinstance(e, TurnStarted))
    assert started_ms(events[third:], timeline.at(third)) == first_turn.deadline_ms - 30_000
