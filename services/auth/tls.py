"""The room's own certificate authority and its NATS servers' certificates.

``studroom auth tls --ca-dir DIR --out DIR --host NAME...`` keeps a CA in ``ca-dir``
(``ca-key.pem`` 0600 in a 0700 folder, made on first use, never copied) and writes a
server's files into ``out``, as deploy/nats/*.conf name them::

    ca.pem            the CA's certificate: what clients and the other nodes trust
    server-cert.pem   this node's certificate (every --host, plus localhost and 127.0.0.1)
    server-key.pem    its private key (0600)

One certificate serves the client port, the routes (it is usable as a TLS client, for
mutual TLS between the nodes) and the monitor (https on 127.0.0.1, hence the loopback
names). Keys are ECDSA P-256; the CA lasts 10 years, a server's certificate 1 year
(``--days``): run the command again before then and reload the server. Made with the
``cryptography`` package rather than the ``openssl`` program: the same code on every
platform, no configuration file for the extensions, and tested like the rest.
docs/operating.md, "TLS".
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..runtime.files import write_atomically

CA_CERT = "ca.pem"
CA_KEY = "ca-key.pem"
SERVER_CERT = "server-cert.pem"
SERVER_KEY = "server-key.pem"
CA_DAYS = 3650
SERVER_DAYS = 365
LOOPBACK = ("localhost", "127.0.0.1")       # the monitor (https on 127.0.0.1), tools on the node's host
CA_NAME = "Studroom room CA"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Studroom"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def ensure_ca(ca_dir: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The CA kept in ``ca_dir``, made on first use."""
    cert_path, key_path = ca_dir / CA_CERT, ca_dir / CA_KEY
    if cert_path.exists() and key_path.exists():
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{key_path}: not the EC key this command makes")
        return x509.load_pem_x509_certificate(cert_path.read_bytes()), key
    ca_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (x509.CertificateBuilder()
            .subject_name(_name(CA_NAME)).issuer_name(_name(CA_NAME))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    write_atomically(key_path, _key_pem(key), 0o600)
    write_atomically(cert_path, _cert_pem(cert), 0o644)
    return cert, key


def _alternative_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys([*hosts, *LOOPBACK]):      # in order, once each
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def server_certificate(ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey], hosts: list[str],
                       days: int = SERVER_DAYS) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A node's certificate for ``hosts`` (DNS names or IP addresses), signed by ``ca``:
    a TLS server (clients, the monitor) and a TLS client (its routes to the other nodes)."""
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (x509.CertificateBuilder()
            .subject_name(_name(hosts[0])).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(min(now + datetime.timedelta(days=days), ca_cert.not_valid_after_utc))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=True, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(_alternative_names(hosts)), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def write_server_files(ca_dir: Path, out: Path, hosts: list[str], days: int = SERVER_DAYS) -> list[Path]:
    """The CA (kept, or made) and a new certificate for ``hosts``, written into ``out``
    as deploy/nats/*.conf name them; the paths written."""
    if not hosts:
        raise ValueError("name at least one host (--host), as clients and the other nodes reach it")
    ca = ensure_ca(ca_dir)
    cert, key = server_certificate(ca, hosts, days)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / CA_CERT, out / SERVER_CERT, out / SERVER_KEY]
    if (out / CA_CERT).resolve() != (ca_dir / CA_CERT).resolve():
        write_atomically(out / CA_CERT, _cert_pem(ca[0]), 0o644)
    write_atomically(out / SERVER_CERT, _cert_pem(cert) + _cert_pem(ca[0]), 0o644)
    write_atomically(out / SERVER_KEY, _key_pem(key), 0o600)
    return written
