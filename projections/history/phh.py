"""A hand in the Poker Hand History format (PHH, the ``phh-std`` TOML that pokerkit
reads): variants ``F7S`` (seven card stud) and ``F7S/8`` (hi/lo, 8 or better).

Players are listed in dealing order (left of the button first), the order in which
PHH's stud rules break ties for who opens a round, as R10 does.  Each street's cards
go to each player in one ``d dh`` action (``??`` for a card the reader may not see);
``pb`` is the bring-in, ``cbr`` a completion, bet or raise to the round's total,
``cc`` a check or call, ``f`` a fold, ``sm`` a show (with the cards) or a muck.
Timeouts are actions with a ``# timeout`` comment.  ``finishing_stacks`` are the
hand's own final stacks.

Five card stud has no PHH variant code: it is written as ``F5S`` (PHH's naming: F for
fixed limit, like ``F7S``) with F7S's conventions (the first ``d dh`` deals one down
and one up card), and ``_variant_note`` says so.

PHH has no words for some of our rules.  What a hand used of them is listed in
``_phh_cannot_state`` (user-defined fields start with ``_`` in PHH), and an
independent reader replaying such a hand may reach other stacks than
``finishing_stacks``: the rake (R27), all-in protection on a timeout (R19), a
community card (R17), a big bet on an open pair (R12), more than four bets in a
heads-up round (R14), the full bring-in of a player all-in from the ante (R16), an
odd chip (R24: ours go by the highest card), a live dealer's exposed cards (R28), a
fold out of turn by a player leaving the table, an ante left behind by a player who
left before the deal, a bet or raise when every other player is all-in (PHH readers
refuse it; ours returned it uncalled until R15's 2026-12 decision forbade it: older
records), a short all-in of half a bet or more, which reopens the betting (R16; PHH
readers reopen only on a full bet or raise).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from studroom.domain.events import (
    Acted,
    AntePosted,
    AntesCollected,
    CardsDealt,
    Event,
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    LastCardsExposed,
    LeaveRequested,
    PotAwarded,
    RoundStarted,
    ShowdownStarted,
    TimedOut,
)
from studroom.domain.games import GAMES, Game
from studroom.domain.hand_record import HandRecord

VARIANTS: Final = {"seven_card_stud": "F7S", "seven_card_stud_hilo": "F7S/8", "five_card_stud": "F5S"}
FIVE_CARD_NOTE: Final = ("five card stud: PHH has no variant code for it; F5S follows PHH's naming "
                         "(F = fixed limit, as in F7S) and F7S's conventions: one down and one up card "
                         "on the first street, then one up card a street")
MAX_BETS_A_ROUND: Final = 4      # a bet and three raises: PHH readers cap every round (R14)


class NotExportable(ValueError):
    """The hand cannot be written as PHH (it was cancelled, or is not over)."""


def render(record: HandRecord) -> str:
    """The hand of ``record`` as a PHH (TOML) document."""
    events = record.events
    started = events[0]
    ended = events[-1]
    dealt = next((e for e in events if isinstance(e, AntesCollected)), None)
    if not isinstance(started, HandStarted) or not isinstance(ended, HandEnded) or dealt is None:
        raise NotExportable(f"hand {record.hand_no} at {record.table_id} was not played to its end")
    order = [s for s in (p.seat for p in started.seats) if s in dealt.seats]
    index = {seat: i + 1 for i, seat in enumerate(order)}
    names = {s.seat: s.player for s in started.seats}
    stacks = {s.seat: s.stack for s in started.seats}
    antes = {e.seat: e.amount for e in events if isinstance(e, AntePosted)}
    stakes = record.config.stakes
    writer = _Actions(index, stakes.small_bet, stakes.big_bet, GAMES[record.config.game])
    for event in events:
        writer.add(event)
    gaps = writer.gaps
    if ended.rake:
        gaps.append("rake (R27): PHH has no rake")
    if any(s not in index for s in antes):
        gaps.append("the ante of a player who left before the deal stays in the pot")
    fields: list[tuple[str, object]] = [
        ("variant", VARIANTS[record.config.game]),
        ("antes", [antes.get(s, 0) for s in order]),
        ("bring_in", stakes.bring_in_amount),
        ("small_bet", stakes.small_bet),
        ("big_bet", stakes.big_bet),
        ("starting_stacks", [stacks[s] for s in order]),
        ("actions", writer.actions),
        ("players", [names[s] for s in order]),
        ("finishing_stacks", [ended.stacks[s] for s in order]),
        ("table", record.table_id),
        ("hand", record.hand_no),
        ("seat_count", record.config.seats),
        ("_seats", order),
        ("_rake", ended.rake),
        ("_phh_cannot_state", gaps),
    ]
    if record.config.game == "five_card_stud":
        fields.append(("_variant_note", FIVE_CARD_NOTE))
    if record.viewer is not None:
        fields.append(("_seen_by", names.get(record.viewer, str(record.viewer))))
    return _toml(fields, record.started_ms)


class _Actions:
    """The PHH actions of a hand's events, and what they cannot state."""

    def __init__(self, index: dict[int, int], small_bet: int, big_bet: int, game: Game) -> None:
        self.index = index
        self.small_bet = small_bet
        self.big_bet = big_bet
        self.game = game
        self.full_bet = small_bet    # the round's full bet or raise (R11)
        self.actions: list[str] = []
        self.gaps: list[str] = []
        self.timed_out = False
        self.open_pair = False
        self.bets_this_round = 0
        self.current = 0             # the round's highest bet so far
        self.out: set[int] = set()   # seats that folded or are all-in: they answer no bet
        self.showdown = False

    def gap(self, what: str) -> None:
        if what not in self.gaps:
            self.gaps.append(what)

    def player(self, seat: int) -> str:
        return f"p{self.index[seat]}"

    def add(self, e: Event) -> None:
        if isinstance(e, CardsDealt):
            self.deal(e)
        elif isinstance(e, RoundStarted):
            self.open_pair, self.bets_this_round, self.current = e.open_pair, 0, 0
            self.full_bet = self.big_bet if self.game.streets[e.street].big else self.small_bet
        elif isinstance(e, TimedOut):
            self.timeout(e)
        elif isinstance(e, Acted):
            self.act(e)
        elif isinstance(e, AntePosted) and e.all_in:
            self.out.add(e.seat)
        elif isinstance(e, ShowdownStarted):
            self.showdown = True
        elif isinstance(e, LeaveRequested) and e.seat in self.index and e.seat not in self.out and not self.showdown:
            self.out.add(e.seat)
            self.gap("a fold out of turn (a player left the table)")
            self.actions.append(f"{self.player(e.seat)} f # left the table")
        elif isinstance(e, HandShown):
            self.actions.append(f"{self.player(e.seat)} sm {''.join(e.cards)}")
        elif isinstance(e, HandMucked):
            self.actions.append(f"{self.player(e.seat)} sm")
        elif isinstance(e, LastCardsExposed):
            self.gap("a live dealer's exposed last cards (R28)")
        elif isinstance(e, PotAwarded):
            self.odd_chips(e)

    def deal(self, e: CardsDealt) -> None:
        cards: dict[int, list[str]] = {}
        for d in e.cards:
            cards.setdefault(d.seat, []).append(d.card or "??")
        for seat in sorted(cards, key=self.index.__getitem__):
            self.actions.append(f"d dh {self.player(seat)} {''.join(cards[seat])}")
        if e.community is not None:
            self.gap("a community card (R17)")
            self.actions.append(f"# community card {e.community}")

    def timeout(self, e: TimedOut) -> None:
        if e.outcome == "protected":
            self.out.add(e.seat)
            self.gap("all-in protection on a timeout (R19)")
            self.actions.append(f"# {self.player(e.seat)} timed out: stays in for the chips already in (R19)")
        else:
            self.timed_out = True

    def act(self, e: Acted) -> None:
        p = self.player(e.seat)
        if e.action == "bring_in" and e.all_in and not e.amount:
            self.gap("the full bring-in of a player all-in from the ante (R16)")
            self.actions.append(f"# {p} is all-in from the ante: his bring-in stands in full (R16)")
            return
        if e.action in ("complete", "bet", "raise"):
            if not set(self.index) - self.out - {e.seat}:
                self.gap("a bet or raise nobody could answer (every other player all-in)")
            full_to = self.small_bet if e.action == "complete" else self.current + self.full_bet
            if e.all_in and e.full and e.to < full_to:
                self.gap("a short all-in of half a bet or more reopened the betting (R16)")
            self.bets_this_round += e.full
            if self.bets_this_round > MAX_BETS_A_ROUND:
                self.gap("more than four bets in a heads-up round (R14)")
            if self.open_pair and e.to - self.current > self.small_bet:
                self.gap("a big bet on an open pair (R12)")
        self.current = max(self.current, e.to)
        action = {"bring_in": "pb", "fold": "f", "check": "cc", "call": "cc"}.get(e.action, f"cbr {e.to}")
        note = " # timeout" if self.timed_out else ""
        self.timed_out = False
        if e.action == "fold" or e.all_in:
            self.out.add(e.seat)
        self.actions.append(f"{p} {action}{note}")

    def odd_chips(self, e: PotAwarded) -> None:
        for share in (e.high, e.low):
            if len(set(share.values())) > 1:
                self.gap("an odd chip (R24: to the highest card)")


def _toml(fields: Sequence[tuple[str, object]], started_ms: int | None) -> str:
    lines = [f"{name} = {_value(value)}" for name, value in fields]
    if started_ms is not None:
        when = datetime.fromtimestamp(started_ms / 1000, UTC)
        lines += [f"time = {when:%H:%M:%S}", 'time_zone = "UTC"', f"day = {when.day}", f"month = {when.month}",
                  f"year = {when.year}"]
    return "\n".join(lines) + "\n"


def _value(value: object) -> str:
    if isinstance(value, list):
        if value and isinstance(value[0], str):
            return "[\n" + "".join(f"    {json.dumps(v, ensure_ascii=False)},\n" for v in value) + "]"
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
