"""The ledger in a live room: ``studroom room`` (run once a session: tests/live_room.py)
runs the ledger service beside the table service, the cashier (buy-ins and top-ups
through its saga) and the bots; the ledger's books follow the stores while the room
plays, and after the room stops its books reconcile with no difference; the summary's
chip check is the reconciliation."""

from __future__ import annotations

import psycopg
import pytest
from live_room import ROOM_TABLES, RoomCommand
from studroom.projections.ledger.reconcile import reconcile
from studroom.projections.ledger.sources import all_sources
from studroom.services.runtime.observability.stats import percentile
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def test_the_ledger_follows_a_live_room_and_its_books_reconcile(room_command: RoomCommand) -> None:
    room = room_command.result
    assert room.returncode == 0, room.stdout[-3000:] + room.stderr[-3000:]
    assert "chips conserved: yes" in room.stdout and "reconciling the books" in room.stdout
    log = (room_command.data_dir / "logs" / "room-ledger.log").read_text()
    assert " ERROR " not in log and "Traceback" not in log, log[-2000:]
    behind = room_command.lag.seconds_behind()
    assert behind and min(behind) == 0.0, "the ledger service booked while the room played"
    print(f"ledger behind the stores during play: p50 {percentile(behind, 50):.2f} s, "
          f"p99 {percentile(behind, 99):.2f} s over {len(behind)} looks")
    with EmbeddedPostgres(room_command.data_dir) as postgres:         # the stopped room's, started again
        with psycopg.connect(postgres.url, autocommit=True) as conn:
            sources = all_sources(conn)
        result = reconcile(postgres.url, sources)
    print(f"{result.hands} hands at {result.tables} tables reconciled")
    assert result.clean, result.differences[:5]
    assert result.tables == ROOM_TABLES and result.hands >= 20
    figures = {line.name: line for line in result.equation}
    assert figures["deposits"].books > 0 and figures["chips on the tables"].books > 0
    assert all(line.domain in (None, line.books) for line in result.equation)
