"""A checked hand as the support desk reads it: every command re-run, when and from
whom, what each of its stored events says (who was asked to act and until when, what
he did, timeouts against their deadlines, every card, pots and rake), and the verdict.

Seen as one player (``viewer``), the events are his copies (projections/history/
seen.py): other players' down cards stay hidden (R23), and so does whatever a
difference or the deck audit would tell about them.

A timeline is a document, one line a step, not a table: only its chips follow the
commands' one number format (services/runtime/text.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import msgspec
from studroom.domain.config import TableConfig
from studroom.domain.events import (
    Acted,
    Announced,
    AntePosted,
    AntesCollected,
    AnteSkipped,
    CardsDealt,
    ChipsBought,
    Event,
    HandCancelled,
    HandEnded,
    HandMucked,
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
from studroom.domain.games import GAMES
from studroom.domain.hand_record import seated_before
from studroom.domain.seen import seen_by
from studroom.domain.table import Table

from ..runtime.text import number, signed
from .checks import HandCheck
from .clocks import stated_clock
from .differences import describe, fields_that_differ
from .rerun import Difference, Step

_INDENT: Final = " " * 32


def clock(ms: int | None) -> str:
    """``10:15:03.120`` (UTC), or blanks when not known."""
    if ms is None:
        return " " * 12
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:12]


def day(ms: int | None) -> str:
    if ms is None:
        return "at an unknown time (no turn was opened)"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(check: HandCheck, stream: Sequence[Event], viewer: str | None = None) -> str:
    """The timeline and verdict of ``check`` over its table's ``stream``."""
    return "\n".join(_Timeline(check, stream, viewer).lines()) + "\n"


