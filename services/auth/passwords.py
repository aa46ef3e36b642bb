"""The console's passwords: Argon2id hashes (argon2-cffi) in ``<auth dir>/passwords.json``.

The file maps ``"<role>.<name>"`` to a hash; it is written whole, 0600, under a lock
(``studroom player add --password`` and the console may write it at once), and read
at every check, so a password set or removed while the console runs counts at once.
An identity without an entry cannot log in to the console.  A check of an unknown
identity verifies against a dummy hash: the answer and its cost are those of a wrong
password.  docs/design/console.md (the console reads it; the CLI writes it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from ..runtime.files import write_atomically
from ..wire import subjects

FILE = "passwords.json"
ROLES = ("player", "operator")         # who may log in with a password (spectators need none)
MIN_LENGTH = 8
MAX_LENGTH = 1024                      # longer is no password but a way to make us hash megabytes

_hasher = PasswordHasher()             # Argon2id, the library's default parameters
_DUMMY = _hasher.hash("no such identity: a hash to verify against all the same")


class BadPassword(ValueError):
    """A password that cannot be set (too short, too long)."""


def check_password(password: str) -> str:
    if len(password) < MIN_LENGTH:
        raise BadPassword(f"a password has at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise BadPassword(f"a password has at most {MAX_LENGTH} characters")
    return password


def _key(role: str, name: str) -> str:
    if role not in ROLES:
        raise ValueError(f"no password for role {role!r}: only {', '.join(ROLES)}")
    return f"{role}.{subjects.check_name(name)}"


class Passwords:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILE

    def set(self, role: str, name: str, password: str) -> None:
        digest = _hasher.hash(check_password(password))
        with self._entries() as entries:
            entries[_key(role, name)] = digest

    def remove(self, role: str, name: str) -> bool:
        """Remove the identity's password; whether it had one."""
        with self._entries() as entries:
            return entries.pop(_key(role, name), None) is not None

    def has(self, role: str, name: str) -> bool:
        return _key(role, name) in self._read()

    def verify(self, role: str, name: str, password: str) -> bool:
        """Whether ``password`` is the identity's; False for an unknown identity, a bad
        name or role, or a password too long, after the same work as a wrong one
        (slow on purpose: call it from a thread)."""
        try:
            digest = self._read().get(_key(role, name)) if len(password) <= MAX_LENGTH else None
        except (ValueError, subjects.BadName):
            digest = None
        try:
            return _hasher.verify(digest or _DUMMY, password[:MAX_LENGTH]) and digest is not None
        except (VerificationError, InvalidHashError):
            return False

    def _read(self) -> dict[str, str]:
        try:
            entries: Any = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        return entries if isinstance(entries, dict) else {}

    @contextlib.contextmanager
    def _entries(self) -> Iterator[dict[str, str]]:
        """The entries under an exclusive lock, written back whole."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with (self.folder / "passwords.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = self._read()
            yield entries
            write_atomically(self.path, (json.dumps(entries, indent=1, sort_keys=True) + "\n").encode())
