"""The cashier's composition root: ``studroom serve cashier``.

Opens the cashier's event store (PostgreSQL schema ``studroom_cashier``), connects to
NATS as the service "cashier" (``STUDROOM_NATS_CREDS``, or the embedded room's) and
runs one :class:`~.service.CashierService` until stopped; embedded servers are started
when the settings name none.  Several instances may run at once (``--instance-id``
unique among them: a restarted instance finishes its own open buy-ins at once).
Light to import: the CLI reads ``HELP`` and ``add_arguments`` of every process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
from collections.abc import Callable

from ..runtime.arguments import positive_float
from ..runtime.observability.logs import fields
from ..runtime.settings import Settings

HELP = "the cashier: players' accounts, buy-ins to seats (a saga), cash-outs"

CRASH_EXIT = 70          # the exit code of --crash-after (tests of the saga's recovery)

log = logging.getLogger("studroom.cashier")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..store.layout import CASHIER_SCHEMA
    from .cash_outs import CONSUMER

    parser.add_argument("--instance-id", default=None,
                        help="a name unique among the running instances (default: host-pid)")
    parser.add_argument("--takeover-after", type=positive_float, default=30.0, metavar="SECONDS",
                        help="finish another instance's open buy-in it has not touched this long (default 30)")
    parser.add_argument("--schema", default=CASHIER_SCHEMA, help=argparse.SUPPRESS)
    parser.add_argument("--consumer", default=CONSUMER, help=argparse.SUPPRESS)
    parser.add_argument("--crash-after", choices=("reserved", "sent"), default=None, help=argparse.SUPPRESS)


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from ..runtime.processes import observe, process
    from ..runtime.processes.credentials import credentials
    from ..runtime.processes.preflight import preflight
    from ..runtime.processes.starting import until_started
    from ..runtime.servers.external_or_embedded import servers
    from ..store.commits import Commits
    from ..store.postgres import PostgresEventStore
    from .metrics import cashier_lag, cashier_metrics
    from .saga import SENDER
    from .service import CashierService

    instance_id = args.instance_id or observe.default_instance()
    observer = observe.start(args, settings, "cashier", stop, instance=instance_id)
    observer.poll(cashier_lag(observer, args.consumer))
    service: CashierService | None = None

    async def reconnected() -> None:
        if service is not None:
            service.reconnected()

    async def start(opened: contextlib.AsyncExitStack) -> CashierService:
        """One attempt: the store, the connections, the preflight, the service started."""
        store = await asyncio.to_thread(PostgresEventStore, database_url, schema=args.schema,
                                        pool_size=4, max_overflow=4)
        opened.callback(store.close)
        nc = await process.connect(nats_url, f"studroom-cashier-{instance_id}",
                                   creds=credentials(settings, "service", SENDER), reconnected_cb=reconnected)
        opened.push_async_callback(process.drain, nc)
        await preflight(nc, sender=("service", SENDER))
        door_nc = await process.connect_door(nats_url, settings, SENDER, f"studroom-cashier-{instance_id}")
        opened.push_async_callback(process.drain, door_nc)
        started = CashierService(nc, store, instance_id=instance_id, takeover_ms=int(args.takeover_after * 1000),
                                 consumer=args.consumer, after_step=_crash_after(args.crash_after),
                                 door_nc=door_nc, commits=Commits.of(store, database_url))
        await started.start()
        return started

    async with contextlib.AsyncExitStack() as exits:
        nats_url, database_url = exits.enter_context(servers(settings))
        service = await until_started("cashier", exits, start, stop)
        if service is None:
            return
        observer.add(cashier_metrics(service))
        observer.responder(service.door)
        print(f"cashier {instance_id} ready: store {args.schema}", flush=True)
        await service.run(stop)
        await service.close()
        log.info("cashier stops", extra=fields(instance=instance_id, cash_outs=service.cash_outs.credited,
                                               buy_ins_resumed=service.recovery.resumed))


def _crash_after(step: str | None) -> Callable[[str], None] | None:
    """A fault hook for tests: end the process at once after ``step`` of a buy-in."""
    if step is None:
        return None

    def crash(done: str) -> None:
        if done == step:
            log.warning("--crash-after %s: exiting", step)
            os._exit(CRASH_EXIT)

    return crash
