"""Names: player names and table ids (and every identity's name).

A name travels in NATS subjects (``studroom.priv.<player>.<table>``, the senders'
command subjects) and is stored in events forever, so it must be a valid subject token
in every client: 1..64 ASCII letters, digits, ``_`` or ``-``.  This module owns that
rule; ``services/wire/subjects`` builds its subjects with it.
"""

from __future__ import annotations

import re
from typing import Final

from .errors import BAD_NAME, DomainError, quoted

NAME_RULE: Final = "1..64 letters, digits, '_' or '-'"
_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


def is_name(value: object) -> bool:
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def check_name(value: object, what: str) -> str:
    """``value`` if it is a name, else ``bad_name`` (``what`` says which name it was)."""
    if isinstance(value, str) and _NAME.fullmatch(value):
        return value
    raise DomainError(BAD_NAME, f"{what} {quoted(value)} is not a name: {NAME_RULE}")
