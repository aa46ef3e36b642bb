"""The console's replay (services/console/replay.py) on the shared live room: bots play
a table of this test's own; an operator gets every finished hand whole (the stored
events, every card and proof) with a consistent verdict; a player gets his own hands
as he may see them (the secrecy scanner finds no other player's hidden card in them,
and his own down cards are there), ``forbidden`` for a hand he was not dealt into,
``unknown_hand`` for a hand or table that does not exist; a spectator replays nothing."""

from __future__ import annotations

import asyncio
import time
import uuid
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from live_room import LiveRoom
from secrecy import Message, Truth, scan
from studroom.domain import views
from studroom.domain.events import Event
from studroom.domain.hands import spans
from studroom.services.client.table import Refused
from studroom.services.console import desk_ops
from studroom.services.console.desk_books import Books, Reconciles
from studroom.services.console.ops import OPS, OpError
from studroom.services.console.replay import replay
from studroom.services.disputes.stored_events import table_stream
from studroom.services.room.bots import Room
from studroom.services.room.plans import TablePlan, player_name, table_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SEATS = 4
HANDS = 3


async def play_hands(live_room: LiveRoom, prefix: str, hands: int = HANDS) -> tuple[str, list[Event]]:
    """A new table of bots in the live room, played until ``hands`` hands ended: its id
    and its stored events then."""
    table = live_room.table_ids(f"{prefix}{uuid.uuid4().hex[:4]}", 1)[0]
    plan = TablePlan(table, table_config(0), {s: player_name(table, s) for s in range(SEATS)})
    bots = Room(live_room.url, [plan], authority=live_room.authority, seed=7)
    deadline = time.monotonic() + 90
    try:
        await bots.start()
        while bots.stats.hands < hands:
            assert time.monotonic() < deadline, f"only {bots.stats.hands} hands in 90 s"
            await asyncio.sleep(0.2)
    finally:
        await bots.stop()
    return table, await asyncio.to_thread(table_stream, live_room.database_url, table, f"{live_room.name}_p")


def _finished(stream: list[Event]) -> list[int]:
    return [s.hand_no for s in spans(stream) if s.finished and not s.cancelled]


async def _refused(code: str, *args: object, **kwargs: object) -> None:
    with pytest.raises(Refused) as refused:
        await replay(*args, **kwargs)  # type: ignore[arg-type]
    assert refused.value.code == code, refused.value.message


def test_an_operator_replays_a_hand_whole_and_a_player_only_as_he_may_see_it(live_room: LiveRoom) -> None:
    asyncio.run(_replays(live_room))


async def _replays(live_room: LiveRoom) -> None:
    table, stream = await play_hands(live_room, "rpl")
    where = {"database_url": live_room.database_url, "prefix": f"{live_room.name}_p"}
    hands = _finished(stream)
    assert len(hands) >= HANDS - 1
    public: list[Message] = []
    private: list[Message] = []
    whole_to_players: list[Message] = []        # the control: the full record given to a player leaks
    for hand_no in hands:
        span = next(s for s in spans(stream) if s.hand_no == hand_no and s.finished and not s.cancelled)
        stored = stream[span.start:span.end]
        whole = await replay("operator", "floor", table, hand_no, **where)
        assert whole["record"]["full"] and whole["record"]["events"] == msgspec.to_builtins(stored)
        assert whole["verdict"]["consistent"] and whole["verdict"]["deck"]["fair"], whole["verdict"]
        assert any(e["type"] == "AntesCollected" and e["deck_root"] for e in whole["record"]["events"])
        public += [Message(table, span.start + 1 + i, msgspec.json.encode(views.public(e)))
                   for i, e in enumerate(stored)]
        dealt_in = {s.player for s in stored[0].seats}  # type: ignore[attr-defined]
        for seat in range(SEATS):
            player = player_name(table, seat)
            if player not in dealt_in:
                await _refused("forbidden", "player", player, table, hand_no, **where)
                continue
            seen = await replay("player", player, table, hand_no, **where)
            assert not seen["record"]["full"] and seen["verdict"] == {"consistent": True}
            private += [Message(table, span.start + 1 + i, msgspec.json.encode(e), player)
                        for i, e in enumerate(seen["record"]["events"])]
            whole_to_players += [Message(table, span.start + 1 + i, msgspec.json.encode(e), player)
                                 for i, e in enumerate(whole["record"]["events"])]
            own = {card for e in seen["record"]["events"] if e["type"] == "CardsDealt"     # DealtCard: an array
                   for seat, card, up, _proof in e["cards"] if seat == seen["record"]["viewer"] and not up}
            assert len(own) >= 2 and None not in own, "his own down cards are in his replay"
    truth = Truth().learn_stored(table, stream)
    report = scan(public + private, truth)
    assert not report.leaks, str(report)
    assert report.hidden_cards > 0 and len(private) > len(public)
    assert scan(public + whole_to_players, truth).leaks, "the scan sees the cards a player may not"
    await _refused("forbidden", "player", "somebody_else", table, hands[0], **where)
    await _refused("forbidden", "spectator", "public", table, hands[0], **where)
    await _refused("unknown_hand", "operator", "floor", table, 10**6, **where)
    await _refused("unknown_hand", "operator", "floor", f"{table}-none", 1, **where)
    await _refused("bad_request", "operator", "floor", table, "1", **where)
    await _refused("bad_request", "operator", "floor", "t 01; --", 1, **where)
    await _through_the_op(live_room, table, hands[0], stream)


def _tab(role: str, name: str) -> Any:
    return SimpleNamespace(session=SimpleNamespace(link=SimpleNamespace(role=role, name=name, nc=None)))


async def _through_the_op(live_room: LiveRoom, table: str, hand_no: int, stream: list[Event]) -> None:
    """The ``replay`` op as the gateway registers it (desk_ops.register): the session's
    identity, never the browser's; a refusal is the op's error."""
    books = Books(live_room.database_url)
    desk_ops.register(books, Reconciles(books), store_prefix=f"{live_room.name}_p")
    run = OPS["replay"].run
    seat = next(s for s in spans(stream) if s.hand_no == hand_no)
    player = stream[seat.start].seats[0].player  # type: ignore[attr-defined]
    answer = await run(_tab("player", player), {"table": table, "hand_no": hand_no})
    assert answer["ok"] and not answer["record"]["full"] and answer["record"]["viewer"] is not None
    for tab, args, code in ((_tab("player", "somebody_else"), {"table": table, "hand_no": hand_no}, "forbidden"),
                            (_tab("player", player), {"table": table, "hand_no": hand_no, "player": "x"},
                             "bad_request"),
                            (_tab("operator", "floor"), {"table": table, "hand_no": 10**6}, "unknown_hand")):
        with pytest.raises(OpError) as refused:
            await run(tab, args)
        assert refused.value.code == code, refused.value.message
