"""Writing a file that may hold a secret (a key, a password): its mode from the start, in one step."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    """``data`` into ``path``, with ``mode`` from its first byte (never readable by
    others, not even for a moment: the temporary file is 0600 until it is whole) and in
    one step (a crash leaves the old file or the new one, never half of one; processes
    writing the same file at once each write a temporary file of their own)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
