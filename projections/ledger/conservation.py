"""Chips are conserved: every chip bought in at a table is on a seat, in the hand being
played, taken as rake, or cashed out.  The one chip check of the room, the benchmarks
and the tests.

The check replays a table's events through the domain's own aggregate and tests the
equation after every event that leaves the table between hands, and at the end (where
a hand may be under way: its chips are counted as in the hand).  It is pure: events
in, a :class:`ChipCheck` out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from studroom.domain.events import ChipsBought, Event, HandEnded, PlayerLeft
from studroom.domain.table import Table


@dataclass
class ChipCheck:
    """The chips of one table (or the totals of several), and what did not add up."""

    tables: int = 0
    bought: int = 0
    behind: int = 0          # on the seats, not in a pot
    in_hand: int = 0         # put into the unfinished hand
    rake: int = 0
    cashed_out: int = 0
    hands: int = 0
    events: int = 0
    bad: list[str] = field(default_factory=list)

    @property
    def conserved(self) -> bool:
        return not self.bad and self.bought == self.behind + self.in_hand + self.rake + self.cashed_out

    def add(self, other: ChipCheck) -> None:
        self.tables += other.tables
        self.bought += other.bought
        self.behind += other.behind
        self.in_hand += other.in_hand
        self.rake += other.rake
        self.cashed_out += other.cashed_out
        self.hands += other.hands
        self.events += other.events
        self.bad += other.bad

    def summary(self) -> str:
        return (f"{self.tables} tables, {self.hands} hands, {self.events} events: bought {self.bought} = "
                f"behind {self.behind} + in hand {self.in_hand} + rake {self.rake} + cashed out {self.cashed_out}"
                + ("" if self.conserved else f"; {len(self.bad)} differences"))


class TableChips:
    """One table's chips, counted as its events are replayed, one at a time, through the
    domain's aggregate (``table``); ``result()`` is the check so far.  The first
    difference ends the count (``failed``): later events are not replayed."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.table = Table()
        self.check = ChipCheck(tables=1)
        self.failed = False

    def add(self, event: Event) -> None:
        if self.failed:
            return
        check = self.check
        try:
            self.table.apply(event)
        except Exception as e:  # noqa: BLE001 (a table that cannot be replayed is the finding)
            self._fail(f"replay failed at event {check.events + 1} ({type(event).__name__}): {type(e).__name__}: {e}")
            return
        check.events += 1
        if isinstance(event, ChipsBought):
            check.bought += event.amount
        elif isinstance(event, HandEnded):
            check.rake += event.rake
            check.hands += 1
        elif isinstance(event, PlayerLeft):
            check.cashed_out += event.cashed_out
        if self.table.hand is None:
            stacks = sum(seat.stack for seat in self.table.seats.values())
            if check.bought != stacks + check.rake + check.cashed_out:
                self._fail(f"after event {check.events} ({type(event).__name__}): bought {check.bought} != "
                           f"stacks {stacks} + rake {check.rake} + cashed out {check.cashed_out}")

    def _fail(self, what: str) -> None:
        self.check.bad.append(f"{self.table_id}: {what}")
        self.failed = True

    def result(self) -> ChipCheck:
        """The check of the events so far: chips behind and in the hand under way."""
        check = dataclasses.replace(self.check, bad=list(self.check.bad))
        if self.failed:
            return check
        hand = self.table.hand
        for seat, state in self.table.seats.items():
            player = hand.players.get(seat) if hand is not None else None
            check.behind += player.stack if player is not None else state.stack
        if hand is not None:
            check.in_hand = sum(p.contributed for p in hand.players.values())
        if check.bought != check.behind + check.in_hand + check.rake + check.cashed_out:
            check.bad.append(
                f"{self.table_id}: bought {check.bought} != behind {check.behind} + in hand "
                f"{check.in_hand} + rake {check.rake} + cashed out {check.cashed_out}")
        return check


def check_table(table_id: str, events: Iterable[Event]) -> ChipCheck:
    """Replay one table's events and count its chips, checking between every two hands."""
    chips = TableChips(table_id)
    for event in events:
        chips.add(event)
        if chips.failed:
            break
    return chips.result()


def check_tables(tables: Mapping[str, Sequence[Event]]) -> ChipCheck:
    """The totals of several tables (each checked on its own)."""
    total = ChipCheck()
    for table_id, events in sorted(tables.items()):
        total.add(check_table(table_id, events))
    return total
