"""The history's composition root: ``studroom serve history``.

Connects to the room's database (the table stores and the histories' schema
``studroom_history``) and to NATS as the service "history" (``STUDROOM_NATS_CREDS``,
or the embedded room's), and runs one :class:`~.service.HistoryService` until stopped;
embedded servers are started when the settings name none.  Several instances may run
at once: each store's batches are projected under a row lock, each request answered
by one of them.  Light to import: the CLI reads ``HELP`` and ``add_arguments``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from studroom.services.runtime.settings import Settings

HELP = "the players' histories: every hand each player played, as he may see it; answers their requests"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from studroom.services.store.layout import STORE_SCHEMA_PREFIX

    from .schema import HISTORY_SCHEMA

    parser.add_argument("--schema", default=HISTORY_SCHEMA, help=argparse.SUPPRESS)
    parser.add_argument("--store-prefix", default=STORE_SCHEMA_PREFIX, help=argparse.SUPPRESS)


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from studroom.services.runtime.observability.metrics import counter
    from studroom.services.runtime.processes import observe, process
    from studroom.services.runtime.processes.preflight import preflight
    from studroom.services.runtime.processes.starting import until_started
    from studroom.services.runtime.servers.external_or_embedded import servers
    from studroom.services.store.lag import positions_poll

    from .answers import HistoryDesk
    from .projector import Projector
    from .service import HistoryService

    async with contextlib.AsyncExitStack() as exits:
        nats_url, database_url = exits.enter_context(servers(settings))
        projector = Projector(database_url, history_schema=args.schema, store_prefix=args.store_prefix)
        observer = observe.start(args, settings, "history", stop)
        observer.add(lambda: [counter("history_projected", "events projected by this instance", projector.folded)])
        observer.poll(positions_poll("history", database_url, args.schema))

        async def start(opened: contextlib.AsyncExitStack) -> HistoryService:
            """One attempt: the connection (it only answers), the preflight, the service answering."""
            nc = await process.connect_door(nats_url, settings, "history", "studroom-history")
            opened.push_async_callback(process.drain, nc)
            await preflight(nc, jetstream=False)
            made = HistoryService(nc, projector, HistoryDesk(database_url, args.schema))
            opened.push_async_callback(made.close)
            await made.start()
            return made

        service = await until_started("history", exits, start, stop)
        if service is None:
            return
        observer.responder(service.door)
        print("history ready", flush=True)
        await service.run(stop)
