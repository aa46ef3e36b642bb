"""The cashier's wire format: requests and replies (msgspec JSON, request/reply).

A player sends to ``studroom.cashier.player.<his name>``, an operator to
``studroom.cashier.operator.<his name>`` (``subjects.cashier_requests``): the cashier
reads the sender from the subject, never from the body.  A body is one request, at
most ``protocol.MAX_REQUEST_BYTES``:

    {"type": "Balance"}                                       a player: his own
    {"type": "Balance", "player": "alice"}                    an operator: anyone's
    {"type": "Movements", "player": "alice", "after": 0}      the account's events, in order
    {"type": "BuyChips", "table_id": "t01", "seat": 3, "amount": 1000, "request_id": "1764601234567890"}
    {"type": "Deposit", "player": "alice", "amount": 5000, "reference": "wire-0042"}
    {"type": "Withdraw", "player": "alice", "amount": 200, "reference": "payout-17"}

``BuyChips`` is a buy-in or a top-up (the table tells them apart by the seat's stack);
its ``request_id`` numbers the player's buy-in requests like his table commands (a
replay is refused ``duplicate_command``).  The reply is a :class:`CashierReply`: ``ok``
with the balance (and the movements asked for), or ``error`` with a stable code (the
domain's: a buy-in the account or the table's rule refuses is refused at the door, with
nothing reserved and no ``outcome``; the table's, with ``outcome`` "refunded", when it
refused a buy-in the door let through; or ``pending``: the buy-in is on its way and
the cashier completes or undoes it).
"""

from __future__ import annotations

from typing import Final, Literal, Union

import msgspec
from studroom.domain.account import AccountEventType

from .protocol import ErrorBody

MOST_MOVEMENTS: Final = 500          # movements in one reply (ask again with ``after``)

Outcome = Literal["confirmed", "refunded", "pending"]


class _Request(msgspec.Struct, frozen=True, tag_field="type", kw_only=True, forbid_unknown_fields=True):
    pass


class Balance(_Request, tag=True):
    player: str | None = None            # None: the sender's own account


class Movements(_Request, tag=True):
    player: str | None = None
    after: int = 0                       # the account version to start after
    limit: int = MOST_MOVEMENTS


class BuyChips(_Request, tag=True):
    table_id: str
    seat: int
    amount: int
    request_id: str | None = None


class Deposit(_Request, tag=True):
    player: str
    amount: int
    reference: str


class Withdraw(_Request, tag=True):
    player: str
    amount: int
    reference: str


CashierRequest = Union[Balance, Movements, BuyChips, Deposit, Withdraw]


class Movement(msgspec.Struct, frozen=True):
    version: int                         # the account's version after it
    event: AccountEventType


class CashierReply(msgspec.Struct, frozen=True, omit_defaults=True):
    ok: bool
    error: ErrorBody | None = None
    player: str | None = None
    balance: int | None = None           # available: deposits + cash-outs - withdrawals - buy-ins
    reserved: int | None = None          # on its way to a table (a buy-in not yet settled)
    version: int | None = None           # the account's version
    movements: list[Movement] | None = None
    outcome: Outcome | None = None       # of a BuyChips
    done_before: Movement | None = None  # a Deposit or Withdraw repeated exactly: the movement done then


_request_decoder = msgspec.json.Decoder(CashierRequest)
_reply_decoder = msgspec.json.Decoder(CashierReply)
_encoder = msgspec.json.Encoder()


def encode(message: object) -> bytes:
    return _encoder.encode(message)


def decode_request(data: bytes) -> CashierRequest:
    """Raises msgspec.DecodeError / ValidationError on a malformed request."""
    return _request_decoder.decode(data)


def decode_reply(data: bytes) -> CashierReply:
    return _reply_decoder.decode(data)


def refusal(code: str, message: str) -> CashierReply:
    return CashierReply(ok=False, error=ErrorBody(code, message))
