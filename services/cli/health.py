"""``studroom health``: every running service instance, its readiness and its key
counters, as a table.

Asks ``$SRV.STATS`` (NATS micro discovery: every instance answers, observe.py) on the
settings' NATS (``STUDROOM_NATS_URL``, else the running room's in the data folder) as
``STUDROOM_NATS_CREDS``' identity, else the room's operator ``floor``.  An instance's
readiness is its ``ready`` reading (its health's ok).  Exit 1 when no service answered
or one is not ready.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Any

from ..client.discovery import ask_all, instance, key_counters, readiness, started_at
from ..runtime.settings import Settings
from ..runtime.text import number, table

OPERATOR = ("operator", "floor")        # the room's operator (services/room/bots.py)


def add_commands(commands: argparse._SubParsersAction) -> None:
    health = commands.add_parser("health", help="every running service instance and its key counters")
    health.add_argument("--wait", type=float, default=1.0, metavar="SECONDS",
                        help="how long to collect answers (default 1)")
    health.add_argument("--json", action="store_true", help="the services' $SRV.STATS answers as JSON")
    health.set_defaults(run=_health)


def table_text(answers: list[dict[str, Any]], now: datetime) -> str:
    rows = []
    for stats in sorted(answers, key=lambda s: (s.get("name", ""), s.get("metadata", {}).get("instance", ""))):
        started = started_at(stats)
        counters = " ".join(f"{k}={number(round(v))}" for k, v in key_counters(stats).items())   # all counts
        rows.append([*instance(stats).split(" ", 1), stats["version"], f"{(now - started).total_seconds():.0f}s",
                     readiness(stats), counters])
    return table(("SERVICE", "INSTANCE", "VERSION", "UP", "READY", "COUNTERS"), rows, right=("UP",))


def refused_text(error: Exception, settings: Settings) -> str:
    """What to do about a server that refused the connection."""
    if settings.nats_creds is None:
        return f"{error}; set STUDROOM_NATS_CREDS to an operator's credentials"
    return f"{error}; STUDROOM_NATS_CREDS ({settings.nats_creds}) is not an identity it accepts"


def _health(args: argparse.Namespace) -> int:
    from ..runtime.processes import process
    from ..runtime.processes.credentials import credentials, masked_url
    from ..runtime.processes.observe import nats_url
    from ..wire import subjects

    settings = Settings.from_env()
    url = nats_url(settings)
    if url is None:
        print("studroom: no NATS: set STUDROOM_NATS_URL, or start `studroom room` first", file=sys.stderr)
        return 1

    async def main() -> list[dict[str, Any]]:
        nc = await process.connect(url, "studroom-health", creds=credentials(settings, *OPERATOR),
                                   max_reconnect_attempts=3)
        try:
            return await ask_all(nc, subjects.DISCOVERY_STATS, args.wait)
        finally:
            await nc.drain()

    process.configure_logging("ERROR")        # an outage is said once, below
    try:
        answers = asyncio.run(main())
    except Exception as error:  # noqa: BLE001 (NATS away, credentials refused: one line)
        why = refused_text(error, settings) if isinstance(error, process.NatsRefused) else error
        print(f"studroom: cannot ask the services on {masked_url(url)}: {why or type(error).__name__}",
              file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(answers, indent=2))
    elif answers:
        print(table_text(answers, datetime.now(UTC)))
    if not answers:
        print("studroom: no service answered", file=sys.stderr)
        return 1
    if not_ready := [instance(stats) for stats in answers if readiness(stats) == "not ready"]:
        print(f"studroom: not ready: {', '.join(sorted(not_ready))}", file=sys.stderr)
        return 1
    return 0
