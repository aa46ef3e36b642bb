"""The showdown and the award of every pot (rules R21, R22, R24..R27 in docs/rules.md)."""

from __future__ import annotations

from .config import TableConfig
from .errors import MUST_SHOW, DomainError
from .events import PotAwarded
from .games import Game
from .hand import HandPlayer, HandState
from .hand_ranking import highest_card
from .pots import Pot, award, build_pots, take_rake


def showdown_order(hand: HandState, lead: int) -> list[int]:
    """R21: the lead shows first (last aggressor, else first to act), then clockwise."""
    live = {p.seat for p in hand.live()}
    return [lead] + [p.seat for p in hand.clockwise_from(lead) if p.seat in live and p.seat != lead]


def pots(hand: HandState) -> list[Pot]:
    contributions = {p.seat: p.contributed for p in hand.players.values() if p.contributed}
    live = [p.seat for p in hand.live()]
    capped = [s for s in live if hand.players[s].all_in]
    return build_pots(contributions, live, capped)


def check_muck(hand: HandState, seat: int) -> None:
    """R22: a muck gives up the claim, but never leaves a pot with nobody to claim it."""
    for pot in pots(hand):
        if seat not in pot.eligible:
            continue
        others = [hand.players[s] for s in pot.eligible if s != seat]
        if not any(o.showed or not o.mucked for o in others):
            raise DomainError(MUST_SHOW, f"seat {seat} is the last claimant of a pot and must show")


def settle(hand: HandState, game: Game, config: TableConfig) -> list[PotAwarded]:
    """Rake (R27) and award every pot, main pot first (R26)."""
    all_pots = pots(hand)
    if hand.first_round_over:
        take_rake(all_pots, config.rake.basis_points, config.rake.cap)
    live = hand.live()
    shown = [p for p in live if p.showed] if len(live) > 1 else []
    values = {p.seat: hand.values_of(p, game.hi_lo) for p in shown}
    high_of = {seat: high for seat, (high, _) in values.items()}
    low_of = {seat: low for seat, (_, low) in values.items()} if game.hi_lo else {}
    awards = []
    for i, pot in enumerate(all_pots):
        prize = pot.amount - pot.rake
        if len(live) == 1:                        # R15: won without a showdown
            high, low = {live[0].seat: prize}, dict[int, int]()
        else:
            contenders = [s for s in pot.eligible if s in high_of]     # those who showed
            high_values = {s: high_of[s] for s in contenders}
            low_values = {s: low_of[s] for s in contenders} if game.hi_lo else None
            # R24: the odd chip goes to the highest single card among his own cards
            high, low = award(prize, high_values, low_values, lambda s: highest_card(hand.players[s].cards))
        awards.append(PotAwarded(pot=i, amount=pot.amount, rake=pot.rake, eligible=pot.eligible,
                                 high=high, low=low))
    return awards
