"""The room's keys: one NATS operator, its accounts, and the users it issues.

An :class:`Authority` lives in a folder only the room's administrator may read
(``<data dir>/auth`` for the embedded room)::

    operator.nk, account.nk, system.nk   the nkey seeds (secret)
    operator.jwt                          the operator's JWT, kept (a server reloads only the same)
    creds/<role>.<name>.creds             one credentials file per identity (secret)
    keys.json                             every user key issued and not yet expired, by
                                          identity, and the revoked ones (no secret)

From it come the NATS server's trust settings (:meth:`Authority.server_config`: the
operator JWT, the system account and the accounts, preloaded, the account's revocation
list included; operator mode accepts no connection without credentials) and new
identities (:meth:`Authority.issue`), which need no change on the server: the server
trusts what the account key signed, until the JWT's expiry or a revocation
(:meth:`Authority.revoke`, pushed to running servers by :mod:`.revocation`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..runtime.files import write_atomically
from ..wire import subjects
from . import jwt, powers, terms

AUTH_FOLDER = "auth"                  # the room's Authority, inside its data folder
ACCOUNT = "STUDROOM"
SYSTEM_ACCOUNT = "SYS"
OPERATOR = "studroom"
SYSTEM = "system"                     # the role part of the names of the system account's users


class UnknownIdentity(LookupError):
    """Revoking an identity the Authority never issued (or whose credentials all expired)."""


def _write_secret(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (mode 0600) at once: a reader sees the old file or the new one."""
    write_atomically(path, text.encode())


