"""Running a server that refuses root (PostgreSQL) from a root process (CI containers).

The server runs as an unprivileged system user, created when missing; it must be
able to pass the folders on the way to its data and binaries and read the
binaries (docs/design/embedded-servers.md, "Running as root").
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import stat
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)


def ensure_system_user(name: str) -> pwd.struct_passwd:
    """The unprivileged system user ``name``, created if missing (we are root)."""
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    nologin = next(
        (s for s in ("/usr/sbin/nologin", "/sbin/nologin") if Path(s).exists()),
        "/bin/false",
    )
    attempts = (
        ["useradd", "--system", "--user-group", "--no-create-home",
         "--home-dir", "/nonexistent", "--shell", nologin, name],
        ["adduser", "-S", "-D", "-H", "-h", "/nonexistent", "-s", nologin, name],
    )  # fmt: skip
    errors = []
    for command in attempts:
        if shutil.which(command[0]) is None:
            continue
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        with contextlib.suppress(KeyError):  # also when another process won a race
            return pwd.getpwnam(name)
        errors.append(f"{' '.join(command)}: {result.stderr.strip()}")
    log.warning("could not create system user %s (%s); using nobody", name, errors)
    return pwd.getpwnam("nobody")


def grant_search(path: Path, user: pwd.struct_passwd) -> list[Path]:
    """Give others the search bit (o+x) on path and its ancestors where ``user``
    could not pass. Returns the folders changed."""
    changed = []
    for folder in (path, *path.parents):
        st = folder.stat()
        if st.st_uid == user.pw_uid or st.st_mode & stat.S_IXOTH:
            continue
        if st.st_gid == user.pw_gid and st.st_mode & stat.S_IXGRP:
            continue
        folder.chmod(stat.S_IMODE(st.st_mode) | stat.S_IXOTH)
        changed.append(folder)
    return changed


def grant_read_tree(root: Path) -> int:
    """o+r on every file, o+x on folders and executables, where missing."""
    changed = 0
    for folder, _dirs, files in os.walk(root):
        entries = [(Path(folder), True)] + [(Path(folder) / f, False) for f in files]
        for entry, is_dir in entries:
            st = entry.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            mode = stat.S_IMODE(st.st_mode)
            wanted = mode | stat.S_IROTH
            if is_dir or mode & stat.S_IXUSR:
                wanted |= stat.S_IXOTH
            if wanted != mode:
                entry.chmod(wanted)
                changed += 1
    return changed


def chown_tree(root: Path, uid: int, gid: int) -> None:
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.lchown(Path(folder) / name, uid, gid)
    os.chown(root, uid, gid)
