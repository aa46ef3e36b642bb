"""Structs as the browser reads them: JSON with every top-level field, those at their
default too (the services' and the lobby's encodings leave defaults out to keep their
messages short: an empty ``hands``, ``state`` "open").  docs/design/console.md."""

from __future__ import annotations

from typing import Any

import msgspec


def whole(struct: Any) -> dict[str, Any]:
    body: dict[str, Any] = msgspec.to_builtins(struct)
    for name in struct.__struct_fields__:
        if name not in body:
            body[name] = msgspec.to_builtins(getattr(struct, name))
    return body
