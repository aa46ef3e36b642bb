"""Which NATS credentials a process connects with, and keeping secrets out of logs.

A process's identity is a ``.creds`` file (docs/design/trust.md): the one named by
``STUDROOM_NATS_CREDS``, or, for a process that started the embedded NATS itself, one
issued by the room's :class:`~studroom.services.auth.authority.Authority` in
``<data dir>/auth``.  The file's path may be logged; its contents never are.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..auth.authority import room_authority
from .settings import Settings

_USERINFO = re.compile(r"//[^/@]*@")


def credentials(settings: Settings, role: str, name: str) -> Path | None:
    """The credentials file a process of ``role``/``name`` connects with: the
    configured one, else the embedded room's (issued on first use), else none (an
    external server that needs none)."""
    if settings.nats_creds is not None:
        return settings.nats_creds
    if settings.embedded_nats:
        return room_authority(settings.data_dir).ensure(role, name)
    return None


def masked_url(url: str) -> str:
    """``url`` (or several, comma separated) without user names, passwords or tokens:
    ``nats://alice:secret@host:4222`` -> ``nats://***@host:4222``."""
    return _USERINFO.sub("//***@", url)
