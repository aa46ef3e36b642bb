"""The warden caps each identity's connections, which NATS itself cannot (the account's
cap is shared by everyone): on the session's secure server, a player's connection beyond
his role's cap is closed by the server's kick, whether it came before the warden started
or after; the others stay."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nats
import pytest
from studroom.services.auth import terms
from studroom.services.auth.authority import Authority
from studroom.services.warden.connections import Warden
from studroom.services.runtime.processes import process

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def _until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_a_players_connection_beyond_his_cap_is_closed(secure_nats_url: str, authority: Authority) -> None:
    cap = terms.of("player").connections
    assert cap is not None
    creds = str(authority.ensure("player", "hoarder"))

    async def connection() -> Any:
        return await nats.connect(secure_nats_url, user_credentials=creds, allow_reconnect=False)

    async def scenario() -> None:
        before = [await connection() for _ in range(cap + 1)]         # one too many before the warden
        system = await process.connect(secure_nats_url, "test-warden", creds=authority.warden())
        warden = Warden(system, authority.account)
        await warden.start()
        await _until(lambda: sum(nc.is_connected for nc in before) == cap)
        assert warden.kicked == 1
        await before[0].close()                                       # room for one again
        await _until(lambda: len(warden.held["player.hoarder"]) == cap - 1)
        again = await connection()
        await asyncio.sleep(0.3)
        assert again.is_connected
        late = await connection()                                     # one too many after it started
        await _until(lambda: not late.is_connected)
        assert warden.kicked == 2 and again.is_connected
        others = await nats.connect(secure_nats_url, user_credentials=str(authority.ensure("player", "other")))
        await asyncio.sleep(0.3)
        assert others.is_connected                                    # the cap is his alone
        # Connections it missed the end of (a server that died says nothing) are
        # forgotten at the next count from the servers' lists.
        warden.held["player.other"] |= {("a-server-that-died", k) for k in range(cap)}
        await warden.recount()
        assert len(warden.held["player.other"]) == 1
        assert all(server != "a-server-that-died" for server, _ in warden.held["player.other"])
        assert others.is_connected and len(warden.held["player.hoarder"]) == cap
        for nc in [*before, again, late, others, system]:
            await nc.close()

    asyncio.run(scenario())
