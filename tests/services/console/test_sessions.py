"""A session's credentials (Authority.session_user): the role's powers and terms, the
session's lifetime at most the role's, in memory only, revocable as any key issued."""

from __future__ import annotations

import time
from pathlib import Path

from studroom.services.auth import jwt, powers, terms
from studroom.services.auth.authority import Authority


def test_session_credentials_have_the_roles_powers_live_in_memory_and_are_revocable(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    token, seed, expires = authority.session_user("player", "alice", 3600)
    claims = jwt.claims(token)
    granted = powers.of("player", "alice")
    assert claims["name"] == "player.alice" and claims["sub"] == jwt.public_key(seed)
    assert claims["nats"]["pub"]["allow"] == granted.publish and claims["nats"]["sub"]["allow"] == granted.subscribe
    assert claims["nats"]["subs"] == terms.of("player").subs
    assert claims["exp"] == expires and 3590 <= expires - time.time() <= 3600
    assert not authority.creds_path("player", "alice").exists()           # nothing on disk but the key's id
    assert authority.revoke("player", "alice") == 1
    assert claims["sub"] in authority.revocations()


def test_a_session_lasts_at_most_its_roles_lifetime(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    _, _, expires = authority.session_user("operator", "boss", 30 * 24 * 3600)
    assert expires - time.time() <= terms.of("operator").lifetime


def test_expired_sessions_and_idle_spectators_end_and_a_persons_link_closes_with_his_last() -> None:
    import asyncio

    from studroom.services.console import sessions as module
    from studroom.services.console.sessions import Sessions

    class FakeLink:
        def __init__(self, role: str, name: str, expires: float) -> None:
            self.role, self.name, self.expires = role, name, expires
            self.sessions, self.on_end, self.closed = set(), [], False
            self.ended = asyncio.Event()

        identity = property(lambda self: (self.role, self.name))

        async def close(self) -> None:
            self.closed = True
            self.ended.set()

    async def scenario() -> None:
        made: list[FakeLink] = []

        async def connect(role: str, name: str) -> FakeLink:
            made.append(FakeLink(role, name, time.time() + 3600))
            return made[-1]

        sessions = Sessions(connect, FakeLink("spectator", "public", float("inf")))  # type: ignore[arg-type]
        one, two = await sessions.login("player", "alice"), await sessions.login("player", "alice")
        assert len(made) == 1 and one.link is two.link and one.token != two.token
        watcher, idle = sessions.spectate(), sessions.spectate()
        watcher.tabs.add(object())                               # a tab open: not idle
        idle.seen -= module.SPECTATOR_IDLE + 1
        watcher.seen -= module.SPECTATOR_IDLE + 1
        one.expires = time.time() - 1
        await sessions.sweep()
        assert sessions.get(one.token) is None and sessions.get(idle.token) is None
        assert sessions.get(two.token) is two and sessions.get(watcher.token) is watcher
        assert not made[0].closed                                # his other session holds it
        await sessions.logout(two)
        assert made[0].closed and ("player", "alice") not in sessions.links
        assert not sessions.spectators.closed                    # the spectators' link stays

    asyncio.run(scenario())
