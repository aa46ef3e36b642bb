"""NATS subject matching as the server applies a filter or a permission, for tests
that check which subjects a pattern lets through."""

from __future__ import annotations


def matches(pattern: str, subject: str) -> bool:
    """``*`` matches one token, ``>`` one or more at the end."""
    want, got = pattern.split("."), subject.split(".")
    for i, token in enumerate(want):
        if token == ">":
            return len(got) > i
        if i >= len(got) or token not in ("*", got[i]):
            return False
    return len(want) == len(got)
