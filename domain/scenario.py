"""Scripted hands (docs/scenarios.md): one hand, fixed cards and decisions, exact outcome.

``play(scenario)`` runs the script through the same :class:`~studroom.domain.table.Table`
the table service runs, and returns the scenario's output (or ``{"error": ...}``).

A script is read strictly (:class:`Scenario`): a key it does not know, anywhere, or a
value of the wrong type is a ``bad_scenario`` error naming where, never ignored.
Beyond the format docs/scenarios.md describes, two optional keys:

* ``"timeout_policy"``: ``"all_in_protection"`` (the default, seed 000) or
  ``"check_or_fold"`` (rule R19);
* ``"live_dealer": {"exposed": [seat, ...], "mixed": false}`` describes a live
  dealer's mistake (rule R28): the 7th cards of those seats came face up (or, with
  ``mixed``, the last cards can no longer be told apart).

and one more outcome: ``"ended_on": "cancelled"`` when fewer than two players posted
their antes (R5: every ante goes back, nothing is dealt).

The floor's commands may come between the players' actions, each sent as the operator
``floor`` (so his powers are checked, domain/authority.py): ``floor_pause``,
``floor_resume``, ``floor_close`` (no seat), ``floor_sit_out`` and ``floor_remove``
(the seat's player, by name, as the operator's CLI names him) and ``floor_configure``
(``"stakes"``: the table's new stakes, for the next hand).  Not at the showdown.

Rules R5, R19, R28, R34 (docs/rules.md).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Literal, cast

import msgspec

from .authority import Sender
from .commands import (
    Act, CloseTable, Command, ConfigureTable, DealStreet, Muck, OpenTable, PauseTable, PostAnte, RemovePlayer,
    ResumeTable, Show, SitDown, SitOutPlayer, SkipAnte, StartHand, Timeout,
)
from .config import Rake, Stakes, TableConfig, TimeoutPolicy
from .errors import BAD_SCENARIO, BAD_SIZE, BAD_STAKES, ILLEGAL_ACTION, DomainError
from .events import (
    CardsDealt, ChipsBought, Event, HandCancelled, HandEnded, HandShown, HandStarted, PotAwarded, TableEvent,
)
from .showdown import pots as current_pots
from .table import Table

# --- the script, as SCENARIO.md writes it ---------------------------------------------


class ScriptedRake(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    percent: int | float = 0       # of each pot, to two decimals at most
    cap: int | None = None


class ScriptedSeat(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seat: int
    player: str
    stack: int


class ScriptedAction(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    action: str                    # checked as the script is played: its code and index
    seat: int | None = None        # every action's but the floor's table-wide ones
    size: str | None = None
    stakes: Stakes | None = None   # floor_configure's new stakes


class LiveDealer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    exposed: list[int] = []
    mixed: bool = False


class Scenario(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    game: str
    stakes: Stakes
    seats: list[ScriptedSeat]
    rake: ScriptedRake | None = None
    button: int = 0
    deck: list[str] | None = None
    seed: str | None = None
    actions: list[ScriptedAction] = []
    timeout_policy: TimeoutPolicy = "all_in_protection"
    live_dealer: LiveDealer | None = None


# --- its outcome ------------------------------------------------------------------------

EndedOn = Literal["showdown", "fold", "cancelled", "in_progress"]


class Winners(msgspec.Struct, frozen=True):
    high: dict[str, int]
    low: dict[str, int]


class PotResult(msgspec.Struct, frozen=True):
    amount: int
    rake: int
    eligible: list[int]
    winners: Winners


class Result(msgspec.Struct, frozen=True):
    stacks: dict[str, int]
    net: dict[str, int]
    pots: list[PotResult]
    community: list[str]
    shown: dict[str, list[str]]
    ended_on: EndedOn


class Failure(msgspec.Struct, frozen=True):
    code: str
    message: str
    action_index: int | None


class Output(msgspec.Struct, frozen=True, omit_defaults=True):
    """What ``studroom hand play`` prints: the hand's events and result, or the error."""

    events: list[TableEvent] = []
    result: Result | None = None
    error: Failure | None = None

