"""Cash-outs: a player who leaves a table gets his seat's chips back in his account,
exactly once.

The cashier follows the relay's public stream with a durable pull consumer that every
instance shares (each message goes to one of them).  Of its events only ``PlayerLeft``
matters (the relay's ``Studroom-Event`` header names the type, so the others are acked
unread).  Each credits ``cashed_out`` to the player's account as ``CashedOut(table,
version)``; the account credits a ``PlayerLeft`` once (it keeps the versions it was
credited for, per table), so a redelivery after a crash or a lost ack credits nothing.
A message is acked only after its credit is stored.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec
from nats.js.api import ConsumerConfig

from ..store.port import VersionConflict
from ..wire import subjects
from ..wire.pull import retry_later, shared_consumer
from .account_store import Books
from .saga import ATTEMPTS, now_ms

log = logging.getLogger("studroom.cashier")

CONSUMER: Final = "studroom_cashier"          # on STUDROOM_PUBLIC


class _Left(msgspec.Struct, frozen=True):
    """The fields of a public ``PlayerLeft`` the cashier reads."""

    type: str
    seat: int
    player: str
    cashed_out: int


_decode_left = msgspec.json.Decoder(_Left).decode


def consumer_config(durable: str = CONSUMER, ack_wait: float = 10.0) -> ConsumerConfig:
    """Every public event from the first (a ``PlayerLeft`` is never missed), each
    redelivered until acked."""
    return shared_consumer(durable, subjects.all_public_events(), ack_wait,
                           "studroom cashier: PlayerLeft -> cash-outs")


class CashOuts:
    def __init__(self, books: Books) -> None:
        self.books = books
        self.credited = 0            # cash-outs booked by this instance
        self.repeated = 0            # PlayerLeft credited before (redelivered)

    async def on_public(self, msg: Any) -> None:
        headers = msg.headers or {}
        if headers.get(subjects.EVENT_HEADER) != "PlayerLeft":
            await msg.ack()
            return
        try:
            left = _decode_left(msg.data)
            version = int(headers[subjects.VERSION_HEADER])
            table_id = subjects.table_of_public(msg.subject)
        except (msgspec.DecodeError, msgspec.ValidationError, KeyError, ValueError) as e:
            log.error("a PlayerLeft on %s the cashier cannot read (%s): skipped", msg.subject, e)
            await msg.ack()
            return
        try:
            await self.credit(table_id, version, left)
        except Exception as e:  # noqa: BLE001 (the store is away, or conflicts: redelivered later)
            log.warning("cash-out of %s at %s v%d not booked yet (%r): redelivery", left.player, table_id,
                        version, e)
            await retry_later(msg)
            return
        await msg.ack()

    async def credit(self, table_id: str, version: int, left: _Left) -> None:
        """Credit ``left.cashed_out`` to the player's account unless it was before."""
        if left.cashed_out <= 0:
            return
        for attempt in range(ATTEMPTS):
            account = await self.books.account(subjects.check_name(left.player), fresh=attempt > 0)
            cashed = account.cash_out(table_id, version, left.seat, left.cashed_out, now_ms())
            if cashed is None:
                self.repeated += 1
                return
            try:
                await self.books.save((account, [cashed]))
            except VersionConflict:
                continue
            self.credited += 1
            return
        raise VersionConflict(f"account.{left.player}")
