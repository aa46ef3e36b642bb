"""Pushing the account's updated JWT (its revocation list) to running NATS servers.

The servers preload the accounts (``resolver: MEMORY``) and also take an account JWT
signed by the operator from a system-account user on ``$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE``:
every server of a cluster has that subscription, so one publish reaches them all, each
answers, and each closes the connections of the users the new list revokes.  The update
lives in the servers' memory: a server started later reads the list from its
configuration (``studroom auth server-config``, written anew at every start of the
embedded NATS), see docs/design/trust.md, "Credentials that end".
"""

from __future__ import annotations

import asyncio
import json

from ..auth.authority import Authority

ANSWERS_WAIT = 1.0        # seconds to collect the servers' answers after the first one


class PushRefused(RuntimeError):
    """A server answered the update with an error."""


async def push(authority: Authority, servers: str, *, timeout: float = 5.0) -> int:
    """Send the account's JWT as it is now to the servers at ``servers`` (one URL or
    several, comma separated; one is enough for a cluster): the number of servers that
    updated it.  Raises :class:`PushRefused` if one refused it, nats errors if none can be
    reached or none answers within ``timeout``."""
    from ..runtime.processes import process

    nc = await process.connect(servers, "studroom-revocation", creds=authority.pusher(), allow_reconnect=False,
                               max_reconnect_attempts=1, connect_timeout=timeout)
    try:
        answers: asyncio.Queue[bytes] = asyncio.Queue()
        inbox = nc.new_inbox()

        async def answered(msg: object) -> None:
            await answers.put(msg.data)  # type: ignore[attr-defined]

        await nc.subscribe(inbox, cb=answered)
        await nc.publish(f"$SYS.REQ.ACCOUNT.{authority.account}.CLAIMS.UPDATE", authority.account_jwt().encode(),
                         reply=inbox)
        received = [await asyncio.wait_for(answers.get(), timeout)]
        await asyncio.sleep(ANSWERS_WAIT)
        while not answers.empty():
            received.append(answers.get_nowait())
    finally:
        await nc.close()
    for answer in received:
        error = json.loads(answer).get("error")
        if error:
            raise PushRefused(f"a NATS server refused the account update: {error.get('description', error)}")
    return len(received)
