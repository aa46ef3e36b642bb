"""A hand as one player may see it afterwards (rules R23, R32, R33 in docs/rules.md).

Everything public; his own down cards; and, when he took part in the showdown, every
hand that stayed to the end, mucked ones included (R23); each card with the proof that
opens it (R32).  Never another player's folded cards, never the deck or the seed: the
copies come from ``domain/views.py``, which derives them from what the event types
declare secret, so a history shows exactly what the player was sent during the hand.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import views
from .events import Event, ShowdownStarted


def showdown_seats(events: Sequence[Event]) -> list[int]:
    """The seats that took part in the hand's showdown (none without one)."""
    started = next((e for e in events if type(e) is ShowdownStarted), None)
    return [] if started is None else list(started.order)  # type: ignore[attr-defined]


def seen_by(events: Sequence[Event], seat: int | None, public: Sequence[Event] | None = None) -> list[Event]:
    """The hand's ``events`` as the player in ``seat`` may see them (None: anyone).
    ``public``: the events' public copies, when the caller made them already (one hand
    seen by each of its players)."""
    public = [views.public(e) for e in events] if public is None else public
    if seat is None:
        return list(public)
    return [views.private(e, seat) or p for e, p in zip(events, public)]
