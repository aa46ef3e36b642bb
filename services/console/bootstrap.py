"""The console's composition root: ``studroom serve console``.

Serves the web console on 127.0.0.1 (a deploy puts a TLS proxy in front:
docs/design/console.md, "Serving") over the room's NATS and PostgreSQL (``STUDROOM_NATS_URL``,
``STUDROOM_DATABASE_URL``, else the data folder's embedded ones: the desk reads the
books, the replay the event stores).  It needs the room's Authority (``--auth-dir``,
default ``auth/`` in the data folder): it issues each logged-in person's credentials
and holds the passwords.  Light to import: the CLI reads ``HELP`` and
``add_arguments`` of every process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from pathlib import Path

from ..runtime.arguments import int_range
from ..runtime.settings import Settings

HELP = "the web console: lobby, tables, play, cashier, history, replay and the operator's desk, on 127.0.0.1"
HOST = "127.0.0.1"
DEFAULT_PORT = 8480

log = logging.getLogger("studroom.console")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int_range(0, 65535), default=DEFAULT_PORT,
                        help=f"the port on 127.0.0.1 (default {DEFAULT_PORT}; 0: a free one)")
    parser.add_argument("--auth-dir", default=None,
                        help="the room's Authority (default: auth/ in the data folder, STUDROOM_DATA_DIR)")
    parser.add_argument("--origin", action="append", default=[], metavar="URL",
                        help="an origin the browser's pages may come from besides http(s)://<Host> "
                             "(e.g. https://room.example behind a proxy; repeatable)")
    parser.add_argument("--behind-proxy", action="store_true",
                        help="behind a TLS proxy: the client's address from X-Forwarded-For, the cookie Secure")
    # Where the stores and books are when not under the room's own names (tests, benchmarks: as the
    # history's --store-prefix, the relay's --schema and the ledger's --cashier-schema/--ledger-schema).
    parser.add_argument("--store-prefix", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--schema", action="append", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cashier-schema", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--ledger-schema", default=None, help=argparse.SUPPRESS)


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from aiohttp import web

    from ..auth.authority import Authority, room_authority
    from ..runtime.processes.credentials import masked_url
    from ..runtime.servers.external_or_embedded import servers
    from .desk_books import Books
    from .gateway import Console

    authority = Authority(Path(args.auth_dir)) if args.auth_dir else room_authority(settings.data_dir)
    async with contextlib.AsyncExitStack() as exits:
        url, database_url = exits.enter_context(servers(settings))
        placed = {"schemas": tuple(args.schema) if args.schema else None, "cashier_schema": args.cashier_schema}
        if args.ledger_schema:
            placed["ledger_schema"] = args.ledger_schema
        console = Console(url, authority, origins=tuple(args.origin), behind_proxy=args.behind_proxy,
                          books=Books(database_url, **placed), store_prefix=args.store_prefix)
        await console.start()
        exits.push_async_callback(console.stop)
        runner = web.AppRunner(console.app(), access_log=None)
        await runner.setup()
        exits.push_async_callback(runner.cleanup)
        site = web.TCPSite(runner, HOST, args.port)
        await site.start()
        port = runner.addresses[0][1]
        print(f"console: http://{HOST}:{port}/", flush=True)
        log.info("console on http://%s:%d/, NATS %s", HOST, port, masked_url(url))
        await stop.wait()
