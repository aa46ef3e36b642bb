"""``studroom serve console`` as a subprocess on the shared room (tests/live_room.py),
as the room starts its services: the room's settings in its environment (the data
folder holds the room's Authority, from which the console issues each person's
credentials), a free loopback port (``--port 0``: it prints its address), its log in
the room's log folder.  And the
identities that log in to it: ``studroom player|operator add NAME --password-stdin``."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from live_room import LiveRoom
from studroom.services.runtime.processes.supervisor import child_env

CLI = (sys.executable, "-m", "studroom.services.cli")
READY_WITHIN = 30.0


ADDRESS = re.compile(rb"^console: (http://127\.0\.0\.1:\d+)/$", re.MULTILINE)


class ConsoleServer:
    def __init__(self, room: LiveRoom) -> None:
        self.room = room
        self.env = child_env(room.url, room.database_url, room.folder)
        self.url = ""                          # http://127.0.0.1:<port>, once it said it
        self.log = room.log_dir / "console-browser.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [*CLI, "serve", "console", "--port", "0", *self.placed()],
                env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        deadline = time.monotonic() + READY_WITHIN
        while not self._said_where() or not self._answers():
            assert self.proc.poll() is None, f"the console exited {self.proc.returncode}:\n{self.tail()}"
            assert time.monotonic() < deadline, f"the console did not answer within {READY_WITHIN} s:\n{self.tail()}"
            time.sleep(0.1)

    def placed(self) -> list[str]:
        """The room's stores and books under its own prefix (tests/live_room.py, as its services are told)."""
        prefix = f"{self.room.name}_p"
        schemas = [arg for schema in self.room.schemas for arg in ("--schema", schema)]
        return ["--store-prefix", prefix, *schemas, "--cashier-schema", f"{prefix}cashier",
                "--ledger-schema", f"{prefix}ledger"]

    def _said_where(self) -> bool:
        """Its address, from the line it prints once it listens (``--port 0``: a free port)."""
        if not self.url:
            found = ADDRESS.search(self.log.read_bytes())
            self.url = found.group(1).decode() if found else ""
        return bool(self.url)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/me", timeout=1.0):
                return True
        except urllib.error.HTTPError:          # 401 without a session: it is up
            return True
        except OSError:
            return False

    def tail(self, lines: int = 30) -> str:
        return "\n".join(Path(self.log).read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""

    def add_person(self, role: str, name: str, password: str) -> None:
        """``studroom <role> add NAME --password-stdin`` in the room's Authority."""
        done = subprocess.run([*CLI, role, "add", name, "--password-stdin"], input=password + "\n",
                              env=self.env, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, f"{role} add {name}: exit {done.returncode}\n{done.stdout}{done.stderr}"

    def stop(self) -> int | None:
        """SIGTERM, as the room stops its services; its exit code (None: never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5.0)
        return self.proc.returncode
