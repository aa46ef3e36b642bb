"""Hostile commands from random senders against a table in the middle of a hand
(hypothesis): every command either yields events or is refused with a DomainError, a
refusal changes nothing, and whatever is carried out stays publishable, within bounds,
conserves chips and replays to the same table."""

from __future__ import annotations

import random
import re

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studroom.domain.authority import Sender
from studroom.domain.cards import RANKS, SUITS
from studroom.domain.commands import (
    Act, BuyIn, Command, DealStreet, Leave, Muck, OpenTable, PostAnte, Show, SitDown, SitOut, SkipAnte,
    StartHand, Timeout,
)
from studroom.domain.config import Rake, Stakes, TableConfig
from studroom.domain.errors import DomainError
from studroom.domain.events import Event, PlayerSatDown, TableOpened, TurnStarted
from studroom.domain.names import is_name
from studroom.domain.simulate import choose
from studroom.domain.table import Table
from studroom.projections.ledger.conservation import check_table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
PLAYERS = 4
FLOOR = Sender("operator", "floor")
NAMES = ["p0", "p1", "p2", "p3", "p9", "floor", "timer", "cashier", "table", "Zoë", "", "p0.x", "x" * 65]
SENDERS = st.sampled_from([Sender("player", f"p{s}") for s in range(PLAYERS)] + [
    FLOOR, Sender("service", "timer"), Sender("service", "cashier")]) | st.builds(
    Sender, role=st.sampled_from(["player", "operator", "service"]), name=st.sampled_from(NAMES))
SEATS = st.integers(0, PLAYERS) | st.integers(-2, 11)
AMOUNTS = st.sampled_from([0, -1, 1, 199, 200, 4000, 4001, 10**12, 10**12 + 1, 2**63, 2**64]) | st.integers(-10, 10**13)
CARDS = [f"{r}{s}" for r in RANKS for s in SUITS] + ["Zz", "", "10h"]
COMMAND_IDS = (
    st.none()
    | st.sampled_from(["", "0", "01", "-5", "1.5", "abc", "1" * 30, str(2**63), "\u0661"])
    | st.integers(1, 2**62).map(str)      # valid (honest clients go on above them)
)
CONFIGS = st.builds(
    TableConfig, game=st.sampled_from(["seven_card_stud", "razz", ""]),
    stakes=st.builds(Stakes, small_bet=st.integers(-1, 2 * 10**9), big_bet=st.integers(-1, 2 * 10**9),
                     ante=st.integers(-1, 10), bring_in=st.none() | st.integers(-1, 10)),
    rake=st.builds(Rake, basis_points=st.integers(-1, 10_001), cap=st.none() | st.integers(-1, 2 * 10**9)),
    seats=st.integers(0, 12), max_buy_in=st.none() | st.integers(0, 2 * 10**12),
    action_seconds=st.integers(-1, 10**14), ante_seconds=st.integers(0, 4000),
)
HOSTILE = st.one_of(
    st.builds(OpenTable, table_id=st.sampled_from(["t1", "t2", "Zoë", ""]), config=CONFIGS),
    st.builds(SitDown, seat=SEATS, player=st.sampled_from(NAMES), auto_ante=st.booleans()),
    st.builds(BuyIn, seat=SEATS, amount=AMOUNTS),
    st.builds(SitOut, seat=SEATS, sitting_out=st.booleans()),
    st.builds(Leave, seat=SEATS),
    st.builds(StartHand, seed=st.none() | st.sampled_from(["ab" * 32, "", "zz"]),
              deck=st.none() | st.lists(st.sampled_from(CARDS), max_size=8), button=st.none() | SEATS),
    st.builds(PostAnte, seat=SEATS),
    st.builds(SkipAnte, seat=SEATS),
    st.builds(DealStreet, cards=st.none() | st.lists(st.sampled_from(CARDS), max_size=12),
              exposed=st.lists(SEATS, max_size=3), mixed=st.booleans()),
    st.builds(Act, seat=SEATS, action=st.sampled_from(["bring_in", "complete", "fold", "check", "call", "bet", "raise"]),
              size=st.none() | st.sampled_from(["small", "big"])),
    st.builds(Timeout, turn=st.integers(-1, 60), seat=st.none() | SEATS),
    st.builds(Show, seat=SEATS),
    st.builds(Muck, seat=SEATS),
)
STORED_ID = re.compile(r"(player|operator|service)\.[A-Za-z0-9_-]{1,64}#[1-9][0-9]{0,18}")
JSON_SAFE = 2**53


