"""``studroom lobby`` and ``studroom watch``: what is wrong with the command is said
before anything connects (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pytest
from studroom.services.auth.authority import Authority
from studroom.services.cli.main import build_parser, main
from studroom.services.runtime.settings import DATA_DIR_VAR, NATS_CREDS_VAR, NATS_URL_VAR

NOWHERE = "nats://127.0.0.1:9"      # port 9 (discard): nothing listens, so nothing may connect


@pytest.mark.parametrize(("given", "asked"), [("20-40", "20/40"), ("20/40", "20/40"), ("020-40", "20/40")])
def test_stakes_are_written_either_way(given: str, asked: str) -> None:
    assert build_parser().parse_args(["lobby", "--stakes", given]).stakes == asked


def test_bad_stakes_are_a_usage_error_before_connecting(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(NATS_URL_VAR, NOWHERE)
    with pytest.raises(SystemExit) as refused:
        main(["lobby", "--stakes", "20x40"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "argument --stakes: expected SMALL-BIG" in err


def test_a_services_credentials_are_one_line_not_permissions_violations(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """What an operator's shell set for ``studroom serve lobby`` may not watch a table:
    said at once (exit 2), where the server answered each subject with a violation."""
    creds = Authority(tmp_path / "auth").ensure("service", "lobby")
    monkeypatch.setenv(NATS_URL_VAR, NOWHERE)
    monkeypatch.setenv(NATS_CREDS_VAR, str(creds))
    monkeypatch.setenv(DATA_DIR_VAR, str(tmp_path))
    assert main(["watch", "t01", "--for", "1"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"studroom: {NATS_CREDS_VAR} holds the credentials of service 'lobby', who may not "
                                "ask the lobby or watch a table: set it to a spectator's, a player's or an operator's"]
