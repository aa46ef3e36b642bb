"""The embedded (or configured) NATS and PostgreSQL servers really work."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import nats
import psycopg
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from studroom.services.runtime.processes import process
from studroom.services.runtime.processes.credentials import credentials
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats, nats_server_version
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.runtime.servers.server_process import RESERVED_PORTS, EmbeddedServerError
from studroom.services.runtime.servers.external_or_embedded import servers
from studroom.services.runtime.settings import DATA_DIR_VAR, DATABASE_URL_VAR, NATS_CREDS_VAR, NATS_URL_VAR, Settings
from studroom.services.wire import subjects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

# ADR-51 (JetStream message scheduler, nats-server 2.12+).
SCHEDULE = "Nats-Schedule"  # "@at <RFC 3339 time>"
SCHEDULE_TARGET = "Nats-Schedule-Target"  # subject the message is published to


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}".upper()


def _rfc3339(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def test_embedded_servers_use_free_ports(
    embedded_nats: EmbeddedNats | None, embedded_postgres: EmbeddedPostgres | None
) -> None:
    for server in (embedded_nats, embedded_postgres):
        if server is not None:
            assert server.port not in RESERVED_PORTS
            assert f":{server.port}" in server.url
            assert server.log_path.is_file()  # output goes to the data folder
    assert nats_server_version() >= (2, 12, 0)


def test_jetstream_durable_consumer_round_trip(nats_url: str) -> None:
    stream, durable = _name("rt"), "worker"
    subject = f"{stream.lower()}.events"

    async def scenario() -> None:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name=stream, subjects=[f"{stream.lower()}.>"]))
        try:
            for i in range(3):
                ack = await js.publish(
                    subject, f"m{i}".encode(), headers={"Nats-Msg-Id": f"s:{i}"}
                )
                assert ack.seq == i + 1
            again = await js.publish(subject, b"m0", headers={"Nats-Msg-Id": "s:0"})
            assert again.duplicate  # a relay restart never duplicates

            consumer = ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT)
            sub = await js.pull_subscribe(subject, durable=durable, config=consumer)
            msgs = await sub.fetch(3, timeout=5)
            assert [m.data for m in msgs] == [b"m0", b"m1", b"m2"]
            await msgs[0].ack_sync()
            await msgs[1].ack_sync()  # m2 is never acknowledged
            await nc.close()

            # A new connection binds the durable consumer: only m2 comes again.
            nc = await nats.connect(nats_url)
            js = nc.jetstream()
            await js.consumer_info(stream, durable)
            sub = await js.pull_subscribe_bind(durable, stream=stream)
            await js.publish(subject, b"m3", headers={"Nats-Msg-Id": "s:3"})
            info = await js.consumer_info(stream, durable)
            assert info.ack_floor.stream_seq == 2
            # m2 comes back after the ack wait (30s); take the new one first.
            msgs = await sub.fetch(1, timeout=5)
            assert msgs[0].data == b"m3"
            await msgs[0].ack_sync()
        finally:
            await js.delete_stream(stream)
            await nc.close()

    asyncio.run(scenario())


def test_message_schedule_fires_at_its_time(nats_url: str) -> None:
    """A durable timer: ``Nats-Schedule: @at <time>`` + ``Nats-Schedule-Target``
    on a stream with ``allow_msg_schedules``; publishing again on the schedule's
    subject replaces the pending schedule."""
    stream = _name("timers")
    prefix = stream.lower()
    schedule_subject = f"{prefix}.schedule.table-1"
    target = f"{prefix}.fired.table-1"

    async def scenario() -> None:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        info = await js.add_stream(
            StreamConfig(
                name=stream,
                subjects=[f"{prefix}.schedule.>", f"{prefix}.fired.>"],
                allow_msg_schedules=True,
            )
        )
        try:
            assert info.config.allow_msg_schedules is True
            sub = await js.pull_subscribe(f"{prefix}.fired.>", durable="timer")
            now = dt.datetime.now(dt.UTC)
            first, second = now + dt.timedelta(seconds=1), now + dt.timedelta(seconds=2)
            for body, at in ((b"turn 7", first), (b"turn 8", second)):
                await js.publish(
                    schedule_subject,
                    body,
                    headers={SCHEDULE: f"@at {_rfc3339(at)}", SCHEDULE_TARGET: target},
                )
            early = (second - dt.datetime.now(dt.UTC)).total_seconds() - 0.2
            with pytest.raises(nats.errors.TimeoutError):  # nothing before its time
                await sub.fetch(1, timeout=max(0.1, early))
            msgs = await sub.fetch(1, timeout=5)
            fired_at = dt.datetime.now(dt.UTC)
            assert msgs[0].subject == target
            assert msgs[0].data == b"turn 8"  # the replacement, not the first one
            assert msgs[0].headers is not None
            assert msgs[0].headers.get("Nats-Scheduler") == schedule_subject
            assert second - dt.timedelta(milliseconds=50) <= fired_at
            assert fired_at <= second + dt.timedelta(seconds=2)
            await msgs[0].ack_sync()
            with pytest.raises(nats.errors.TimeoutError):  # fired once
                await sub.fetch(1, timeout=1)
        finally:
            await js.delete_stream(stream)
            await nc.close()

    asyncio.run(scenario())


def test_postgres_query(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        assert conn.info.server_version >= 160000
        conn.execute("CREATE TEMP TABLE probe (id int PRIMARY KEY, label text)")
        conn.execute("INSERT INTO probe VALUES (1, 'seven card stud')")
        row = conn.execute("SELECT label FROM probe WHERE id = 1").fetchone()
        assert row == ("seven card stud",)


def test_nats_kill_and_restart_keeps_stream_and_identities(private_dir: Path) -> None:
    """Operator mode: the room's keys stay in the data folder, so after a crash and a
    new run the same account (and its streams) and the same credentials are trusted."""
    stream, subject = "KEEP", "studroom.pub.keep"
    server = EmbeddedNats(private_dir).start()
    assert server.authority is not None
    creds = server.authority.ensure("service", "relay")

    async def publish(url: str) -> None:
        nc = await process.connect(url, "test-publisher", creds=creds)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name=stream, subjects=[subject]))
        for i in range(5):
            await js.publish(subject, f"event {i}".encode())
        await nc.close()

    async def messages(url: str) -> list[bytes]:
        nc = await process.connect(url, "test-reader", creds=creds)
        js = nc.jetstream()
        info = await js.stream_info(stream)
        found = [
            (await js.get_msg(stream, seq)).data or b""
            for seq in range(info.state.first_seq, info.state.last_seq + 1)
        ]
        await nc.close()
        return found

    expected = [f"event {i}".encode() for i in range(5)]
    try:
        asyncio.run(publish(server.url))
        url, pid = server.url, server.pid
        server.kill()  # SIGKILL: no clean shutdown
        assert not server.is_running()
        server.start()
        assert server.url == url and server.pid != pid
        assert asyncio.run(messages(server.url)) == expected
        server.stop()
        # A new run on the same data folder: same data (and the same port if free).
        with EmbeddedNats(private_dir) as again:
            assert again.url == url
            assert asyncio.run(messages(again.url)) == expected
    finally:
        server.stop()


def test_an_identity_gets_replies_on_its_own_inbox(connect_as: Any) -> None:
    """process.connect with credentials: requests work under the permissions, whose
    only inbox for the player is ``_INBOX.player.<name>``."""

    async def scenario() -> tuple[bytes, str]:
        service = await connect_as("service", "table-door")   # the service's door serves commands
        player = await connect_as("player", "inbox-test")
        inboxes: list[str] = []

        async def answer(msg: Any) -> None:
            inboxes.append(msg.reply)
            await msg.respond(b"seen")

        await service.subscribe(subjects.commands_as("player", "inbox-test"), cb=answer)
        await service.flush()
        reply = await player.request(subjects.command_from("player", "inbox-test", "t1"), b"{}", timeout=5)
        await player.close()
        await service.close()
        return reply.data, inboxes[0]

    data, inbox = asyncio.run(scenario())
    assert data == b"seen"
    assert inbox.startswith(subjects.inbox_prefix("player", "inbox-test") + ".")


def test_a_monitored_server_counts_its_messages_and_a_room_server_serves_no_monitoring(private_dir: Path) -> None:
    """``bench room`` counts NATS messages per action from the server's ``/varz``; the
    room's own server opens no HTTP port."""
    with EmbeddedNats(private_dir / "bench", auth=False, monitor=True) as server:
        assert server.monitor_port not in RESERVED_PORTS | {server.port}

        async def publish(n: int) -> None:
            nc = await nats.connect(server.url)
            sub = await nc.subscribe("counted")
            for i in range(n):
                await nc.publish("counted", b"%d" % i)
            for _ in range(n):
                await sub.next_msg(timeout=5)
            await nc.close()

        before = server.counters()
        asyncio.run(publish(10))
        after = server.counters()
        assert after["in_msgs"] - before["in_msgs"] >= 10
        assert after["out_msgs"] - before["out_msgs"] >= 10
    with EmbeddedNats(private_dir / "room", auth=False) as server:
        assert "http" not in server.config_path.read_text()
        with pytest.raises(EmbeddedServerError, match="without monitoring"):
            server.counters()


