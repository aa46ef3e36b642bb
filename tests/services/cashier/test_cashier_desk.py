"""The cashier's desk at a table (services/cashier/desk.py): one buy-in in flight at a
time, rising command ids, who may send an open buy-in (its owner; another instance
only after the take-over time), replay; and the open buy-ins folded from a
notification log (recovery.OpenBuyIns)."""

from __future__ import annotations

import pytest
from studroom.services.cashier.desk import (
    Busy,
    BuyInClaimed,
    BuyInClosed,
    BuyInOpened,
    TableDesk,
    stream_id,
)
from studroom.services.cashier.recovery import OpenBuyIns
from studroom.services.store.port import Notification

T0 = 1_764_601_234_567


def opened(desk: TableDesk, owner: str = "a", at: int = T0, now_us: int = T0 * 1000) -> BuyInOpened:
    return desk.open_buy_in("alice", 2, 500, desk.next_command_id(now_us), owner, at)


def test_one_buy_in_at_a_time_per_table() -> None:
    desk = TableDesk("t1")
    event = opened(desk)
    assert desk.open is not None and desk.open.command_id == event.command_id
    with pytest.raises(Busy):
        opened(desk)
    desk.close(event.command_id, "confirmed", T0 + 5)
    assert desk.open is None
    opened(desk)


def test_ids_rise_above_the_last_even_when_the_clock_does_not() -> None:
    desk = TableDesk("t1")
    first = opened(desk, now_us=5_000_000)
    desk.close(first.command_id, "refunded", T0)
    second = opened(desk, now_us=4_000_000)          # the clock went back
    assert int(second.command_id) == int(first.command_id) + 1
    assert int(desk.next_command_id(9_000_000)) == 9_000_000


def test_only_the_open_buy_in_is_closed() -> None:
    desk = TableDesk("t1")
    event = opened(desk)
    with pytest.raises(Busy):
        desk.close(str(int(event.command_id) + 1), "confirmed", T0)
    desk.close(event.command_id, "confirmed", T0)
    with pytest.raises(Busy):
        desk.close(event.command_id, "confirmed", T0)


def test_its_owner_claims_an_open_buy_in_at_once_another_instance_after_the_take_over_time() -> None:
    desk = TableDesk("t1")
    opened(desk, owner="a", at=T0)
    assert desk.claimable("a", T0 + 1, 30_000)
    assert not desk.claimable("b", T0 + 29_999, 30_000)
    with pytest.raises(Busy):
        desk.claim("b", T0 + 29_999, 30_000)
    desk.claim("b", T0 + 30_000, 30_000)
    assert desk.open is not None and (desk.open.owner, desk.open.claimed_ms) == ("b", T0 + 30_000)
    assert not desk.claimable("a", T0 + 40_000, 30_000)        # b's claim is recent
    assert desk.fresh("b", T0 + 39_999, 10_000) and not desk.fresh("b", T0 + 40_000, 10_000)
    assert not desk.fresh("a", T0 + 30_001, 10_000)


def test_replay_rebuilds_the_desk() -> None:
    desk = TableDesk("t1")
    events = [opened(desk)]
    events.append(desk.claim("a", T0 + 10, 30_000))
    events.append(desk.close(events[0].command_id, "confirmed", T0 + 20))
    events.append(opened(desk, owner="b", now_us=1))
    again = TableDesk.replay("t1", events)
    assert again.__dict__ == desk.__dict__
    assert stream_id("t1") == "desk.t1"


def test_open_buy_ins_are_folded_from_the_notification_log() -> None:
    log = [
        Notification(1, "desk.t1", 1, BuyInOpened(player="p", seat=1, amount=5, command_id="7", owner="a", at_ms=T0)),
        Notification(2, "account.p", 4, object()),
        Notification(3, "desk.t2", 1, BuyInOpened(player="q", seat=1, amount=5, command_id="8", owner="b", at_ms=T0)),
        Notification(4, "desk.t1", 2, BuyInClosed(command_id="7", outcome="confirmed", at_ms=T0)),
        Notification(5, "desk.t2", 2, BuyInClaimed(owner="b", at_ms=T0 + 1000)),
    ]
    folded = OpenBuyIns()
    folded.take(log[:3])
    assert sorted(folded.desks) == ["t1", "t2"]
    folded.take(log[3:])
    assert sorted(folded.desks) == ["t2"] and folded.position == 5
    assert folded.claimable("a", T0 + 1000 + 29_999, 30_000) == []
    assert folded.claimable("a", T0 + 1000 + 30_000, 30_000) == ["t2"]
    assert folded.claimable("b", T0, 30_000) == ["t2"]
