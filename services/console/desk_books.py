"""The operator's desk on the books: the rake for a chart, the last reconcile.

Both read the ledger's books in PostgreSQL with the console's own, service-side access
(the database URL of its settings): an operator's NATS identity has no power over the
database.  Blocking work runs in a thread, never on the event loop.

- :func:`rake` reads the books as the room's ledger service keeps them (read only: the
  entries and positions of a batch are written in one transaction, so what it reads
  is consistent), through the ledger's own report (projections/ledger/reports.py).
- :class:`Reconciles` is "the ledger's last reconcile": ``studroom ledger reconcile``
  run by the console itself (a cut of the stores, the books brought to it, every chip
  proved as of it), in one background thread at a time, at most every ``max_age_s``;
  the desk is answered at once with the last finished result (and whether a newer one
  is running).  A reconcile replays every table, so it grows with the room's history
  (seconds on a young room, minutes after weeks): never awaited by a request.  The
  deploy's daily timer (deploy/monitoring/reconcile-textfile) is shown beside it when
  its file is readable (``textfile``).  docs/design/console.md, "Desk and replay ops".
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from studroom.projections.ledger.schema import LEDGER_SCHEMA

from ..client.table import Refused      # a refusal's code and message, as the console answers any

SHOWN_DIFFERENCES: Final = 20       # differences of a reconcile the desk shows (and how many there were)
MAX_DAYS: Final = 366               # days a rake chart may span


@dataclass(frozen=True)
class Books:
    """Where the room's books and stores are (the defaults: the room's own names)."""

    database_url: str
    schemas: tuple[str, ...] | None = None     # the table stores (None: every one found)
    cashier_schema: str | None = None          # None: studroom_cashier
    ledger_schema: str = LEDGER_SCHEMA


def _rake_rows(books: Books, by: str) -> list[list[Any]]:
    import psycopg
    from studroom.projections.ledger import reports
    from studroom.projections.ledger.schema import exists

    with psycopg.connect(books.database_url, autocommit=True) as conn:
        if not exists(conn, books.ledger_schema):
            return []
        _, rows = reports.rake(conn, by, books.ledger_schema)
    return rows[:-1]                 # without the report's total line


async def rake(books: Books, by: str = "day", days: int | None = None) -> dict[str, Any]:
    """The rake per day (UTC) or per table: ``{"by", "days", "rows": [{"key", "hands",
    "pots", "rake"}], "total": {"hands", "pots", "rake"}}``.  By day with ``days``: the
    last ``days`` days, today included, each one (zero where nothing was raked); by
    table: since the books began (``days`` is refused there)."""
    if by not in ("day", "table"):
        raise Refused("bad_request", 'by is "day" or "table"')
    if days is not None and (by != "day" or type(days) is not int or not 1 <= days <= MAX_DAYS):
        raise Refused("bad_request", f"days (1..{MAX_DAYS}) goes with by \"day\" only")
    found = await asyncio.to_thread(_rake_rows, books, by)
    rows = [{"key": str(key), "hands": int(hands), "pots": int(pots), "rake": int(amount)}
            for key, hands, pots, amount in found]
    if days is not None:
        today = datetime.datetime.now(datetime.UTC).date()
        shown = [(today - datetime.timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]
        held = {row["key"]: row for row in rows}
        rows = [held.get(d) or {"key": d, "hands": 0, "pots": 0, "rake": 0} for d in shown]
    total = {name: sum(row[name] for row in rows) for name in ("hands", "pots", "rake")}
    return {"by": by, "days": days, "rows": rows, "total": total}


def reconcile_now(books: Books) -> dict[str, Any]:
    """``studroom ledger reconcile`` of the whole room, as JSON (blocking: run it in a thread)."""
    import msgspec
    from studroom.projections.ledger.room_check import reconcile_room

    started_ms, started = int(time.time() * 1000), time.perf_counter()
    result = reconcile_room(books.database_url, books.schemas, cashier_schema=books.cashier_schema,
                            ledger_schema=books.ledger_schema)
    return {
        "at_ms": started_ms,
        "seconds": round(time.perf_counter() - started, 3),
        "clean": result.clean,
        "tables": result.tables,
        "hands": result.hands,
        "events": result.events,
        "equation": [{"name": line.name, "books": line.books, "domain": line.domain} for line in result.equation],
        "differences": [msgspec.structs.asdict(d) for d in result.differences[:SHOWN_DIFFERENCES]],
        "difference_count": len(result.differences),
    }


def daily(textfile: Path | None) -> dict[str, Any] | None:
    """The deploy's daily reconcile as its textfile says it (exit code, when, seconds);
    None without a readable file."""
    if textfile is None:
        return None
    try:
        text = textfile.read_text(encoding="utf-8")
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("studroom_reconcile_"):
            try:
                values[name.removeprefix("studroom_reconcile_")] = int(float(value))
            except ValueError:
                continue
    if "exit_code" not in values:
        return None
    return {"exit_code": values["exit_code"], "clean": values["exit_code"] == 0,
            "at_ms": values.get("last_run_timestamp_seconds", 0) * 1000,
            "seconds": values.get("duration_seconds")}


class Reconciles:
    """The console's reconciles of the books: one at a time in a daemon thread (a stop of
    the console never waits for one), a new one when asked and the last is older than
    ``max_age_s``."""

    def __init__(self, books: Books, *, max_age_s: float = 600.0, textfile: Path | None = None) -> None:
        self.books = books
        self.max_age_s = max_age_s
        self.textfile = textfile
        self.last: dict[str, Any] | None = None
        self.failed: str | None = None           # why the last attempt failed, if it did
        self.running = False
        self._finished_at = -float("inf")
        self._done: asyncio.Event | None = None

    async def last_reconcile(self, *, refresh: bool = True) -> dict[str, Any]:
        """At once: ``{"last": <reconcile_now's answer> | None, "running": bool,
        "failed": str | None, "daily": <daily()> | None}``; with ``refresh``, a new
        reconcile started when none runs and the last finished ``max_age_s`` ago."""
        if refresh and not self.running and time.monotonic() - self._finished_at >= self.max_age_s:
            self._start()
        return {"last": self.last, "running": self.running, "failed": self.failed,
                "daily": await asyncio.to_thread(daily, self.textfile)}

    async def wait(self) -> None:
        """Until the reconcile running now (if any) has finished."""
        if self.running and self._done is not None:
            await self._done.wait()

    def _start(self) -> None:
        loop, done = asyncio.get_running_loop(), asyncio.Event()
        self._done, self.running = done, True

        def work() -> None:
            try:
                result, failed = reconcile_now(self.books), None
            except Exception as e:  # noqa: BLE001 (the database away, the books missing: said on the desk)
                result, failed = None, f"{type(e).__name__}: {str(e)[:300]}"
            with contextlib.suppress(RuntimeError):          # the console's loop closed meanwhile
                loop.call_soon_threadsafe(self._finish, result, failed, done)

        threading.Thread(target=work, name="console-reconcile", daemon=True).start()

    def _finish(self, result: dict[str, Any] | None, failed: str | None, done: asyncio.Event) -> None:
        if result is not None:
            self.last = result
        self.failed = failed
        self.running = False
        self._finished_at = time.monotonic()
        done.set()
