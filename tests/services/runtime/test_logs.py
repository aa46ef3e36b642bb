"""The one log format: key=value text or JSON lines, fields after the message, and no
secret ever written (nkey seeds, JWTs, passwords in URLs, deck seeds, secret fields)."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest
from studroom.services.auth import jwt
from studroom.services.runtime.observability import logs
from studroom.services.runtime.settings import LOG_FORMAT_VAR, log_format_from_env

USER_SEED = jwt.new_seed("user").decode()
ACCOUNT_SEED = jwt.new_seed("account")
TOKEN = jwt.user_jwt(ACCOUNT_SEED, USER_SEED.encode(), "alice", publish=["a"], subscribe=["b"])
DECK_SEED = "9f" * 32


@pytest.fixture
def written() -> Iterator[io.StringIO]:
    """What the root logger writes, as :func:`logs.configure` set it up (restored after)."""
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    out = io.StringIO()
    yield out
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in before:
        root.addHandler(handler)
    root.setLevel(level)


def _configure(out: io.StringIO, log_format: str) -> logging.Logger:
    logs.configure("INFO", log_format)
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(out)
    return logging.getLogger("studroom.test")


def test_text_lines_are_key_value_pairs_with_the_fields_after_the_message(written: io.StringIO) -> None:
    log = _configure(written, "text")
    log.info("relay stops", extra=logs.fields(store="studroom_p0", events=12, rate=0.5, ok=True, note="two words"))
    line = written.getvalue().strip()
    assert re.match(r"ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ", line), line
    assert ' level=info logger=studroom.test msg="relay stops" store=studroom_p0 events=12 rate=0.5 ok=true ' \
           'note="two words"' in line


def test_json_lines_hold_the_same_fields(written: io.StringIO) -> None:
    log = _configure(written, "json")
    log.warning("lag %d", 7, extra=logs.fields(projection="ledger", lag=7))
    record = json.loads(written.getvalue())
    assert record["level"] == "warning" and record["msg"] == "lag 7"
    assert record["projection"] == "ledger" and record["lag"] == 7 and record["ts"].endswith("Z")


@pytest.mark.parametrize("log_format", logs.FORMATS)
def test_no_secret_is_written_in_either_format(written: io.StringIO, log_format: str) -> None:
    log = _configure(written, log_format)
    log.info("connected to postgresql://studroom:hunter2@db:5432/room as %s with %s", USER_SEED, TOKEN,
             extra=logs.fields(creds="/var/lib/studroom/service.table.creds", password="hunter2",
                               url="nats://bob:s3cret@nats:4222", seed=DECK_SEED, event={"seed": DECK_SEED}))
    log.info("StartHand seed=%s", DECK_SEED)
    log.info("connecting to host=db user=studroom password=hunter2 dbname=room")
    try:
        raise ValueError(f"bad seed {USER_SEED}")
    except ValueError:
        log.exception("failed")
    text = written.getvalue()
    for secret in (USER_SEED, TOKEN, "hunter2", "s3cret", DECK_SEED):
        assert secret not in text
    assert "/var/lib/studroom/service.table.creds" in text      # paths are fine
    assert "postgresql://studroom:***@db:5432/room" in text
    assert "ValueError" in text                                   # the traceback, masked


def test_the_format_comes_from_the_environment_when_not_given(monkeypatch: pytest.MonkeyPatch,
                                                               written: io.StringIO) -> None:
    monkeypatch.setenv(LOG_FORMAT_VAR, "json")
    logs.configure("INFO")
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler.formatter, logs.JsonFormatter)
    assert log_format_from_env({LOG_FORMAT_VAR: "yaml"}) == "text"
