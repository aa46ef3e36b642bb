"""The command handler's store calls, made one of two ways.

The handler's steps are generators that yield each :class:`Call` of the event store
they need and get its result (or its exception) back: one logic, two drivers.
:func:`run_blocking` makes the calls in the caller's thread (tests, tools);
:func:`run_awaited` makes them in the table service's event loop, an append on the
store's own asyncio connection (``EventStore.append_async``: no worker thread, the
hand-off that cost as much CPU as the append itself at small batches) and the rare
reads (a table not cached, a refusal checked) in a thread, so the loop never blocks.
docs/design/table-service.md, "Group commit".
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")


class Call(NamedTuple):
    """One store call: ``blocking(*args)``, or ``awaited(*args)`` in an event loop
    (None: ``blocking`` in a thread)."""

    blocking: Callable[..., Any]
    args: tuple[Any, ...]
    awaited: Callable[..., Awaitable[Any]] | None = None


Steps = Generator[Call, Any, T]


def _resume(steps: Steps[T], result: Any, error: Exception | None) -> Call:
    return steps.send(result) if error is None else steps.throw(error)


def run_blocking(steps: Steps[T]) -> T:
    """Run ``steps``, making each call in this thread."""
    result, error = None, None
    while True:
        try:
            call = _resume(steps, result, error)
        except StopIteration as done:
            return done.value
        try:
            result, error = call.blocking(*call.args), None
        except Exception as failed:   # noqa: BLE001 (handed back to the steps, which decide)
            result, error = None, failed


async def run_awaited(steps: Steps[T]) -> T:
    """Run ``steps`` in the running event loop (see the module docstring)."""
    result, error = None, None
    while True:
        try:
            call = _resume(steps, result, error)
        except StopIteration as done:
            return done.value
        try:
            if call.awaited is not None:
                result = await call.awaited(*call.args)
            else:
                result = await asyncio.to_thread(call.blocking, *call.args)
            error = None
        except Exception as failed:   # noqa: BLE001 (handed back to the steps, which decide)
            result, error = None, failed