class _Timeline:
    def __init__(self, check: HandCheck, stream: Sequence[Event], viewer: str | None) -> None:
        self.check = check
        span = check.span
        config = Table.replay(stream[:span.start]).config      # in force at the hand's start
        assert config is not None
        self.config: TableConfig = config
        end = span.end if span.end is not None else len(stream)
        hand = list(stream[span.start:end])
        started = hand[0]
        assert isinstance(started, HandStarted)
        self.seat = next((s.seat for s in started.seats if s.player == viewer), None) if viewer else None
        self.viewer = viewer
        last = check.steps[-1] if check.steps else None
        reach = max(end, last.start + last.count if last else end)
        first = check.before[0].start if check.before else span.start
        shown = stream[first:reach]
        self.shown: Sequence[Event] = seen_by(shown, self.seat) if viewer else shown
        self.first = first
        self.names = seated_before(stream, first)
        self.deadlines: dict[int, int] = {}
        self.out: list[str] = []

    def lines(self) -> list[str]:
        c, config = self.check, self.config
        stakes = config.stakes
        kind = "cancelled attempt of hand" if c.span.cancelled else "hand"
        cap = config.rake.cap if config.rake.cap is not None else "no cap"
        self.out.append(f"{kind.capitalize()} {c.span.hand_no} at table {c.table_id}: {config.game}, stakes "
                        f"{stakes.small_bet}/{stakes.big_bet}, ante {stakes.ante}, bring-in {stakes.bring_in_amount}, "
                        f"rake {config.rake.basis_points / 100:g}% up to {cap}")
        self.out.append(f"Played {day(c.started_ms)}; re-run from the event store, versions {self.first + 1}.."
                        f"{self.first + len(self.shown)}.")
        if self.viewer:
            seat = "not dealt in" if self.seat is None else f"seat {self.seat}"
            self.out.append(f"Seen as {self.viewer} ({seat}): other players' down cards stay hidden (R23).")
        self.out.append(f"{'time (UTC)':<12}  {'who':<16}  command / what the record says")
        if c.before:
            self.out.append("-- between the previous hand and this one")
            self.steps(c.before)
            self.out.append("-- the hand")
        self.steps(c.steps)
        if c.difference is not None:
            self.rest(c.difference.index)
        self.verdict()
        return self.out

    def rest(self, index: int) -> None:
        """The record from the difference on, as stored (not re-run)."""
        self.out.append("-- the rest of the record (not re-run: the rules and the record part before it)")
        for offset, event in enumerate(self.shown[index - self.first:], start=index):
            self.out.append(f"{_INDENT}v{offset + 1} {self.say(event, None)}")

    def steps(self, steps: Sequence[Step]) -> None:
        for step in steps:
            events = self.shown[step.start - self.first: step.start + step.count - self.first]
            when = _when(step, events)
            who = "the room" if step.by is None else step.by.key
            self.out.append(f"{clock(when)}  {who:<16}  {_command(step, hide=self.viewer is not None)}")
            for offset, event in enumerate(events):
                self.out.append(f"{_INDENT}v{step.start + offset + 1} {self.say(event, when)}")

    def name(self, seat: int) -> str:
        return f"seat {seat} {self.names.get(seat, '?')}"

    def say(self, event: Event, when: int | None) -> str:
        tell = _SAY.get(type(event))
        return tell(self, event, when) if tell is not None else describe(event)

    def verdict(self) -> None:
        c = self.check
        if c.consistent:
            count = sum(s.count for s in c.before + c.steps)
            deck = "no card was dealt" if c.deck is None else (
                f"the deck checks (R32: {c.deck.cards} cards against the seed, {c.deck.proofs} proofs)")
            self.out.append(f"Verdict: CONSISTENT. {len(c.before) + len(c.steps)} commands re-run through the "
                            f"rules made the {count} stored events exactly; {deck}.")
            return
        self.out.append("Verdict: DIFFERENT.")
        if c.difference is not None:
            self.difference(c.difference)
        findings = [] if c.deck is None else c.deck.findings
        if findings and self.viewer:
            self.out.append(f"  the deck audit (R32) found {len(findings)} problem(s); the details name cards "
                            f"{self.viewer} may not see: the room's support desk has them")
        else:
            self.out += [f"  deck (R32): {finding}" for finding in findings]

    def difference(self, d: Difference) -> None:
        if self.viewer and d.recorded is not None and d.rerun is not None:
            recorded, rerun = self.copy(d.recorded), self.copy(d.rerun)
            details = fields_that_differ(recorded, rerun)
            if not details:
                self.out.append(f"  at version {d.index + 1}: the record and the rules differ in what "
                                f"{self.viewer} may not see")
                return
            self.out.append(f"  at version {d.index + 1}: the record has {describe(recorded)}; "
                            f"the rules make {describe(rerun)}")
            self.out += [f"    {line}" for line in details]
            return
        self.out.append(f"  at version {d.index + 1}: {d.why}")
        self.out += [f"    {line}" for line in d.details]

    def copy(self, event: Event) -> Event:
        return seen_by([event], self.seat)[0]

    # --- what each event says -----------------------------------------------------

    def hand_started(self, e: HandStarted, when: int | None) -> str:
        for s in e.seats:
            self.names[s.seat] = s.player
        seats = ", ".join(f"{s.seat} {s.player} {s.stack}" for s in e.seats)
        return f"hand {e.hand_no} starts, button seat {e.button}; dealt in order: {seats}; commitment {e.commitment[:16]}..."

    def turn(self, e: TurnStarted, when: int | None) -> str:
        self.deadlines[e.turn] = e.deadline_ms
        whose = "every seat that has not posted" if e.seat is None else self.name(e.seat)
        what = f"turn {e.turn} ({e.kind}): {whose}, until {clock(e.deadline_ms)}"
        if e.options:
            what += f"; may {', '.join(e.options)}"
        if e.to_call:
            what += f"; {e.to_call} to call"
        if e.sizes:
            what += "; a bet small or big (R12)"
        return what

    def timed_out(self, e: TimedOut, when: int | None) -> str:
        deadline = self.deadlines.get(e.turn)
        late = "" if when is None or deadline is None else f", {(when - deadline) / 1000:+.3f} s after it"
        return (f"turn {e.turn} timed out (deadline {clock(deadline).strip() or 'unknown'}{late}): "
                f"{self.name(e.seat)}: {e.outcome}")

    def dealt(self, e: CardsDealt, when: int | None) -> str:
        street = GAMES[self.config.game].streets[e.street].name
        by_seat: dict[int, list[str]] = {}
        for d in e.cards:
            by_seat.setdefault(d.seat, []).append((d.card or "??") + ("" if d.up else "(down)"))
        parts = [f"{self.name(s)} {' '.join(cards)}" for s, cards in by_seat.items()]
        if e.community is not None:
            parts.append(f"community card {e.community} (R17)")
        if e.burned:
            parts.append(f"burned {' '.join(e.burned)}")
        if e.reshuffled:
            parts.append("burns reshuffled into the stub (R17)")
        return f"{street} street: " + "; ".join(parts)

    def acted(self, e: Acted, when: int | None) -> str:
        short = not e.full and e.action in ("complete", "bet", "raise")
        extra = (" all-in" if e.all_in else "") + (" (not a full bet, R16)" if short else "")
        return f"{self.name(e.seat)} {e.action} {number(e.amount)} (round total {number(e.to)}){extra}"

    def pot(self, e: PotAwarded, when: int | None) -> str:
        def shares(share: dict[int, int]) -> str:
            return ", ".join(f"{self.name(s)} {number(chips)}" for s, chips in sorted(share.items())) or "-"
        low = f"; low: {shares(e.low)}" if e.low else ""
        return (f"pot {e.pot} ({'main' if e.pot == 0 else 'side'}): {number(e.amount)}, rake {number(e.rake)}, eligible seats "
                f"{', '.join(map(str, e.eligible))}; high: {shares(e.high)}{low}")

    def ended(self, e: HandEnded, when: int | None) -> str:
        stacks = ", ".join(f"{s}: {number(chips)} ({signed(e.net[s])})" for s, chips in sorted(e.stacks.items()))
        return f"hand {e.hand_no} ends by {e.ended_on}: stacks {stacks}; rake {number(e.rake)}"

    def simple(self, e: Any, when: int | None) -> str:
        text = _SIMPLE[type(e)](e)
        return text.replace("{seat}", self.name(e.seat)) if hasattr(e, "seat") else text

    def sat_down(self, e: PlayerSatDown, when: int | None) -> str:
        self.names[e.seat] = e.player
        return f"{e.player} sits down in seat {e.seat}"