def test_one_server_per_data_folder(private_dir: Path) -> None:
    with EmbeddedNats(private_dir), pytest.raises(EmbeddedServerError, match="another process"):
        EmbeddedNats(private_dir).start()


def test_servers_starts_only_what_is_not_configured(
    nats_url: str, database_url: str, private_dir: Path
) -> None:
    external = Settings(nats_url=nats_url, database_url=database_url, data_dir=private_dir)
    with servers(external) as urls:
        assert urls == (nats_url, database_url)
    assert not (private_dir / "nats").exists()

    half = Settings(nats_url=None, database_url=database_url, data_dir=private_dir)
    with servers(half) as (own_nats, db):
        assert db == database_url
        assert own_nats != nats_url
        assert (private_dir / "nats" / "nats.log").is_file()
        assert not (private_dir / "postgres").exists()

        async def ping() -> None:
            creds = credentials(half, "service", "table")
            assert creds is not None and creds.is_relative_to(private_dir / "auth")
            nc = await process.connect(own_nats, "test-ping", creds=creds)
            await nc.jetstream().account_info()
            await nc.close()

        asyncio.run(ping())


def test_postgres_restart_and_crash_keep_data(
    embedded_postgres: EmbeddedPostgres | None, private_dir: Path
) -> None:
    """The session's server (or, with an external one, a server of its own) comes
    back at the same URL with its data."""
    server = embedded_postgres or EmbeddedPostgres(private_dir).start()
    url = server.url
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('committed before the crash')")

    def notes() -> list[str]:
        with psycopg.connect(url) as conn:
            return [r[0] for r in conn.execute("SELECT note FROM kept").fetchall()]

    try:
        server.kill()
        server.start()
        assert server.url == url
        assert notes() == ["committed before the crash"]
        server.stop()
        # A new run on the same data folder (same port, since it is free).
        started = time.monotonic()
        with EmbeddedPostgres(server.data_dir) as again:
            assert time.monotonic() - started < 10  # no second initdb
            assert again.url == url
            assert notes() == ["committed before the crash"]
    finally:
        server.start()
        with psycopg.connect(url) as conn:
            conn.execute("DROP TABLE IF EXISTS kept")
        if server is not embedded_postgres:
            server.stop()


