"""Dispute replay: every command of the record re-run through the rules gives the
stored events exactly; a tampered record (a changed card, a changed amount, events
in another order, one removed or added, another sender) is caught at the place it
was changed, and the place is named."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import msgspec
import pytest
from studroom.domain.events import (
    Acted,
    CardsDealt,
    DealtCard,
    Event,
    HandStarted,
    PotAwarded,
)
from studroom.domain.hands import HandSpan, spans
from studroom.domain.simulate import SimulatedTable
from studroom.services.disputes.checks import check_hand, check_table


def _finished(events: list[Event]) -> list[HandSpan]:
    return [s for s in spans(events) if s.end is not None]


@pytest.mark.parametrize("game, seats, live", [
    ("seven_card_stud", 6, False), ("seven_card_stud_hilo", 8, False), ("five_card_stud", 10, False),
    ("seven_card_stud", 5, True),
])
def test_R20_R28_R32_every_hand_of_a_played_table_re_runs_consistently(game: str, seats: int, live: bool) -> None:
    events = SimulatedTable("t01", game, seats, seed=seats, live_dealer=live).play(40)
    hands = _finished(events)
    checks = list(check_table(events, hands))
    assert len(checks) == len(hands) > 30
    for check in checks:
        assert check.consistent, (check.difference, check.deck)
    re_run = [s for c in checks for s in c.before + c.steps]
    senders = {s.by.key for s in re_run if s.by is not None}
    assert senders >= {"service.cashier", "service.timer"} | ({"operator.floor"} if live else set())
    assert any(key.startswith("player.") for key in senders)
    assert re_run[0].start == hands[0].start and re_run[-1].start + re_run[-1].count >= (hands[-1].end or 0)
    for before, after in pairwise(re_run):
        assert after.start == before.start + before.count       # every stored event, once


def _tampered(events: list[Event], change: Callable[[list[Event]], int]) -> tuple[list[Event], int, HandSpan]:
    """A copy of the record with one change inside a hand; the place changed."""
    copy = list(events)
    place = change(copy)
    span = next(s for s in _finished(events) if s.start <= place < (s.end or 0))
    return copy, place, span


@pytest.fixture(scope="module")
def record() -> list[Event]:
    return SimulatedTable("t02", "seven_card_stud", 6, seed=11).play(12)


def _nth(events: list[Event], kind: type, n: int = 3, where: Callable[[Event], bool] = lambda e: True) -> int:
    return [i for i, e in enumerate(events) if isinstance(e, kind) and where(e)][n]


def test_R32_a_changed_card_is_named(record: list[Event]) -> None:
    def change(events: list[Event]) -> int:
        i = _nth(events, CardsDealt, where=lambda e: e.street > 0 and bool(e.cards))  # type: ignore[attr-defined]
        dealt = events[i]
        assert isinstance(dealt, CardsDealt)
        d = dealt.cards[0]
        other = "2c" if d.card != "2c" else "3d"
        events[i] = msgspec.structs.replace(dealt, cards=[DealtCard(d.seat, other, d.up, d.proof), *dealt.cards[1:]])
        return i

    events, place, span = _tampered(record, change)
    check = check_hand(events, span)
    assert not check.consistent
    assert check.difference is not None and check.difference.index == place
    assert any(line.startswith("cards[0].card: record ") for line in check.difference.details)
    assert check.deck is not None and not check.deck.fair         # the deck audit names it too


def test_a_changed_amount_is_named(record: list[Event]) -> None:
    def change(events: list[Event]) -> int:
        i = _nth(events, Acted, where=lambda e: e.amount > 0)  # type: ignore[attr-defined]
        events[i] = msgspec.structs.replace(events[i], amount=events[i].amount + 5)  # type: ignore[attr-defined]
        return i

    events, place, span = _tampered(record, change)
    check = check_hand(events, span)
    assert check.difference is not None and check.difference.index == place
    assert len(check.difference.details) == 1 and check.difference.details[0].startswith("amount: record ")


def test_a_changed_pot_is_named(record: list[Event]) -> None:
    def change(events: list[Event]) -> int:
        i = _nth(events, PotAwarded, n=1)
        award = events[i]
        assert isinstance(award, PotAwarded)
        events[i] = msgspec.structs.replace(award, rake=award.rake + 1)
        return i

    events, place, span = _tampered(record, change)
    check = check_hand(events, span)
    assert check.difference is not None and check.difference.index == place
    assert check.difference.details == [f"rake: record {events[place].rake}, re-run {record[place].rake}"]  # type: ignore[attr-defined]


def test_reordered_events_are_caught_where_they_were_moved(record: list[Event]) -> None:
    def change(events: list[Event]) -> int:
        i = _nth(events, Acted, n=4)
        j = next(j for j in range(i + 1, len(events)) if isinstance(events[j], Acted))
        events[i], events[j] = events[j], events[i]
        return i

    events, place, span = _tampered(record, change)
    check = check_hand(events, span)
    assert check.difference is not None and check.difference.index == place
    assert "the rules refuse" in check.difference.why or check.difference.details


def test_a_removed_and_an_added_event_are_caught(record: list[Event]) -> None:
    def remove(events: list[Event]) -> int:
        i = _nth(events, Acted, n=5)
        del events[i]
        return i

    events, place, span = _tampered(record, remove)
    assert check_hand(events, span).difference.index == place  # type: ignore[union-attr]

    def add(events: list[Event]) -> int:
        i = _nth(events, Acted, n=6)
        events.insert(i + 1, events[i])
        return i + 1

    events, place, span = _tampered(record, add)
    difference = check_hand(events, span).difference
    assert difference is not None and difference.index == place


def test_a_command_put_in_another_senders_name_is_refused(record: list[Event]) -> None:
    def change(events: list[Event]) -> int:
        i = _nth(events, Acted, n=2, where=lambda e: e.command_id is not None)
        events[i] = msgspec.structs.replace(events[i], command_id="player.mallory#1")
        return i

    events, place, span = _tampered(record, change)
    difference = check_hand(events, span).difference
    assert difference is not None and difference.index == place and "forbidden" in difference.why


def test_R32_a_changed_seed_is_caught(record: list[Event]) -> None:
    def change(events: list[Event]) -> int:
        i = _nth(events, HandStarted, n=2)
        events[i] = msgspec.structs.replace(events[i], seed="00" * 32)
        return i

    events, place, span = _tampered(record, change)
    check = check_hand(events, span)
    assert not check.consistent
    assert check.difference is not None and check.difference.index == place
    assert any(line.startswith("commitment: record ") for line in check.difference.details)
