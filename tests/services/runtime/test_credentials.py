"""Which credentials a process connects with; secrets kept out of printed URLs."""

from __future__ import annotations

import time
from pathlib import Path

from studroom.services.auth import jwt, terms
from studroom.services.auth.authority import Authority, identity_of
from studroom.services.runtime.processes.credentials import renew, credentials, masked_url
from studroom.services.runtime.settings import Settings


def test_configured_credentials_come_first(tmp_path: Path) -> None:
    mine = tmp_path / "table.creds"
    for settings in (Settings(nats_creds=mine, data_dir=tmp_path),
                     Settings(nats_url="nats://h:4222", nats_creds=mine, data_dir=tmp_path)):
        assert credentials(settings, "service", "table") == mine
    assert not (tmp_path / "auth").exists()


def test_a_process_with_its_own_embedded_nats_uses_the_rooms_authority(tmp_path: Path) -> None:
    path = credentials(Settings(data_dir=tmp_path), "service", "timer")
    assert path is not None and path.parent == tmp_path / "auth" / "creds"
    assert identity_of(path) == ("service", "timer")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert credentials(Settings(data_dir=tmp_path), "service", "timer") == path   # issued once


def test_an_external_server_without_configured_credentials_gets_none(tmp_path: Path) -> None:
    assert credentials(Settings(nats_url="nats://h:4222", data_dir=tmp_path), "service", "relay") is None


def test_passwords_and_tokens_never_appear_in_a_printed_url() -> None:
    assert masked_url("nats://alice:s3cret@10.0.0.5:4222") == "nats://***@10.0.0.5:4222"
    assert masked_url("nats://T0KEN@a:4222,tls://b:4222") == "nats://***@a:4222,tls://b:4222"
    assert masked_url("postgresql://u:pw@db:5432/room") == "postgresql://***@db:5432/room"
    assert masked_url("nats://127.0.0.1:4222") == "nats://127.0.0.1:4222"


def _ending_soon(authority, role: str, name: str, seconds: int) -> Path:  # noqa: ANN001
    """The identity's file in the Authority, as if issued long ago: ``seconds`` left."""
    path = authority.issue(role, name)
    claims = jwt.creds_claims(path.read_text())["nats"]
    token, seed = authority.user(f"{role}.{name}", publish=claims["pub"]["allow"], subscribe=claims["sub"]["allow"],
                                 expires=int(time.time()) + seconds)
    path.write_text(jwt.creds(token, seed))
    return path


def test_a_file_in_a_readable_authority_is_renewed_there_and_a_copy_elsewhere_is_left_alone(tmp_path: Path) -> None:
    """The embedded room's processes renew their own files; a deployed service's copy
    (no Authority beside it) waits for the administrator's timer."""
    authority = Authority(tmp_path / "auth")
    path = _ending_soon(authority, "service", "relay", 60)
    copy = tmp_path / "etc" / "creds" / path.name
    copy.parent.mkdir(parents=True)
    copy.write_text(path.read_text())
    renew(copy)
    assert copy.read_text() == path.read_text()
    renew(path)
    assert jwt.creds_claims(path.read_text())["exp"] > time.time() + terms.of("service").lifetime / 2
