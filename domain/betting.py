"""Fixed-limit betting (rules R8, R11..R16 in docs/rules.md): what a player may do and
what it costs.

The functions read the hand and return the event an action makes, or raise a
DomainError; they never change the hand (the aggregate applies the event).
"""

from __future__ import annotations

from typing import Final

from .config import Stakes
from .errors import BAD_SIZE, CAP_REACHED, ILLEGAL_ACTION, DomainError
from .events import Acted, ActionName
from .games import Game
from .hand import HandPlayer, HandState

CAP: Final = 4  # R14: one bet and three raises
_ACTED: Final = Acted   # compiled, a C static (a name imported from the interpreted events is looked up at every use)


def bet_sizes(hand: HandState, game: Game, stakes: Stakes) -> tuple[int, ...]:
    """R11/R12: the sizes a bet or raise may have now (both, on an open-pair street)."""
    street = game.streets[hand.street]
    if street.big:
        return (stakes.big_bet,)
    if hand.open_pair and street.open_pair_street:
        return (stakes.big_bet,) if hand.big_made else (stakes.small_bet, stakes.big_bet)
    return (stakes.small_bet,)


def answerable(hand: HandState) -> bool:
    """R15 (2026-12): a bet or raise needs an opponent who can still answer it; against
    players who are all all-in, ``p`` (himself one of the actors) may only call or fold."""
    return len(hand.actors()) > 1


def reopened(hand: HandState, p: HandPlayer) -> bool:
    """R16: no full bet or raise since ``p`` last acted left the betting closed to him."""
    return p.acted_at is None or p.acted_at != hand.reopen


def may_raise(hand: HandState, p: HandPlayer) -> bool:
    """Betting is open to ``p``: someone can answer (R15), under the cap (or heads-up,
    R14) and reopened for him (R16)."""
    under_cap = hand.raise_count < CAP or hand.heads_up()
    return answerable(hand) and under_cap and reopened(hand, p)


def options(hand: HandState, p: HandPlayer) -> list[str]:
    if hand.bring_in_pending:
        return ["bring_in", "complete"]
    to_call = hand.current_bet - p.round_bet
    opts = ["fold", "call" if to_call > 0 else "check"]
    if p.stack > to_call and may_raise(hand, p):
        if hand.street == 0 and hand.raise_count == 0 and hand.current_bet > 0:
            opts.append("complete")
        elif hand.current_bet == 0:
            opts.append("bet")
        else:
            opts.append("raise")
    return opts


def _size(hand: HandState, game: Game, stakes: Stakes, size: str | None) -> int:
    sizes = bet_sizes(hand, game, stakes)
    if size is None:
        return sizes[0]
    wanted = stakes.small_bet if size == "small" else stakes.big_bet
    if wanted not in sizes:
        allowed = " or ".join("small" if s == stakes.small_bet else "big" for s in sizes)
        raise DomainError(BAD_SIZE, f"a {size} bet is not allowed here; the size is {allowed} (R11, R12)")
    return wanted


def _raise_to(hand: HandState, p: HandPlayer, action: ActionName, target: int, full_increment: int) -> Acted:
    """Put ``p`` in up to ``target`` (or all-in); R16 decides if it counts as full."""
    amount = min(target - p.round_bet, p.stack)
    total = p.round_bet + amount
    full = (total - hand.current_bet) * 2 >= full_increment
    return _ACTED(seat=p.seat, action=action, amount=amount, to=total, all_in=amount == p.stack, full=full)


def decide_action(
    hand: HandState, game: Game, stakes: Stakes, p: HandPlayer, action: ActionName, size: str | None
) -> Acted:
    """The Acted event for ``p`` doing ``action``, or a DomainError saying why not."""
    legal = hand.turn_options if hand.turn_options is not None else options(hand, p)
    if action not in legal:
        raise _refusal(hand, p, action, legal)
    if size is not None and action not in ("bet", "raise", "complete", "bring_in"):
        raise DomainError(BAD_SIZE, f"{action} takes no size")
    to_call = hand.current_bet - p.round_bet
    if action == "fold":
        return _ACTED(seat=p.seat, action="fold")
    if action == "check":
        return _ACTED(seat=p.seat, action="check", to=p.round_bet)
    if action == "call":
        amount = min(to_call, p.stack)
        return _ACTED(seat=p.seat, action="call", amount=amount, to=p.round_bet + amount,
                     all_in=amount == p.stack)
    if action == "bring_in":
        if size is not None:
            raise DomainError(BAD_SIZE, "the bring-in has a fixed amount (R8)")
        amount = min(stakes.bring_in_amount, p.stack)
        return _ACTED(seat=p.seat, action="bring_in", amount=amount, to=amount,
                     all_in=amount == p.stack, full=False)
    if action == "complete":
        if size not in (None, "small"):
            raise DomainError(BAD_SIZE, "a completion is to the small bet (R8)")
        increment = stakes.small_bet - hand.current_bet
        return _raise_to(hand, p, "complete", stakes.small_bet, increment)
    bet = _size(hand, game, stakes, size)
    minimum = bet_sizes(hand, game, stakes)[0]
    return _raise_to(hand, p, action, hand.current_bet + bet, minimum)


def _refusal(hand: HandState, p: HandPlayer, action: str, legal: list[str]) -> DomainError:
    """``cap_reached`` when only the cap (R14) stands in the way, else ``illegal_action``."""
    only_the_cap = answerable(hand) and reopened(hand, p) and not hand.bring_in_pending
    if action == "raise" and hand.raise_count >= CAP and only_the_cap:
        return DomainError(CAP_REACHED, f"the betting is capped at a bet and {CAP - 1} raises (R14)")
    return DomainError(ILLEGAL_ACTION, f"seat {p.seat} may {', '.join(legal)}; not {action}")


def round_complete(hand: HandState) -> bool:
    """R15: everyone still in and not all-in has acted and matched the highest bet."""
    if hand.bring_in_pending:
        return False
    actors = hand.actors()
    current_bet = hand.current_bet
    if len(actors) <= 1:
        return not actors or actors[0].round_bet >= current_bet
    for p in actors:
        if p.acted_at is None or p.round_bet != current_bet:
            return False
    return True


def next_to_act(hand: HandState, after: int) -> HandPlayer | None:
    """The next player clockwise who still owes an action this round, or None when the
    round is complete (R15)."""
    if not round_complete(hand):
        current_bet = hand.current_bet
        for p in hand.clockwise_from(after):
            if p.can_act and (p.acted_at is None or p.round_bet < current_bet):
                return p
    return None


def uncalled(hand: HandState) -> tuple[int, int] | None:
    """The part of the round's highest bet that nobody matched: (seat, chips) to return."""
    top = second = 0
    leader: HandPlayer | None = None
    for p in hand.dealt():
        bet = p.round_bet
        if bet > top:
            top, second, leader = bet, top, p
        elif bet > second:
            second = bet
    if leader is not None and top > second and leader.live:
        return leader.seat, top - second
    return None
