"""Where a stored event and the re-run's differ, named field by field."""

from __future__ import annotations

from typing import Any

import msgspec
from studroom.domain.events import Event


def describe(event: msgspec.Struct | None) -> str:
    """An event (or a command) and its fields, in one line, in its own words."""
    if event is None:
        return "nothing"
    fields = msgspec.structs.asdict(event)
    shown = ", ".join(f"{k}={_short(v)}" for k, v in fields.items() 
                     if k not in ("v", "command_id", "now_ms") and v not in ([], {}, None))
    return f"{type(event).__name__}({shown})"


def fields_that_differ(recorded: Event, rerun: Event) -> list[str]:
    """Each differing field as ``name: record <a>, re-run <b>`` (down to the differing
    entry of a list, a map or a nested record)."""
    if type(recorded) is not type(rerun):
        return [f"the record has {type(recorded).__name__}, the re-run {type(rerun).__name__}"]
    found: list[str] = []
    _compare("", recorded, rerun, found)
    return found


def _compare(path: str, a: Any, b: Any, found: list[str]) -> None:
    if a == b:
        return
    if isinstance(a, msgspec.Struct) and type(a) is type(b):
        for name in a.__struct_fields__:
            _compare(f"{path}.{name}" if path else name, getattr(a, name), getattr(b, name), found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _compare(f"{path}[{i}]", x, y, found)
    elif isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for key in a:
            _compare(f"{path}[{key}]", a[key], b[key], found)
    else:
        found.append(f"{path}: record {_short(a)}, re-run {_short(b)}")


def _short(value: Any, limit: int = 80) -> str:
    text = msgspec.json.encode(msgspec.to_builtins(value)).decode()
    return text if len(text) <= limit else text[: limit - 3] + "..."
