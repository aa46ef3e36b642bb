"""The console's passwords: Argon2id hashes in <auth dir>/passwords.json (0600, whole),
set and removed by `studroom player|operator add --password-stdin` and `revoke`."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest

from studroom.services.cli.main import main
from studroom.services.auth.passwords import BadPassword, Passwords


def test_a_password_is_kept_as_an_argon2id_hash_in_a_private_file(tmp_path: Path) -> None:
    passwords = Passwords(tmp_path)
    passwords.set("player", "alice", "correct horse")
    entries = json.loads((tmp_path / "passwords.json").read_text())
    assert list(entries) == ["player.alice"]
    assert entries["player.alice"].startswith("$argon2id$")
    assert "correct horse" not in (tmp_path / "passwords.json").read_text()
    assert stat.S_IMODE((tmp_path / "passwords.json").stat().st_mode) == 0o600
    assert passwords.verify("player", "alice", "correct horse")
    assert not passwords.verify("player", "alice", "correct horsE")
    assert not passwords.verify("operator", "alice", "correct horse")      # another identity


def test_unknown_names_bad_names_and_huge_passwords_are_just_wrong(tmp_path: Path) -> None:
    passwords = Passwords(tmp_path)
    assert not passwords.verify("player", "nobody", "whatever1")            # no file at all
    passwords.set("operator", "boss", "s3cret-enough")
    assert not passwords.verify("player", "nobody", "s3cret-enough")
    assert not passwords.verify("player", "no.such name", "s3cret-enough")
    assert not passwords.verify("spectator", "public", "s3cret-enough")
    assert not passwords.verify("operator", "boss", "x" * 100_000)


def test_passwords_too_short_or_too_long_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    passwords = Passwords(tmp_path)
    for bad in ("short", "y" * 2000):
        with pytest.raises(BadPassword):
            passwords.set("player", "bob", bad)
    assert not (tmp_path / "passwords.json").exists()


def test_setting_again_replaces_and_remove_forgets(tmp_path: Path) -> None:
    passwords = Passwords(tmp_path)
    passwords.set("player", "bob", "first password")
    passwords.set("player", "bob", "second password")
    assert passwords.verify("player", "bob", "second password")
    assert not passwords.verify("player", "bob", "first password")
    assert passwords.remove("player", "bob") and not passwords.remove("player", "bob")
    assert not passwords.has("player", "bob")


def test_the_cli_sets_a_password_from_stdin_and_revoke_removes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("STUDROOM_NATS_URL", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("a long password\n"))
    assert main(["player", "add", "carol", "--password-stdin", "--auth-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "console password set for player carol" in out and "a long password" not in out
    assert Passwords(tmp_path).verify("player", "carol", "a long password")
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["player", "add", "dave", "--password-stdin", "--auth-dir", str(tmp_path)]) == 2
    assert "at least 8 characters" in capsys.readouterr().err
    assert not Passwords(tmp_path).has("player", "dave")
    assert not (tmp_path / "creds" / "player.dave.creds").exists()        # refused before anything was issued
    assert main(["player", "revoke", "carol", "--auth-dir", str(tmp_path)]) == 0
    assert "console password of player carol removed" in capsys.readouterr().out
    assert not Passwords(tmp_path).has("player", "carol")
