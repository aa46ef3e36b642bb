"""Awaiting NATS safely: every failure becomes one error (:class:`BusError`, or
:class:`Conflict` for a position record written by someone else), a cancellation
nats-py swallowed is noticed, and pauses end early when their event is set."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import nats.js.errors

from .errors import BusError, Conflict


@contextlib.contextmanager
def bus(what: str) -> Iterator[None]:
    """Turn any failure of a NATS operation into BusError (and notice a cancellation
    nats-py swallowed)."""
    try:
        yield
    except (asyncio.CancelledError, BusError, Conflict):
        raise
    except nats.js.errors.KeyWrongLastSequenceError as error:
        raise Conflict(f"{what}: {error!r}") from error
    except Exception as error:
        raise BusError(f"{what}: {error!r}") from error
    raise_if_cancelled()


def raise_if_cancelled() -> None:
    """nats-py swallows a cancellation that arrives while it flushes
    (``Client._flush_pending``, e.g. inside ``publish`` or ``subscribe``); the task's
    cancel count still tells. Checked after every NATS operation."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def pause(event: asyncio.Event, seconds: float | None) -> None:
    """Wait until ``event`` is set, at most ``seconds`` (None: no limit). (``asyncio.timeout`` rather
    than ``wait_for``: on Python 3.11 the latter can swallow a cancellation.)"""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
