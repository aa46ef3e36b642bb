"""Tables played in-process for the lobby's tests without servers, and the entries the
lobby makes of their public events (each stored a second after the one before)."""

from __future__ import annotations

import random

from studroom.domain import views
from studroom.domain.events import Event
from studroom.domain.simulate import new_table, play_hand
from studroom.projections.lobby.entry import LobbyEntry
from studroom.projections.lobby.projection import apply

T0 = 1_764_000_000_000          # when the first event was stored (ms)


def played(game: str = "seven_card_stud", players: int = 4, hands: int = 3, seed: int = 5,
           timeouts: float = 0.1) -> list[Event]:
    rng = random.Random(seed)
    table, events = new_table(game, players)
    for _ in range(hands):
        events += play_hand(table, rng, timeout_rate=timeouts)
    return events


def entry_of(events: list[Event], at_ms: int = T0) -> LobbyEntry:
    """The entry after ``events``, the i-th stored at ``at_ms + i`` seconds."""
    entry = None
    for version, event in enumerate(events, start=1):
        entry = apply(entry, views.public(event), version, version, at_ms + 1_000 * version)
    assert entry is not None
    return entry
