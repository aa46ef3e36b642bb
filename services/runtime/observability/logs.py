"""One log format for every process: key=value text lines (default) or JSON lines.

    ts=2026-12-01T20:49:49.123Z level=info logger=studroom.relay msg="relay stops" store=studroom_p0 events=1200

A record's own fields come with ``extra=fields(store=..., events=...)``; both formats
write them after the message.  :class:`Masking` (on the handler, so every logger's
records pass it, the libraries' too) replaces secrets before anything is written:
NATS nkey seeds (``SU...``, ``SO...``, ``SA...``), JWTs, passwords in URLs, deck seeds
(``seed=<hex>``) and any field named like a secret.  Formats, fields and what is
masked: docs/design/observability.md.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from ..settings import log_format_from_env

FORMATS = ("text", "json")
MASK = "***"
FIELDS = "fields"                      # the LogRecord attribute :func:`fields` sets

_SECRETS = (
    re.compile(r"\bS[OAUNCXP][A-Z2-7]{50,}"),                              # nkey seeds
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),  # JWTs
)
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s]+@")
_SEED_VALUE = re.compile(r"(seed[\"']?\s*[:=]\s*[\"']?)[0-9a-fA-F]{16,}", re.IGNORECASE)
_PASSWORD_VALUE = re.compile(r"(password\s*=\s*)[^\s&'\"]+", re.IGNORECASE)      # libpq DSNs, query strings
_SECRET_KEY = re.compile(r"seed|password|passwd|secret|token|jwt", re.IGNORECASE)
_BARE = re.compile(r"[^\s=\"\\]+")


def fields(**values: Any) -> dict[str, Any]:
    """``extra=`` for a log call: fields written after the message."""
    return {FIELDS: values}


def mask(text: str) -> str:
    """``text`` with every secret it holds replaced by ``***``."""
    for pattern in _SECRETS:
        text = pattern.sub(MASK, text)
    text = _URL_PASSWORD.sub(rf"\1{MASK}@", text)
    text = _PASSWORD_VALUE.sub(rf"\1{MASK}", text)
    return _SEED_VALUE.sub(rf"\1{MASK}", text)


def _masked_value(key: str, value: Any) -> Any:
    if _SECRET_KEY.search(key):
        return MASK
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {k: _masked_value(str(k), v) for k, v in value.items()}
    return value


class Masking(logging.Filter):
    """Masks the secrets of a record's message, arguments and fields (in place)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = mask(record.getMessage())
        record.args = None
        values = getattr(record, FIELDS, None)
        if isinstance(values, Mapping):
            setattr(record, FIELDS, {k: _masked_value(k, v) for k, v in values.items()})
        if record.exc_info and not record.exc_text:
            record.exc_text = mask(logging.Formatter().formatException(record.exc_info))
        return True


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


def _head(record: logging.LogRecord) -> dict[str, Any]:
    return {"ts": _timestamp(record), "level": record.levelname.lower(), "logger": record.name,
            "msg": record.getMessage()}


def _text_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str, separators=(",", ":"))
    return text if text and _BARE.fullmatch(text) else json.dumps(text)


class TextFormatter(logging.Formatter):
    """``key=value`` pairs; values with spaces or quotes are JSON-quoted."""

    def format(self, record: logging.LogRecord) -> str:
        pairs = {**_head(record), **getattr(record, FIELDS, {})}
        line = " ".join(f"{key}={_text_value(value)}" for key, value in pairs.items())
        if record.exc_info or record.exc_text:
            line += " exc=" + json.dumps(record.exc_text or self.formatException(record.exc_info))
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        line = {**_head(record), **getattr(record, FIELDS, {})}
        if record.exc_info or record.exc_text:
            line["exc"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


def configure(level: str, log_format: str | None = None) -> None:
    """The root logger: one handler on stderr, masking, ``log_format`` (default
    ``STUDROOM_LOG_FORMAT``, else text)."""
    chosen = log_format or log_format_from_env()
    handler = logging.StreamHandler()
    handler.addFilter(Masking())
    handler.setFormatter(JsonFormatter() if chosen == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
