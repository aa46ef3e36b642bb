"""A headless Chromium page on the console's static folder, served by a throwaway
local HTTP server (ES modules need http): for the tests of the page's own modules
(proofs.js, replay.js) that need no room."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

STATIC = Path(__file__).resolve().parents[3] / "services" / "console" / "static"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def chromium() -> str:
    """``$STUDROOM_CHROMIUM``, else Debian's ``chromium`` (never Playwright's download)."""
    found = os.environ.get("STUDROOM_CHROMIUM") or shutil.which("chromium")
    if not found:
        pytest.fail("no Chromium: apt-get install chromium (or set STUDROOM_CHROMIUM)", pytrace=False)
    return found


@contextmanager
def static_page(width: int = 1024) -> Iterator[tuple[Page, str]]:
    """A page at the static folder's origin, and that origin's address."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(STATIC)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium())
            page = browser.new_page(viewport={"width": width, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(origin + "/js/proofs.js")     # any page of the origin: the modules are imported from it
            yield page, origin
            browser.close()
            assert errors == []
    finally:
        server.shutdown()
        server.server_close()
