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
