"""``studroom player|operator add|revoke`` and ``auth service-creds`` as an administrator
runs them (in this process: the command's own parser and function, its output captured)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from studroom.services.auth import jwt
from studroom.services.auth.authority import Authority
from studroom.services.cli.main import build_parser
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.servers.server_process import free_port


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def studroom(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``studroom(*args, env={...})``: run the command, its exit code and output."""
    def run(*args: str, env: dict[str, str] | None = None) -> Done:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        argv = list(args)
        parsed = build_parser(argv).parse_args(argv)
        code = parsed.run(parsed)
        out, err = capsys.readouterr()
        return Done(code, out, err)
    return run


def test_add_again_issues_new_credentials_with_a_fresh_expiry(studroom: Any, tmp_path: Path) -> None:
    auth = str(tmp_path / "auth")
    first = studroom("player", "add", "alice", "--auth-dir", auth)
    claims = jwt.creds_claims(Path(first.stdout.strip()).read_text())
    second = studroom("player", "add", "alice", "--auth-dir", auth)
    again = jwt.creds_claims(Path(second.stdout.strip()).read_text())
    assert first.stdout == second.stdout                                     # the same file, rewritten
    assert again["sub"] != claims["sub"] and again["exp"] >= claims["exp"]


def test_revoking_someone_who_does_not_exist_is_a_clear_error(studroom: Any, tmp_path: Path) -> None:
    auth = str(tmp_path / "auth")
    studroom("player", "add", "alice", "--auth-dir", auth)
    done = studroom("operator", "revoke", "alice", "--auth-dir", auth)
    assert done.returncode == 2
    assert "studroom operator revoke: no operator 'alice' in the Authority" in done.stderr
    bad = studroom("player", "revoke", "no.such", "--auth-dir", auth)
    assert bad.returncode == 2 and "ids are" in bad.stderr


def test_a_revocation_without_running_servers_is_recorded_and_says_when_it_applies(studroom: Any,
                                                                                   tmp_path: Path) -> None:
    auth = str(tmp_path / "auth")
    studroom("player", "add", "bob", "--auth-dir", auth)
    done = studroom("player", "revoke", "bob", "--auth-dir", auth, env={"STUDROOM_NATS_URL": ""})
    assert done.returncode == 0, done.stderr
    assert "revoked player bob (1 key)" in done.stdout and "studroom auth server-config" in done.stdout
    assert len(Authority(Path(auth)).revocations()) == 1
    unreachable = f"nats://127.0.0.1:{free_port()}"
    studroom("player", "add", "bob", "--auth-dir", auth)
    named = studroom("player", "revoke", "bob", "--auth-dir", auth, "--servers", unreachable)
    assert named.returncode == 1 and "no NATS server at" in named.stderr      # named servers not told: exit 1
    assert len(Authority(Path(auth)).revocations()) == 2                      # recorded all the same


@pytest.mark.integration
def test_revoke_disconnects_a_connected_operator_at_once(studroom: Any, secure_nats_url: str,
                                                         authority: Authority) -> None:
    auth = str(authority.folder)
    creds = Path(studroom("operator", "add", "eve", "--auth-dir", auth).stdout.strip())

    async def scenario() -> None:
        closed = asyncio.Event()

        async def on_closed() -> None:
            closed.set()

        nc: Any = await nats.connect(secure_nats_url, user_credentials=str(creds), closed_cb=on_closed)
        done = await asyncio.to_thread(studroom, "operator", "revoke", "eve", "--auth-dir", auth,
                                       "--servers", secure_nats_url)
        assert done.returncode == 0, done.stderr
        assert "1 running NATS server closed its connections and refuse it" in done.stdout
        await asyncio.wait_for(closed.wait(), 5)
        assert not nc.is_connected

    asyncio.run(scenario())


@pytest.mark.integration
def test_revoke_in_a_running_embedded_room_holds_across_a_reload(studroom: Any, private_dir: Path) -> None:
    """No flag: the data folder's running NATS is told, and its configuration file is
    written anew, so that a reload (SIGHUP) keeps the revocation."""
    env = {"STUDROOM_DATA_DIR": str(private_dir), "STUDROOM_NATS_URL": ""}
    with EmbeddedNats(private_dir) as server:
        creds = Path(studroom("player", "add", "mallory", env=env).stdout.strip())
        kept = private_dir / "kept.creds"
        kept.write_text(creds.read_text())

        async def refused() -> bool:
            try:
                nc = await nats.connect(server.url, user_credentials=str(kept), allow_reconnect=False,
                                        max_reconnect_attempts=0, connect_timeout=2)
            except nats.errors.Error:
                return True
            await nc.close()
            return False

        assert not asyncio.run(refused())
        done = studroom("player", "revoke", "mallory", env=env)
        assert done.returncode == 0 and "1 running NATS server closed" in done.stdout, done.stdout + done.stderr
        assert asyncio.run(refused())
        assert server.pid is not None
        os.kill(server.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "Reloaded server configuration" not in server.log_path.read_text():
            assert time.monotonic() < deadline, server.log_path.read_text()[-1500:]
            time.sleep(0.05)
        assert asyncio.run(refused())


def test_service_creds_installs_copies_the_services_read_and_renews_them(studroom: Any, tmp_path: Path) -> None:
    auth, into = str(tmp_path / "auth"), tmp_path / "etc-creds"
    into.mkdir()
    first = studroom("auth", "service-creds", "--auth-dir", auth, "--into", str(into), "--owner", str(os.getuid()))
    assert first.returncode == 0, first.stderr
    installed = [Path(p) for p in first.stdout.split()]
    assert all(p.parent == into and oct(p.stat().st_mode & 0o777) == "0o400" for p in installed)
    table = Authority(Path(auth)).creds_path("service", "table")
    assert (into / table.name).read_text() == table.read_text()
    # Past half its life the next run renews it, and the copy follows.
    claims = jwt.creds_claims(table.read_text())
    token, seed = Authority(Path(auth)).user("service.table", publish=claims["nats"]["pub"]["allow"],
                                             subscribe=claims["nats"]["sub"]["allow"],
                                             expires=int(time.time()) + 60)
    table.write_text(jwt.creds(token, seed))
    assert studroom("auth", "service-creds", "--auth-dir", auth, "--into", str(into)).returncode == 0
    renewed = jwt.creds_claims((into / table.name).read_text())
    assert renewed["exp"] > time.time() + 3600 and renewed["sub"] != claims["sub"]
    assert not [p for p in into.iterdir() if p.name.startswith(".")]
