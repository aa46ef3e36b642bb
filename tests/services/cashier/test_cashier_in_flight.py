"""The buy-ins in flight as the recovery sees them (services/cashier/recovery.OpenBuyIns):
folded from the accounts' events of a notification log, who may send each (its owner;
another instance only after the take-over time); desks of old stores are passed over."""

from __future__ import annotations

from studroom.domain.account import BuyInClaimed, BuyInConfirmed, BuyInRefunded, BuyInReserved
from studroom.services.cashier.retired_desks import BuyInOpened
from studroom.services.cashier.recovery import OpenBuyIns
from studroom.services.store.port import Notification

T0 = 1_764_601_234_567


def reserved(table: str, command_id: str, owner: str | None) -> BuyInReserved:
    return BuyInReserved(table_id=table, seat=1, amount=5, command_id=command_id, request_id="player.p#1",
                         owner=owner, at_ms=T0)


def test_buy_ins_in_flight_are_folded_from_the_notification_log() -> None:
    log = [
        Notification(1, "account.p", 2, reserved("t1", "7", "a")),
        Notification(2, "desk.t1", 1, BuyInOpened(player="p", seat=1, amount=5, command_id="7", owner="a")),
        Notification(3, "account.q", 2, reserved("t1", "8", "b")),
        Notification(4, "account.p", 3, BuyInConfirmed(table_id="t1", seat=1, amount=5, command_id="7")),
        Notification(5, "account.q", 3, BuyInClaimed(table_id="t1", command_id="8", owner="b", at_ms=T0 + 1000)),
    ]
    folded = OpenBuyIns()
    folded.take(log[:3])
    assert sorted(folded.in_flight) == [("p", "t1"), ("q", "t1")]      # two players at one table at once
    folded.take(log[3:])
    assert sorted(folded.in_flight) == [("q", "t1")] and folded.position == 5
    assert folded.claimable("a", T0 + 1000 + 29_999, 30_000) == []
    assert folded.claimable("a", T0 + 1000 + 30_000, 30_000) == [("q", "t1")]
    assert folded.claimable("b", T0, 30_000) == [("q", "t1")]


def test_a_refund_ends_it_and_one_reserved_before_owners_were_kept_is_anyones_after_the_take_over_time() -> None:
    folded = OpenBuyIns()
    folded.take([Notification(1, "account.p", 2, reserved("t1", "7", None)),
                 Notification(2, "account.r", 2, reserved("t2", "9", "a")),
                 Notification(3, "account.r", 3, BuyInRefunded(table_id="t2", seat=1, amount=5, command_id="9",
                                                                reason="forbidden"))])
    assert list(folded.in_flight) == [("p", "t1")]
    assert folded.claimable("a", T0 + 29_999, 30_000) == []
    assert folded.claimable("a", T0 + 30_000, 30_000) == [("p", "t1")]
