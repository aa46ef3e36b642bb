"""A bot's requests to its table, made again when a reply is lost or says "try again".

On top of the client's own retries, a bot asks up to four times: a request that got no
reply, or a reply with a retryable code (:data:`~..wire.protocol.RETRYABLE`), is asked
again after a :data:`~..runtime.retry.REQUEST` pause; a command keeps its id, so the
table runs it once.  Every request is counted in the bots' :class:`~.stats.BotStats`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from studroom.domain.commands import Command
from studroom.domain.errors import HAND_IN_PROGRESS, MUST_SHOW, STALE_ANSWER

from ..client.table import TableClient
from ..runtime.retry import REQUEST
from ..wire import protocol
from ..wire.protocol import Reply
from .bank import Bank
from .stats import BotStats

log = logging.getLogger(__name__)

ATTEMPTS = 4            # a request is made at most this often

# What a reply without an error body counts as (a reply ``ok: false`` always has one).
_NO_CODE = "?"

Codes = set[str] | frozenset[str]


def code_of(reply: Reply) -> str:
    return reply.error.code if reply.error else _NO_CODE


class Asking:
    """The requests of one bot (``player``) at ``table_id``; none once ``stopped()``."""

    def __init__(self, client: TableClient, table_id: str, stats: BotStats, timeout: float,
                 stopped: Callable[[], bool]) -> None:
        self.client = client
        self.table_id = table_id
        self.stats = stats
        self.timeout = timeout
        self.stopped = stopped

    async def send(self, command: Command, *, action: bool = False, quiet: Codes = frozenset()) -> Reply | None:
        """Send one of our commands (a retry keeps its id: numbered here, once)."""
        command = self.client.stamp(command)
        return await self.ask(type(command).__name__,
                              lambda: self.client.send(self.table_id, command, timeout=self.timeout),
                              action=action, quiet=quiet)

    async def credit(self, bank: Bank, seat: int, amount: int) -> Reply | None:
        """Chips for our seat from the bank (asked once: a bank numbers its own commands,
        so asking again could credit twice)."""
        return await self.ask("BuyIn", lambda: bank(self.table_id, seat, amount),
                              quiet={HAND_IN_PROGRESS}, attempts=1)

    async def ask(self, what: str, request: Callable[[], Awaitable[Reply]], *, action: bool = False,
                  quiet: Codes = frozenset(), attempts: int = ATTEMPTS) -> Reply | None:
        """Make a request; retry lost replies and the retryable codes.  Counts it in
        ``stats``.  Returns the Reply, or None when it never got one."""
        pauses = REQUEST.pauses()
        for attempt in range(attempts):
            if self.stopped():
                return None
            last = attempt + 1 == attempts
            self.stats.commands += 1
            started = time.perf_counter()
            try:
                reply = await request()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 (nats timeouts, no responders, closed)
                code = protocol.TIMEOUT if isinstance(e, asyncio.TimeoutError) else type(e).__name__
                log.debug("%s: %s on %s (attempt %d)", self.client.name, code, what, attempt)
                if last:
                    self.stats.error(code)
                    return None
                await asyncio.sleep(next(pauses))
                continue
            self.stats.latency(time.perf_counter() - started)
            if reply.ok:
                if action:
                    self.stats.actions += 1
                return reply
            if code_of(reply) in protocol.RETRYABLE and not last:
                await asyncio.sleep(next(pauses))
                continue
            self._count_refusal(what, reply, quiet)
            return reply
        return None

    def _count_refusal(self, what: str, reply: Reply, quiet: Codes) -> None:
        code = code_of(reply)
        if code in STALE_ANSWER:
            self.stats.refused_stale += 1
        elif code not in quiet and code != MUST_SHOW:
            self.stats.error(code)
            log.info("%s: %s refused: %s", self.client.name, what, reply.error.message if reply.error else code)
