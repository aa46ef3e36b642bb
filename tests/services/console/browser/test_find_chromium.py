"""Without a Chromium the browser tests fail, saying in one line how to install it
(never skipped); ``STUDROOM_CHROMIUM`` names another one."""

from __future__ import annotations

from pathlib import Path

import pytest
from find_chromium import CHROMIUM_VAR, chromium_executable


def test_no_chromium_fails_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(CHROMIUM_VAR, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception) as failed:
        chromium_executable()
    message = str(failed.value)
    assert "apt-get install chromium" in message and CHROMIUM_VAR in message and "\n" not in message


def test_the_named_chromium_is_used_and_must_be_executable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    named = tmp_path / "my-chromium"
    named.write_text("#!/bin/sh\n")
    monkeypatch.setenv(CHROMIUM_VAR, str(named))
    with pytest.raises(pytest.fail.Exception, match="not an executable"):
        chromium_executable()
    named.chmod(0o755)
    assert chromium_executable() == str(named)