# ------------------------------------------------- PostgreSQL with a password


def _refused_without_the_password(server: EmbeddedPostgres) -> None:
    """Neither no password nor a wrong one gets in; the URL's does."""
    bare = f"postgresql://postgres@127.0.0.1:{server.port}/postgres"
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(bare, connect_timeout=5)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(bare, password="guessed", connect_timeout=5)
    with psycopg.connect(server.url_for("postgres"), connect_timeout=5) as conn:
        assert conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'postgres'"
                            ).fetchone()[0].startswith("SCRAM-SHA-256$")


def test_the_embedded_postgres_asks_every_connection_for_its_password(
        embedded_postgres: EmbeddedPostgres | None, private_dir: Path) -> None:
    server = embedded_postgres or EmbeddedPostgres(private_dir).start()
    try:
        password = server.password_path.read_text().strip()
        assert len(password) >= 40 and oct(server.password_path.stat().st_mode & 0o777) == "0o600"
        assert f":{password}@" in server.url and password not in repr(server)
        hba = [line.split() for line in (server.pgdata / "pg_hba.conf").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
        assert hba and all(line[-1] == "scram-sha-256" for line in hba), hba
        _refused_without_the_password(server)
        assert password not in server.log_path.read_text(errors="replace")
    finally:
        if server is not embedded_postgres:
            server.stop()


def test_a_data_folder_made_before_passwords_gets_one_at_its_next_start(private_dir: Path) -> None:
    """A cluster of the days of trust (no password, pg_hba trusting every local user)
    is given a password when the room starts on it again; its data stays."""
    with EmbeddedPostgres(private_dir) as server, psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('from the days of trust')")
        conn.execute("ALTER ROLE postgres PASSWORD NULL")
    (server.pgdata / "pg_hba.conf").write_text("host all all 127.0.0.1/32 trust\n")
    server.password_path.unlink()
    with EmbeddedPostgres(private_dir) as again:
        assert again.password_path.is_file()
        _refused_without_the_password(again)
        with psycopg.connect(again.url) as conn:
            assert conn.execute("SELECT note FROM kept").fetchall() == [("from the days of trust",)]
        assert again.password_path.read_text().strip() not in again.log_path.read_text(errors="replace")


def _studroom(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``studroom ARGS`` on the room's data in ``data_dir`` (its embedded servers)."""
    env = {k: v for k, v in os.environ.items() if k not in (NATS_URL_VAR, DATABASE_URL_VAR, NATS_CREDS_VAR)}
    return subprocess.run([sys.executable, "-m", "studroom.services.cli", *args], capture_output=True, text=True,
                          check=False, timeout=120, env={**env, DATA_DIR_VAR: str(data_dir)})


def test_the_rooms_tools_find_the_password_and_print_it_nowhere(private_dir: Path) -> None:
    """On a stopped room's data folder (the tools start its PostgreSQL) the books and
    the disputes; on a running one (they read its port and password) an error's
    --debug traceback: none of them prints the password."""
    server = EmbeddedPostgres(private_dir).start()
    password = server.password_path.read_text().strip()
    server.stop()
    said = []
    for args in (["ledger", "reconcile"], ["verify"]):
        done = _studroom(private_dir, *args)
        assert done.returncode == 0, f"studroom {' '.join(args)}: {done.stdout}{done.stderr}"
        said.append(done.stdout + done.stderr)
    with server:
        with psycopg.connect(server.url, autocommit=True) as conn:     # a history the tool cannot read
            conn.execute("CREATE SCHEMA studroom_history; CREATE TABLE studroom_history.hands (broken int)")
        failed = _studroom(private_dir, "history", "hands", "alice", "--debug")   # a traceback
        assert failed.returncode == 1 and "Traceback" in failed.stderr, failed.stderr
        said.append(failed.stdout + failed.stderr)
    assert not [text for text in said if password in text]
