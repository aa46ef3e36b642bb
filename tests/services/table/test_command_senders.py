"""The handler runs each command as its sender (the domain decides his powers) and
answers ViewTable with the table as the sender may see it.  In-memory store: fast."""

from __future__ import annotations

import msgspec
from studroom.domain.authority import Sender
from studroom.domain.cards import show
from studroom.domain.commands import Act, BuyIn, OpenTable, SitDown, StartHand, Timeout
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import FORBIDDEN
from studroom.domain.table import Table
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.table.command_handling import CommandHandler
from studroom.services.wire import protocol

CONFIG = TableConfig(game="seven_card_stud", stakes=Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40))
FLOOR = Sender("operator", "floor")
CASHIER = Sender("service", "cashier")
_ids = iter(range(1_764_601_234_567_890, 2**62))


def next_id() -> str:
    return str(next(_ids))


def seated_table() -> tuple[CommandHandler, InMemoryEventStore]:
    """Ann in seat 0, Bob in seat 1, a hand dealt: each command from its sender."""
    store = InMemoryEventStore()
    handler = CommandHandler(store, clock=lambda: 1_764_601_234_567, seed=lambda: "ab" * 32)
    assert handler.handle("t1", OpenTable(table_id="t1", config=CONFIG, command_id=next_id()), FLOOR).ok
    for seat, name in enumerate(("ann", "bob")):
        assert handler.handle("t1", SitDown(seat=seat, player=name, command_id=next_id()), Sender("player", name)).ok
        assert handler.handle("t1", BuyIn(seat=seat, amount=1000, player=name, command_id=next_id()), CASHIER).ok
    return handler, store


def test_a_player_may_not_act_for_another_seat_and_nothing_is_stored() -> None:
    handler, store = seated_table()
    table = Table.replay(store.load("t1"))
    assert table.hand is not None and table.hand.to_act is not None
    other = "bob" if table.seats[table.hand.to_act].player == "ann" else "ann"
    before = store.max_notification_id()
    for command in (Act(seat=table.hand.to_act, action="bring_in", command_id=next_id()),
                    StartHand(seed="cd" * 32, command_id=next_id()),
                    Timeout(turn=table.turn, command_id=next_id()),
                    BuyIn(seat=0, amount=100, command_id=next_id())):
        reply = handler.handle("t1", command, Sender("player", other))
        assert reply.error is not None and reply.error.code == FORBIDDEN, command
    assert store.max_notification_id() == before


def test_a_player_views_his_own_down_cards_and_nobody_elses() -> None:
    handler, store = seated_table()
    table = Table.replay(store.load("t1"))
    assert table.hand is not None
    down = {p.player: {show(c) for c, up in zip(p.cards, p.up) if not up} for p in table.hand.players.values()}
    for viewer, role in (("ann", "player"), ("bob", "player"), ("floor", "operator")):
        reply = handler.handle("t1", protocol.ViewTable(), Sender(role, viewer))   # type: ignore[arg-type]
        assert reply.ok and reply.view is not None and reply.version == table.version
        text = msgspec.json.encode(reply.view).decode()
        for player, cards in down.items():
            assert all((f'"{card}"' in text) == (player == viewer) for card in cards)
        assert reply.view.turn == table.last_turn
    assert store.max_notification_id() == table.version              # a view stores nothing


def test_a_view_of_a_table_nobody_opened_is_unknown_table() -> None:
    handler, _ = seated_table()
    reply = handler.handle("nope", b'{"type": "ViewTable"}', Sender("player", "ann"))
    assert reply.error is not None and reply.error.code == protocol.UNKNOWN_TABLE
