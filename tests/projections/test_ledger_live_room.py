"""The ledger in a live room: ``studroom room`` runs the ledger service beside the table
service, the cashier (buy-ins and top-ups through its saga) and the bots; the ledger's
books follow the stores while the room plays, and after the room stops its books
reconcile with no difference; the summary's chip check is the reconciliation."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from studroom.projections.ledger.reconcile import reconcile
from studroom.projections.ledger.schema import LEDGER_SCHEMA
from studroom.projections.ledger.sources import all_sources
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.runtime.settings import (
    DATA_DIR_VAR,
    DATABASE_URL_VAR,
    NATS_CREDS_VAR,
    NATS_URL_VAR,
)
from studroom.services.runtime.observability.stats import percentile

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

STORES = ("studroom_p0", "studroom_cashier")


class Lag:
    """How far the books are behind the stores, looked at every 0.2 s while the room plays."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.samples: list[tuple[float, int, int]] = []      # (when, stored, booked)
        self.stop = threading.Event()

    def watch(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.wait(0.2):
                try:
                    stored = sum(conn.execute(f"SELECT coalesce(max(notification_id), 0) FROM {s}.events")
                                 .fetchone()[0] for s in STORES)  # type: ignore[index]
                    booked = conn.execute(f"SELECT coalesce(sum(position), 0) FROM {LEDGER_SCHEMA}.positions"
                                          ).fetchone()[0]  # type: ignore[index]
                except psycopg.errors.UndefinedTable:     # not created yet
                    continue
                self.samples.append((time.monotonic(), stored, booked))

    def seconds_behind(self) -> list[float]:
        """For each look: how long until the books held what the stores held then."""
        out = []
        for i, (when, stored, _) in enumerate(self.samples):
            later = next((t for t, _, booked in self.samples[i:] if booked >= stored), None)
            if later is not None:
                out.append(later - when)
        return out


def test_the_ledger_follows_a_live_room_and_its_books_reconcile(private_dir: Path) -> None:
    with EmbeddedPostgres(private_dir) as postgres:
        env = {k: v for k, v in os.environ.items() if k not in (NATS_URL_VAR, NATS_CREDS_VAR)}
        env |= {DATABASE_URL_VAR: postgres.url, DATA_DIR_VAR: str(private_dir)}
        lag = Lag(postgres.url)
        watcher = threading.Thread(target=lag.watch)
        watcher.start()
        try:
            room = subprocess.run(
                [sys.executable, "-m", "studroom.services.cli", "room", "--tables", "4", "--bots-per-table", "4",
                 "--for", "12", "--quiet"], check=False, env=env, capture_output=True, text=True, timeout=200)
        finally:
            lag.stop.set()
            watcher.join()
        assert room.returncode == 0, room.stdout[-3000:] + room.stderr[-3000:]
        assert "chips conserved: yes" in room.stdout and "reconciling the books" in room.stdout
        log = (private_dir / "logs" / "room-ledger.log").read_text()
        assert " ERROR " not in log and "Traceback" not in log, log[-2000:]
        behind = lag.seconds_behind()
        assert behind and min(behind) == 0.0, "the ledger service booked while the room played"
        print(f"ledger behind the stores during play: p50 {percentile(behind, 50):.2f} s, "
              f"p99 {percentile(behind, 99):.2f} s over {len(behind)} looks")
        with psycopg.connect(postgres.url, autocommit=True) as conn:
            sources = all_sources(conn)
        result = reconcile(postgres.url, sources)
        assert result.clean, result.differences[:5]
        assert result.tables == 4 and result.hands >= 20
        figures = {line.name: line for line in result.equation}
        assert figures["deposits"].books > 0 and figures["chips on the tables"].books > 0
        assert all(line.domain in (None, line.books) for line in result.equation)
