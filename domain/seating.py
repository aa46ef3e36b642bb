"""Who holds which seat of a table: the seat map that private copies are addressed by
(R33: a player's own down cards go to his own subject, ``views.private``).

Folded forward event by event, as the table's stream is read: ``HandStarted.seats``
(everyone dealt in), ``PlayerSatDown`` and ``PlayerLeft``. A seat's holder is the
player dealt into the current hand there, else the player sitting there, so a player
who left during a hand still holds his seat's cards until the next hand starts.

Rule R33 (docs/rules.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from .events import Event, HandStarted, PlayerLeft, PlayerSatDown


class Seating:
    """The seat map of one table as of its first ``version`` events."""

    __slots__ = ("hand", "seated", "version")

    def __init__(self) -> None:
        self.version = 0
        self.seated: dict[int, str] = {}     # who sits where now
        self.hand: dict[int, str] = {}       # who was dealt in where, in the last hand

    @classmethod
    def replay(cls, events: Iterable[Event]) -> Seating:
        """The seat map after ``events`` (a table's stream from its first event)."""
        seating = cls()
        for event in events:
            seating.apply(event)
        return seating

    def apply(self, event: Event) -> None:
        """Fold the table's next event in."""
        if isinstance(event, HandStarted):
            self.hand = {s.seat: s.player for s in event.seats}
        elif isinstance(event, PlayerSatDown):
            self.seated[event.seat] = event.player
        elif isinstance(event, PlayerLeft):
            self.seated.pop(event.seat, None)
        self.version += 1

    def holder(self, seat: int) -> str | None:
        """The player whose cards lie in ``seat``, or None when nobody holds it."""
        return self.hand.get(seat) or self.seated.get(seat)
