"""Cash-outs: a player who leaves a table gets his seat's chips back in his account,
exactly once.

The cashier follows the relay's public stream with a durable pull consumer that every
instance shares (each message goes to one of them).  Of its events only ``PlayerLeft``
matters: the relay marks a message holding one for the cashier's interest
(``event_messages.LEAVES``, ``INTEREST`` here) and the consumer is filtered on that
mark, so the server sends the cashier nothing else.  A message holds a run of one
table's events (``wire/event_messages.py``), of which any number are ``PlayerLeft``:
each credits ``cashed_out`` to its player's account as ``CashedOut(table, version)``,
``version`` being that event's own.  The account credits a ``PlayerLeft`` once (it
keeps the versions it was credited for, per table), so a redelivery after a crash or a
lost ack credits nothing again, and a message whose credits were stored in part (the
store failed at its second) is safely done again whole.  A message is acked only after
all its credits are stored.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from nats.js.api import ConsumerConfig

from studroom.domain.events import PlayerLeft

from ..store.port import VersionConflict
from ..wire import event_messages, subjects
from ..wire.pull import retry_later, shared_consumer
from .account_store import Books
from .saga import ATTEMPTS, now_ms

log = logging.getLogger("studroom.cashier")

CONSUMER: Final = "studroom_cashier"          # on STUDROOM_PUBLIC
INTEREST: Final = event_messages.LEAVES       # the messages holding a PlayerLeft


def consumer_config(durable: str = CONSUMER, ack_wait: float = 10.0) -> ConsumerConfig:
    """Every message with a ``PlayerLeft`` from the first (none is ever missed), each
    redelivered until acked; no other message.  A consumer of an older version (every
    public event, or one subject per event type) is updated in place by
    ``ensure_consumer`` (a new filter keeps its position)."""
    return shared_consumer(durable, event_messages.marked_subjects(INTEREST), ack_wait,
                           "studroom cashier: PlayerLeft -> cash-outs")


class Unreadable(ValueError):
    """A message marked as holding a ``PlayerLeft`` that cannot be read."""


class CashOuts:
    def __init__(self, books: Books) -> None:
        self.books = books
        self.credited = 0            # cash-outs booked by this instance
        self.repeated = 0            # PlayerLeft credited before (redelivered)

    async def on_public(self, msg: Any) -> None:
        if not event_messages.is_wanted(msg.subject, INTEREST):    # a consumer the server kept unfiltered
            await msg.ack()
            return
        try:
            table_id = subjects.table_of_public(msg.subject)
            leaves = [(version, event) for version, event in event_messages.events_of(msg)
                      if isinstance(event, PlayerLeft)]
        except event_messages.UNREADABLE as e:      # (a subject no table's: BadName, a ValueError)
            # Never acked unread: its mark says a cash-out is in it (an event type this
            # cashier does not know yet spoils the whole message). The pull loop sets it
            # aside as a dead letter, with its body and an alarm: an operator books it.
            raise Unreadable(f"a message on {msg.subject} the cashier cannot read: {e}") from e
        for version, left in leaves:
            try:
                await self.credit(table_id, version, left)
            except Exception as e:  # noqa: BLE001 (the store is away, or conflicts: redelivered later)
                log.warning("cash-out of %s at %s v%d not booked yet (%r): redelivery", left.player, table_id,
                            version, e)
                await retry_later(msg)
                return
        await msg.ack()

    async def credit(self, table_id: str, version: int, left: PlayerLeft) -> None:
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
