"""Pots, rake and the split of each pot (rules R24-R27 in docs/rules.md).

Pure arithmetic on integers: given what every player put in and who is still in the
hand, build the main and side pots; take the rake; split each pot between winners.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence


class Pot:
    """One pot (a plain class, not a dataclass: compiled, a dataclass's generated
    ``__init__`` runs interpreted)."""

    __slots__ = ("amount", "eligible", "rake")

    def __init__(self, amount: int, eligible: list[int], rake: int = 0) -> None:
        self.amount = amount
        self.eligible = eligible      # seats still in the hand that contributed up to this pot's level
        self.rake = rake

    def __repr__(self) -> str:
        return f"Pot(amount={self.amount}, eligible={self.eligible}, rake={self.rake})"


def build_pots(contributions: dict[int, int], live: list[int], capped: list[int]) -> list[Pot]:
    """R26: main pot first, then a side pot above each all-in level.

    ``contributions`` holds every seat's chips in the hand (folded seats included: their
    chips stay in the pots, they are simply not eligible).  ``capped`` are the live seats
    that put in no more (all-in, or protected by a timeout, R19).  Pots whose eligible
    seats are the same are merged.  A pot no live seat reached (only folded money above
    the last live level) goes to every live seat, as if they were eligible (R26, 2026-12).
    """
    put_in = {s: contributions.get(s, 0) for s in live}   # a live seat may have nothing in (an
    top = max(put_in.values()) if put_in else 0           # uncalled bring-in returned, no ante)
    if not capped:                   # nobody all-in: one pot (what the loop below gives)
        total = sum(contributions.values())
        return [Pot(total, sorted([s for s in live if put_in[s] >= top]))] if total else []
    live_levels = sorted({put_in[s] for s in capped})
    levels = [lv for lv in live_levels if lv < top] + [top]
    pots: list[Pot] = []
    chips = list(contributions.values())
    below = 0           # the chips up to the previous level
    for level in levels:
        up_to_level = sum([min(c, level) for c in chips])
        amount = up_to_level - below
        eligible = sorted([s for s in live if put_in[s] >= level])
        if amount and pots and pots[-1].eligible == eligible:
            pots[-1].amount += amount
        elif amount:
            pots.append(Pot(amount, eligible))
        below = up_to_level
    leftover = sum(chips) - below
    if leftover:
        everyone = sorted(live)
        if pots and pots[-1].eligible == everyone:
            pots[-1].amount += leftover
        else:
            pots.append(Pot(leftover, everyone))
    return pots


def take_rake(pots: Sequence[Pot], basis_points: int, cap: int | None) -> int:
    """R27: each pot's share rounded down, main pot first, until the hand's cap."""
    total = 0
    for pot in pots:
        rake = pot.amount * basis_points // 10_000
        if cap is not None:
            rake = min(rake, cap - total)
        pot.rake = rake
        total += rake
    return total


def split(amount: int, winners: Sequence[int], odd_chip_order: Callable[[int], int]) -> dict[int, int]:
    """R24: equal shares; chips that cannot be split go one each to the winners in the
    order of ``odd_chip_order`` (highest first: the holder of the highest single card)."""
    share, odd = divmod(amount, len(winners))
    result = {seat: share for seat in winners}
    for seat in sorted(winners, key=odd_chip_order, reverse=True)[:odd]:
        result[seat] += 1
    return result


def best(values: Mapping[int, int], better: Callable[[int, int], bool]) -> list[int]:
    """The seats holding the best value (ties included)."""
    top: list[int] = []
    top_value = 0
    for seat, value in values.items():
        if not top or better(value, top_value):
            top, top_value = [seat], value
        elif value == top_value:
            top.append(seat)
    return sorted(top)


def award(
    amount: int,
    high: Mapping[int, int],
    low: Mapping[int, int | None] | None,
    odd_chip_order: Callable[[int], int],
) -> tuple[dict[int, int], dict[int, int]]:
    """Split one pot (after rake) among the contenders.

    ``high`` maps each contender to his high value (bigger wins).  For Hi/Lo (R25)
    ``low`` maps contenders to their 8-or-better low (smaller wins, None: no low); the
    high half gets the odd chip; without a qualifying low the high takes the pot.
    """
    high_winners = best(high, lambda a, b: a > b)
    qualified = {s: v for s, v in (low or {}).items() if v is not None}
    if not qualified:
        return split(amount, high_winners, odd_chip_order), {}
    low_half = amount // 2
    low_winners = best(qualified, lambda a, b: a < b)
    return (
        split(amount - low_half, high_winners, odd_chip_order),
        split(low_half, low_winners, odd_chip_order),
    )
