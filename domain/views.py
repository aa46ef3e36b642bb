"""Who may see what (rules R23, R33): the public and the private copies of an event.

Events are the dealer's view.  What is secret is declared on the event types
(``__secret__`` fields, and ``DealtCard.card`` unless the card is up), so these views
are derived mechanically and a new event type cannot leak by forgetting a rule here.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from .events import CardsDealt, DealtCard, Event

_DEFAULTS: dict[type, dict[str, Callable[[], object]]] = {}


def _blank_secrets(event: Event) -> Event:
    secret = type(event).__secret__
    if not secret:
        return event
    return msgspec.structs.replace(event, **{name: make() for name, make in _blanks(type(event)).items()})


def _blanks(cls: type[Event]) -> dict[str, Callable[[], object]]:
    """For each secret field of an event type, a maker of its default (empty) value."""
    blanks = _DEFAULTS.get(cls)  # type: ignore[assignment]
    if blanks is None:
        fields = msgspec.inspect.type_info(cls).fields  # type: ignore[attr-defined]
        blanks = {
            f.name: f.default_factory if f.default is msgspec.NODEFAULT else _constant(f.default)
            for f in fields if f.name in cls.__secret__
        }
        _DEFAULTS[cls] = blanks
    return blanks


def _constant(value: object) -> Callable[[], object]:
    return lambda: value


def _hide(cards: list[DealtCard], owner: int | None) -> list[DealtCard]:
    return [d if d.up or d.seat == owner else DealtCard(d.seat, None, False) for d in cards]


def public(event: Event) -> Event:
    """The copy anyone may see: no down card, no deck, no seed before its time."""
    event = _blank_secrets(event)
    if isinstance(event, CardsDealt):
        return msgspec.structs.replace(event, cards=_hide(event.cards, None))
    return event


def private(event: Event, seat: int) -> Event | None:
    """The copy for the player in ``seat``, or None when it tells him nothing more than
    the public copy does (only his own down cards are private to him)."""
    if isinstance(event, CardsDealt) and any(d.seat == seat and not d.up for d in event.cards):
        return msgspec.structs.replace(_blank_secrets(event), cards=_hide(event.cards, seat))
    return None


def owners_of_private_cards(event: Event) -> list[int]:
    """The seats that get a private copy of this event."""
    if isinstance(event, CardsDealt):
        return sorted({d.seat for d in event.cards if not d.up})
    return []