def table_in_hand(auto_deal: bool) -> tuple[Table, list[Event]]:
    table = Table()
    events = table.execute(OpenTable(table_id="t1", config=TableConfig(game="seven_card_stud", stakes=STAKES,
                                                                       auto_deal=auto_deal)))
    for seat in range(PLAYERS):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}"))
        events += table.execute(BuyIn(seat=seat, amount=1000))
    events += table.execute(StartHand(seed="ab" * 32))
    return table, events


def next_id(table: Table, sender: Sender) -> str:
    return str(table.last_command_ids.get(sender.key, 0) + 1)


def legal(table: Table, events: list[Event], rng: random.Random) -> tuple[Command, Sender | None] | None:
    """What an honest client (or the room itself) would send now, and who sends it.  The
    room starts every hand from a seed, so a live dealer's console may deal from it."""
    hand, config = table.hand, table.config
    assert config is not None
    if hand is None:
        return (StartHand(seed=rng.randbytes(32).hex()), None) if len(table.ready_seats()) >= 2 else None
    if hand.phase == "deal" and not config.auto_deal:
        return DealStreet(), FLOOR
    if hand.turn_kind == "ante":
        seat = next(s for s, p in hand.players.items() if not p.posted and not p.folded)
        return PostAnte(seat=seat), Sender("player", table.seats[seat].player)
    if hand.turn_kind in ("act", "show"):
        turn = next(e for e in reversed(events) if isinstance(e, TurnStarted))
        if rng.random() < 0.1:
            return Timeout(turn=turn.turn), Sender("service", "timer")
        return choose(turn, rng), Sender("player", table.seats[turn.seat].player)   # type: ignore[index]
    return None


def holder(table: Table, command: Command) -> Sender | None:
    """The player sitting in the command's seat: the one sender whose powers cover it."""
    state = table.seats.get(getattr(command, "seat", None))  # type: ignore[arg-type]
    return None if state is None else Sender("player", state.player)


def json_numbers_are_safe(value: object) -> bool:
    if isinstance(value, dict):
        return all(json_numbers_are_safe(v) for v in value.values())
    if isinstance(value, list):
        return all(json_numbers_are_safe(v) for v in value)
    return not isinstance(value, int) or abs(value) < JSON_SAFE


def publishable(event: Event) -> bool:
    names_ok = (not isinstance(event, PlayerSatDown) or is_name(event.player)) and (
        not isinstance(event, TableOpened) or is_name(event.table_id))
    id_ok = event.command_id is None or STORED_ID.fullmatch(event.command_id) is not None
    return names_ok and id_ok and json_numbers_are_safe(msgspec.to_builtins(event))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.data())
def test_hostile_commands_yield_events_or_change_nothing(auto_deal: bool, data: st.DataObject):
    table, events = table_in_hand(auto_deal)
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    used_ids: list[tuple[Sender, str]] = []
    for _ in range(40):
        honest = legal(table, events, rng) if data.draw(st.booleans(), label="honest") else None
        if honest is not None:
            command, by = honest
            if by is not None:
                command = msgspec.structs.replace(command, command_id=next_id(table, by))
        else:
            command = data.draw(HOSTILE, label="command")
            by = holder(table, command) if data.draw(st.booleans(), label="insider") else None
            by = by or data.draw(SENDERS, label="sender")
            replayed = [i for s, i in used_ids if s == by]
            command_id = data.draw(st.sampled_from(replayed) if replayed and rng.random() < 0.3 else COMMAND_IDS)
            command = msgspec.structs.replace(command, command_id=command_id)
        before = table.state()
        try:
            new = table.execute(command, by=by)
        except DomainError:
            assert table.state() == before
            continue
        assert new and all(publishable(e) for e in new)
        if by is not None:
            used_ids.append((by, command.command_id))  # type: ignore[arg-type]
        events += new
    assert Table.replay(events).state() == table.state()
    check = check_table("t1", events)
    assert check.conserved, check.bad
