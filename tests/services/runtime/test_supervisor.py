"""The room's service processes: their command lines are ``studroom serve`` command
lines, and stopping them reports what went wrong. Stand-in children, no servers."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from studroom.services.cli.main import build_parser
from studroom.services.runtime.retry import RESTART
from studroom.services.runtime.settings import Settings
from studroom.services.runtime.processes.supervisor import (
    HEALTHY_AFTER,
    SERVE,
    Life,
    Services,
    child_env,
)
from studroom.services.store.layout import store_schemas


class StandIns(Services):
    """The supervisor with children that sleep (or exit with ``exit_code`` at once)."""

    def __init__(self, log_dir: Path, exit_code: int | None = None) -> None:
        super().__init__({}, log_dir, instances=2, stores=1, cashier=False, lobby=False, history=False,
                         ledger=False)
        self.exit_code = exit_code

    def commands(self) -> list[tuple[str, list[str]]]:
        code = "import time; time.sleep(60)"
        if self.exit_code is not None:
            code = f"import sys; sys.exit({self.exit_code})"
        return [(name, [sys.executable, "-c", code]) for name, _ in super().commands()]


def test_the_room_runs_table_services_the_relay_the_cashier_and_the_projections() -> None:
    services = Services({}, Path("logs"), instances=2, stores=1)
    commands = dict(services.commands())
    assert list(commands) == ["room-table-1", "room-table-2", "room-relay", "room-cashier",
                              "room-lobby", "room-history", "room-ledger"]
    assert commands["room-table-2"] == [*SERVE, "table", "--instance-id", "room-2",
                                        "--stores", "1"]
    assert commands["room-relay"] == [*SERVE, "relay", "--stores", "1", "--log-level", "WARNING"]
    assert commands["room-cashier"] == [*SERVE, "cashier", "--instance-id", "room-cashier",
                                        "--log-level", "WARNING"]
    assert commands["room-ledger"] == [*SERVE, "ledger", "--stores", "1", "--log-level", "WARNING"]
    assert services.identities() == {("service", s) for s in ("table", "relay", "cashier", "lobby", "history",
                                                               "ledger")}


def test_stores_and_leases_of_their_own_and_the_timer() -> None:
    services = Services({}, Path("logs"), instances=1, stores=2, timers=True, name="it",
                        schema_prefix="it_p", lease_bucket="it_leases")
    commands = dict(services.commands())
    assert list(commands) == ["it-table-1", "it-relay", "it-timer", "it-cashier", "it-lobby", "it-history",
                              "it-ledger"]
    table = commands["it-table-1"]
    assert table[table.index("--schema-prefix") + 1] == "it_p"
    assert table[table.index("--lease-bucket") + 1] == "it_leases"
    relay = commands["it-relay"]
    assert [relay[i + 1] for i, arg in enumerate(relay) if arg == "--schema"] == \
        store_schemas(2, "it_p")
    assert commands["it-timer"][len(SERVE):] == ["timer", "--instance-id", "it-timer",
                                                 "--log-level", "WARNING"]
    cashier = commands["it-cashier"]
    assert cashier[cashier.index("--schema") + 1] == cashier[cashier.index("--consumer") + 1] == "it_pcashier"
    ledger = commands["it-ledger"]
    assert [ledger[i + 1] for i, arg in enumerate(ledger) if arg == "--schema"] == store_schemas(2, "it_p")
    assert ledger[ledger.index("--cashier-schema") + 1] == "it_pcashier"


def test_every_command_line_is_one_studroom_serve_understands() -> None:
    parser = build_parser()
    services = Services({}, Path("logs"), instances=2, stores=2, timers=True,
                        schema_prefix="it_p", lease_bucket="it_leases")
    for _, command in services.commands():
        assert command[:len(SERVE)] == list(SERVE)
        args = parser.parse_args(command[len(SERVE) - 1:])   # from "serve" on
        assert args.command == "serve" and args.service == command[len(SERVE)]


def test_children_get_the_servers_in_their_settings(tmp_path: Path) -> None:
    env = child_env("nats://127.0.0.1:14222", "postgresql://postgres@127.0.0.1:15432/s", tmp_path)
    assert Settings.from_env(env) == Settings("nats://127.0.0.1:14222",
                                              "postgresql://postgres@127.0.0.1:15432/s", tmp_path)
    assert "PYTHONUNBUFFERED" in env


def test_a_clean_stop_reports_no_problem(tmp_path: Path) -> None:
    services = StandIns(tmp_path)
    services.start()
    try:
        assert services.dead() == []
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "room-relay.log", "room-table-1.log", "room-table-2.log"]
    finally:
        problems = services.stop()
    assert problems == []
    assert services.procs == []


def test_a_service_that_died_is_reported(tmp_path: Path) -> None:
    services = StandIns(tmp_path, exit_code=3)
    services.start()
    for _, proc, _ in services.procs:
        proc.wait(timeout=20)
    assert services.dead() == ["room-table-1 (exit 3)", "room-table-2 (exit 3)",
                               "room-relay (exit 3)"]
    problems = services.stop()
    assert problems == [f"{name} exited with 3 (log {tmp_path / name}.log)"
                        for name in ("room-table-1", "room-table-2", "room-relay")]


def test_a_dead_child_starts_again_after_a_back_off_that_doubles(tmp_path: Path) -> None:
    services = StandIns(tmp_path, exit_code=3)
    services.start()
    first = RESTART.first
    try:
        for _, proc, _ in services.procs:
            proc.wait(timeout=20)
        t = time.monotonic()
        assert services.supervise(t) == []                      # seen dead: back-off begins
        assert services.supervise(t + first / 2 - 0.01) == []   # jittered: half of it at least
        assert services.supervise(t + first) == ["room-table-1", "room-table-2", "room-relay"]
        assert services.restarts() == {"room-table-1": 1, "room-table-2": 1, "room-relay": 1}
        for _, proc, _ in services.procs:
            proc.wait(timeout=20)
        t += first
        services.supervise(t)
        assert services.supervise(t + first - 0.01) == []      # doubled: between 0.5 and 1 s now
        assert len(services.supervise(t + 2 * first)) == 3
        assert services.restarts() == {"room-table-1": 2, "room-table-2": 2, "room-relay": 2}
    finally:
        services.stop()
    log = (tmp_path / "room-relay.log").read_text()
    assert log.count("exited with 3; starting again") == 2


def test_the_back_off_is_at_most_its_maximum_and_starts_over_after_a_healthy_minute(tmp_path: Path) -> None:
    life = Life(["serve"], since=0.0)
    backoffs, now = [], 0.0
    with (tmp_path / "log").open("wb") as log:
        for _ in range(8):
            now += 1.0                                   # dies a second after its start
            assert not life.due(now, 1, log)
            assert life.again_at is not None
            backoffs.append(life.again_at - now)
            now = life.again_at
            assert life.due(now, 1, log)
            life.started(now)
        now += HEALTHY_AFTER + 1.0                       # lived over a minute: back to the first (at exactly
        #   a minute, (t + 60) - t of jittered floats may fall a hair short: the test's arithmetic, not the rule's)
        life.due(now, 1, log)
        assert life.again_at is not None and life.again_at - now <= RESTART.first
    ceilings = [0.5, 1, 2, 4, 8, 10, 10, 10]             # RESTART: 0.5 s doubling to 10 s ...
    assert [RESTART.ceiling(k) for k in range(8)] == ceilings
    assert all(c / 2 <= b <= c for b, c in zip(backoffs, ceilings, strict=True)), backoffs   # ... jittered
    assert life.restarts == 8
