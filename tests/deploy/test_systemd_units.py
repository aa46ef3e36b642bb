"""deploy/systemd: a unit for every ``studroom serve`` service and for the NATS node,
each started after the network is online, restarted for as long as a dependency is
down without exhausting its start limit, connecting as its own NATS identity; and
``systemd-analyze verify`` finds nothing wrong in any of them (the install paths
pointed at this machine's programs)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from nats_nodes import DEPLOY
from studroom.services.cli.main import SERVICES, build_parser
from studroom.services.runtime.servers.embedded_nats import nats_server_binary

UNITS = DEPLOY / "systemd"
INSTALLED_STUDROOM = "/opt/studroom/venv/bin/studroom"
INSTALLED_NATS = "/usr/local/bin/nats-server"
# bots are the room's own, not deployed; the console runs where the Authority is (its own test below)
SERVED = sorted(set(SERVICES) - {"bot", "console"})
REPLICATED = {"table", "relay", "timer", "lobby"}        # they create streams or buckets
RENEWAL = UNITS / "studroom-creds.service"               # run by studroom-creds.timer, not a server


def _read(unit: Path) -> dict[str, dict[str, list[str]]]:
    """section -> key -> values (a key may repeat, as Environment= does)."""
    sections: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    section = ""
    for line in unit.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        sections[section][key].append(value)
    return sections


def _unit_of(service: str) -> Path:
    found = [UNITS / f"studroom-{service}.service", UNITS / f"studroom-{service}@.service"]
    existing = [unit for unit in found if unit.exists()]
    assert len(existing) == 1, f"one unit for studroom serve {service}: {existing}"
    return existing[0]


def _seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)(s|min)?", value)
    assert match, value
    return int(match[1]) * (60 if match[2] == "min" else 1)


def test_every_service_has_a_unit_that_connects_as_itself() -> None:
    for service in SERVED:
        unit = _read(_unit_of(service))["Service"]
        assert unit["Environment"] == [f"STUDROOM_NATS_CREDS=/etc/studroom/creds/service.{service}.creds"]
        assert unit["EnvironmentFile"] == ["/etc/studroom/studroom.env"]
        (command,) = unit["ExecStart"]
        assert command.startswith(f"{INSTALLED_STUDROOM} serve {service}")
        assert ("--replicas 3" in command) == (service in REPLICATED), command
        assert unit["User"] == ["studroom"]
    env = (DEPLOY / "studroom.env").read_text()
    assert "@" not in env.split("STUDROOM_NATS_URL=")[1].split("\n")[0]      # no password in the NATS URLs


def test_the_services_speak_tls_to_nats_and_trust_the_rooms_ca() -> None:
    settings = dict(line.split("=", 1) for line in (DEPLOY / "studroom.env").read_text().splitlines()
                    if line and not line.startswith("#"))
    assert all(url.startswith("tls://") for url in settings["STUDROOM_NATS_URL"].split(","))
    assert settings["STUDROOM_NATS_CA"].endswith("/ca.pem")


def test_units_wait_for_the_network_and_restart_without_exhausting_the_start_limit() -> None:
    units = sorted(set(UNITS.glob("*.service")) - {RENEWAL})
    assert len(units) == len(SERVED) + 3                  # and the NATS node's, the warden's, the console's
    for path in units:
        unit = _read(path)
        assert unit["Unit"]["Wants"] == ["network-online.target"], path.name
        assert unit["Unit"]["After"] == ["network-online.target"], path.name
        assert unit["Service"]["Restart"] == ["always"], path.name
        spacing = _seconds(unit["Service"]["RestartSec"][0])
        interval = _seconds(unit["Unit"]["StartLimitIntervalSec"][0])
        burst = int(unit["Unit"]["StartLimitBurst"][0])
        assert spacing >= 1 and interval > 0
        assert burst > interval / spacing, f"{path.name}: a dependency down for {interval} s stops the unit"


def test_systemd_analyze_verify_finds_nothing(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (package systemd) checks the units"
    studroom = Path(sys.executable).parent / "studroom"
    for path in [*UNITS.glob("*.service"), *UNITS.glob("*.timer")]:
        text = path.read_text().replace(INSTALLED_STUDROOM, str(studroom))
        text = text.replace(INSTALLED_NATS, str(nats_server_binary()))
        text = re.sub(r"^(User|Group)=.*$", r"\1=root", text, flags=re.MULTILINE)   # no such users here
        (tmp_path / path.name).write_text(text)
    checked = subprocess.run([analyze, "verify", "--man=no", *sorted(str(p) for p in tmp_path.iterdir())],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr


def test_every_units_command_line_is_one_the_service_accepts() -> None:
    """Each ExecStart parsed by ``studroom``'s own parser, the variables as systemd fills them."""
    parser = build_parser()
    filled = {"${STUDROOM_STORES}": "2", "%H": "host", "%i": "1"}
    for service in SERVED:
        (command,) = _read(_unit_of(service))["Service"]["ExecStart"]
        for variable, value in filled.items():
            command = command.replace(variable, value)
        args = parser.parse_args(shlex.split(command)[1:])
        if service in REPLICATED:
            assert args.replicas == 3


def test_the_services_credentials_are_renewed_every_hour_into_the_units_folder() -> None:
    """They end after a day (docs/design/trust.md): the timer renews and installs them
    where every unit's STUDROOM_NATS_CREDS points, as the studroom user's."""
    timer = _read(UNITS / "studroom-creds.timer")["Timer"]
    assert timer["OnUnitActiveSec"] == ["1h"]
    (command,) = _read(RENEWAL)["Service"]["ExecStart"]
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert (args.into, args.owner) == ("/etc/studroom/creds", "studroom")
    assert _read(RENEWAL)["Service"]["Type"] == ["oneshot"]


def test_the_warden_runs_where_the_authority_is() -> None:
    """It connects as the system account's warden user, from the Authority (root's)."""
    unit = _read(UNITS / "studroom-warden.service")["Service"]
    (command,) = unit["ExecStart"]
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert (args.auth, args.auth_dir) == ("warden", "/root/studroom-auth") and unit["User"] == ["root"]
    assert unit["EnvironmentFile"] == ["/etc/studroom/studroom.env"]                 # the NATS URLs and CA


def test_the_console_runs_where_the_authority_is_behind_the_proxy() -> None:
    """It issues each person's credentials from the Authority (root's), on 127.0.0.1 only."""
    unit = _read(UNITS / "studroom-console.service")["Service"]
    (command,) = unit["ExecStart"]
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert (args.service, args.auth_dir, args.behind_proxy) == ("console", "/root/studroom-auth", True)
    assert unit["User"] == ["root"] and "Environment" not in unit                    # no service credentials
    assert unit["EnvironmentFile"] == ["/etc/studroom/studroom.env"]                 # the NATS and database URLs
