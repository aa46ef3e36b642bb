"""The dispute replay's timeline: who was asked to act and until when, what he did,
timeouts against their deadlines, every card, pots and rake, and the verdict; seen
as one player it shows no card he may not see (R23), not even in a difference."""

from __future__ import annotations

import re

import msgspec
import pytest
from studroom.domain.events import (
    CardsDealt,
    DealtCard,
    Event,
    HandMucked,
    HandShown,
    ShowdownStarted,
    TimedOut,
)
from studroom.domain.hands import HandSpan, spans
from studroom.domain.simulate import SimulatedTable
from studroom.services.disputes.checks import check_hand
from studroom.services.disputes.timeline import render

CARD = re.compile(r"\b[2-9TJQKA][cdhs]\b")


@pytest.fixture(scope="module")
def record() -> list[Event]:
    return SimulatedTable("t03", "seven_card_stud", 6, seed=5).play(30)


def _hand_with(events: list[Event], kind: type) -> HandSpan:
    return next(s for s in spans(events) if s.end and any(isinstance(e, kind) for e in events[s.start:s.end]))


def test_R20_the_timeline_tells_turns_deadlines_timeouts_cards_pots_and_the_verdict(record: list[Event]) -> None:
    span = _hand_with(record, TimedOut)
    text = render(check_hand(record, span), record)
    assert f"Hand {span.hand_no} at table t03: seven_card_stud, stakes 20/40" in text
    assert "Played 2025-12-01" in text
    assert re.search(r"^\d\d:\d\d:\d\d\.\d{3}  service\.timer\s+Timeout\(turn=\d+\)", text, re.MULTILINE)
    assert re.search(r"turn \d+ timed out \(deadline \d\d:\d\d:\d\d\.\d{3}(, [+-]\d+\.\d{3} s after it)?\)", text)
    assert re.search(r"turn \d+ \(act\): seat \d \S+, until \d\d:\d\d:\d\d\.\d{3}; may ", text)
    assert "3rd street: seat" in text and "(down)" in text
    assert re.search(r"pot 0 \(main\): \d+, rake \d+, eligible seats", text)
    assert text.rstrip().splitlines()[-1].startswith("Verdict: CONSISTENT.")


def _hidden_from(events: list[Event], span: HandSpan, seat: int) -> set[str]:
    """The cards of the hand the player in ``seat`` may not see (R23)."""
    hand = events[span.start:span.end]
    order = next((e.order for e in hand if isinstance(e, ShowdownStarted)), [])
    shown = {c for e in hand if isinstance(e, HandShown) for c in e.cards}
    mucked = {c for e in hand if isinstance(e, HandMucked) for c in e.cards} if seat in order else set()
    downs = {d.card for e in hand if isinstance(e, CardsDealt) for d in e.cards if not d.up and d.seat != seat}
    burned = {c for e in hand if isinstance(e, CardsDealt) for c in e.burned}
    return (downs | burned) - shown - mucked


def test_R23_seen_as_a_player_the_timeline_shows_no_card_he_may_not_see(record: list[Event]) -> None:
    span = _hand_with(record, HandMucked)
    started = record[span.start]
    full = render(check_hand(record, span), record)
    for seat in started.seats:  # type: ignore[attr-defined]
        text = render(check_hand(record, span), record, seat.player)
        assert f"Seen as {seat.player} (seat {seat.seat})" in text
        assert not set(CARD.findall(text)) & _hidden_from(record, span, seat.seat), seat
        assert started.seed not in text and 'seed="(hidden)"' in text  # type: ignore[attr-defined]
    assert set(CARD.findall(full)) >= _hidden_from(record, span, started.seats[0].seat)  # type: ignore[attr-defined]


def test_R23_a_difference_in_a_hidden_card_is_not_shown_to_a_player(record: list[Event]) -> None:
    span = _hand_with(record, HandMucked)
    place = next(i for i in range(span.start, span.end or 0)
                 if isinstance(record[i], CardsDealt) and record[i].street == 0)  # type: ignore[attr-defined]
    dealt = record[place]
    assert isinstance(dealt, CardsDealt)
    owner, other = dealt.cards[0].seat, next(d.seat for d in dealt.cards if d.seat != dealt.cards[0].seat)
    d = dealt.cards[0]
    changed = list(record)
    changed[place] = msgspec.structs.replace(dealt, cards=[DealtCard(d.seat, "2c" if d.card != "2c" else "3c", False,
                                                                      d.proof), *dealt.cards[1:]])
    name = next(s.player for s in record[span.start].seats if s.seat == other)  # type: ignore[attr-defined]
    text = render(check_hand(changed, span), changed, name)
    assert "Verdict: DIFFERENT." in text
    assert f"the record and the rules differ in what {name} may not see" in text
    assert d.card not in set(CARD.findall(text.split("Verdict:")[1]))
    owner_name = next(s.player for s in record[span.start].seats if s.seat == owner)  # type: ignore[attr-defined]
    assert "cards[0].card: record" in render(check_hand(changed, span), changed, owner_name)