class Authority:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.creds_dir = self.folder / "creds"
        self.keys_path = self.folder / "keys.json"
        self.operator_seed = self._seed("operator", "operator")
        self.account_seed = self._seed("account", "account")
        self.system_seed = self._seed("system", "account")

    def _seed(self, name: str, kind: str) -> bytes:
        path = self.folder / f"{name}.nk"
        if not path.exists():
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            _write_secret(path, jwt.new_seed(kind).decode() + "\n")
        return path.read_text().strip().encode()

    @property
    def account(self) -> str:
        return jwt.public_key(self.account_seed)

    def account_jwt(self, partitions: int = subjects.PARTITIONS) -> str:
        """The room's account: JetStream, the command subject mappings, the connection
        cap and the revocation list as they are now."""
        return jwt.account_jwt(self.operator_seed, self.account_seed, ACCOUNT, jetstream=True,
                               mappings=subjects.role_command_mapping(partitions),
                               connections=terms.ACCOUNT_CONNECTIONS, revocations=self.revocations())

    def operator_jwt(self) -> str:
        """The operator's JWT, made once and kept (``operator.jwt``): a server refuses to
        reload a configuration whose trusted operator changed, even only its issue time."""
        path = self.folder / "operator.jwt"
        if not path.exists():
            _write_secret(path, jwt.operator_jwt(self.operator_seed, OPERATOR, jwt.public_key(self.system_seed)))
        return path.read_text().strip()

    def server_config(self, partitions: int = subjects.PARTITIONS) -> dict[str, Any]:
        """The trust part of a nats-server configuration (JSON-compatible)."""
        system = jwt.public_key(self.system_seed)
        return {
            "operator": self.operator_jwt(),
            "system_account": system,
            "resolver": "MEMORY",
            "resolver_preload": {
                system: jwt.account_jwt(self.operator_seed, self.system_seed, SYSTEM_ACCOUNT, jetstream=False),
                self.account: self.account_jwt(partitions),
            },
        }

    def creds_path(self, role: str, name: str) -> Path:
        return self.creds_dir / f"{role}.{subjects.check_name(name)}.creds"

    def issue(self, role: str, name: str) -> Path:
        """Credentials for ``name`` with the powers and terms of ``role``, valid for the
        role's lifetime from now (written again if they exist: the old file stays valid
        too, until it expires or the identity is revoked)."""
        token, user_seed, expires = self._role_user(role, name, terms.of(role).lifetime)
        self.creds_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.creds_path(role, name)
        with self._keys() as keys:
            issued = keys["issued"].setdefault(f"{role}.{name}", {})
            if path.exists():                     # the file it replaces (an old one without exp too)
                old = jwt.creds_claims(path.read_text())
                issued.setdefault(old["sub"], old.get("exp"))
            issued[jwt.claims(token)["sub"]] = expires
            _write_secret(path, jwt.creds(token, user_seed))
        return path

    def session_user(self, role: str, name: str, lifetime: int) -> tuple[str, bytes, int]:
        """Credentials of ``name`` with ``role``'s powers and terms, valid ``lifetime``
        seconds (at most the role's), in memory only (the console's connection of a
        logged-in person): its JWT, nkey seed and expiry.  Its key is recorded like any
        issued one, so :meth:`revoke` revokes it too."""
        token, user_seed, expires = self._role_user(role, name, lifetime)
        with self._keys() as keys:
            keys["issued"].setdefault(f"{role}.{name}", {})[jwt.claims(token)["sub"]] = expires
        return token, user_seed, expires

    def _role_user(self, role: str, name: str, lifetime: int) -> tuple[str, bytes, int]:
        """A user ``<role>.<name>`` with the role's powers and terms, valid ``lifetime``
        seconds from now (at most the role's): its JWT, nkey seed and expiry."""
        granted, agreed = self._powers(role, name), terms.of(role)
        expires = int(time.time()) + min(lifetime, agreed.lifetime)
        token, user_seed = self.user(f"{role}.{subjects.check_name(name)}", publish=granted.publish,
                                     subscribe=granted.subscribe, deny_publish=granted.deny_publish,
                                     limits=agreed.limits(), expires=expires,
                                     account_seed=self.system_seed if role == SYSTEM else None)
        return token, user_seed, expires

    def user(self, name: str, *, publish: list[str], subscribe: list[str], deny_publish: list[str] | None = None,
             limits: dict[str, int] | None = None, expires: int | None = None,
             account_seed: bytes | None = None) -> tuple[str, bytes]:
        """A new user of the account (or of the one whose seed is given), in memory only:
        its JWT and its nkey seed."""
        user_seed = jwt.new_seed("user")
        token = jwt.user_jwt(account_seed or self.account_seed, user_seed, name, publish=publish,
                             subscribe=subscribe, deny_publish=deny_publish, limits=limits, expires=expires)
        return token, user_seed

    def ensure(self, role: str, name: str) -> Path:
        """The identity's credentials, issued on first use, and again when its role's
        powers or terms have changed since (a room's data folder outlives a version) or
        when less than half of their lifetime is left (renewal: :mod:`..runtime.processes.credentials`)."""
        path = self.creds_path(role, name)
        if path.exists() and _current(path.read_text(), self._powers(role, name), terms.of(role)):
            return path
        return self.issue(role, name)

    def revoke(self, role: str, name: str) -> int:
        """Revoke every unexpired key ever issued to the identity, at once: the account's
        revocation list names them (:meth:`account_jwt`; push it to running servers with
        :func:`.revocation.push`), and its credentials file is removed so that
        :meth:`ensure` and ``add`` issue a new key.  The number of keys revoked."""
        identity = f"{role}.{subjects.check_name(name)}"
        path = self.creds_path(role, name)
        with self._keys() as keys:
            issued = keys["issued"].pop(identity, {})
            if path.exists():
                old = jwt.creds_claims(path.read_text())
                issued.setdefault(old["sub"], old.get("exp"))
            if not issued:
                raise UnknownIdentity(f"no {role} {name!r} in the Authority at {self.folder}")
            now = int(time.time())
            for key, expires in issued.items():
                keys["revoked"][key] = {"at": now, "exp": expires}
            path.unlink(missing_ok=True)
        return len(issued)

    def revocations(self) -> dict[str, int]:
        """The account's revocation list: each revoked, unexpired key and when it was revoked."""
        with self._keys(write=False) as keys:
            return {key: entry["at"] for key, entry in keys["revoked"].items()}

    def pusher(self) -> Path:
        """Credentials of a system-account user that may push this account's updated JWT
        to the servers (:mod:`.revocation`), nothing else; issued anew each time."""
        return self.issue(SYSTEM, "pusher")

    def warden(self) -> Path:
        """Credentials of the system-account user that caps each identity's connections
        (:mod:`.warden`); renewed like a service's."""
        return self.ensure(SYSTEM, "warden")

    def _powers(self, role: str, name: str) -> powers.Powers:
        """What ``name`` of ``role`` may do: the room's roles (:mod:`.powers`), or one of
        the system account's own users, each with exactly its task's subjects."""
        if role != SYSTEM:
            return powers.of(role, name)
        inbox = [subjects.inbox_prefix(SYSTEM, name) + ".>"]
        if name == "pusher":
            return powers.Powers(publish=[f"$SYS.REQ.ACCOUNT.{self.account}.CLAIMS.UPDATE"], subscribe=inbox)
        if name == "warden":
            return powers.Powers(publish=["$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.SERVER.*.KICK"],
                                 subscribe=[f"$SYS.ACCOUNT.{self.account}.CONNECT",
                                            f"$SYS.ACCOUNT.{self.account}.DISCONNECT", *inbox])
        raise ValueError(f"no system user {name!r}")

    @contextlib.contextmanager
    def _keys(self, *, write: bool = True) -> Iterator[dict[str, Any]]:
        """keys.json under an exclusive lock (the room's processes issue at the same
        time), without the entries that expired (a revocation outlives no JWT)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with (self.folder / "keys.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            keys = json.loads(self.keys_path.read_text()) if self.keys_path.exists() else {}
            now = int(time.time())
            keys = {"issued": {identity: live for identity, held in keys.get("issued", {}).items()
                               if (live := {k: e for k, e in held.items() if e is None or e > now})},
                    "revoked": {k: entry for k, entry in keys.get("revoked", {}).items()
                                if entry["exp"] is None or entry["exp"] > now}}
            yield keys
            if write:
                _write_secret(self.keys_path, json.dumps(keys, indent=1, sort_keys=True) + "\n")


def _current(creds_text: str, granted: powers.Powers, agreed: terms.Terms) -> bool:
    """Whether a credentials file's JWT has these powers and terms, with more than half
    of its lifetime left."""
    claims = jwt.creds_claims(creds_text)
    nats = claims["nats"]
    pub = nats["pub"]
    held = powers.Powers(publish=pub.get("allow", []), subscribe=nats["sub"].get("allow", []),
                         deny_publish=pub.get("deny", []) if pub.get("allow") else [])
    limits = {key: nats.get(key) for key in agreed.limits()}
    expires = claims.get("exp")
    return (held == granted and limits == agreed.limits() and expires is not None
            and expires - time.time() > agreed.lifetime / 2)


def room_authority(data_dir: Path) -> Authority:
    """The Authority of the room whose data folder is ``data_dir`` (``<data dir>/auth``)."""
    return Authority(Path(data_dir) / AUTH_FOLDER)


def identity_of(creds_file: Path) -> tuple[str, str]:
    """(role, name) of the user in a credentials file (its JWT's name, ``role.name``)."""
    role, _, name = jwt.creds_name(Path(creds_file).read_text()).partition(".")
    return role, name
