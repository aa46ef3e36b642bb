"""The cashier's desk at one table: the buy-in in flight there and the cashier's last
command id at that table.  Pure: events in, state out (the stream ``desk.<table>`` of
the cashier's store).

Why one buy-in at a time per table: the table refuses a command of the service
"cashier" whose id is not above the last one it carried out (domain/command_ids.py).
A resumed buy-in that is refused ``duplicate_command`` was therefore carried out, but
only if no later id was sent to that table meanwhile: so the next buy-in opens only
when the last one is closed.  The desk's events are written in the same transaction
as the account's of the same step, so two cashier instances cannot both open one (the
second append is a version conflict).

Who sends: the instance that opened the buy-in (its ``owner``) sends its ``BuyIn``
and closes it.  A buy-in left open (its owner crashed, or the table did not answer) is
sent again after a claim: by its owner at any time, by another instance only when the
owner has not claimed it for ``takeover_ms``.  An owner sends only while its claim is
fresh (``fresh_ms``), so two instances never send the same buy-in at once; the
assumption (as with any lease) is that no process stalls between that check and its
send for longer than ``takeover_ms - fresh_ms``.  Design: docs/design/cashier.md.
"""

from __future__ import annotations

from typing import Final, Literal, TypeVar

import msgspec

STREAM_PREFIX: Final = "desk."

Outcome = Literal["confirmed", "refunded"]


class DeskEvent(msgspec.Struct, frozen=True, tag_field="type", kw_only=True):
    v: int = 1
    at_ms: int = 0


class BuyInOpened(DeskEvent, tag=True):
    player: str
    seat: int
    amount: int
    command_id: str
    owner: str                     # the cashier instance that sends it


class BuyInClaimed(DeskEvent, tag=True):
    """``owner`` sends the open buy-in (again)."""

    owner: str


class BuyInClosed(DeskEvent, tag=True):
    command_id: str
    outcome: Outcome


DeskEventType = BuyInOpened | BuyInClaimed | BuyInClosed
D = TypeVar("D", bound=DeskEvent)


class OpenBuyIn(msgspec.Struct, frozen=True):
    player: str
    seat: int
    amount: int
    command_id: str
    owner: str
    claimed_ms: int                # when its owner last claimed it (opening is a claim)


class Busy(Exception):
    """Another buy-in is in flight at this table (or another instance holds it)."""


def stream_id(table_id: str) -> str:
    return STREAM_PREFIX + table_id


class TableDesk:
    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.version = 0
        self.last_command_id = 0
        self.open: OpenBuyIn | None = None

    @classmethod
    def replay(cls, table_id: str, events: list[DeskEventType]) -> TableDesk:
        desk = cls(table_id)
        for event in events:
            desk.apply(event)
        return desk

    def next_command_id(self, now_us: int) -> str:
        """The next buy-in's id: microseconds since the epoch, above the last one (a
        new cashier store at an old table still sends ids the table has not seen)."""
        return str(max(now_us, self.last_command_id + 1))

    def open_buy_in(self, player: str, seat: int, amount: int, command_id: str, owner: str,
                    now_ms: int) -> BuyInOpened:
        if self.open is not None:
            raise Busy(f"buy-in {self.open.command_id} of {self.open.player} is in flight at {self.table_id}")
        return self._emit(BuyInOpened(player=player, seat=seat, amount=amount, command_id=command_id,
                                      owner=owner, at_ms=now_ms))

    def claimable(self, owner: str, now_ms: int, takeover_ms: int) -> bool:
        """May ``owner`` send the open buy-in now?"""
        return self.open is not None and (self.open.owner == owner or now_ms - self.open.claimed_ms >= takeover_ms)

    def claim(self, owner: str, now_ms: int, takeover_ms: int) -> BuyInClaimed:
        if not self.claimable(owner, now_ms, takeover_ms):
            raise Busy(f"the buy-in in flight at {self.table_id} is not {owner}'s to send")
        return self._emit(BuyInClaimed(owner=owner, at_ms=now_ms))

    def fresh(self, owner: str, now_ms: int, fresh_ms: int) -> bool:
        """Is ``owner``'s claim on the open buy-in recent enough to send it?"""
        return self.open is not None and self.open.owner == owner and now_ms - self.open.claimed_ms < fresh_ms

    def close(self, command_id: str, outcome: Outcome, now_ms: int) -> BuyInClosed:
        if self.open is None or self.open.command_id != command_id:
            raise Busy(f"buy-in {command_id} is not the one in flight at {self.table_id}")
        return self._emit(BuyInClosed(command_id=command_id, outcome=outcome, at_ms=now_ms))

    def apply(self, event: DeskEvent) -> None:
        if isinstance(event, BuyInOpened):
            self.open = OpenBuyIn(event.player, event.seat, event.amount, event.command_id, event.owner,
                                  event.at_ms)
            self.last_command_id = max(self.last_command_id, int(event.command_id))
        elif isinstance(event, BuyInClaimed) and self.open is not None:
            self.open = msgspec.structs.replace(self.open, owner=event.owner, claimed_ms=event.at_ms)
        elif isinstance(event, BuyInClosed):
            self.open = None
        self.version += 1

    def _emit(self, event: D) -> D:
        self.apply(event)
        return event
