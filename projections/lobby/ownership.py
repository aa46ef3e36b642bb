"""Whether a value found in the lobby's bucket is the lobby's own entry.

Only the lobby service may write the bucket (services/auth/powers.py), but a value may
still be wrong: written before that held, by an operator's hand, by a bug; deleted or
purged.  The lobby trusts the entries it wrote itself; one it reads from the bucket
must decode, name the table of its key, and carry a stamp the public stream agrees
with: the message at its ``seq`` is the table's, its last event at the entry's
``version`` (the lanes apply a message to its end; an entry rebuilt from the table's
own view is ahead of that message, never behind).  A value that fails is not the
lobby's: the lanes rebuild the entry from the public stream (docs/design/lobby.md,
"Healing").

What this cannot tell: a value that copies a true stamp onto false seats or stacks.
Writing one needs the lobby service's own credentials.
"""

from __future__ import annotations

import msgspec

from .entry import LobbyEntry, decode
from .stream import PublicStream


async def own_entry(stream: PublicStream, table_id: str, data: bytes) -> tuple[LobbyEntry | None, str]:
    """The entry in ``data`` if it is the lobby's own, else None and why not."""
    try:
        entry = decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None, "not an entry"
    if entry.table_id != table_id:
        return None, f"the entry of table {entry.table_id[:64]!r}"
    stamp = await stream.at(entry.seq) if entry.seq > 0 else None
    if stamp is None:
        if 0 < entry.seq < await stream.first_seq():
            return entry, ""                 # its message is past the stream's retention: nothing to tell
        return None, f"no public message {entry.seq}"
    if stamp.table_id != table_id:
        return None, f"public message {entry.seq} is table {stamp.table_id!r}'s"
    if stamp.version != entry.version and not (entry.resyncs and stamp.version < entry.version):
        return None, f"version {entry.version} where public message {entry.seq} is version {stamp.version}"
    return entry, ""
