"""Which Chromium the browser tests drive: ``$STUDROOM_CHROMIUM``, else ``chromium`` on
the PATH (Debian's package; Playwright's own browsers are never downloaded).  None:
the test fails with one line saying how to install it (never skipped)."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM_VAR = "STUDROOM_CHROMIUM"
INSTALL = ("no Chromium for the console's browser tests: apt-get install chromium "
           f"(Debian's package; .ci/run installs it), or set {CHROMIUM_VAR} to its executable")


def chromium_executable() -> str:
    named = os.environ.get(CHROMIUM_VAR, "").strip()
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            pytest.fail(f"{CHROMIUM_VAR}={named}: not an executable file", pytrace=False)
        return named
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(INSTALL, pytrace=False)
    return found
