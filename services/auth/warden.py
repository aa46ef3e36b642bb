"""Each user's connections capped per role, which NATS itself cannot do.

nats-server counts connections per account only (docs/design/trust.md, "Quotas").  The
warden, a system-account user, follows the account's connect and disconnect events
(``$SYS.ACCOUNT.<account>.CONNECT|DISCONNECT``, every server of a cluster sends them),
counts each identity's connections (the name in the connection's JWT, ``role.name``)
and closes each one beyond its role's cap (``terms.Terms.connections``) with the
server's kick (``$SYS.REQ.SERVER.<server>.KICK``).  At its start it reads the
connections already there (``$SYS.REQ.SERVER.PING.CONNZ``).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import nats.errors

from . import jwt, terms

log = logging.getLogger(__name__)

ANSWERS_WAIT = 1.0            # seconds to collect every server's list of connections
KICK_WAIT = 5.0               # seconds for a server to answer a kick
Connection = tuple[str, int]  # (server id, client id)


class Warden:
    def __init__(self, nc: Any, account: str) -> None:
        self.nc, self.account = nc, account
        self.held: dict[str, set[Connection]] = defaultdict(set)     # identity -> its connections
        self.kicked = 0

    async def start(self) -> None:
        for event, handle in (("CONNECT", self._connected), ("DISCONNECT", self._disconnected)):
            await self.nc.subscribe(f"$SYS.ACCOUNT.{self.account}.{event}", cb=handle)
        await self._read_existing()

    async def _read_existing(self) -> None:
        inbox = self.nc.new_inbox()
        answers = await self.nc.subscribe(inbox)
        request = {"account": self.account, "auth": True, "limit": terms.ACCOUNT_CONNECTIONS}
        await self.nc.publish("$SYS.REQ.SERVER.PING.CONNZ", json.dumps(request).encode(), reply=inbox)
        try:
            while True:
                msg = await answers.next_msg(timeout=ANSWERS_WAIT)
                answer = json.loads(msg.data)
                server = answer["server"]["id"]
                for info in answer.get("data", {}).get("connections") or []:
                    if info.get("account") == self.account and info.get("jwt"):
                        await self._held(_identity(info["jwt"]), (server, info["cid"]))
        except TimeoutError:
            pass
        finally:
            await answers.unsubscribe()

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
    from ..runtime import process

    nc = await process.connect(servers, "studroom-warden", creds=authority.warden())
    try:
        warden = Warden(nc, authority.account)
        await warden.start()
        yield warden
    finally:
        await nc.close()
