"""The ledger's composition root: ``studroom serve ledger``.

It books every table store's and the cashier's events into the books (projector.py)
until ``stop``: a batch every ``--pace`` seconds while there is work (at once while
batches are full), woken by the stores' own NOTIFY when there is none (and a look
every ``--poll-interval`` seconds), the stores looked for again every few seconds, a
pause after a failure (projections/tracking.py).  No NATS: PostgreSQL is the source of
truth and the only server it needs (an embedded one in the data folder when the
settings name none).  Several instances are safe.  docs/design/ledger.md.

``STUDROOM_LEDGER_KILL_AT=N`` (tests only) kills the process with SIGKILL in its N-th
batch, after the batch's rows are written and before they are committed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import os
import signal
from typing import TYPE_CHECKING

from studroom.services.runtime.arguments import positive_float, positive_int
from studroom.services.runtime.observability.logs import fields
from studroom.services.runtime.settings import Settings

from .schema import LEDGER_SCHEMA

if TYPE_CHECKING:
    from ..tracking import BeforeCommit
    from .projector import FindSources

HELP = "the ledger: every chip movement of the stores into double-entry books, exactly once"
KILL_AT_VAR = "STUDROOM_LEDGER_KILL_AT"

log = logging.getLogger("studroom.ledger")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..tracking import LOOK_S, PACE_S

    parser.add_argument("--stores", type=positive_int, default=None,
                        help="the table stores studroom_p0 .. studroom_p{N-1} (default: every one found, "
                             "looked for again every few seconds)")
    parser.add_argument("--schema", action="append", default=None, help="a table store's schema (repeatable)")
    parser.add_argument("--cashier-schema", default=None, help="the cashier's store (default studroom_cashier)")
    parser.add_argument("--ledger-schema", default=LEDGER_SCHEMA, help=f"the books (default {LEDGER_SCHEMA})")
    parser.add_argument("--batch-size", type=positive_int, default=2000, help="events booked per transaction (default 2000)")
    parser.add_argument("--pace", type=positive_float, default=PACE_S, metavar="SECONDS",
                        help=f"while there is work, a batch of the stores at most this often, unless one "
                             f"was full: bigger batches, less CPU, the books that much behind (default {PACE_S})")
    parser.add_argument("--poll-interval", type=positive_float, default=LOOK_S, metavar="SECONDS",
                        help="how often to look for new events when all is booked and no store notified an "
                             f"append (default {LOOK_S})")


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from studroom.services.runtime.observability.metrics import counter
    from studroom.services.runtime.processes import observe
    from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
    from studroom.services.store.lag import positions_poll

    from .projector import Projector

    with contextlib.ExitStack() as stack:
        url = settings.database_url or stack.enter_context(EmbeddedPostgres(settings.data_dir)).url
        projector = Projector(url, _sources(args), ledger_schema=args.ledger_schema, batch_size=args.batch_size,
                              before_commit=_kill_at(os.environ.get(KILL_AT_VAR)))
        observer = observe.start(args, settings, "ledger", stop)
        observer.add(lambda: [counter("ledger_booked", "events booked by this instance", projector.folded)])
        observer.poll(positions_poll("ledger", url, args.ledger_schema))
        try:
            await projector.run(stop, idle_s=args.poll_interval, pace_s=args.pace, listen=True)
        finally:
            projector.close()
        log.info("ledger stops", extra=fields(booked=projector.folded))


def _sources(args: argparse.Namespace) -> FindSources:
    """The stores named by ``--schema`` or ``--stores``, or every one found, and the cashier's."""
    from .sources import all_sources

    return functools.partial(all_sources, schemas=args.schema, stores=args.stores, cashier_schema=args.cashier_schema)


def _kill_at(batch: str | None) -> BeforeCommit | None:
    """The fault hook of ``STUDROOM_LEDGER_KILL_AT``: SIGKILL in that batch, before its commit."""
    if not batch:
        return None
    left = [int(batch)]

    def hook(store: str, rows: int) -> None:
        left[0] -= 1
        if left[0] <= 0:
            log.warning("ledger: killed mid-batch (%s)", KILL_AT_VAR)
            os.kill(os.getpid(), signal.SIGKILL)

    return hook