BETTING = {"bring_in", "complete", "fold", "check", "call", "bet", "raise"}
SHOWDOWN = {"show", "muck", "timeout"}
FLOOR = Sender("operator", "floor")


class ScriptError(Exception):
    def __init__(self, error: DomainError, index: int | None) -> None:
        self.error, self.index = error, index


def play(scenario: object) -> dict[str, Any]:
    """Play a script (decoded JSON): the SCENARIO.md output as plain data."""
    output: Output
    try:
        output = _Run(read(scenario)).run()
    except ScriptError as e:
        output = Output(error=Failure(e.error.code, e.error.message, e.index))
    return msgspec.to_builtins(output)  # type: ignore[no-any-return]


def read(scenario: object) -> Scenario:
    """The script, strictly: ``bad_scenario`` names the first key or value that is wrong."""
    try:
        return msgspec.convert(scenario, Scenario)
    except msgspec.ValidationError as e:
        raise _bad(str(e)) from None


def _bad(message: str) -> ScriptError:
    return ScriptError(DomainError(BAD_SCENARIO, message), None)


def _seat(a: ScriptedAction) -> int:
    """The seat of a player's action (only the floor's table-wide ones have none)."""
    if a.seat is None:
        raise _bad(f"{a.action} needs a seat")
    return a.seat


def _config(s: Scenario) -> TableConfig:
    rake = s.rake or ScriptedRake()
    basis_points = Fraction(str(rake.percent)) * 100
    if basis_points.denominator != 1:
        raise ScriptError(DomainError(BAD_STAKES, "rake percent to two decimals at most"), None)
    return TableConfig(game=s.game, stakes=s.stakes, rake=Rake(basis_points=int(basis_points), cap=rake.cap),
                       auto_deal=s.live_dealer is None, timeout_policy=s.timeout_policy)


