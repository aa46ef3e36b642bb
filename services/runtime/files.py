"""Writing a file that may hold a secret (a key, a password): its mode from the start, in one step."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    """``data`` into ``path``, with ``mode`` from its first byte (never readable by
    others, not even for a moment) and in one step (a crash leaves the old file or
    the new one, never half of one)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)          # whatever the umask took away
    os.replace(tmp, path)
