"""The cashier tests' servers and services: one secure NATS with a table service and
the relay for all of them (cashier_stack.py); each test starts its own cashiers and
uses tables and players of its own."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cashier_stack import CashierStack


@pytest.fixture(scope="session")
def cashier_stack(database_url: str) -> Iterator[CashierStack]:
    folder = Path(tempfile.mkdtemp(prefix="studroom-it-cashier-"))
    stack = CashierStack(folder, database_url)
    stack.start()
    try:
        yield stack
    finally:
        problems = stack.stop()
        shutil.rmtree(folder, ignore_errors=True)
    assert not problems, problems


@pytest.fixture
def stack(cashier_stack: CashierStack) -> Iterator[CashierStack]:
    """The stack; the cashiers a test started are stopped after it."""
    yield cashier_stack
    for cashier in cashier_stack.cashiers:
        if cashier.proc.poll() is None:
            cashier.stop()
    cashier_stack.cashiers.clear()


@pytest.fixture
def name() -> str:
    """A prefix for the test's own tables and players."""
    return f"c{uuid.uuid4().hex[:6]}"
