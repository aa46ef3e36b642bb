"""Cash-outs: a player who leaves a table gets his seat's chips back in his account,
exactly once.

The cashier follows the relay's public stream with a durable pull consumer that every
instance shares (each message goes to one of them).  Of its events only ``PlayerLeft``
matters: the consumer is filtered on it (``CASHED_EVENTS``, the one list the filter and
the handler are made of), so the server sends the cashier nothing else.  Each credits ``cashed_out`` to the player's account as ``CashedOut(table,
version)``; the account credits a ``PlayerLeft`` once (it keeps the versions it was
credited for, per table), so a redelivery after a crash or a lost ack credits nothing.
A message is acked only after its credit is stored.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec
from nats.js.api import ConsumerConfig

from studroom.domain.events import PlayerLeft

from ..store.port import VersionConflict
from ..wire import subjects
from ..wire.pull import public_events_filter, retry_later, shared_consumer
from .account_store import Books
from .saga import ATTEMPTS, now_ms

log = logging.getLogger("studroom.cashier")

CONSUMER: Final = "studroom_cashier"          # on STUDROOM_PUBLIC
CASHED_EVENTS: Final = (PlayerLeft,)          # the public events a cash-out is made of
_CASHED: Final = frozenset(kind.__name__ for kind in CASHED_EVENTS)


class _Left(msgspec.Struct, frozen=True):
    """The fields of a public ``PlayerLeft`` the cashier reads."""

    type: str
    seat: int
    player: str
    cashed_out: int


_decode_left = msgspec.json.Decoder(_Left).decode


def consumer_config(durable: str = CONSUMER, ack_wait: float = 10.0) -> ConsumerConfig:
    """Every ``PlayerLeft`` from the first (none is ever missed), each redelivered until
    acked; no other event.  A consumer of an older version (every public event) is
    updated in place by ``ensure_consumer`` (a new filter keeps its position)."""
    return shared_consumer(durable, public_events_filter(CASHED_EVENTS), ack_wait,
                           "studroom cashier: PlayerLeft -> cash-outs")


class CashOuts:
    def __init__(self, books: Books) -> None:
        self.books = books
        self.credited = 0            # cash-outs booked by this instance
        self.repeated = 0            # PlayerLeft credited before (redelivered)

    async def on_public(self, msg: Any) -> None:
        headers = msg.headers or {}
        if headers.get(subjects.EVENT_HEADER) not in _CASHED:    # a consumer the server kept unfiltered
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