def _when(step: Step, events: Sequence[Event]) -> int | None:
    """The command's clock where its events tell it (a turn's deadline, a pause, a
    sit-out: clocks.py), which the re-run gave it; None where they do not."""
    told = any(type(e) is TurnStarted or stated_clock(e) is not None for e in events)
    return step.command.now_ms if told else None


_SECRET_INPUTS: Final = ("seed", "deck", "cards")   # a hand's seed, a scripted deck, a live dealer's cards


def _command(step: Step, hide: bool) -> str:
    """The command, without its secret inputs when a player reads it."""
    command = step.command
    if hide:
        secret = {name: "(hidden)" for name in _SECRET_INPUTS if getattr(command, name, None) is not None}
        command = msgspec.structs.replace(command, **secret)
    return describe(command)


_SIMPLE: Final[dict[type, Callable[[Any], str]]] = {
    TableOpened: lambda e: f"table {e.table_id} opens: {e.config.game}",
    ChipsBought: lambda e: f"{{seat}} buys {number(e.amount)} chips",
    SitOutChanged: lambda e: f"{{seat}} sits out{_SAT_OUT[e.reason]}, since {clock(e.since_ms)}" if e.sitting_out
                             else "{seat} is back in",
    PlayerLeft: lambda e: f"{{seat}} {_LEFT[e.reason]}, cashed out {number(e.cashed_out)}",
    LeaveRequested: lambda e: f"{{seat}} {_LEFT[e.reason]} during the hand: his hand is folded, "
                              "he is cashed out when it ends",
    TableConfigured: lambda e: f"the floor's new settings, from the next hand (at once between hands): "
                               f"{_settings(e.config)}",
    TablePaused: lambda e: "the floor pauses the table: no new hand until it resumes (a hand in play finishes)",
    TableResumed: lambda e: "the floor resumes the table: hands are dealt again",
    TableClosing: lambda e: "the floor closes the table: it closes when this hand ends",
    TableClosed: lambda e: "the table is closed: every seat is cashed out, no command is taken any more",
    PauseStarted: lambda e: f"pause {e.turn} until {clock(e.deadline_ms)}: "
                            + ("no hand can be dealt while players sit out; it ends when the first of them "
                               "passes the table's limit (R34)" if e.purpose == "sit_out_limit"
                               else "the pause before the next hand"),
    PauseEnded: lambda e: f"pause {e.turn} ends",
    AntePosted: lambda e: f"{{seat}} posts the ante {number(e.amount)}" + (" (all-in)" if e.all_in else ""),
    AnteSkipped: lambda e: "{seat} posts no ante: sits out this hand (R5)",
    HandCancelled: lambda e: f"hand {e.hand_no} cancelled: {e.reason}; refunds {e.refunds}",
    AntesCollected: lambda e: f"antes collected; dealt in: seats {', '.join(map(str, e.seats))}",
    LastCardsExposed: lambda e: f"R28: last cards turned up {[d.card for d in e.turned]}"
                                + ("; no more betting" if e.skip_betting else ""),
    RoundStarted: lambda e: f"betting round of street {e.street}: opener seat {e.opener}, first seat {e.first}"
                            + (f", bring-in (door card {e.door_card})" if e.bring_in else "")
                            + (", open pair (R12)" if e.open_pair else ""),
    RoundEnded: lambda e: f"betting round of street {e.street} over"
                          + (f"; {number(e.returned)} uncalled returned to seat {e.returned_seat}" if e.returned else ""),
    Announced: lambda e: f"dealer: {{seat}}: {e.en}",
    ShowdownStarted: lambda e: f"showdown, in order: seats {', '.join(map(str, e.order))} (R21)",
    HandShown: lambda e: f"{{seat}} shows {' '.join(e.cards)}: {e.high}" + (f", {e.low}" if e.low else ""),
    HandMucked: lambda e: "{seat} mucks" + (f" {' '.join(e.cards)}" if e.cards else ""),
}

