"""Timing a turn out: the ``Timeout`` command the timer sends to the table as the
service "timer", and what the table's answer means.

An answer is final when the table carried the Timeout out (``ok``) or refused it for
good (the turn is over: ``stale_timeout``, ``no_hand``; or another refusal, counted by
its code).  No answer, a retryable code or ``duplicate_command`` (another instance, its
clock ahead of ours, numbered a timeout of this table higher) changed nothing: the
turn is timed out again later, by the backstop's redelivery.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final, TypeGuard

from studroom.domain.commands import Timeout
from studroom.domain.errors import DUPLICATE_COMMAND, NO_HAND, STALE_TIMEOUT, TABLE_CLOSED

from ..client.table import TableClient
from ..wire import protocol
from .schedule import TimerPayload
from .stats import TimerStats

log = logging.getLogger("studroom.timer")

SENDER: Final = "timer"                      # the service identity timeouts come from
OK: Final = "ok"                             # the outcome of a Timeout the table carried out
# The turn this timer was set for is over (answered, its hand ended, or an operator closed
# the table meanwhile): drop the timer.
STALE_CODES: Final = frozenset({STALE_TIMEOUT, NO_HAND, TABLE_CLOSED})


def table_client(nc: Any, retry_for: float = 2.0) -> TableClient:
    """The service "timer"'s table client (its commands carry the client's sequence
    ids); it retries a busy or moving table only briefly: longer outages are the fire
    consumer's redelivery's job."""
    return TableClient(nc, "service", SENDER, retry_for=retry_for)


def is_final(code: str | None) -> TypeGuard[str]:
    """Is ``code`` (None: no answer) the table's last word on a Timeout?"""
    return code is not None and code not in protocol.RETRYABLE and code != DUPLICATE_COMMAND


class Timeouts:
    """Sends the turns' Timeouts and counts the table's final answers."""

    def __init__(self, client: Any, stats: TimerStats, request_timeout: float) -> None:
        self.client = client
        self.stats = stats
        self.request_timeout = request_timeout

    async def send(self, timer: TimerPayload) -> str | None:
        """Send the turn's Timeout; the table's code (``ok`` or an error), None if no answer."""
        command = Timeout(turn=timer.turn, seat=timer.seat)     # the client numbers it; the table dates it
        try:
            reply = await self.client.send(timer.table_id, command, timeout=self.request_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 (no reply, no responders, disconnected)
            log.info("timeout of %s turn %d: no answer (%s)", timer.table_id, timer.turn, type(e).__name__)
            return None
        code = OK if reply.ok else (reply.error.code if reply.error else "?")
        if code == DUPLICATE_COMMAND:
            self.stats.duplicate += 1
            log.warning("timeout of %s turn %d refused as a duplicate (a timer instance's clock is "
                        "ahead of this one's): again later", timer.table_id, timer.turn)
        elif code not in protocol.RETRYABLE:
            self._count(timer, code, reply)
        return code

    def _count(self, timer: TimerPayload, code: str, reply: protocol.Reply) -> None:
        """Count the table's final answer to a timeout."""
        if code == OK:
            self.stats.timed_out += 1
            log.debug("timed out %s turn %d seat %s", timer.table_id, timer.turn, timer.seat)
        elif code in STALE_CODES:
            self.stats.stale += 1
        else:
            self.stats.error(code)
            log.warning("timeout of %s turn %d refused: %s", timer.table_id, timer.turn,
                        reply.error.message if reply.error else code)
