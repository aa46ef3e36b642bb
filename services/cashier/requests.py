"""Answering the cashier's requests: who sent it (the subject, never the body), what he
may do (``studroom.domain.account.authorize``), and the answer (``protocol.py``).
Every refusal changes nothing and carries a stable code."""

from __future__ import annotations

import logging

import msgspec
from studroom.domain.account import Account, Deposited, Withdrawn, authorize
from studroom.domain.authority import Sender
from studroom.domain.errors import UNKNOWN_PLAYER, DomainError
from studroom.domain.names import check_name

from ..client.table import Refused
from ..store.port import VersionConflict
from ..wire import protocol, subjects
from ..wire.cashier_protocol import (
    MOST_MOVEMENTS,
    Balance,
    BuyChips,
    CashierReply,
    CashierRequest,
    Deposit,
    Movement,
    Movements,
    Withdraw,
    decode_request,
    refusal,
)
from .account_store import Books
from .saga import ATTEMPTS, Busy, BuyInSaga, now_ms

log = logging.getLogger("studroom.cashier")


def _balance(account: Account, **extra: object) -> CashierReply:
    return CashierReply(ok=True, player=account.player, balance=account.balance, reserved=account.reserved,
                        version=account.version, **extra)  # type: ignore[arg-type]


class Requests:
    def __init__(self, books: Books, saga: BuyInSaga) -> None:
        self.books = books
        self.saga = saga

    async def answer(self, subject: str, data: bytes) -> CashierReply:
        """The reply to one request ``data`` received on ``subject``."""
        if len(data) > protocol.MAX_REQUEST_BYTES:
            return refusal(protocol.BAD_REQUEST, f"a request is at most {protocol.MAX_REQUEST_BYTES} bytes")
        try:
            role, name = subjects.cashier_sender(subject)
            request = decode_request(data)
        except (subjects.BadName, msgspec.DecodeError, msgspec.ValidationError) as e:
            return refusal(protocol.BAD_REQUEST, str(e)[:200])
        try:
            return await self._answer(Sender(role, name), request)  # type: ignore[arg-type]
        except DomainError as e:
            return refusal(e.code, e.message)
        except (Busy, VersionConflict) as e:
            return refusal(protocol.CONFLICT, f"{e}; nothing changed, try again")
        except Refused as e:              # the table did not show itself to the door: nothing changed
            return refusal(e.code, e.message)

    async def _answer(self, sender: Sender, request: CashierRequest) -> CashierReply:
        if isinstance(request, BuyChips):
            return await self._buy_chips(sender, request)
        if isinstance(request, Deposit | Withdraw):
            return await self._move(sender, request)
        player = check_name(request.player if request.player is not None else sender.name, "player")
        authorize(sender, player, "view")
        account = await self.books.account(player)
        if account.version == 0 and player != sender.name:
            raise DomainError(UNKNOWN_PLAYER, f"{player} has no account: nothing was ever deposited for him")
        if isinstance(request, Balance):
            return _balance(account)
        return _balance(account, movements=await self._movements(player, request))

    async def _movements(self, player: str, request: Movements) -> list[Movement]:
        after = max(request.after, 0)
        limit = min(max(request.limit, 0), MOST_MOVEMENTS)
        events = (await self.books.movements(player, after))[:limit]
        return [Movement(version, event) for version, event in enumerate(events, start=after + 1)]

    async def _buy_chips(self, sender: Sender, request: BuyChips) -> CashierReply:
        """A buy-in or top-up for the sender's own seat, through the saga."""
        authorize(sender, sender.name, "buy_in")
        settled = await self.saga.buy_in(sender.name, request.table_id, request.seat, request.amount,
                                         request.request_id)
        if settled.outcome == "confirmed":
            return CashierReply(ok=True, player=sender.name, outcome="confirmed")
        message = settled.message
        if settled.outcome == "refunded":
            message = f"the table refused the buy-in ({message}); the chips are back in the account"
        return CashierReply(ok=False, error=protocol.ErrorBody(settled.code or protocol.PENDING, message),
                            player=sender.name, outcome=settled.outcome)

    async def _move(self, sender: Sender, request: Deposit | Withdraw) -> CashierReply:
        """An operator's deposit or withdrawal."""
        player = check_name(request.player, "player")
        authorize(sender, player, "deposit" if isinstance(request, Deposit) else "withdraw")
        for _ in range(ATTEMPTS):
            account = await self.books.account(player)
            kind = Deposited if isinstance(request, Deposit) else Withdrawn
            done = account.repeat_of(kind, request.amount, request.reference)
            if done is not None:                 # the same movement asked again: done, not an error
                return _balance(account, done_before=Movement(*done))
            move = account.deposit if isinstance(request, Deposit) else account.withdraw
            event = move(request.amount, request.reference, sender.name, now_ms())
            try:
                await self.books.save((account, [event]))
            except VersionConflict:
                continue
            log.info("%s %s %d chips (%s) by %s", type(event).__name__.lower(), player, request.amount,
                     request.reference, sender.name)
            return _balance(account)
        raise VersionConflict(f"account.{player}")
