"""The baseline of ``bench domain``: pokerkit playing random stud hands the way
``simulate.play_hand`` plays ours (how alike they are: docs/design/benchmarks.md)."""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Callable
from typing import Any

from studroom.domain.simulate import STAKES, WEIGHTS

# our decision weights (bet, raise and complete weigh the same)
W_FOLD, W_CHECK, W_CALL = WEIGHTS["fold"], WEIGHTS["check"], WEIGHTS["call"]
W_AGGRESS, W_BRING_IN = WEIGHTS["bet"], WEIGHTS["bring_in"]

_VARIANTS = {
    "seven_card_stud": "FixedLimitSevenCardStud",
    "seven_card_stud_hilo": "FixedLimitSevenCardStudHighLowSplitEightOrBetter",
    "five_card_stud": None,   # pokerkit (0.7) has no five-card stud variant
}


def available() -> bool:
    """pokerkit is installed (an optional dependency: the ``bench`` extra)."""
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

    def __init__(self, game: str, players: int, stack: int, seed: int = 1) -> None:
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
        self.game, self.players, self.stack = game, players, stack
        self.rng = random.Random(seed)
        random.seed(seed)             # pokerkit shuffles its decks with the module RNG
        self.hands = 0
        self.actions = 0              # player decisions (bring-in, fold, check/call, bet...)
        self.seconds = 0.0

    def new_state(self) -> Any:
        return self._cls.create_state(
            self._automations, True, STAKES.ante, STAKES.bring_in_amount, STAKES.small_bet,
            STAKES.big_bet, self.stack, self.players, mode=self._mode,
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


def make_runner(game: str, players: int, stack: int, seed: int = 1) -> Runner | None:
    """A Runner, or None when pokerkit is missing or has no such game."""
    return Runner(game, players, stack, seed) if variant(game) is not None else None
