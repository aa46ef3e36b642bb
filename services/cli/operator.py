"""The connection of an operator's command-line tool to the room's NATS.

As the operator ``name`` (``--as NAME``, default "floor"): with the credentials of
``STUDROOM_NATS_CREDS``, or, next to a room running in the data folder, those its
Authority issues that operator; to ``STUDROOM_NATS_URL``, else the data folder's
running embedded NATS.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Final

FLOOR: Final = "floor"      # the room's operator, the default identity


def add_operator_argument(parser: Any) -> None:
    parser.add_argument("--as", dest="operator", default=FLOOR, help=f"the operator to act as (default {FLOOR})")


@contextlib.asynccontextmanager
async def operator_connection(name: str, tool: str) -> AsyncIterator[Any]:
    """A NATS connection as operator ``name``, named after the ``tool`` using it; drained after."""
    from ..runtime.processes import process
    from ..runtime.processes.credentials import credentials
    from ..runtime.servers.attach import needed_nats_url
    from ..runtime.settings import Settings

    settings = Settings.from_env()
    nc = await process.connect(needed_nats_url(settings), f"studroom-{tool}-cli-{name}",
                               creds=credentials(settings, "operator", name), max_reconnect_attempts=3)
    try:
        yield nc
    finally:
        await nc.drain()
