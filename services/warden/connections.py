"""Each user's connections capped per role, which NATS itself cannot do.

nats-server counts connections per account only (docs/design/trust.md, "Quotas").  The
warden, a system-account user, follows the account's connect and disconnect events
(``$SYS.ACCOUNT.<account>.CONNECT|DISCONNECT``, every server of a cluster sends them),
counts each identity's connections (the name in the connection's JWT, ``role.name``)
and closes each one beyond its role's cap (``terms.Terms.connections``) with the
server's kick (``$SYS.REQ.SERVER.<server>.KICK``).  At its start, after each of its
own reconnections and every minute it counts anew from the servers' lists of
connections (``$SYS.REQ.SERVER.PING.CONNZ``): events missed meanwhile (a server that
died sends no disconnects) would otherwise leave connections counted that are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import nats.errors

from ..auth import jwt, terms

log = logging.getLogger(__name__)

ANSWERS_WAIT = 1.0            # seconds to collect every server's list of connections
RECOUNT_EVERY = 60.0          # seconds between counts from the servers' lists
KICK_WAIT = 5.0               # seconds for a server to answer a kick
Connection = tuple[str, int]  # (server id, client id)


class Warden:
    def __init__(self, nc: Any, account: str) -> None:
        self.nc, self.account = nc, account
        self.held: dict[str, set[Connection]] = defaultdict(set)     # identity -> its connections
        self.kicked = 0
        self._said: dict[str, float] = {}                             # identity -> when last logged

    async def start(self) -> None:
        for event, handle in (("CONNECT", self._connected), ("DISCONNECT", self._disconnected)):
            await self.nc.subscribe(f"$SYS.ACCOUNT.{self.account}.{event}", cb=handle)
        await self.recount()

    async def recount(self) -> None:
        """Count every identity's connections anew from the servers' lists; kick those
        beyond the caps."""
        inbox = self.nc.new_inbox()
        answers = await self.nc.subscribe(inbox)
        request = {"account": self.account, "auth": True, "limit": terms.ACCOUNT_CONNECTIONS}
        listed: list[tuple[str, Connection]] = []
        await self.nc.publish("$SYS.REQ.SERVER.PING.CONNZ", json.dumps(request).encode(), reply=inbox)
        try:
            while True:
                answer = json.loads((await answers.next_msg(timeout=ANSWERS_WAIT)).data)
                server = answer["server"]["id"]
                listed += [(_identity(info["jwt"]), (server, info["cid"]))
                           for info in answer.get("data", {}).get("connections") or []
                           if info.get("account") == self.account and info.get("jwt")]
        except TimeoutError:
            pass
        finally:
            await answers.unsubscribe()
        self.held = defaultdict(set)
        for identity, connection in sorted(listed, key=lambda held: held[1][1]):     # the oldest first
            await self._held(identity, connection)

    async def _connected(self, msg: Any) -> None:
        event = json.loads(msg.data)
        client = event["client"]
        if client.get("jwt"):
            await self._held(_identity(client["jwt"]), (event["server"]["id"], client["id"]))

    async def _disconnected(self, msg: Any) -> None:
        event = json.loads(msg.data)
        client = event["client"]
        if client.get("jwt"):
            identity = _identity(client["jwt"])
            self.held[identity].discard((event["server"]["id"], client["id"]))
            if not self.held[identity]:
                del self.held[identity]

    async def _held(self, identity: str, connection: Connection) -> None:
        """Count ``connection`` of ``identity``, or kick it if it is one beyond the cap."""
        cap = _cap(identity)
        held = self.held[identity]
        held.add(connection)
        if cap is None or len(held) <= cap:
            return
        held.discard(connection)
        self.kicked += 1
        if time.monotonic() - self._said.get(identity, -RECOUNT_EVERY) >= RECOUNT_EVERY:
            self._said[identity] = time.monotonic()                   # once a minute per identity
            log.warning("%s: more than %d connections: closing the newest (server %s, client %d)",
                        identity, cap, *connection)
        try:                              # a request: the server carries out only a kick it can answer
            await self.nc.request(f"$SYS.REQ.SERVER.{connection[0]}.KICK", json.dumps({"cid": connection[1]}).encode(),
                                  timeout=KICK_WAIT)
        except (TimeoutError, nats.errors.Error) as e:        # that server is gone: so is the connection
            log.warning("%s: the kick of client %d found no server %s: %s", identity, connection[1], connection[0], e)


def _identity(token: str) -> str:
    """``role.name`` of a connection's user JWT (the server checked it)."""
    return str(jwt.claims(token)["name"])


def _cap(identity: str) -> int | None:
    role = identity.partition(".")[0]
    try:
        return terms.of(role).connections
    except ValueError:
        return None


@contextlib.asynccontextmanager
async def watching(servers: str, authority: Any) -> AsyncIterator[Warden]:
    """A warden on ``servers`` for ``authority``'s account while the block runs (the
    embedded room's, ``services/room/room.py``; a deploy runs ``studroom auth warden``)."""
    from ..runtime.processes import process

    warden: Warden | None = None

    async def reconnected() -> None:
        if warden is not None:
            await warden.recount()

    nc = await process.connect(servers, "studroom-warden", creds=authority.warden(), reconnected_cb=reconnected)
    try:
        warden = Warden(nc, authority.account)
        await warden.start()
        recounting = asyncio.create_task(_recount_every(warden))
        try:
            yield warden
        finally:
            recounting.cancel()
    finally:
        await nc.close()


async def _recount_every(warden: Warden) -> None:
    while True:
        await asyncio.sleep(RECOUNT_EVERY)
        with contextlib.suppress(TimeoutError, nats.errors.Error):
            await warden.recount()
