"""The ledger's commands on a room's data folder: attached to the embedded PostgreSQL a
running room holds there (they used to fail: "is run by another process"), and on a
stopped room's data an embedded PostgreSQL started for the time of the command."""

from __future__ import annotations

from pathlib import Path

import pytest
from studroom.services.cli.main import main
from studroom.services.runtime.servers.attach import running_postgres
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.tools.stored_room import store_room

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_the_ledger_attaches_to_a_running_room_and_starts_a_stopped_rooms_database(
        private_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STUDROOM_DATABASE_URL", raising=False)
    monkeypatch.setenv("STUDROOM_DATA_DIR", str(private_dir))
    with EmbeddedPostgres(private_dir) as server:                      # a room runs in the folder
        store_room(server.url, ["studroom_p0"], "studroom_cashier", events=2_000, tables=2)
        assert main(["ledger", "reconcile"]) == 0
        assert "no differences" in capsys.readouterr().out
        assert running_postgres(private_dir) == server.url            # still the room's
    assert main(["ledger", "rake", "--csv", "--data-dir", str(private_dir)]) == 0     # stopped: started for it
    assert capsys.readouterr().out.startswith("table,hands raked,pots raked,rake")
    assert running_postgres(private_dir) is None
