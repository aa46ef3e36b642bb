"""`studroom auth tls`: the room's CA, made once and kept private, and a NATS server's
certificate from it (the servers speaking TLS are in tests/deploy)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from studroom.services.auth import tls
from studroom.services.cli.main import main
from studroom.services.runtime.processes.process import tls_options


def _mode(path: Path) -> str:
    return oct(path.stat().st_mode & 0o777)


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_a_servers_certificate_from_the_rooms_ca(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ca_dir, out = tmp_path / "ca", tmp_path / "etc-nats-tls"
    assert main(["auth", "tls", "--ca-dir", str(ca_dir), "--out", str(out),
                 "--host", "nats-1.example", "--host", "10.0.0.5"]) == 0
    assert capsys.readouterr().out.split() == [str(out / n) for n in (tls.CA_CERT, tls.SERVER_CERT, tls.SERVER_KEY)]
    assert _mode(ca_dir) == "0o700" and _mode(ca_dir / tls.CA_KEY) == "0o600"
    assert _mode(out / tls.SERVER_KEY) == "0o600" and not (out / tls.CA_KEY).exists()   # the CA key stays home
    ca, cert = _cert(out / tls.CA_CERT), _cert(out / tls.SERVER_CERT)
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["nats-1.example", "localhost"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.0.0.5"),
                                                        ipaddress.ip_address("127.0.0.1")]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usage) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}   # routes: mutual
    life = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert datetime.timedelta(days=365) <= life <= datetime.timedelta(days=366)
    assert ca.not_valid_after_utc - ca.not_valid_before_utc >= datetime.timedelta(days=3650)
    # What a client does with it: trust the CA, check the name.
    client = ssl.create_default_context(cafile=str(out / tls.CA_CERT))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(out / tls.SERVER_CERT, out / tls.SERVER_KEY)
    assert client.verify_mode == ssl.CERT_REQUIRED and client.check_hostname


def test_the_ca_is_made_once_and_every_node_gets_its_own_key(tmp_path: Path) -> None:
    ca_dir = tmp_path / "ca"
    first = tls.write_server_files(ca_dir, tmp_path / "nats-1", ["nats-1"])
    second = tls.write_server_files(ca_dir, tmp_path / "nats-2", ["nats-2"])
    assert first[0].read_bytes() == second[0].read_bytes() == (ca_dir / tls.CA_CERT).read_bytes()
    assert first[2].read_bytes() != second[2].read_bytes()
    _cert(second[1]).verify_directly_issued_by(_cert(first[0]))


def test_no_host_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="--host"):
        tls.write_server_files(tmp_path / "ca", tmp_path / "out", [])
    with pytest.raises(SystemExit):
        main(["auth", "tls", "--ca-dir", str(tmp_path / "ca"), "--out", str(tmp_path / "out")])
    assert "--host" in capsys.readouterr().err


def test_clients_speak_tls_from_the_first_byte_when_told_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STUDROOM_NATS_CA", raising=False)
    assert tls_options("nats://127.0.0.1:4222") == {}
    system = tls_options("tls://nats-1:4222,tls://nats-2:4222")
    assert system["tls_handshake_first"] and system["tls"].verify_mode == ssl.CERT_REQUIRED
    written = tls.write_server_files(tmp_path / "ca", tmp_path / "out", ["127.0.0.1"])
    monkeypatch.setenv("STUDROOM_NATS_CA", str(written[0]))
    room = tls_options("nats://127.0.0.1:4222")         # the CA set: TLS whatever the scheme
    assert room["tls_handshake_first"] and room["tls"].get_ca_certs()[0]["subject"][-1][0][1] == tls.CA_NAME
