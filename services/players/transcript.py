"""What a bot saw, kept for tests (a bot made with ``record=True``): the table's public
events, its own private ones, and its down cards as ``(hand_no, card)``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from studroom.domain.events import CardsDealt, Event

from ..client.messages import Received


@dataclass
class Transcript:
    public: list[Received] = field(default_factory=list)
    private: list[Received] = field(default_factory=list)
    down_cards: list[tuple[int, str]] = field(default_factory=list)

    def saw_public(self, msg: Any, version: int, event: Event) -> None:
        """One event of a public message (``msg``), the table at ``version`` after it."""
        self.public.append(Received.of(msg, version, event, time.monotonic()))

    def saw_private(self, msg: Any, version: int, event: Event, seat: int, hand_no: int) -> None:
        """A private copy to the bot at ``seat``, in hand ``hand_no``."""
        self.private.append(Received.of(msg, version, event, time.monotonic()))
        if isinstance(event, CardsDealt):
            self.down_cards += [(hand_no, d.card) for d in event.cards
                                if d.seat == seat and not d.up and d.card is not None]
