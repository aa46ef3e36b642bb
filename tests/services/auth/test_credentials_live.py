"""Quotas in the JWTs, credentials that end and revocation, against the session's secure
NATS server (operator mode, as the room runs it): the N+1st subscription, an oversize
message and the connection beyond the account's cap are refused; a connection renews
its credentials across their end; a revoked player is disconnected at once, refused on
reconnect, and his commands never reach the table's subject; a new ``add`` works."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from studroom.services.auth import jwt, terms
from studroom.services.warden import revocation
from studroom.services.auth.authority import Authority
from studroom.services.runtime.processes import process
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.wire import event_messages, subjects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


class Watched:
    """A connection's errors and whether it was closed, as its callbacks said."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.closed = asyncio.Event()

    def options(self) -> dict[str, Any]:
        async def error(e: Exception) -> None:
            self.errors.append(str(e))

        async def closed() -> None:
            self.closed.set()

        return {"error_cb": error, "closed_cb": closed}


async def _until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_the_subscription_beyond_a_players_limit_is_refused(connect_as: Any) -> None:
    limit = terms.of("player").subs

    async def scenario() -> None:
        watched = Watched()
        nc = await connect_as("player", "subscriber", **watched.options())
        for k in range(limit):
            await nc.subscribe(subjects.public_events(f"t{k}"))
        await nc.flush()
        assert nc.is_connected and not watched.errors                   # all of his allowance
        await nc.subscribe(subjects.public_events("one-more"))
        await asyncio.wait_for(watched.closed.wait(), 5)
        assert "maximum subscriptions exceeded" in str(nc.last_error)      # nats-py closes on the server's -ERR

    asyncio.run(scenario())


def test_a_message_larger_than_the_roles_payload_closes_the_connection(connect_as: Any) -> None:
    async def scenario() -> None:
        table = await connect_as("service", "table-door")      # where the table service takes commands
        seen: list[int] = []

        async def command(msg: Any) -> None:
            seen.append(len(msg.data))

        await table.subscribe(f"{subjects.PREFIX}.pcmd.>", cb=command)
        await table.flush()
        watched = Watched()
        nc = await connect_as("player", "big", **watched.options(), max_reconnect_attempts=0)
        command = subjects.command_from("player", "big", "t1")
        await nc.publish(command, b"x" * 100)
        await nc.flush()
        await nc.publish(command, b"x" * (terms.of("player").payload + 1))
        await asyncio.wait_for(watched.closed.wait(), 5)
        assert "maximum payload" in str(nc.last_error).lower() or isinstance(nc.last_error, OSError), nc.last_error
        await asyncio.sleep(0.2)
        assert seen == [100]                                       # the large one reached nobody
        await table.close()

    asyncio.run(scenario())


def test_the_connection_beyond_the_accounts_cap_is_refused(private_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The account's ``conn`` claim, enforced: the cap made small for the test (the room's
    is terms.ACCOUNT_CONNECTIONS) on a server of the test's own."""
    monkeypatch.setattr(terms, "ACCOUNT_CONNECTIONS", 3)

    async def scenario(server: EmbeddedNats) -> None:
        assert server.authority is not None
        creds = server.authority.ensure("player", "many")
        held = [await nats.connect(server.url, user_credentials=str(creds)) for _ in range(3)]
        with pytest.raises(nats.errors.Error, match="maximum account active connections exceeded"):
            await nats.connect(server.url, user_credentials=str(creds), allow_reconnect=False, connect_timeout=2)
        await held.pop().close()
        held.append(await nats.connect(server.url, user_credentials=str(creds)))  # room again below the cap
        for nc in held:
            await nc.close()

    with EmbeddedNats(private_dir) as server:
        asyncio.run(scenario(server))


def _short_lived(authority: Authority, name: str, seconds: int) -> Path:
    """A player's credentials file in the Authority, as issued but ending in ``seconds``."""
    granted = authority.issue("player", name)
    claims = jwt.creds_claims(granted.read_text())["nats"]
    token, seed = authority.user(f"player.{name}", publish=claims["pub"]["allow"], subscribe=claims["sub"]["allow"],
                                 limits=terms.of("player").limits(), expires=int(time.time()) + seconds)
    granted.write_text(jwt.creds(token, seed))
    return granted


def test_credentials_end_and_a_connection_renews_them_before(secure_nats_url: str, authority: Authority,
                                                               connect_as: Any) -> None:
    """nats-py reads the creds file at every connection but does not reconnect after the
    server ended his JWT: without renewal the connection is closed at the expiry; with it
    (``process.connect`` follows the file) it reconnects with the renewed file before."""

    async def scenario() -> None:
        plain = Watched()
        unrenewed = await nats.connect(secure_nats_url, user_credentials=str(_short_lived(authority, "ending", 3)),
                                       **plain.options())
        renewing = await process.connect(secure_nats_url, "test-renewal",
                                         creds=_short_lived(authority, "renewing", 3))
        published = await connect_as("service", "relay")
        got: list[bytes] = []

        async def received(msg: Any) -> None:
            got.append(msg.data)

        await renewing.subscribe(subjects.public_events("renewal"), cb=received)
        await renewing.flush()
        await asyncio.wait_for(plain.closed.wait(), 6)               # the server ended it at its expiry
        assert "expired" in str(unrenewed.last_error).lower()
        await asyncio.sleep(4 - (time.time() % 1))                   # well past the first JWT's end
        assert renewing.is_connected
        creds = jwt.creds_claims(authority.creds_path("player", "renewing").read_text())
        assert creds["exp"] - time.time() > terms.of("player").lifetime / 2      # renewed for a full lifetime
        await published.publish(subjects.public_message("renewal", event_messages.PLAIN), b"still here")
        await _until(lambda: got == [b"still here"])                 # its subscription came along
        for nc in (unrenewed, renewing, published):
            await nc.close()

    asyncio.run(scenario())


def test_a_revoked_player_is_disconnected_refused_and_his_commands_reach_no_table(
        secure_nats_url: str, authority: Authority, connect_as: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await connect_as("service", "table-door")      # where the table service takes commands
        reached: list[str] = []

        async def command(msg: Any) -> None:
            reached.append(msg.subject)

        await table.subscribe(f"{subjects.PREFIX}.pcmd.>", cb=command)
        await table.flush()
        creds = authority.issue("player", "mallory")
        kept = tmp_path / "mallory.creds"                              # the copy he keeps
        kept.write_text(creds.read_text())
        watched = Watched()
        mallory = await nats.connect(secure_nats_url, user_credentials=str(kept), **watched.options())
        await mallory.publish(subjects.command_from("player", "mallory", "t1"), b"{}")
        await mallory.flush()
        await _until(lambda: len(reached) == 1)

        assert authority.revoke("player", "mallory") == 1
        assert await revocation.push(authority, secure_nats_url) == 1      # one server, which updated it
        await asyncio.wait_for(watched.closed.wait(), 5)                    # disconnected at once
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(secure_nats_url, user_credentials=str(kept), allow_reconnect=False, connect_timeout=2)
        await asyncio.sleep(0.2)
        assert len(reached) == 1

        again = await connect_as("player", "mallory")                      # a later add: new, working credentials
        await again.publish(subjects.command_from("player", "mallory", "t1"), b"{}")
        await again.flush()
        await _until(lambda: len(reached) == 2)
        for nc in (again, table):
            await nc.close()

    asyncio.run(scenario())