_SAT_OUT: Final = {"own": "", "operator": " (the floor sat him out)",
                   "timed_out": " (his turn timed out, R34: he is dealt no hand until he sits in)"}
_LEFT: Final = {"own": "leaves", "removed": "is removed by the floor",
                "sat_out_too_long": "is removed: he sat out longer than the table's limit (R34)",
                "table_closed": "leaves: the table closes"}


def _settings(config: TableConfig) -> str:
    stakes, cap = config.stakes, config.rake.cap
    return (f"stakes {stakes.small_bet}/{stakes.big_bet}, ante {stakes.ante}, bring-in {stakes.bring_in_amount}, "
            f"rake {config.rake.basis_points / 100:g}% up to {'no cap' if cap is None else cap}, "
            f"timers {config.action_seconds}/{config.ante_seconds}/{config.showdown_seconds} s (act/ante/show), "
            f"sit-out limit {config.sit_out_seconds} s, max buy-in {config.max_buy_in or 'the default'}")


_SAY: Final[dict[type, Callable[[_Timeline, Any, int | None], str]]] = {
    **{kind: _Timeline.simple for kind in _SIMPLE},
    HandStarted: _Timeline.hand_started, TurnStarted: _Timeline.turn, TimedOut: _Timeline.timed_out,
    CardsDealt: _Timeline.dealt, Acted: _Timeline.acted, PotAwarded: _Timeline.pot, HandEnded: _Timeline.ended,
    PlayerSatDown: _Timeline.sat_down,
}
