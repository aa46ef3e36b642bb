"""deploy/compose.yaml read as Compose reads it (YAML with merge keys; no image is
pulled or built here): a 3-node NATS cluster from the deploy NATS files with JetStream
(the official image, 2.12 or newer), PostgreSQL set up by deploy/postgres/init.sql, the
credentials issued by a one-shot job, and every ``studroom serve`` service with its own
credentials, the three NATS URLs, a health check on its /healthz and a command line
``studroom`` itself accepts."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from nats_nodes import DEPLOY, route_env
from studroom.services.auth.powers import IDENTITIES
from studroom.services.cli.main import build_parser
from studroom.services.runtime.servers.embedded_nats import nats_server_binary
from test_systemd_units import REPLICATED, SERVED

NODES = ("nats-1", "nats-2", "nats-3")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def _words(command: Any) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else list(command)


def test_three_nats_nodes_from_the_deploy_files(compose: dict[str, Any]) -> None:
    services = compose["services"]
    stores = set()
    for name in NODES:
        node = services[name]
        image, _, tag = node["image"].partition(":")
        assert image == "nats"
        assert tuple(int(n) for n in re.match(r"(\d+)\.(\d+)", tag).groups()) >= (2, 12)  # type: ignore[union-attr]
        assert _words(node["command"]) == ["-c", "/etc/nats/cluster.conf"]
        env = node["environment"]
        assert env["NATS_SERVER_NAME"] == name and env["NATS_ROUTE_PASSWORD"].startswith("${NATS_ROUTE_PASSWORD:?")
        assert sorted(v.split("@")[1] for k, v in env.items() if k.startswith("NATS_ROUTE_") and k[-1].isdigit()) \
            == [f"{n}:6222" for n in NODES]
        assert "https://127.0.0.1:8222/healthz" in " ".join(node["healthcheck"]["test"])
        assert all(port.startswith("127.0.0.1:") for port in node.get("ports", []))
        stores.add(next(v for v in node["volumes"] if v.endswith(":/var/lib/nats")))
        assert "nats-config:/etc/nats:ro" in node["volumes"]
        assert node["depends_on"]["authority"]["condition"] == "service_completed_successfully"
    assert len(stores) == 3                                       # a JetStream store each


def test_the_authority_job_writes_the_trust_configuration_and_the_credentials(compose: dict[str, Any]) -> None:
    job = compose["services"]["authority"]
    script = " ".join(job["command"])
    assert "studroom auth server-config --auth-dir /authority > /etc/nats/studroom-auth.conf" in script
    assert "studroom auth service-creds --auth-dir /authority --into /etc/studroom/creds --owner 10001" in script
    assert "cp /deploy/nats/studroom.conf /deploy/nats/cluster.conf /etc/nats/" in script
    assert "studroom auth tls --auth-dir /authority --out /etc/nats/tls --host nats-1 --host nats-2 --host nats-3" \
        in script and "install -m 0444 /etc/nats/tls/ca.pem /etc/studroom/creds/ca.pem" in script
    assert "./nats:/deploy/nats:ro" in job["volumes"] and "authority:/authority" in job["volumes"]
    others = [name for name, service in compose["services"].items()
              if name not in ("authority", "creds-renewal", "warden")
              and any(v.startswith("authority:") for v in service.get("volumes", []))]
    assert not others, f"the Authority's keys are mounted in {others}"


def test_the_services_credentials_are_renewed_every_hour(compose: dict[str, Any]) -> None:
    """They end after a day (docs/design/trust.md); each service reconnects with the renewed file."""
    renewal = compose["services"]["creds-renewal"]
    script = " ".join(renewal["command"])
    assert "while sleep 3600" in script
    assert "studroom auth service-creds --auth-dir /authority --into /etc/studroom/creds --owner 10001" in script
    assert renewal["restart"] == "unless-stopped" and "ports" not in renewal


def test_the_database_is_set_up_by_init_sql(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    job = services["database"]
    words = _words(job["command"])
    assert words[0] == "psql" and "ON_ERROR_STOP=1" in words and "password=${STUDROOM_DB_PASSWORD}" in words
    assert "./postgres/init.sql:/deploy/postgres/init.sql:ro" in job["volumes"]
    assert job["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_every_service_runs_with_its_credentials_the_cluster_and_a_health_check(compose: dict[str, Any]) -> None:
    services = compose["services"]
    parser = build_parser()
    for name in SERVED:
        service = services[name]
        words = _words(service["command"])
        assert words[:2] == ["serve", name]
        args = parser.parse_args(words)
        assert (getattr(args, "replicas", 1) == 3) == (name in REPLICATED), name
        env = service["environment"]
        assert env["STUDROOM_NATS_CREDS"] == f"/etc/studroom/creds/service.{name}.creds"
        assert env["STUDROOM_NATS_URL"].split(",") == [f"tls://{n}:4222" for n in NODES]
        assert env["STUDROOM_NATS_CA"] == "/etc/studroom/creds/ca.pem"
        assert env["STUDROOM_DATABASE_URL"].startswith("postgresql://studroom:${STUDROOM_DB_PASSWORD")
        port = env["STUDROOM_METRICS_PORT"]
        assert f"127.0.0.1:{port}/healthz" in " ".join(service["healthcheck"]["test"])
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        assert "creds:/etc/studroom/creds:ro" in service["volumes"]
        assert {k: v["condition"] for k, v in service["depends_on"].items()} == {
            "authority": "service_completed_successfully", "database": "service_completed_successfully",
            **dict.fromkeys(NODES, "service_healthy")}
    assert services["table"]["deploy"]["replicas"] >= 2
    assert set(services) == {*SERVED, *NODES, "authority", "creds-renewal", "warden", "postgres", "database"}


def test_the_image_installs_the_project() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[1-9]", dockerfile, re.MULTILINE)
    assert "pip wheel --no-cache-dir --wheel-dir /wheels ." in dockerfile
    assert 'ENTRYPOINT ["studroom"]' in dockerfile and "USER studroom" in dockerfile
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    assert {"!pyproject.toml", "!setup.py", "!domain/**", "!services/**", "!projections/**"} <= set(ignored)


def test_the_authority_jobs_script_makes_a_cluster_configuration_nats_server_accepts(
        compose: dict[str, Any], tmp_path: Path) -> None:
    """The job's shell script run here (its volumes folders of the test's, ``studroom``
    this installation's, the owner this user): ``nats-server -t`` accepts the node
    configuration it leaves, and every service's credentials are there, readable by
    their owner only."""
    job = compose["services"]["authority"]
    assert job["entrypoint"] == ["sh", "-ec"]
    folders = {"/authority": tmp_path / "authority", "/etc/nats": tmp_path / "nats",
               "/etc/studroom/creds": tmp_path / "creds", "/deploy/nats": DEPLOY / "nats"}
    script = job["command"][0].replace("$$", "$").replace("--owner 10001", f"--owner {os.getuid()}")
    for inside, outside in folders.items():
        script = script.replace(f"{inside}/", f"{outside}/").replace(f"{inside} ", f"{outside} ")
        if inside != "/deploy/nats":
            outside.mkdir()
    studroom = Path(sys.executable).parent / "studroom"
    done = subprocess.run(["sh", "-ec", script.replace("studroom auth", f"{studroom} auth")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    creds = {p.name: oct(p.stat().st_mode & 0o777) for p in (tmp_path / "creds").iterdir()}
    assert creds == {**{f"service.{name}.creds": "0o400" for name in IDENTITIES}, "ca.pem": "0o444"}
    assert oct((tmp_path / "nats" / "tls" / "server-key.pem").stat().st_mode & 0o777) == "0o600"
    assert not list((tmp_path / "nats").rglob("ca-key.pem"))              # the CA's key stays in the Authority
    for conf in ("studroom.conf", "cluster.conf"):                        # the container's /etc/nats is here
        path = tmp_path / "nats" / conf
        path.write_text(path.read_text().replace("/etc/nats/tls/", f"{tmp_path / 'nats' / 'tls'}/"))
    env = {**os.environ, **route_env("nats-1", [6222, 6223, 6224])}
    checked = subprocess.run([str(nats_server_binary()), "-t", "-c", str(tmp_path / "nats" / "cluster.conf")],
                             capture_output=True, text=True, check=False, env=env)
    assert checked.returncode == 0, checked.stderr


def test_the_warden_caps_connections_on_the_three_nodes(compose: dict[str, Any]) -> None:
    """It holds the Authority (the system account's warden user) and speaks TLS to NATS."""
    warden = compose["services"]["warden"]
    args = build_parser().parse_args(_words(warden["command"]))
    assert args.auth == "warden" and args.auth_dir == "/authority"
    assert warden["environment"]["STUDROOM_NATS_URL"] == compose["services"]["table"]["environment"]["STUDROOM_NATS_URL"]
    assert {f"nats-{n}" for n in (1, 2, 3)} <= set(warden["depends_on"]) and "ports" not in warden
