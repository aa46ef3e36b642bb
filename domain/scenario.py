"""Scripted hands (SCENARIO.md): one hand, fixed cards and decisions, exact outcome.

``play(scenario)`` runs the script through the same :class:`~studroom.domain.table.Table`
the table service runs, and returns the SCENARIO.md output (or ``{"error": ...}``).

Beyond SCENARIO.md, two optional keys:

* ``"timeout_policy"``: ``"all_in_protection"`` (the default, seed 000) or
  ``"check_or_fold"`` (rule R19);
* ``"live_dealer": {"exposed": [seat, ...], "mixed": false}`` describes a live
  dealer's mistake (rule R28): the 7th cards of those seats came face up (or, with
  ``mixed``, the last cards can no longer be told apart).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import msgspec

from .commands import (
    Act, Command, DealStreet, Muck, OpenTable, PostAnte, Show, SitDown, SkipAnte, StartHand, Timeout,
)
from .config import Rake, Stakes, TableConfig
from .errors import BAD_SCENARIO, BAD_SIZE, BAD_STAKES, ILLEGAL_ACTION, UNKNOWN_SEAT, DomainError
from .events import CardsDealt, ChipsBought, Event, HandEnded, HandShown, HandStarted, PotAwarded
from .showdown import pots as current_pots
from .table import Table

BETTING = {"bring_in", "complete", "fold", "check", "call", "bet", "raise"}
SHOWDOWN = {"show", "muck", "timeout"}


class ScriptError(Exception):
    def __init__(self, error: DomainError, index: int | None) -> None:
        self.error, self.index = error, index


def play(scenario: dict[str, Any]) -> dict[str, Any]:
    try:
        return _Run(scenario).run()
    except ScriptError as e:
        return {"error": {"code": e.error.code, "message": e.error.message, "action_index": e.index}}


def _bad(message: str) -> ScriptError:
    return ScriptError(DomainError(BAD_SCENARIO, message), None)


def _config(s: dict[str, Any], live_dealer: bool) -> TableConfig:
    try:
        stakes = msgspec.convert(s.get("stakes"), Stakes)
        rake = s.get("rake") or {}
        basis_points = Fraction(str(rake.get("percent", 0))) * 100
        if basis_points.denominator != 1:
            raise ScriptError(DomainError(BAD_STAKES, "rake percent to two decimals at most"), None)
        return TableConfig(
            game=s.get("game", ""), stakes=stakes,
            rake=Rake(basis_points=int(basis_points), cap=rake.get("cap")), auto_deal=not live_dealer,
            timeout_policy=s.get("timeout_policy", "all_in_protection"),
        )
    except (msgspec.ValidationError, TypeError, ValueError) as e:
        raise ScriptError(DomainError(BAD_STAKES, str(e)), None) from None


class _Run:
    def __init__(self, scenario: dict[str, Any]) -> None:
        if not isinstance(scenario, dict):
            raise _bad("a scenario is a JSON object")
        self.s = scenario
        self.table = Table()
        self.events: list[Event] = []
        self.actions = scenario.get("actions", [])
        self.live_dealer = scenario.get("live_dealer") or {}
        if not isinstance(self.actions, list) or not all(isinstance(a, dict) for a in self.actions):
            raise _bad("actions must be a list of objects")

    def run(self) -> dict[str, Any]:
        self._setup()
        i = self._start()
        while i < len(self.actions) and self.table.hand is not None:
            if self.table.hand.phase == "showdown":
                self._showdown(i)
                i = len(self.actions)
                break
            self._do(i, self._command(i))
            i += 1
            self._proceed()
        if i < len(self.actions):
            raise ScriptError(DomainError(ILLEGAL_ACTION, "the hand is over"), i)
        if self.table.hand is not None and self.table.hand.phase == "showdown":
            self._showdown(len(self.actions))
        start = next(i for i, e in enumerate(self.events) if isinstance(e, HandStarted))
        return {"events": [msgspec.to_builtins(e) for e in self.events[start:]], "result": self._result()}

    # --- driving the table ------------------------------------------------------------

    def _do(self, index: int | None, command: Command) -> None:
        try:
            self.events += self.table.execute(command)
        except DomainError as e:
            raise ScriptError(e, index) from None

    def _setup(self) -> None:
        s = self.s
        self._do(None, OpenTable(table_id="scenario", config=_config(s, bool(self.live_dealer))))
        seats = s.get("seats")
        if not isinstance(seats, list) or not seats:
            raise _bad("seats must be a non-empty list")
        outs = {a.get("seat") for a in self._leading_ante_outs()}
        for entry in seats:
            try:
                seat, player, stack = int(entry["seat"]), str(entry["player"]), entry["stack"]
            except (KeyError, TypeError, ValueError):
                raise _bad(f"bad seat entry {entry!r}") from None
            if not isinstance(stack, int) or stack < 0:
                raise _bad(f"seat {seat}: the stack is a whole number of chips")
            self._do(None, SitDown(seat=seat, player=player, auto_ante=seat not in outs))
            # scripted stacks are where the players stand, not buy-ins: no R3 minimum
            self.table.apply(ChipsBought(seat=seat, amount=stack))

    def _leading_ante_outs(self) -> list[dict[str, Any]]:
        leading = []
        for a in self.actions:
            if a.get("action") != "ante_out":
                break
            leading.append(a)
        return leading

    def _start(self) -> int:
        s = self.s
        deck, seed = s.get("deck"), s.get("seed")
        if deck is None and seed is None:
            raise _bad("a scenario needs a deck or a seed")
        self._do(None, StartHand(deck=deck, seed=seed if deck is None else None, button=s.get("button", 0)))
        if deck is not None and seed is not None and self.table.hand is not None:
            self.table.hand.shuffle_seed = bytes.fromhex(seed)   # R17 shuffles use the seed
        outs = self._leading_ante_outs()
        for i, a in enumerate(outs):
            self._do(i, SkipAnte(seat=a.get("seat", -1)))
        if self.table.hand is not None and self.table.hand.phase == "ante":
            for p in list(self.table.hand.players.values()):
                if not p.posted and not p.folded:
                    self._do(None, PostAnte(seat=p.seat))
        self._proceed()
        return len(outs)

    def _proceed(self) -> None:
        """Deal streets on a live-dealer script (online tables deal by themselves)."""
        hand = self.table.hand
        while hand is not None and hand.phase == "deal" and not self.table.config.auto_deal:  # type: ignore[union-attr]
            last = hand.street + 1 == self.table.game.last_street  # type: ignore[union-attr]
            self._do(None, DealStreet(
                exposed=list(self.live_dealer.get("exposed", [])) if last else [],
                mixed=bool(self.live_dealer.get("mixed")) if last else False,
            ))
            hand = self.table.hand

    def _command(self, i: int) -> Command:
        a = self.actions[i]
        action, seat = a.get("action"), a.get("seat")
        if not isinstance(seat, int):
            raise ScriptError(DomainError(UNKNOWN_SEAT, f"action {i} names no seat"), i)
        if action in BETTING:
            size = a.get("size")
            if size not in (None, "small", "big"):
                raise ScriptError(DomainError(BAD_SIZE, f"size is small or big, not {size!r}"), i)
            return Act(seat=seat, action=action, size=size)
        if action == "timeout":
            return Timeout(turn=self.table.turn, seat=seat)
        if action == "ante_out":
            return SkipAnte(seat=seat)
        if action in ("show", "muck"):
            raise ScriptError(DomainError(ILLEGAL_ACTION, "there is no showdown now"), i)
        raise ScriptError(DomainError(ILLEGAL_ACTION, f"unknown action {action!r}"), i)

    def _showdown(self, first: int) -> None:
        """R21/R22: the decisions the script gives, in showdown order; no decision shows."""
        decisions: dict[int, tuple[int, str]] = {}
        for i in range(first, len(self.actions)):
            a = self.actions[i]
            if a.get("action") not in SHOWDOWN:
                raise ScriptError(DomainError(ILLEGAL_ACTION, "only show or muck at the showdown"), i)
            if a.get("seat") in decisions:
                raise ScriptError(DomainError(ILLEGAL_ACTION, f"seat {a.get('seat')} decided twice"), i)
            decisions[a.get("seat")] = (i, a["action"])  # type: ignore[index]
        hand = self.table.hand
        while hand is not None and hand.phase == "showdown":
            seat = hand.to_act
            assert seat is not None
            index, decision = decisions.pop(seat, (None, "show"))
            command: Command = {"show": Show(seat=seat), "muck": Muck(seat=seat),
                                "timeout": Timeout(turn=self.table.turn, seat=seat)}[decision]
            self._do(index, command)
            hand = self.table.hand
        shown = {e.seat for e in self.events if isinstance(e, HandShown)}
        for seat, (index, decision) in sorted(decisions.items(), key=lambda kv: kv[1][0]):
            if seat in shown and decision == "show":
                continue
            code = "must_show" if seat in shown else "not_your_turn"
            raise ScriptError(DomainError(code, f"seat {seat} cannot {decision} now"), index)

    # --- the outcome ------------------------------------------------------------------

    def _result(self) -> dict[str, Any]:
        ended = next((e for e in self.events if isinstance(e, HandEnded)), None)
        community = [e.community for e in self.events if isinstance(e, CardsDealt) and e.community]
        shown = {str(e.seat): e.cards for e in self.events if isinstance(e, HandShown)}
        ended_on: str
        if ended is not None:
            stacks, net = ended.stacks, ended.net
            pots = [
                {"amount": e.amount, "rake": e.rake, "eligible": e.eligible,
                 "winners": {"high": _keys(e.high), "low": _keys(e.low)}}
                for e in self.events if isinstance(e, PotAwarded)
            ]
            ended_on = ended.ended_on
        else:
            hand = self.table.hand
            players = hand.players.values() if hand else []
            stacks = {p.seat: p.stack for p in players}
            net = {p.seat: p.stack - p.start_stack for p in players}
            pots = [{"amount": p.amount, "rake": 0, "eligible": p.eligible, "winners": {"high": {}, "low": {}}}
                    for p in (current_pots(hand) if hand else [])]
            ended_on = "in_progress"
        return {"stacks": _keys(stacks), "net": _keys(net), "pots": pots, "community": community,
                "shown": shown, "ended_on": ended_on}


def _keys(m: dict[int, int]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(m.items())}
