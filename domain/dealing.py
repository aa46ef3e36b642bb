"""Dealing: the first deal, later streets with burns, running out of cards (R17), and
who opens each betting round (R7 bring-in, R10 best board, R29 exposed last card).
Every card dealt carries the proof that opens it in the deck's commitment (R32).

Rules R6, R7, R9, R10, R17, R29, R32 (docs/rules.md).
"""

from __future__ import annotations

from typing import Final

from .cards import DECK_SIZE, rank_pattern, show, show_many
from .deck import Deck, ListedDeck
from .errors import DECK_TOO_SHORT, DomainError
from .events import CardsDealt, DealtCard
from .games import Game
from .hand import HandPlayer, HandState
from .hand_ranking import board_value, lowest_card

# compiled, C statics (a name imported from the interpreted events is looked up at every use)
_DEALT_CARD: Final = DealtCard
_CARDS_DEALT: Final = CardsDealt


def _take(deck: Deck, start: int, count: int) -> list[int]:
    """The next ``count`` cards from ``start``, refusing to read past a scripted deck's end."""
    if start + count > deck.size():
        raise DomainError(DECK_TOO_SHORT, f"the deck ran out after {deck.size()} cards")
    return deck.cards(start, count)


def _dealt(hand: HandState, seat: int, card: int, up: bool) -> DealtCard:
    return _DEALT_CARD(seat, show(card), up, hand.committed.proof(card))


def deal_first(hand: HandState, game: Game) -> CardsDealt:
    """R6: one card at a time clockwise from the button's left, round after round."""
    dealt = hand.dealt()
    order = [(p.seat, face) for face in game.streets[0].faces for p in dealt]
    taken = _take(hand.deck, hand.pos, len(order))
    cards = [_dealt(hand, seat, card, face) for (seat, face), card in zip(order, taken)]
    return _CARDS_DEALT(street=0, cards=cards)


def deal_street(hand: HandState, game: Game, street: int) -> CardsDealt:
    """R9: one burn, then one card to each active player clockwise; R17 when short."""
    live = hand.live()
    stub_size = DECK_SIZE - hand.consumed
    need_community = bool(hand.community)
    stub: ListedDeck | None = None
    if not need_community and stub_size < len(live) + 1:
        enough = {game.penultimate_street: len(live) + 3, game.last_street: len(live) + 2}.get(street)
        if enough is not None and stub_size + len(hand.burns) >= enough:
            stub = _reshuffle(hand, street)          # R17.1
        else:
            need_community = True                    # R17.2
    if need_community and stub_size < 3:
        stub = _reshuffle(hand, street)              # R17.2: 1 or 2 cards left
    source, start = (stub, 0) if stub is not None else (hand.deck, hand.pos)
    face = game.streets[street].faces[0]
    reshuffled, stub_order = stub is not None, show_many(stub.order if stub else ())
    if need_community:
        burn, community = _take(source, start, 2)
        return _CARDS_DEALT(street=street, community=show(community), community_proof=hand.committed.proof(community),
                          burned=[show(burn)], reshuffled=reshuffled, stub=stub_order)
    burn, *taken = _take(source, start, 1 + len(live))
    cards = [_dealt(hand, p.seat, card, face) for p, card in zip(live, taken)]
    return _CARDS_DEALT(street=street, cards=cards, burned=[show(burn)], reshuffled=reshuffled, stub=stub_order)


def _reshuffle(hand: HandState, street: int) -> ListedDeck:
    """The undealt stub and the burn cards, shuffled with the deck's key (R17)."""
    if hand.committed.size() < DECK_SIZE:
        raise DomainError(DECK_TOO_SHORT, "a reshuffle (R17) needs the whole 52-card deck")
    deck = hand.deck
    stub = deck.cards(hand.pos, deck.size() - hand.pos)
    return ListedDeck(hand.committed.reshuffled(stub + hand.burns, street))


def door_card(p: HandPlayer) -> int:
    return p.ups[0]


def bring_in_seat(hand: HandState) -> HandPlayer:
    """R7: the lowest door card opens (ace high, suits clubs < diamonds < hearts < spades),
    even a player all-in from his ante (R16: his bring-in of nothing still stands at the
    full amount for the others)."""
    live = hand.live()
    lowest = lowest_card([door_card(p) for p in live])
    return next(p for p in live if door_card(p) == lowest)


def board(hand: HandState, game: Game, p: HandPlayer) -> list[int]:
    """The up cards that decide who opens (R10).  A 7th card counts as down even when
    exposed (R29); a community card counts as up when it replaced the penultimate card
    (or any card in five-card stud) and as down when it replaced the last (R17.4).
    The usual board, all his up cards, is ``p.ups`` itself (not a copy)."""
    last = game.last_street if not game.streets[-1].faces[0] else None
    # a player gets one card on the last street, his last: only it can be an exposed 7th
    cards = p.ups[:-1] if p.streets and p.streets[-1] == last and p.up[-1] else p.ups
    if hand.community:
        cards = cards + [c for c, st in zip(hand.community, hand.community_streets) if st != last]
    return cards


def _board_value(hand: HandState, game: Game, p: HandPlayer) -> tuple[int, ...]:
    """``board_value`` of his board, memoised: below five cards suits never count, so
    the boards of all tables fall into a few thousand rank patterns (the usual board's
    pattern is kept by apply: ``p.up_ranks``)."""
    cards = board(hand, game, p)
    key: int | tuple[int, ...]
    if len(cards) >= 5:               # a whole poker hand: suits count (R17.4)
        key = tuple(sorted(cards))
    elif cards is p.ups:              # the usual board
        key = p.up_ranks
    else:
        key = rank_pattern(cards)
    value = _BOARD_VALUES.get(key)
    if value is None:
        value = _BOARD_VALUES[key] = board_value(cards)
    return value


_BOARD_VALUES: Final[dict[int | tuple[int, ...], tuple[int, ...]]] = {}


def best_board(hand: HandState, game: Game) -> HandPlayer:
    """R10: the best board among the players in the hand; a tie goes to the tied player
    closest to the dealer's left."""
    best: HandPlayer | None = None
    best_value: tuple[int, ...] = ()
    for p in hand.live():
        value = _board_value(hand, game, p)
        if best is None or value > best_value:
            best, best_value = p, value
    assert best is not None
    return best


def first_to_act(hand: HandState, game: Game) -> tuple[HandPlayer, HandPlayer]:
    """R10: the best board opens.  Returns (best board, first who can act: the next one
    clockwise if the best board is all-in, 2026-12); someone must be able to act."""
    best = best_board(hand, game)
    if best.can_act:
        return best, best
    return best, next(p for p in hand.clockwise_from(best.seat) if p.can_act)
