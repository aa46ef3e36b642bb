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


class Done(NamedTuple):
    """What the steps returned."""

    value: Any


def _resume(steps: Steps[T], result: Any, error: Exception | None) -> Call | Done:
    """Hand the last call's result (or its exception) to the steps: their next call, or
    :class:`Done`."""
    try:
        return steps.send(result) if error is None else steps.throw(error)
    except StopIteration as done:
        return Done(done.value)


def _made(call: Call) -> tuple[Any, Exception | None]:
    try:
        return call.blocking(*call.args), None
    except Exception as failed:   # noqa: BLE001 (handed back to the steps, which decide)
        return None, failed


async def _awaited(call: Call) -> tuple[Any, Exception | None]:
    try:
        if call.awaited is not None:
            return await call.awaited(*call.args), None
        return await asyncio.to_thread(call.blocking, *call.args), None
    except Exception as failed:   # noqa: BLE001 (handed back to the steps, which decide)
        return None, failed


def run_blocking(steps: Steps[T]) -> T:
    """Run ``steps``, making each call in this thread."""
    step = _resume(steps, None, None)
    while isinstance(step, Call):
        step = _resume(steps, *_made(step))
    return step.value  # type: ignore[no-any-return]


async def run_awaited(steps: Steps[T]) -> T:
    """Run ``steps`` in the running event loop (see the module docstring)."""
    step = _resume(steps, None, None)
    while isinstance(step, Call):
        step = _resume(steps, *await _awaited(step))
    return step.value  # type: ignore[no-any-return]