class _Run:
    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        self.table = Table()
        self.events: list[Event] = []
        self.actions = scenario.actions
        self.live_dealer = scenario.live_dealer or LiveDealer()

    def run(self) -> Output:
        self._setup()
        i = self._start()
        while i < len(self.actions) and self.table.hand is not None:
            if self.table.hand.phase == "showdown":
                self._showdown(i)
                i = len(self.actions)
                break
            floor = self._floor_command(i)
            if floor is not None:
                self._do(i, msgspec.structs.replace(floor, command_id=str(i + 1)), FLOOR)
            else:
                self._do(i, self._command(i))
            i += 1
            self._proceed()
        if i < len(self.actions):
            raise ScriptError(DomainError(ILLEGAL_ACTION, "the hand is over"), i)
        if self.table.hand is not None and self.table.hand.phase == "showdown":
            self._showdown(len(self.actions))
        start = next(i for i, e in enumerate(self.events) if isinstance(e, HandStarted))
        return Output(events=cast(list[TableEvent], self.events[start:]), result=self._result())

    # --- driving the table ------------------------------------------------------------

    def _do(self, index: int | None, command: Command, by: Sender | None = None) -> None:
        try:
            self.events += self.table.execute(command, by)
        except DomainError as e:
            raise ScriptError(e, index) from None

    def _setup(self) -> None:
        s = self.s
        self._do(None, OpenTable(table_id="scenario", config=_config(s)))
        if not s.seats:
            raise _bad("seats must be a non-empty list")
        outs = {a.seat for a in self._leading_ante_outs()}
        for entry in s.seats:
            if entry.stack < 0:
                raise _bad(f"seat {entry.seat}: the stack is a whole number of chips")
            self._do(None, SitDown(seat=entry.seat, player=entry.player, auto_ante=entry.seat not in outs))
            # scripted stacks are where the players stand, not buy-ins: no R3 minimum
            self.table.apply(ChipsBought(seat=entry.seat, amount=entry.stack))

    def _leading_ante_outs(self) -> list[ScriptedAction]:
        leading = []
        for a in self.actions:
            if a.action != "ante_out":
                break
            leading.append(a)
        return leading

    def _start(self) -> int:
        s = self.s
        if s.deck is None and s.seed is None:
            raise _bad("a scenario needs a deck or a seed")
        # with a deck, the seed (if any) makes its salts and R17 reshuffles (deck.py)
        self._do(None, StartHand(deck=s.deck, seed=s.seed, button=s.button))
        outs = self._leading_ante_outs()
        for i, a in enumerate(outs):
            self._do(i, SkipAnte(seat=_seat(a)))
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
                exposed=list(self.live_dealer.exposed) if last else [],
                mixed=self.live_dealer.mixed if last else False,
            ))
            hand = self.table.hand

    def _floor_command(self, i: int) -> Command | None:
        """The operator's command an action names (None: a player's action)."""
        a = self.actions[i]
        if not a.action.startswith("floor_"):
            return None
        table_wide = {"floor_pause": PauseTable, "floor_resume": ResumeTable, "floor_close": CloseTable}
        if a.action in table_wide:
            return table_wide[a.action]()
        if a.action == "floor_configure":
            if a.stakes is None:
                raise _bad(f"actions[{i}]: floor_configure needs stakes")
            config = self.table.next_config or self.table.config
            assert config is not None
            return ConfigureTable(config=msgspec.structs.replace(config, stakes=a.stakes))
        if a.action in ("floor_sit_out", "floor_remove"):
            name = next((e.player for e in self.s.seats if e.seat == a.seat), None)
            if name is None:
                raise _bad(f"actions[{i}]: {a.action} needs the seat of a scripted player")
            return SitOutPlayer(player=name) if a.action == "floor_sit_out" else RemovePlayer(player=name)
        raise ScriptError(DomainError(ILLEGAL_ACTION, f"unknown action {a.action!r}"), i)

    def _command(self, i: int) -> Command:
        a = self.actions[i]
        action, seat = a.action, _seat(a)
        if action in BETTING:
            size = a.size
            if size not in (None, "small", "big"):
                raise ScriptError(DomainError(BAD_SIZE, f"size is small or big, not {size!r}"), i)
            return Act(seat=seat, action=action, size=size)  # type: ignore[arg-type]
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
            if a.action not in SHOWDOWN:
                raise ScriptError(DomainError(ILLEGAL_ACTION, "only show or muck at the showdown"), i)
            decider = _seat(a)
            if decider in decisions:
                raise ScriptError(DomainError(ILLEGAL_ACTION, f"seat {decider} decided twice"), i)
            decisions[decider] = (i, a.action)
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

    def _result(self) -> Result:
        ended = next((e for e in self.events if isinstance(e, HandEnded)), None)
        community = [e.community for e in self.events if isinstance(e, CardsDealt) and e.community]
        shown = {str(e.seat): e.cards for e in self.events if isinstance(e, HandShown)}
        ended_on: EndedOn
        pots: list[PotResult] = []
        hand = self.table.hand
        if ended is not None:
            stacks, net = ended.stacks, ended.net
            pots = [PotResult(e.amount, e.rake, e.eligible, Winners(_keys(e.high), _keys(e.low)))
                    for e in self.events if isinstance(e, PotAwarded)]
            ended_on = ended.ended_on
        elif hand is not None:
            stacks = {p.seat: p.stack for p in hand.players.values()}
            net = {p.seat: p.stack - p.start_stack for p in hand.players.values()}
            pots = [PotResult(p.amount, 0, p.eligible, Winners({}, {})) for p in current_pots(hand)]
            ended_on = "in_progress"
        else:                           # R5: cancelled, every ante went back
            assert any(isinstance(e, HandCancelled) for e in self.events)
            stacks = {seat.seat: seat.stack for seat in self.s.seats}
            net = dict.fromkeys(stacks, 0)
            ended_on = "cancelled"
        return Result(_keys(stacks), _keys(net), pots, community, shown, ended_on)


def _keys(m: dict[int, int]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(m.items())}
