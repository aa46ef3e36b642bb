"""The ``studroom`` program run in the test's own process: ``main(argv)``, what
``python -m studroom.services.cli`` runs, with its exit code and what it printed.

For tests about what a command does and says, not about a process starting: a new
interpreter takes a second or more to start and import every command, this a few
milliseconds after the first.  Its environment, stdout and stderr are the process's
own, so one command runs at a time (callable from a worker thread, e.g. through
``asyncio.to_thread`` beside a test's event loop: the commands run ``asyncio.run``).
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from studroom.services.cli.main import main

_ONE_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class Ran:
    """What a run left, named as ``subprocess.CompletedProcess`` names it."""

    returncode: int
    stdout: str
    stderr: str


def studroom(argv: Sequence[str], env: Mapping[str, str | None] | None = None) -> Ran:
    """``studroom *argv`` with ``env`` set (None: unset) for the run, then restored."""
    out, err = io.StringIO(), io.StringIO()
    with (_ONE_AT_A_TIME, _environment(env or {}),
          contextlib.redirect_stdout(out), contextlib.redirect_stderr(err)):
        try:
            code = main(list(argv))
        except SystemExit as exit_:         # argparse's usage errors (2), --help (0)
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    return Ran(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _environment(env: Mapping[str, str | None]) -> Iterator[None]:
    before = {key: os.environ.get(key) for key in env}
    try:
        _set(env)
        yield
    finally:
        _set(before)


def _set(env: Mapping[str, str | None]) -> None:
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
