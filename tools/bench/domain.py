"""Benchmark of the pure domain: full random hands per second for each game at 2 and 8
seats, beside pokerkit measured in the same run (alternating time slices), and the
hand evaluator's evaluations per second.  How the two engines are made comparable:
docs/design/benchmarks.md.

    studroom bench domain [--seconds N]
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from studroom import domain
from studroom.domain.events import Acted, TurnStarted
from studroom.domain.simulate import STAKES, WEIGHTS, new_table, play_hand, top_up
from studroom.services.runtime.arguments import positive_float
from studroom.services.runtime.text import cell, table

from . import hand_evaluation, pokerkit_baseline

GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")
SEATS = (2, 8)
STACK = 2000
GOAL = 20.0
WARMUP_SECONDS = 0.5   # per engine and case, untimed: imports, first calls, memo tables


class DomainRunner:
    """Our engine, one table of one game, played in time slices.  Only the hands are
    timed (``top_up`` + ``play_hand``); counting their events is not."""

    def __init__(self, game: str, players: int, seed: int = 1) -> None:
        self.table, _ = new_table(game, players, stack=STACK)
        self.rng = random.Random(seed)
        self.hands = self.events = self.actions = self.commands = 0
        self.seconds = 0.0

    def run_for(self, seconds: float) -> None:
        clock = time.perf_counter
        table, rng = self.table, self.rng
        end = clock() + seconds
        spent = 0.0
        hands = events = actions = commands = 0
        while True:
            t0 = clock()
            top_up(table, STACK)
            played = play_hand(table, rng)
            t1 = clock()
            spent += t1 - t0
            hands += 1
            events += len(played)
            for e in played:
                kind = type(e)
                if kind is Acted:
                    actions += 1
                elif kind is TurnStarted:
                    commands += 1       # every turn is answered by one command
            commands += 1               # StartHand
            if t1 >= end:
                break
        self.hands += hands
        self.events += events
        self.actions += actions
        self.commands += commands
        self.seconds += spent

    def reset(self) -> None:
        self.hands = self.events = self.actions = self.commands = 0
        self.seconds = 0.0

    @property
    def hands_per_second(self) -> float:
        return self.hands / self.seconds if self.seconds else 0.0


def _slice(seconds: float) -> float:
    """Each engine gets about six alternating slices per case (0.05 s to 0.5 s each)."""
    return max(0.05, min(0.5, seconds / 6))


def measure_case(game: str, players: int, seconds: float, seed: int = 1) -> dict:
    ours = DomainRunner(game, players, seed)
    theirs = pokerkit_baseline.make_runner(game, players, STACK, seed)
    for runner in (ours, theirs):   # a room runs for days: measure the steady state
        if runner is not None:
            runner.run_for(WARMUP_SECONDS)
            runner.reset()
    piece = _slice(seconds)
    turn = 0
    while ours.seconds < seconds or (theirs is not None and theirs.seconds < seconds):
        first, second = (ours, theirs) if turn % 2 == 0 else (theirs, ours)
        for runner in (first, second):
            if runner is not None and runner.seconds < seconds:
                runner.run_for(piece)
        turn += 1
    row = {
        "game": game,
        "seats": players,
        "studroom_hps": ours.hands_per_second,
        "pokerkit_hps": None if theirs is None else theirs.hands_per_second,
        "studroom_hands": ours.hands,
        "pokerkit_hands": None if theirs is None else theirs.hands,
        "actions_per_hand": ours.actions / ours.hands,
        "pokerkit_actions_per_hand": None if theirs is None else theirs.actions_per_hand,
        "events_per_hand": ours.events / ours.hands,
        "commands_per_hand": ours.commands / ours.hands,
    }
    row["ratio"] = None if not row["pokerkit_hps"] else row["studroom_hps"] / row["pokerkit_hps"]
    row["goal_met"] = None if row["ratio"] is None else row["ratio"] >= GOAL
    return row


def measure(seconds: float = 2.0) -> tuple[list[dict], list[dict]]:
    hands = [measure_case(g, n, seconds) for g in GAMES for n in SEATS]
    evals = hand_evaluation.measure(seconds)
    return hands, evals


def _per_second(x: float | None) -> int | str:
    """A rate for the table (an integer), n/a where there is nothing to compare with."""
    return "n/a" if x is None else round(x)


def _decimal(x: float | None) -> str:
    return "n/a" if x is None else cell(float(x))


def render(hands: list[dict], evals: list[dict], seconds: float) -> str:
    pk = pokerkit_baseline.version()
    out = [
        (f"Full random hands per second, {seconds:g} s per engine and case, interleaved "
         f"(Python {sys.version.split()[0]}, pokerkit {pk or 'not installed'})"),
        (f"stakes: ante {STAKES.ante}, bring-in {STAKES.bring_in_amount}, small bet "
         f"{STAKES.small_bet}, big bet {STAKES.big_bet}; stacks {STACK}; weights "
         + ", ".join(f"{action} {weight}" for action, weight in WEIGHTS.items())),
        ("our rules: " + ("compiled with mypyc" if domain.COMPILED else
                          "pure Python (not compiled, or STUDROOM_PURE_PYTHON=1)")
         + f"; each engine warms up {WARMUP_SECONDS:g} s per case, untimed"),
        "",
    ]
    header = ["game", "seats", "studroom h/s", "pokerkit h/s", "ratio", f"goal {GOAL:g}x",
              "actions/hand (ours/pk)", "events/hand", "commands/hand"]
    rows = []
    for r in hands:
        goal = "n/a" if r["goal_met"] is None else ("yes" if r["goal_met"] else "NO")
        ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        rows.append([
            r["game"], r["seats"], _per_second(r["studroom_hps"]), _per_second(r["pokerkit_hps"]), ratio, goal,
            f"{cell(float(r['actions_per_hand']))} / {_decimal(r['pokerkit_actions_per_hand'])}",
            float(r["events_per_hand"]), float(r["commands_per_hand"]),
        ])
    out.append(table(header, rows, right=("studroom h/s", "pokerkit h/s", "ratio", "actions/hand (ours/pk)")))
    met = [r["goal_met"] for r in hands if r["goal_met"] is not None]
    out.append("")
    out.append(f"goal ({GOAL:g}x pokerkit per hand): met in {sum(met)} of {len(met)} comparable cases"
               + ("; five-card stud has no pokerkit counterpart (n/a)" if any(r["ratio"] is None for r in hands) else ""))
    out += ["", "Hand evaluator (studroom.domain.hand_ranking)", ""]
    out.append(table(["case", "evaluations/s"], [[e["case"], round(e["evals_per_s"])] for e in evals]))
    return "\n".join(out)


HELP = "hands/s of the pure domain beside pokerkit; evaluations/s"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=positive_float, default=2.0, help="per engine and case (default 2)")


def run(args: argparse.Namespace) -> int:
    if args.seconds <= 0:
        raise SystemExit("--seconds must be positive")
    hands, evals = measure(args.seconds)
    print(render(hands, evals, args.seconds))
    return 0
