"""Snapshots (domain/snapshot.py): a table restored from its snapshot, with the events
after it applied, is the table a full replay builds, secrets included, and plays on
exactly like it."""

from __future__ import annotations

import random

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from studroom.domain import snapshot
from studroom.domain.authority import Sender
from studroom.domain.commands import (
    Act,
    BuyIn,
    CloseTable,
    Command,
    ConfigureTable,
    OpenTable,
    PauseTable,
    PostAnte,
    ScheduleHand,
    Show,
    SitDown,
    SitOut,
    SitOutPlayer,
    StartHand,
    Timeout,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.deck import CommittedDeck, ListedDeck
from studroom.domain.errors import MUST_SHOW, DomainError
from studroom.domain.games import GAMES
from studroom.domain.hand import HandPlayer, HandState
from studroom.domain.simulate import STAKES, choose, new_table, sat_out, top_up
from studroom.domain.table import _STATE, SeatState, Table

GAME_SEATS = st.sampled_from(list(GAMES)).flatmap(
    lambda g: st.tuples(st.just(g), st.integers(2, GAMES[g].max_seats))
)


def _history(game: str, seats: int, seed: int, hands: int) -> list[list]:
    """The events of random hands, command by command."""
    rng = random.Random(seed)
    table, opening = new_table(game, seats, stack=300)
    commands = [opening]
    for _ in range(hands):
        commands += [table.execute(SitOut(seat=seat, sitting_out=False)) for seat in sat_out(table)]   # R34
        commands.append(table.execute(StartHand(seed=rng.randbytes(32).hex())))
        commands += _play_on(table, rng, 10_000)
        commands.append(top_up(table, 300))
    return commands


def _play_on(table: Table, rng: random.Random, moves: int, passive: bool = False) -> list:
    """Up to ``moves`` random legal moves in the hand under way (events of each);
    ``passive``: everyone checks or calls to the showdown."""
    out = []
    for _ in range(moves):
        hand, turn = table.hand, table.last_turn
        if hand is None or turn is None:
            break
        assert hand.to_act is not None or turn.kind == "ante"   # between commands, a turn is open
        if passive and turn.kind == "act":
            command: Command = Act(seat=turn.seat, action=next(a for a in ("check", "call", "bring_in")
                                                                   if a in turn.options))
        elif rng.random() < 0.05 and not passive:
            command = Timeout(turn=turn.turn)
        elif turn.kind == "ante":
            command = PostAnte(seat=next(s for s, p in hand.players.items() if not p.posted and not p.folded))
        else:
            command = choose(turn, rng)
        try:
            out.append(table.execute(command))
        except DomainError as refused:
            assert refused.code == MUST_SHOW
            out.append(table.execute(Show(seat=command.seat)))  # type: ignore[attr-defined]
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GAME_SEATS, st.integers(0, 2**32), st.floats(0, 1), st.integers(0, 2**32))
def test_snapshot_and_tail_rebuild_exactly_the_replayed_table(game_seats, seed, where, play_seed):
    game, seats = game_seats
    commands = _history(game, seats, seed, 3)
    events = [e for batch in commands for e in batch]
    cut = int(where * len(events))                 # anywhere, even inside a command's events
    restored = snapshot.restore(snapshot.capture(Table.replay(events[:cut])))
    for event in events[cut:]:
        restored.apply(event)
    replayed = Table.replay(events)
    assert restored.state() == replayed.state()
    assert snapshot.capture(restored) == snapshot.capture(replayed)   # the deck's secrets too
    # mid-hand or not, both play on identically (the deck, the proofs, the turns)
    middle = Table.replay(e for batch in commands[: int(where * len(commands))] for e in batch)
    twin = snapshot.restore(snapshot.capture(middle))
    assert _play_on(twin, random.Random(play_seed), 40) == _play_on(middle, random.Random(play_seed), 40)
    assert snapshot.capture(twin) == snapshot.capture(middle)


def test_a_hand_after_a_reshuffle_and_with_entropy_restores():
    """The stub of an R17 reshuffle (a ListedDeck) and players' entropy survive."""
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for seat in range(8):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}", auto_ante=False))
        events += table.execute(BuyIn(seat=seat, amount=300))
    events += table.execute(StartHand(seed="ab" * 32))
    for seat in range(8):
        events += table.execute(PostAnte(seat=seat, entropy=f"{seat:02x}"))
    rng = random.Random(5)
    while table.hand is not None and not isinstance(table.hand.deck, ListedDeck):
        for batch in _play_on(table, rng, 1, passive=True):
            events += batch
    assert isinstance(table.hand.deck, ListedDeck) and table.hand.committed._entropy
    twin = snapshot.restore(snapshot.capture(table))
    assert twin.state() == Table.replay(events).state()
    assert _play_on(twin, random.Random(1), 200) == _play_on(table, random.Random(1), 200)


def test_the_floors_state_and_a_sit_out_restore():
    """The floor's settings for the next hand, a pause and a closing table (issue 18),
    a seat sat out since a time and a pause for sit-outs (R34) survive."""
    floor = Sender("operator", "floor")
    table, events = new_table("seven_card_stud", 3, stack=300)
    events += table.execute(SitOutPlayer(player="p2", now_ms=7_000, command_id="1"), floor)
    events += table.execute(StartHand(seed="ab" * 32))
    new = msgspec.structs.replace(table.config, stakes=Stakes(ante=10, small_bet=40, big_bet=80))
    events += table.execute(ConfigureTable(config=new, command_id="2"), floor)
    events += table.execute(PauseTable(command_id="3"), floor)
    events += table.execute(CloseTable(command_id="4"), floor)
    assert table.next_config == new and table.paused and table.closing and table.seats[2].out_since_ms == 7_000
    assert snapshot.restore(snapshot.capture(table)).state() == Table.replay(events).state()

    heads_up, events = new_table("seven_card_stud", 2, stack=300)
    events += heads_up.execute(SitOut(seat=1, now_ms=5_000))
    events += heads_up.execute(ScheduleHand(pause_ms=500, now_ms=6_000))
    assert heads_up.pause_waiting
    assert snapshot.restore(snapshot.capture(heads_up)).state() == Table.replay(events).state()


def test_the_snapshot_knows_every_field_of_the_state():
    """A field added to the table or a record must be taught to the snapshot (FORMAT
    then changes by itself, and old snapshots are ignored)."""
    assert set(snapshot.TABLE_FIELDS + snapshot.TABLE_DERIVED) == set(_STATE)
    assert set(snapshot.DECK_FIELDS + snapshot.DECK_DERIVED) == set(CommittedDeck.FIELDS)
    assert ListedDeck.FIELDS == ("order",)
    assert set(snapshot.HAND_DERIVED + snapshot.HAND_OBJECTS) <= set(HandState.FIELDS)
    assert SeatState.FIELDS and HandPlayer.FIELDS
    assert snapshot.FORMAT.startswith(f"table-v{snapshot.SNAPSHOT_VERSION}-")


def test_bytes_it_did_not_make_are_refused():
    import msgspec

    with pytest.raises(msgspec.DecodeError):
        snapshot.restore(b"not a snapshot")
    with pytest.raises(msgspec.ValidationError):
        snapshot.restore(b'{"table_id": 3}')
