"""The console's browser tests: a real headless Chromium (Debian's, tests/find_chromium.py)
driven by Playwright's sync API, on the shared secure room (tests/live_room.py) with
the console as a subprocess (console_server.py) and bots at each module's own tables
(bot_loop.py: their asyncio loop runs in a thread of its own, since the sync API keeps
an event loop of its own in the main thread while the browser runs).

The console is one for the session (an idle process); the browser and the bots are
one per module: the browser's loop would refuse the ``asyncio.run`` of the modules
after this folder's, and the bots would play on through the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bot_loop import BotLoop
from browser_pages import WAIT_MS, Pages
from console_server import ConsoleServer
from find_chromium import chromium_executable
from live_room import LiveRoom
from playwright.sync_api import Browser, expect, sync_playwright

expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="session")
def console(live_room: LiveRoom) -> Iterator[ConsoleServer]:
    server = ConsoleServer(live_room)
    try:
        server.start()
        yield server
    finally:
        code = server.stop()
    assert code in (0, None), f"the console exited {code} when stopped:\n{server.tail()}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_executable()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def bots(live_room: LiveRoom) -> Iterator[BotLoop]:
    loop = BotLoop(live_room)
    loop.start()
    try:
        yield loop
    finally:
        loop.stop()


@pytest.fixture
def pages(browser: Browser, console: ConsoleServer) -> Iterator[Pages]:
    opened = Pages(browser, console)
    try:
        yield opened
    finally:
        opened.close()
