"""R12: a turn says which bet sizes the player may choose, so that no client has to
work them out from the betting (the bots and the benchmark ask the turn)."""

from __future__ import annotations

import copy
import random

import pytest
from studroom.domain import simulate
from studroom.domain.commands import Act, PostAnte, Show, StartHand
from studroom.domain.deck import SEED_BYTES
from studroom.domain.errors import MUST_SHOW, DomainError
from studroom.domain.table import Table


def _takes(table: Table, seat: int, action: str, size: str) -> bool:
    try:
        immutable = {id(table.config): table.config, id(table.game): table.game}   # shared, as Table._snapshot does
        copy.deepcopy(table, immutable).execute(Act(seat=seat, action=action, size=size))
    except DomainError:
        return False
    return True


@pytest.mark.parametrize("game", ["seven_card_stud", "seven_card_stud_hilo", "five_card_stud"])
def test_R12_a_turn_offers_both_sizes_exactly_when_the_table_takes_both(game: str) -> None:
    table, _ = simulate.new_table(game, 4)
    rng = random.Random(12)
    offered = 0
    for _ in range(100):
        simulate.top_up(table, 2000)
        turn = simulate.last_turn(table.execute(StartHand(seed=rng.randbytes(SEED_BYTES).hex())))
        while (hand := table.hand) is not None:
            assert turn is not None
            if turn.kind == "ante":
                turn = simulate.last_turn(table.execute(PostAnte(seat=simulate.next_to_ante(hand))), turn)
                continue
            for action in (o for o in turn.options if o in ("bet", "raise")):
                both = _takes(table, turn.seat, action, "small") and _takes(table, turn.seat, action, "big")
                assert both == (turn.sizes == ["small", "big"]), (turn, both)
                offered += both
            if not {"bet", "raise"} & set(turn.options):
                assert turn.sizes == []
            command = simulate.choose(turn, rng)
            try:
                events = table.execute(command)
            except DomainError as refused:
                assert refused.code == MUST_SHOW
                events = table.execute(Show(seat=turn.seat))
            turn = simulate.last_turn(events, turn)
    assert offered > 0          # every game has an open-pair street (R12)
