"""The Authority's credentials end and can be revoked (no server: the JWTs' claims and the
account's revocation list; tests/services/auth/test_credentials_live.py runs them against
a real server)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from studroom.services.auth import jwt, terms
from studroom.services.auth.authority import Authority, UnknownIdentity


def _claims(path: Path) -> dict:
    return jwt.creds_claims(path.read_text())


def _revoked(authority: Authority) -> dict[str, int]:
    return jwt.claims(authority.account_jwt())["nats"].get("revocations", {})


@pytest.mark.parametrize("role, name", [("player", "alice"), ("operator", "floor"), ("spectator", "public"),
                                        ("service", "table")])
def test_every_identity_carries_its_roles_limits_and_expiry(tmp_path: Path, role: str, name: str) -> None:
    before = int(time.time())
    claims = _claims(Authority(tmp_path).issue(role, name))
    agreed = terms.of(role)
    assert {key: claims["nats"][key] for key in ("subs", "data", "payload")} == agreed.limits()
    assert before + agreed.lifetime <= claims["exp"] <= int(time.time()) + agreed.lifetime


def test_the_figures_are_what_the_roles_need() -> None:
    player, operator, spectator, service = (terms.of(r) for r in ("player", "operator", "spectator", "service"))
    assert 100 <= player.subs <= 1000 and player.payload >= 2 * 8192           # hundreds; a request and headers
    assert operator.lifetime <= player.lifetime and service.lifetime < player.lifetime
    assert spectator.payload < player.payload and service.subs > player.subs


def test_the_account_caps_its_connections(tmp_path: Path) -> None:
    limits = jwt.claims(Authority(tmp_path).account_jwt())["nats"]["limits"]
    assert limits["conn"] == terms.ACCOUNT_CONNECTIONS > 0


def test_ensure_keeps_current_credentials_and_renews_them_past_half_their_life(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    path = authority.ensure("service", "relay")
    first = _claims(path)
    assert _claims(authority.ensure("service", "relay"))["jti"] == first["jti"]
    # The same identity's file, as if issued 13 hours ago (a day's lifetime: past half).
    token, seed = authority.user("service.relay", publish=first["nats"]["pub"]["allow"],
                                 subscribe=first["nats"]["sub"]["allow"], limits=terms.of("service").limits(),
                                 expires=int(time.time()) + 11 * terms.HOUR)
    path.write_text(jwt.creds(token, seed))
    renewed = _claims(authority.ensure("service", "relay"))
    assert renewed["sub"] != jwt.claims(token)["sub"] and renewed["exp"] > jwt.claims(token)["exp"]


def test_credentials_from_before_expiry_are_renewed_and_stay_revocable(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    old, seed = authority.user("player.bob", publish=[], subscribe=[])       # no limits, no exp
    authority.creds_dir.mkdir(parents=True)
    authority.creds_path("player", "bob").write_text(jwt.creds(old, seed))
    assert "exp" in _claims(authority.ensure("player", "bob"))
    assert authority.revoke("player", "bob") == 2
    assert jwt.claims(old)["sub"] in _revoked(authority)


def test_revoke_lists_every_key_of_the_identity_and_a_new_add_works(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    keys = {_claims(authority.issue("player", "mallory"))["sub"] for _ in range(2)}   # re-issued: both valid
    other = _claims(authority.issue("player", "alice"))["sub"]
    assert authority.revoke("player", "mallory") == 2
    revoked = _revoked(authority)
    assert set(revoked) == keys and all(at <= time.time() for at in revoked.values())
    assert not authority.creds_path("player", "mallory").exists()
    fresh = _claims(authority.ensure("player", "mallory"))["sub"]
    assert fresh not in revoked and other not in revoked
    assert set(_revoked(Authority(tmp_path))) == keys                          # recorded, not in memory only
    preloaded = authority.server_config()["resolver_preload"][authority.account]
    assert set(jwt.claims(preloaded)["nats"]["revocations"]) == keys            # what a (re)started server reads


def test_revoking_someone_never_issued_is_a_clear_error(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    authority.issue("player", "alice")
    with pytest.raises(UnknownIdentity, match="no player 'nobody'"):
        authority.revoke("player", "nobody")
    with pytest.raises(UnknownIdentity, match="no operator 'alice'"):
        authority.revoke("operator", "alice")
    assert _revoked(authority) == {}


def test_a_revocation_outlives_no_jwt(tmp_path: Path) -> None:
    """The list stays short: an entry is dropped once every JWT of its key has expired."""
    authority = Authority(tmp_path)
    authority.issue("player", "carol")
    authority.revoke("player", "carol")
    keys = json.loads(authority.keys_path.read_text())
    for entry in keys["revoked"].values():
        entry["exp"] = int(time.time()) - 1
    authority.keys_path.write_text(json.dumps(keys))
    assert _revoked(authority) == {}


def test_secrets_are_written_whole_and_private(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    path = authority.issue("player", "dave")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert not [p for p in authority.creds_dir.iterdir() if p.name.startswith(".")]   # no temporary left
    assert authority.folder.stat().st_mode & 0o077 == 0


def test_the_system_users_are_the_system_accounts_with_their_tasks_powers_only(tmp_path: Path) -> None:
    authority = Authority(tmp_path)
    system = jwt.public_key(authority.system_seed)
    pusher, warden = _claims(authority.pusher()), _claims(authority.warden())
    assert pusher["iss"] == warden["iss"] == system
    assert pusher["nats"]["pub"]["allow"] == [f"$SYS.REQ.ACCOUNT.{authority.account}.CLAIMS.UPDATE"]
    assert set(warden["nats"]["pub"]["allow"]) == {"$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.SERVER.*.KICK"}
    assert _claims(authority.warden())["jti"] == warden["jti"]                 # renewed like a service's
    assert terms.of("player").connections == 5 and terms.of("spectator").connections is None
