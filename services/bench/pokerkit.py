"""Reference numbers: full random stud hands per second with the open-source ``pokerkit``.

Only for the domain benchmark (``bench_domain``); pokerkit is an optional dependency (the
``bench`` extra), so it is imported lazily and every function answers ``None`` (shown
as "n/a") when it is missing or has no such game.

The hands are played like ``simulate.play_hand`` plays ours: the same stakes (ante 5,
bring-in 10, small bet 20, big bet 40), 2000 chips for everyone, and random legal
decisions with the same weights (fold 1, check 4, call 5, bet/raise/complete 2, bring-in
4), so that most hands go deep.  Antes, burning, dealing, showdown, killing, pushing and
pulling chips are pokerkit automations; the bring-in is a decision, as with us.

Differences that remain, so that the numbers are read fairly:

* our players may fold when checking is free (weight 1, as any client may); pokerkit
  allows that only in its cash-game mode (with a warning), so the states are created
  in ``Mode.CASH_GAME`` and fold is offered whenever ours offers it (not on the
  bring-in decision), which keeps the hands equally long (see the actions per hand);
* pokerkit has no five-card stud: that row is "n/a";
* pokerkit knows no open-pair big bet on 4th street (R12): its bets there are small;
* a new ``State`` per hand, everyone back at 2000 chips (ours plays on at one table and
  tops up busted players between hands).
"""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Callable
from typing import Any

STAKES = {"ante": 5, "bring_in": 10, "small_bet": 20, "big_bet": 40}
STACK = 2000

# same weights as studroom.domain.simulate.WEIGHTS
W_FOLD, W_CHECK, W_CALL, W_AGGRESS, W_BRING_IN = 1, 4, 5, 2, 4

_VARIANTS = {
    "seven_card_stud": "FixedLimitSevenCardStud",
    "seven_card_stud_hilo": "FixedLimitSevenCardStudHighLowSplitEightOrBetter",
    "five_card_stud": None,   # pokerkit (0.7) has no five-card stud variant
}


def available() -> bool:
    try:
        import pokerkit  # noqa: F401
    except ImportError:
        return False
    return True


def version() -> str | None:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    try:
        return _version("pokerkit")
    except PackageNotFoundError:
        return None


def variant(game: str) -> Any | None:
    """The pokerkit class playing ``game``, or None (pokerkit missing, or no such game)."""
    name = _VARIANTS.get(game)
    if name is None or not available():
        return None
    import pokerkit

    return getattr(pokerkit, name, None)


class Runner:
    """Plays full random hands of one game at one table size, in time slices (so that
    the domain benchmark can interleave it with ours).  Keeps totals."""

    def __init__(self, game: str, players: int, seed: int = 1) -> None:
        cls = variant(game)
        if cls is None:
            raise LookupError(f"pokerkit has no {game}")
        import pokerkit

        A = pokerkit.Automation
        self._automations = (
            A.ANTE_POSTING, A.BET_COLLECTION, A.BLIND_OR_STRADDLE_POSTING, A.CARD_BURNING,
            A.HOLE_DEALING, A.BOARD_DEALING, A.RUNOUT_COUNT_SELECTION,
            A.HOLE_CARDS_SHOWING_OR_MUCKING, A.HAND_KILLING, A.CHIPS_PUSHING, A.CHIPS_PULLING,
        )
        self._cls = cls
        self._mode = pokerkit.Mode.CASH_GAME   # a fold when checking is free is allowed
        self.game, self.players = game, players
        self.rng = random.Random(seed)
        random.seed(seed)             # pokerkit shuffles its decks with the module RNG
        self.hands = 0
        self.actions = 0              # player decisions (bring-in, fold, check/call, bet...)
        self.seconds = 0.0

    def new_state(self) -> Any:
        return self._cls.create_state(
            self._automations, True, STAKES["ante"], STAKES["bring_in"], STAKES["small_bet"],
            STAKES["big_bet"], STACK, self.players, mode=self._mode,
        )

    def play_hand(self) -> int:
        """One full hand with random legal decisions; returns the number of decisions.
        Call it with pokerkit's UserWarnings ignored (``run_for`` does)."""
        state = self.new_state()
        rng = self.rng
        actions = 0
        while state.status:
            if state.actor_index is None:
                raise RuntimeError(f"pokerkit waits on a step that is not automated: {state}")
            if state.can_post_bring_in():
                options: list[Callable[[], object]] = [state.post_bring_in]
                weights = [W_BRING_IN]
            else:
                free = state.checking_or_calling_amount == 0
                options = [state.fold, state.check_or_call]
                weights = [W_FOLD, W_CHECK if free else W_CALL]
            if state.can_complete_bet_or_raise_to():
                options.append(state.complete_bet_or_raise_to)
                weights.append(W_AGGRESS)
            rng.choices(options, weights)[0]()
            actions += 1
        return actions

    def run_for(self, seconds: float) -> None:
        """Play whole hands until ``seconds`` have passed (the last hand is finished)."""
        clock = time.perf_counter
        hands = actions = 0
        with warnings.catch_warnings():
            # 8 players reaching 7th street need more than 52 cards: pokerkit then deals
            # from the reshuffled muck and burns, warning each time ("Returning reserved
            # (mucked, etc.) cards as dealable").  Its automations must not see those
            # warnings as errors (can_deal_hole() would say no and the hand would stall).
            warnings.filterwarnings("ignore", category=UserWarning, module=r"pokerkit\b")
            start = clock()
            end = start + seconds
            while True:
                actions += self.play_hand()
                hands += 1
                now = clock()
                if now >= end:
                    break
        self.hands += hands
        self.actions += actions
        self.seconds += now - start

    def reset(self) -> None:
        self.hands = self.actions = 0
        self.seconds = 0.0

    @property
    def hands_per_second(self) -> float:
        return self.hands / self.seconds if self.seconds else 0.0

    @property
    def actions_per_hand(self) -> float:
        return self.actions / self.hands if self.hands else 0.0


def make_runner(game: str, players: int, seed: int = 1) -> Runner | None:
    return Runner(game, players, seed) if variant(game) is not None else None
