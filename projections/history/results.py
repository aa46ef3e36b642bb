"""What a hand meant for each player dealt in: net, pots won, rake paid (pure).

Rake paid (a decision: the rules record rake per pot, R27, not per player): the rake
of a pot is paid by those who won it, in proportion to what each took from it; it is
what they would have taken more without rake.  Integer shares by largest remainder,
so a hand's rake paid adds up to its rake exactly.  A pot raked whole (100 %) is paid
by its winners equally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec
from studroom.domain.events import (
    AntesCollected,
    Event,
    HandEnded,
    HandStarted,
    PotAwarded,
)
from studroom.domain.seen import showdown_seats


class Result(msgspec.Struct, frozen=True):
    seat: int
    player: str
    start_stack: int
    end_stack: int
    net: int                  # end_stack - start_stack
    won: int                  # chips taken from pots (after rake)
    pots_won: int             # pots (or hi/lo halves) he took chips from
    rake_paid: int
    showdown: bool            # he took part in the showdown


def results(events: Sequence[Event]) -> list[Result]:
    """Each dealt-in player's result of a played hand (``HandStarted`` .. ``HandEnded``);
    empty for a hand that was cancelled or is not over."""
    started = next((e for e in events if type(e) is HandStarted), None)
    ended = next((e for e in events if type(e) is HandEnded), None)
    dealt = next((e for e in events if type(e) is AntesCollected), None)
    if not isinstance(started, HandStarted) or not isinstance(ended, HandEnded) or not isinstance(dealt, AntesCollected):
        return []
    awards = [e for e in events if isinstance(e, PotAwarded)]
    won, pots_won = _winnings(awards)
    rake = _rake_paid(awards)
    at_showdown = set(showdown_seats(events))
    names = {s.seat: s.player for s in started.seats}
    stacks = {s.seat: s.stack for s in started.seats}
    return [
        Result(seat=seat, player=names[seat], start_stack=stacks[seat], end_stack=ended.stacks[seat],
               net=ended.net[seat], won=won.get(seat, 0), pots_won=pots_won.get(seat, 0),
               rake_paid=rake.get(seat, 0), showdown=seat in at_showdown)
        for seat in dealt.seats
    ]


def _winnings(awards: Sequence[PotAwarded]) -> tuple[dict[int, int], dict[int, int]]:
    won: dict[int, int] = {}
    pots: dict[int, int] = {}
    for award in awards:
        for share in (award.high, award.low):
            for seat, chips in share.items():
                won[seat] = won.get(seat, 0) + chips
                pots[seat] = pots.get(seat, 0) + 1
    return won, pots


def _rake_paid(awards: Sequence[PotAwarded]) -> dict[int, int]:
    paid: dict[int, int] = {}
    for award in awards:
        shares: dict[int, int] = {}
        for share in (award.high, award.low):
            for seat, chips in share.items():
                shares[seat] = shares.get(seat, 0) + chips
        if not award.rake or not shares:
            continue
        weights = shares if sum(shares.values()) else dict.fromkeys(shares, 1)
        for seat, chips in apportion(award.rake, weights).items():
            paid[seat] = paid.get(seat, 0) + chips
    return paid


def apportion(total: int, weights: Mapping[int, int]) -> dict[int, int]:
    """``total`` split in proportion to ``weights`` (positive sum), in whole chips: each
    gets his share rounded down, the chips left go to the largest remainders (the
    lower seat first on a tie)."""
    whole = sum(weights.values())
    shares = {seat: total * w // whole for seat, w in weights.items()}
    left = total - sum(shares.values())
    by_remainder = sorted(weights, key=lambda seat: (-(total * weights[seat] % whole), seat))
    for seat in by_remainder[:left]:
        shares[seat] += 1
    return shares
