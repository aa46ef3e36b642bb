"""``studroom room --bots-per-table K`` on a data folder whose tables have more players
seated says why it seats more bots than asked (issue 22: it quietly gave "15 bots")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from studroom.services.runtime.settings import DATA_DIR_VAR, DATABASE_URL_VAR, NATS_CREDS_VAR, NATS_URL_VAR

pytestmark = pytest.mark.integration


def _room(data_dir: Path, *flags: str) -> str:
    """``studroom room`` for a second; without the console and the timer service, which
    the seating this test is about does not involve (each would only add its start)."""
    env = {k: v for k, v in os.environ.items() if k not in (NATS_URL_VAR, DATABASE_URL_VAR, NATS_CREDS_VAR)}
    env[DATA_DIR_VAR] = str(data_dir)
    result = subprocess.run([sys.executable, "-m", "studroom.services.cli", "room", "--for", "1", "--quiet",
                             "--no-console", "--no-timers", *flags],
                            env=env, capture_output=True, text=True, timeout=200, check=False)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.timeout(240)
def test_a_reused_table_keeps_its_players_and_the_room_says_so(private_dir: Path) -> None:
    first = _room(private_dir, "--tables", "1", "--bots-per-table", "3")
    assert "1 tables (0 reused), 3 bots" in first and "--bots-per-table 3:" not in first
    again = _room(private_dir, "--tables", "2", "--bots-per-table", "2")
    assert "2 tables (1 reused), 5 bots" in again, again
    assert ("--bots-per-table 2: the players seated at t01 (3) in the data folder keep their seats, each played "
            "by a bot so that no hand waits on a player nobody plays; new tables seat 2 (a new --data-dir "
            "starts afresh)") in again.splitlines(), again
