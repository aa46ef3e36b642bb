"""The desks: streams ``desk.<table>`` that the cashier once wrote beside the accounts
(the buy-in in flight at a table, one at a time).  No longer written: the account holds
its buy-ins in flight, their owners and their table command ids (domain/account.py,
docs/design/cashier.md).  Their events stay decodable, for the stores that have them.
"""

from __future__ import annotations

from typing import Literal

import msgspec


class DeskEvent(msgspec.Struct, frozen=True, tag_field="type", kw_only=True):
    v: int = 1
    at_ms: int = 0


class BuyInOpened(DeskEvent, tag=True):
    player: str
    seat: int
    amount: int
    command_id: str
    owner: str


class BuyInClaimed(DeskEvent, tag=True):
    owner: str


class BuyInClosed(DeskEvent, tag=True):
    command_id: str
    outcome: Literal["confirmed", "refunded"]


DeskEventType = BuyInOpened | BuyInClaimed | BuyInClosed
