"""Which NATS credentials a process connects with, and keeping secrets out of logs.

A process's identity is a ``.creds`` file (docs/design/trust.md): the one named by
``STUDROOM_NATS_CREDS``, or, for a process that started the embedded NATS itself, one
issued by the room's :class:`~studroom.services.auth.authority.Authority` in
``<data dir>/auth``.  The file's path may be logged; its contents never are.

Credentials end (their JWT's ``exp``).  The server closes a connection whose JWT expires
with an error after which nats-py does not reconnect; nats-py reads the creds file again
at every (re)connection.  So a connection :func:`follow`-s its file: from the middle of
the JWT's lifetime on, it renews the file through the file's own Authority when the
process may read it (the embedded room), and reconnects as soon as the file holds a
newer JWT (renewed by the room or, in a deploy, by the administrator's timer), before
the old one ends.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from ...auth import jwt
from ...auth.authority import Authority, identity_of, room_authority
from ...auth.powers import door_identity
from ..settings import Settings

log = logging.getLogger(__name__)

_USERINFO = re.compile(r"//[^/@]*@")
CHECK_EVERY = 60.0          # seconds between looks at the file once renewal is due
_following: set[asyncio.Task[None]] = set()


def credentials(settings: Settings, role: str, name: str) -> Path | None:
    """The credentials file a process of ``role``/``name`` connects with: the
    configured one, else the embedded room's (issued on first use), else none (an
    external server that needs none)."""
    if settings.nats_creds is not None:
        return settings.nats_creds
    if settings.embedded_nats:
        return room_authority(settings.data_dir).ensure(role, name)
    return None


def door_credentials(settings: Settings, service: str) -> Path | None:
    """The credentials of ``service``'s door (its connection that serves requests and
    may publish replies only: ``service.<service>-door``): the file beside the configured
    one (``STUDROOM_NATS_CREDS``' folder, where ``studroom auth service-creds`` installs
    both; issued there when that folder is an Authority's this process may use), else the
    embedded room's, else none."""
    door = door_identity(service)
    if settings.nats_creds is None:
        return credentials(settings, "service", door)
    authority = _authority_of(settings.nats_creds)
    if authority is not None:                  # issued (or renewed) beside it here
        return authority.ensure("service", door)
    return settings.nats_creds.with_name(f"service.{door}.creds")


def masked_url(url: str) -> str:
    """``url`` (or several, comma separated) without user names, passwords or tokens:
    ``nats://alice:secret@host:4222`` -> ``nats://***@host:4222``."""
    return _USERINFO.sub("//***@", url)


def follow(client: Any, creds: Path) -> asyncio.Task[None]:
    """Keep ``client`` (a nats-py connection made with ``creds``) connected across the
    end of its credentials (see the module's docstring); the task ends with the client."""
    task = asyncio.get_running_loop().create_task(_follow(client, Path(creds)))
    _following.add(task)
    task.add_done_callback(_following.discard)
    return task


async def _follow(client: Any, creds: Path) -> None:
    used = jwt.creds_claims(creds.read_text())
    warned = False
    while not client.is_closed:
        expires = used.get("exp")
        if expires is None:
            return                                    # credentials without an end
        renew_at = used["iat"] + (expires - used["iat"]) / 2
        await asyncio.sleep(max(0.0, min(renew_at - time.time(), CHECK_EVERY)))
        if time.time() < renew_at or client.is_closed:
            continue
        try:
            await asyncio.to_thread(renew, creds)
            now = jwt.creds_claims(creds.read_text())
        except (OSError, ValueError, IndexError) as e:     # gone (revoked), unreadable, half-written by hand
            if not warned:
                log.warning("%s: cannot read the credentials to renew them: %s", creds.name, e)
            warned, now = True, used
        if now["jti"] != used["jti"] and now.get("exp", expires + 1) > expires:
            used = now
            await client.force_reconnect()
            log.info("%s: reconnected with renewed credentials (until %s)", creds.name, _utc(now.get("exp")))
        elif not warned and expires - time.time() < (expires - used["iat"]) / 4:
            warned = True
            log.warning("%s: credentials end at %s and nobody renewed them "
                        "(studroom auth service-creds, docs/operating.md)", creds.name, _utc(expires))
        if time.time() > expires:
            return                                    # the server has closed the connection
        await asyncio.sleep(min(CHECK_EVERY, max(0.1, (expires - time.time()) / 10)))


def renew(creds: Path) -> None:
    """Renew ``creds`` through the Authority it lives in (``<auth>/creds/``), if this
    process may read that Authority's keys; else someone else renews the file."""
    authority = _authority_of(creds)
    if authority is not None:
        authority.ensure(*identity_of(creds))


def _authority_of(creds: Path) -> Authority | None:
    """The Authority whose ``creds/`` folder holds ``creds``, if this process may read its keys."""
    folder = creds.parent.parent
    if creds.parent.name != "creds" or not os.access(folder / "account.nk", os.R_OK):
        return None
    return Authority(folder)


def _utc(seconds: int | None) -> str:
    return "never" if seconds is None else time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(seconds))
