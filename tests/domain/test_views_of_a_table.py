"""A table as one player may see it (ViewTable, for a reconnecting client): public
state plus his own down cards, never another player's (R23, R33)."""

from __future__ import annotations

import random

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from studroom.domain.cards import show
from studroom.domain.commands import Leave, PostAnte, Show, StartHand
from studroom.domain.deck import SEED_BYTES
from studroom.domain.errors import MUST_SHOW, DomainError
from studroom.domain.events import Event, TurnStarted
from studroom.domain.games import GAMES
from studroom.domain.simulate import choose, new_table
from studroom.domain.table import Table
from studroom.domain.views import TableView, seat_of, table_view

GAME_SEATS = st.sampled_from(list(GAMES)).flatmap(
    lambda g: st.tuples(st.just(g), st.integers(2, GAMES[g].max_seats))
)
_encode = msgspec.json.encode


def _hidden_cards(table: Table) -> dict[int, set[str]]:
    """Each seat's down cards that are still secret (not shown at the showdown)."""
    assert table.hand is not None
    return {p.seat: {show(c) for c, up in zip(p.cards, p.up) if not up}
            for p in table.hand.players.values() if not p.showed}


def _play_checking_views(table: Table, rng: random.Random) -> None:
    """One hand with random legal moves; after every command, every seat's view."""
    seed = rng.randbytes(SEED_BYTES).hex()
    events = table.execute(StartHand(seed=seed))
    turn = next(e for e in reversed(events) if isinstance(e, TurnStarted))
    while (hand := table.hand) is not None:
        _check_every_view(table, events, seed)
        if turn.kind == "ante":
            command = PostAnte(seat=next(s for s, p in hand.players.items() if not p.posted))
        else:
            command = choose(turn, rng)
        try:
            events = table.execute(command)
        except DomainError as refused:
            assert refused.code == MUST_SHOW
            events = table.execute(Show(seat=command.seat))  # type: ignore[attr-defined]
        turn = next((e for e in reversed(events) if isinstance(e, TurnStarted)), turn)


def _check_every_view(table: Table, events: list[Event], seed: str) -> None:
    down = _hidden_cards(table)
    for viewer in [None, *down]:
        text = _encode(table_view(table, viewer)).decode()
        for seat, cards in down.items():
            for card in cards:
                assert (f'"{card}"' in text) == (seat == viewer), (viewer, seat, card)
        assert seed not in text
    turns = [e for e in events if isinstance(e, TurnStarted)]
    view = table_view(table, None)
    if turns:
        assert view.turn == turns[-1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GAME_SEATS, st.integers(0, 2**32))
def test_R23_R33_a_table_view_never_shows_another_players_down_card(game_seats, seed) -> None:
    game, seats = game_seats
    table, _ = new_table(game, seats)
    rng = random.Random(seed)
    for _ in range(2):
        _play_checking_views(table, rng)


def test_R33_the_viewer_sees_his_own_down_cards_and_every_up_card() -> None:
    table, _ = new_table("seven_card_stud", 3)
    table.execute(StartHand(seed="ab" * SEED_BYTES))      # the antes are posted for them
    assert table.hand is not None
    view = table_view(table, 1)
    assert view.seat == 1 and view.hand is not None
    for player in view.hand.players:
        own = table.hand.players[player.seat]
        expected = [show(c) if up or player.seat == 1 else None for c, up in zip(own.cards, own.up)]
        assert [c.card for c in player.cards] == expected
        assert len(player.cards) == 3 and [c.up for c in player.cards] == [False, False, True]
    assert view.turn is not None and view.turn.kind == "act"
    assert view.turn == table.last_turn


def test_a_view_between_hands_has_seats_and_no_hand() -> None:
    table, _ = new_table("seven_card_stud", 2)
    view = table_view(table, None)
    assert view.hand is None and view.turn is None and view.version == table.version
    assert [(s.seat, s.player, s.stack) for s in view.seats] == [(0, "p0", 2000), (1, "p1", 2000)]
    assert msgspec.json.decode(_encode(view), type=TableView) == view


def test_a_player_who_left_during_the_hand_still_holds_his_cards_seat() -> None:
    table, _ = new_table("seven_card_stud", 3)
    table.execute(StartHand(seed="cd" * SEED_BYTES))
    table.execute(Leave(seat=2))
    assert seat_of(table, "p2") == 2
    assert seat_of(table, "p0") == 0 and seat_of(table, "nobody") is None
