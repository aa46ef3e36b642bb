"""Writing protocol commands straight to a nats-py connection: what its ``publish``
would write, without its checks of each subject and header (regular expressions) and
its flusher woken per message.  The relay's publisher (``relay/publisher.py``) and the
timer's (``timer/publisher.py``) write their messages so; a pull consumer's
acknowledgements are written so here (issue 20: docs/design/lobby.md, "Cost")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

Writer = Callable[[bytes], Awaitable[None]]


def raw_writer(nc: Any) -> Writer | None:
    """The connection's own protocol writer (nats-py's ``_send_command``), or None
    (another client, a test's stand-in): then each message goes through ``publish``."""
    send = getattr(nc, "_send_command", None)
    if callable(send) and callable(getattr(nc, "_flush_pending", None)) and isinstance(getattr(nc, "stats", None), dict):
        return send  # type: ignore[no-any-return]
    return None


def hpub(subject: str, reply: str, headers: Mapping[str, str], payload: bytes) -> bytes | None:
    """The message as nats-py's ``publish`` would put it on the wire (``HPUB``), built
    in one go; None when a subject or header would need its checks (a space, a line
    break: never from our own names), so that ``publish`` refuses it as usual."""
    head = "".join([f"{k}: {v}\r\n" for k, v in headers.items()])
    if not (subject.isprintable() and head.replace("\r\n", "").isprintable()) or " " in subject:
        return None
    header = f"NATS/1.0\r\n{head}\r\n".encode()
    size = len(header)
    return b"".join((f"HPUB {subject} {reply} {size} {size + len(payload)}\r\n".encode(),
                     header, payload, b"\r\n"))


async def write_message(nc: Any, raw: Writer | None, subject: str, reply: str, headers: dict[str, str],
                        payload: bytes) -> bool:
    """Put one message with a reply subject on ``nc``: written raw (True: count it with
    :func:`wrote`, once for all written so) when there is a writer ``raw`` and the
    message needs none of ``publish``'s checks, else through nats-py's ``publish``,
    which checks, buffers or refuses it as usual (False)."""
    command = hpub(subject, reply, headers, payload) if raw is not None else None
    if command is None:
        await nc.publish(subject, payload, reply=reply, headers=headers)
        return False
    await raw(command)
    return True


async def wrote(nc: Any, messages: int, size: int) -> None:
    """Count ``messages`` written raw (``size`` bytes of payload) as ``publish`` would,
    and wake the connection's flusher once for all of them."""
    nc.stats["out_msgs"] += messages
    nc.stats["out_bytes"] += size
    await nc._flush_pending()   # noqa: SLF001 (wake the connection's flusher once)


async def ack(nc: Any, msgs: Iterable[Any]) -> None:
    """Acknowledge each of ``msgs`` (JetStream deliveries) on its own, as ``msg.ack()``
    does (an empty message to its reply subject, no round trip), written to ``nc`` in
    one go and flushed once.  Through ``msg.ack()`` when ``nc`` is no nats-py
    connection or not connected now (it buffers or refuses as usual), or a message has
    no reply subject (``msg.ack()`` refuses it)."""
    raw = raw_writer(nc) if getattr(nc, "is_connected", False) else None
    written = 0
    for msg in msgs:
        if raw is None or not msg.reply:
            await msg.ack()
            continue
        await raw(b"PUB %s 0\r\n\r\n" % msg.reply.encode())
        written += 1
    if written:
        await wrote(nc, written, 0)
