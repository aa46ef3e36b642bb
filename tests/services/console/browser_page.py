"""A headless Chromium page on the console's static folder, served by a throwaway
local HTTP server (ES modules need http): for the tests of the page's own modules
(proofs.js, replay.js) that need no room."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from find_chromium import chromium_executable
from playwright.sync_api import Page, sync_playwright

STATIC = Path(__file__).resolve().parents[3] / "services" / "console" / "static"


# the page the modules are tried on: the console's stylesheet and a main, as index.html has
TEST_PAGE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>test</title>
<link rel="stylesheet" href="/css/console.css"><link rel="icon" href="data:,"></head>
<body><main id="main" tabindex="-1"></main></body></html>"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the base class's name)
        if self.path != "/test-page.html":
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(TEST_PAGE)))
        self.end_headers()
        self.wfile.write(TEST_PAGE)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def static_page(width: int = 1024) -> Iterator[tuple[Page, str]]:
    """A page at the static folder's origin (with a ``<main id="main">``), and that
    origin's address; no error may happen in it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(STATIC)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_executable())
            page = browser.new_page(viewport={"width": width, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(origin + "/test-page.html")
            yield page, origin
            browser.close()
            assert errors == []
    finally:
        server.shutdown()
        server.server_close()
