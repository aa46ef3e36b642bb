"""The desk's and the replay's WebSocket ops, ready to register (ops.register_external):
each reads its arguments strictly and calls desk.py / desk_books.py / replay.py with the
session's identity (never a name the browser sent); register_external turns their
refusals into the op's error.  The gateway calls :func:`register` once at its start
with what the console reaches on its own, service side:

- ``books``: where the books and stores are (the database URL of the console's settings);
- ``service_nc``: a connection as a service identity with JetStream read powers (the
  read-only ``projections`` one), for the dead letters; None: ``desk_dead_letters``
  answers ``unavailable``.

Health goes over the person's own connection (``link.nc``).
"""

from __future__ import annotations

from typing import Any

from ..store.layout import STORE_SCHEMA_PREFIX
from ..wire.protocol import UNAVAILABLE
from .desk import dead_letters, health
from .desk_books import Books, Reconciles, rake
from .ops import OPERATOR, PEOPLE, OpError, _only, register_external
from .replay import replay

def _args(args: dict[str, Any], *names: str) -> list[Any]:
    """The values of ``names`` (None where left out); any other argument: ``bad_request``."""
    _only(args, *names)
    return [args.get(name) for name in names]


def register(books: Books, reconciles: Reconciles, service_nc: Any | None = None, *,
             store_prefix: str = STORE_SCHEMA_PREFIX) -> None:
    """``replay`` (player, operator) and ``desk_rake``, ``desk_reconcile``, ``desk_health``,
    ``desk_dead_letters`` (operator): docs/design/console.md, "Desk and replay ops"."""

    async def replay_op(link: Any, args: dict[str, Any]) -> dict[str, Any]:
        table, hand_no = _args(args, "table", "hand_no")
        return await replay(link.role, link.name, table, hand_no, database_url=books.database_url,
                            prefix=store_prefix)

    async def rake_op(link: Any, args: dict[str, Any]) -> dict[str, Any]:
        by, days = _args(args, "by", "days")
        return await rake(books, "day" if by is None else by, days)

    async def reconcile_op(link: Any, args: dict[str, Any]) -> dict[str, Any]:
        (refresh,) = _args(args, "refresh")
        return await reconciles.last_reconcile(refresh=refresh is not False)

    async def health_op(link: Any, args: dict[str, Any]) -> dict[str, Any]:
        _args(args)
        return await health(link.nc)

    async def dead_letters_op(link: Any, args: dict[str, Any]) -> dict[str, Any]:
        (limit,) = _args(args, "limit")
        if service_nc is None:
            raise OpError(UNAVAILABLE, "the console has no service connection to read the dead letters")
        return await dead_letters(service_nc, 50 if limit is None else limit)

    register_external("replay", PEOPLE, replay_op)
    for name, run in (("desk_rake", rake_op), ("desk_reconcile", reconcile_op), ("desk_health", health_op),
                      ("desk_dead_letters", dead_letters_op)):
        register_external(name, OPERATOR, run)
