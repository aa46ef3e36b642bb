"""The dispute re-run on tables the floor ran (issue 18): the operator's commands
(configure, pause, resume, close, sit out, remove) and R34's absent players (sat out
by a timed-out turn, removed past the table's limit when a hand or a pause ends) are
found again behind their stored events, from the right sender with the right clock,
and make the record exactly; a tampered event is still named."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
from pathlib import Path
from types import ModuleType

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from studroom.domain.commands import CloseTable, ConfigureTable, ScheduleHand, Timeout
from studroom.domain.errors import SEAT_OFFERED, DomainError
from studroom.domain.events import (
    ChipsBought,
    Event,
    LeaveRequested,
    PauseStarted,
    PlayerLeft,
    PlayerSatDown,
    SitOutChanged,
    TableClosed,
    TableConfigured,
    TurnStarted,
)
from studroom.domain.hand import HandState
from studroom.domain.hands import HandSpan, spans
from studroom.domain.scenario import _Run, read
from studroom.domain.table import Table
from studroom.domain.simulate import FLOOR, TIMER, SimulatedTable
from studroom.services.disputes.checks import HandCheck, check_hand, check_table
from studroom.services.disputes.timeline import render

TESTS = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((TESTS / "scenarios").glob("*.json"))
FLOOR_SCENARIOS = [p for p in SCENARIOS if p.name.startswith(("OP_", "R34_"))]


def _properties() -> ModuleType:
    """The domain's property test, for its floor strategy (random floor commands)."""
    spec = importlib.util.spec_from_file_location("floor_properties", TESTS / "domain" / "test_properties.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROPERTIES = _properties()


def _finished(events: list[Event]) -> list[HandSpan]:
    return [s for s in spans(events) if s.end is not None]


def _verified(events: list[Event]) -> list[HandCheck]:
    """Every finished hand of the record, checked as ``studroom verify`` does."""
    checks = list(check_table(events, _finished(events)))
    for check in checks:
        assert check.consistent, (check.span, check.difference, check.deck)
    return checks


# --- the golden scenarios --------------------------------------------------------------


def _scenario_stream(path: Path) -> list[Event]:
    """A scenario's whole record: the scripted stacks as buy-ins after the sit-downs."""
    run = _Run(read(json.loads(path.read_text())["scenario"]))
    run.run()
    stacks = {entry.seat: entry.stack for entry in run.s.seats}
    stream: list[Event] = []
    for event in run.events:
        stream.append(event)
        if isinstance(event, PlayerSatDown):
            stream.append(ChipsBought(seat=event.seat, amount=stacks[event.seat]))
    return stream


def test_there_are_golden_scenarios_with_the_floor() -> None:
    assert len(FLOOR_SCENARIOS) >= 6


@pytest.mark.parametrize("path", FLOOR_SCENARIOS, ids=lambda p: p.stem)
def test_R34_every_floor_scenario_re_runs_consistently_with_the_floors_commands(path: Path) -> None:
    stream = _scenario_stream(path)
    (span,) = _finished(stream)
    check = check_hand(stream, span)
    assert check.consistent, (check.difference, check.deck)
    steps = check.steps
    assert sum(s.count for s in steps) >= span.end - span.start          # the departures after it too
    floor = [s for s in steps if s.by == FLOOR]
    assert len(floor) == sum(1 for a in json.loads(path.read_text())["scenario"]["actions"]
                             if a["action"].startswith("floor_"))
    assert all(s.command.command_id is not None for s in floor)


# --- random tables with the floor (the domain's property strategy) ---------------------


@PROPERTIES.SETTINGS
@given(PROPERTIES.GAME_SEATS, st.integers(0, 2**32), st.sampled_from([0.0, 0.2]), st.sampled_from([0.1, 0.4]))
def test_R34_random_tables_with_the_floors_commands_verify_clean(game_seats, seed, timeout_rate, floor_rate):
    game, seats = game_seats
    table, events = PROPERTIES._play_with_the_floor(game, seats, seed, timeout_rate, floor_rate)
    assert table.closed
    _verified(events)


class FloorTable(SimulatedTable):
    """A room's table (senders, ids, the service's clock, the timer) with the floor:
    now and then a random floor command (the property strategy's), between hands and
    during them; the pause before each hand, or the pause for sat-out players (R34)
    that the timer ends at its deadline; a short sit-out limit, so absent players are
    removed when a hand or a pause ends."""

    def __init__(self, table_id: str, game: str, seats: int, seed: int) -> None:
        super().__init__(table_id, game, seats, seed=seed)
        self.numbers = itertools.count(1)
        self.settle_in()
        limits = msgspec.structs.replace(self.config, sit_out_seconds=25, action_seconds=15)
        self.run(ConfigureTable(config=limits), FLOOR)

    def floor(self) -> list[Event]:
        command, by = PROPERTIES._floor_command(self.table, self.rng)
        try:
            return self.run(command, by)
        except DomainError:
            return []

    def answer(self, turn: TurnStarted, hand: HandState) -> list[Event]:
        if self.rng.random() < 0.05:
            return self.floor()
        if self.rng.random() < 0.08:
            return self.run(Timeout(turn=turn.turn), TIMER)
        return super().answer(turn, hand)

    def pause(self) -> None:
        """ScheduleHand, then the timer's Timeout at (or after) the pause's deadline."""
        (started,) = [e for e in self.run(ScheduleHand(pause_ms=3000)) if isinstance(e, PauseStarted)]
        if self.table.pause_turn == started.turn:
            self.now_ms = max(self.now_ms, started.deadline_ms)
            self.run(Timeout(turn=started.turn), TIMER)

    def settle_in(self) -> None:
        """Newcomers, top-ups, the sat-out sit back in; a seat offered from the waiting
        list is not a newcomer's (refused, and the rest waits for the next round)."""
        try:
            self.between_hands()
        except DomainError as refused:
            if refused.code != SEAT_OFFERED:
                raise

    def round(self) -> list[Event]:
        if self.rng.random() < 0.3:
            self.settle_in()
        if self.rng.random() < 0.3:
            self.floor()
        if self.table.next_pause_due() or self.table.next_hand_due():
            self.pause()
        if self.table.next_hand_due():
            self.hand()
        return []

    def close(self) -> list[Event]:
        self.run(CloseTable(), FLOOR)
        while (hand := self.table.hand) is not None:
            turn = self.table.last_turn
            assert turn is not None
            self.answer(turn, hand)
        return self.events


@pytest.mark.parametrize("seed", range(6))
def test_R34_a_room_table_with_the_floor_and_absent_players_verifies_clean(seed: int) -> None:
    game = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")[seed % 3]
    table = FloorTable(f"f{seed}", game, 6, seed)
    table.play(40)
    events = table.close()
    checks = _verified(events)
    assert any(isinstance(e, TableClosed) for e in events)
    re_run = [s for c in checks for s in c.before + c.steps]
    assert {"operator.floor", "service.timer"} <= {s.by.key for s in re_run if s.by is not None}
    reasons = {e.reason for e in events if isinstance(e, (PlayerLeft, LeaveRequested))}
    assert "removed" in reasons or "sat_out_too_long" in reasons


def test_R34_across_seeds_the_room_tables_remove_absent_players_and_sit_them_out() -> None:
    """The seeds above see what the brief asks for: removals at a hand's and a pause's
    end, a timed-out sit-out, the floor's sit-out and new settings."""
    seen: set[str] = set()
    for seed in range(6):
        table = FloorTable(f"f{seed}", "seven_card_stud", 6, seed)
        events = table.play(40)
        seen |= {f"left {e.reason}" for e in events if isinstance(e, PlayerLeft)}
        seen |= {f"out {e.reason}" for e in events if isinstance(e, SitOutChanged) and e.sitting_out}
        seen |= {f"pause {e.purpose}" for e in events if isinstance(e, PauseStarted)}
        seen |= {"configured" for e in events if isinstance(e, TableConfigured)}
    assert seen >= {"left sat_out_too_long", "left removed", "out timed_out", "out operator",
                    "pause sit_out_limit", "configured"}, seen


# --- tampering is still named ----------------------------------------------------------


def test_R34_a_departure_with_more_chips_is_named() -> None:
    table = FloorTable("f9", "seven_card_stud", 6, 9)
    table.play(30)
    events = list(table.close())
    place = max(i for i, e in enumerate(events) if isinstance(e, PlayerLeft) and e.cashed_out
                and i < _finished(events)[-1].start)
    left = events[place]
    assert isinstance(left, PlayerLeft)
    events[place] = msgspec.structs.replace(left, cashed_out=left.cashed_out + 100)
    different = [c for c in check_table(events, _finished(events)) if not c.consistent]
    assert different and different[0].difference is not None
    assert different[0].difference.index == place
    assert f"cashed_out: record {left.cashed_out + 100}, re-run {left.cashed_out}" in different[0].difference.details


# --- the timeline tells the floor's actions ----------------------------------------------


def test_R34_the_timeline_tells_the_floors_actions_and_absent_players_in_words() -> None:
    text = ""
    for seed in range(3):
        table = FloorTable(f"f{seed}", "seven_card_stud", 6, seed)
        table.play(40)
        events = table.close()
        text += "".join(render(check, events) for check in check_table(events, _finished(events)))
    for words in ("is removed by the floor during the hand: his hand is folded",
                  "is removed: he sat out longer than the table's limit (R34), cashed out",
                  "sits out (the floor sat him out), since ", "sits out (his turn timed out, R34",
                  "the floor's new settings, from the next hand (at once between hands): stakes ",
                  "sit-out limit 25 s", "the floor pauses the table", "the floor resumes the table",
                  "no hand can be dealt while players sit out", "the pause before the next hand",
                  "operator.floor    RemovePlayer(player=", "operator.floor    SitOutPlayer(player="):
        assert words in text
    for kind in ("SitOutChanged(", "PlayerLeft(", "LeaveRequested(", "Table", "Pause"):
        assert not re.search(rf"v\d+ {re.escape(kind)}", text)           # no event left in its raw form
    assert "Verdict: DIFFERENT" not in text


def test_R34_a_table_closed_mid_hand_is_told_at_the_hands_end() -> None:
    stream = _scenario_stream(TESTS / "scenarios" / "OP_close_mid_hand_cashes_every_seat_out_at_hand_end.json")
    (span,) = _finished(stream)
    text = render(check_hand(stream, span), stream)
    assert re.search(r"operator\.floor\s+CloseTable\(\)\n\s+v\d+ the floor closes the table: it closes when "
                     r"this hand ends", text)
    assert "leaves: the table closes, cashed out" in text
    assert "the table is closed: every seat is cashed out" in text
    assert text.rstrip().splitlines()[-1].startswith("Verdict: CONSISTENT.")


def test_a_hand_is_told_at_its_own_settings_and_time_after_the_floor_changed_them() -> None:
    stakes = set()
    for seed in range(4):
        _check_settings_and_times(FloorTable(f"f{seed}", "seven_card_stud", 6, seed).play(40), stakes)
    assert len(stakes) > 1


def _check_settings_and_times(events: list[Event], stakes: set) -> None:
    for check in check_table(events, _finished(events)):
        config = Table.replay(events[:check.span.start]).config
        assert config is not None and config.action_seconds == 15
        s = config.stakes
        stakes.add(s)
        assert f"stakes {s.small_bet}/{s.big_bet}, ante {s.ante}," in render(check, events)
        opened = next(step for step in check.steps
                      if any(isinstance(e, TurnStarted) for e in events[step.start:step.start + step.count]))
        assert check.started_ms == opened.command.now_ms
