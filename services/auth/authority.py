"""The room's keys: one NATS operator, its accounts, and the users it issues.

An :class:`Authority` lives in a folder only the room's administrator may read
(``<data dir>/auth`` for the embedded room)::

    operator.nk, account.nk, system.nk   the nkey seeds (secret)
    creds/<role>.<name>.creds             one credentials file per identity (secret)

From it come the NATS server's trust settings (:meth:`Authority.server_config`: the
operator JWT, the system account and the accounts, preloaded; operator mode accepts
no connection without credentials) and new identities (:meth:`Authority.issue`),
which need no change on the server: the server trusts what the account key signed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..wire import subjects
from . import jwt, powers

AUTH_FOLDER = "auth"                  # the room's Authority, inside its data folder
ACCOUNT = "STUDROOM"
SYSTEM_ACCOUNT = "SYS"
OPERATOR = "studroom"


def _write_secret(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


class Authority:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.creds_dir = self.folder / "creds"
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

    def server_config(self, partitions: int = subjects.PARTITIONS) -> dict[str, Any]:
        """The trust part of a nats-server configuration (JSON-compatible)."""
        system = jwt.public_key(self.system_seed)
        return {
            "operator": jwt.operator_jwt(self.operator_seed, OPERATOR, system),
            "system_account": system,
            "resolver": "MEMORY",
            "resolver_preload": {
                system: jwt.account_jwt(self.operator_seed, self.system_seed, SYSTEM_ACCOUNT, jetstream=False),
                self.account: jwt.account_jwt(self.operator_seed, self.account_seed, ACCOUNT, jetstream=True,
                                              mappings=subjects.role_command_mapping(partitions)),
            },
        }

    def creds_path(self, role: str, name: str) -> Path:
        return self.creds_dir / f"{role}.{subjects.check_name(name)}.creds"

    def issue(self, role: str, name: str) -> Path:
        """Credentials for ``name`` with the powers of ``role`` (written again if they
        exist: the old file stays valid too, until the account revokes it)."""
        granted = powers.of(role, name)
        token, user_seed = self.user(f"{role}.{name}", publish=granted.publish, subscribe=granted.subscribe)
        self.creds_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.creds_path(role, name)
        _write_secret(path, jwt.creds(token, user_seed))
        return path

    def user(self, name: str, *, publish: list[str], subscribe: list[str]) -> tuple[str, bytes]:
        """A new user of the account, in memory only: its JWT and its nkey seed."""
        user_seed = jwt.new_seed("user")
        return jwt.user_jwt(self.account_seed, user_seed, name, publish=publish, subscribe=subscribe), user_seed

    def ensure(self, role: str, name: str) -> Path:
        """The identity's credentials, issued on first use, and again when its role's
        powers have changed since (a room's data folder outlives a version)."""
        path = self.creds_path(role, name)
        if path.exists() and _granted(path.read_text()) == powers.of(role, name):
            return path
        return self.issue(role, name)


def _granted(creds_text: str) -> powers.Powers:
    """The permissions in a credentials file's JWT."""
    nats = jwt.creds_claims(creds_text)["nats"]
    return powers.Powers(publish=nats["pub"].get("allow", []), subscribe=nats["sub"].get("allow", []))


def room_authority(data_dir: Path) -> Authority:
    """The Authority of the room whose data folder is ``data_dir`` (``<data dir>/auth``)."""
    return Authority(Path(data_dir) / AUTH_FOLDER)


def identity_of(creds_file: Path) -> tuple[str, str]:
    """(role, name) of the user in a credentials file (its JWT's name, ``role.name``)."""
    role, _, name = jwt.creds_name(Path(creds_file).read_text()).partition(".")
    return role, name
