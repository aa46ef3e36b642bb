"""NATS JWTs (operator, account, user) and credentials files, signed with nkeys.

The format is NATS's own (https://docs.nats.io/ "JWT"): ``header.claims.signature``,
each part base64url without padding; the signature is Ed25519 by the issuer's nkey
over ``header.claims``; ``jti`` is the base32 SHA-256 of the claims.  We write the few
claims Studroom needs instead of depending on a JWT library (the one for NATS in
Python calls itself experimental; the format is small and the server checks it).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from typing import Any

import nkeys

HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}
UNLIMITED = {"subs": -1, "data": -1, "payload": -1}
_PREFIXES = {
    "operator": nkeys.PREFIX_BYTE_OPERATOR,
    "account": nkeys.PREFIX_BYTE_ACCOUNT,
    "user": nkeys.PREFIX_BYTE_USER,
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def new_seed(kind: str) -> bytes:
    """A fresh nkey seed (``SO...``, ``SA...``, ``SU...``) for an operator, account or user."""
    return bytes(nkeys.encode_seed(os.urandom(32), _PREFIXES[kind]))


def key_pair(seed: bytes) -> nkeys.KeyPair:
    return nkeys.from_seed(bytearray(seed))


def public_key(seed: bytes) -> str:
    return key_pair(seed).public_key.decode()


def encode(issuer_seed: bytes, subject: str, name: str, nats: dict[str, Any],
           *, issued_at: int | None = None, expires: int | None = None) -> str:
    """A JWT for ``subject`` (a public key) signed by ``issuer_seed``; valid until
    ``expires`` (unix seconds) if given, else for ever."""
    issuer = key_pair(issuer_seed)
    claims: dict[str, Any] = {
        "iat": int(time.time()) if issued_at is None else issued_at,
        "iss": issuer.public_key.decode(),
        "name": name,
        "sub": subject,
        "nats": nats,
    }
    if expires is not None:
        claims["exp"] = expires
    claims["jti"] = base64.b32encode(hashlib.sha256(_json(claims)).digest()).decode().rstrip("=")
    signed = f"{_b64(_json(HEADER))}.{_b64(_json(claims))}"
    return f"{signed}.{_b64(issuer.sign(signed.encode()))}"


def claims(token: str) -> dict[str, Any]:
    """The claims of a JWT, unverified (the server verifies; we only read our own)."""
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def operator_jwt(operator_seed: bytes, name: str, system_account: str) -> str:
    nats = {"type": "operator", "version": 2, "system_account": system_account}
    return encode(operator_seed, public_key(operator_seed), name, nats)


def account_jwt(operator_seed: bytes, account_seed: bytes, name: str, *, jetstream: bool,
                mappings: dict[str, str] | None = None, connections: int = -1,
                revocations: dict[str, int] | None = None) -> str:
    """An account of the operator: at most ``connections`` client connections (-1: no
    limit); ``revocations`` maps a user's public key to the time before which (inclusive)
    every JWT issued to that key is refused, and its connections are closed."""
    limits: dict[str, Any] = {**UNLIMITED, "imports": -1, "exports": -1, "wildcards": True,
                              "conn": connections, "leaf": -1}
    if jetstream:
        limits |= {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}
    nats: dict[str, Any] = {"type": "account", "version": 2, "limits": limits}
    if mappings:
        nats["mappings"] = {source: [{"subject": destination, "weight": 100}]
                            for source, destination in mappings.items()}
    if revocations:
        nats["revocations"] = dict(revocations)
    return encode(operator_seed, public_key(account_seed), name, nats)


def user_jwt(account_seed: bytes, user_seed: bytes, name: str, *,
             publish: list[str], subscribe: list[str], deny_publish: list[str] | None = None,
             limits: dict[str, int] | None = None, expires: int | None = None) -> str:
    """A user of the account with exactly these publish and subscribe permissions
    (an empty ``publish`` list: may publish nothing), these per-connection ``limits``
    (``subs``, ``data``, ``payload``; default none) and valid until ``expires``."""
    nats: dict[str, Any] = {
        "type": "user", "version": 2, **UNLIMITED, **(limits or {}),
        "pub": {"allow": publish, **({"deny": deny_publish} if deny_publish else {})} if publish else {"deny": [">"]},
        "sub": {"allow": subscribe} if subscribe else {"deny": [">"]},
    }
    return encode(account_seed, public_key(user_seed), name, nats, expires=expires)


def creds(user_token: str, user_seed: bytes) -> str:
    """A ``.creds`` file's text: what nats-py's ``user_credentials=`` reads."""
    return ("-----BEGIN NATS USER JWT-----\n"
            f"{user_token}\n"
            "------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n"
            "NKEYs are sensitive and should be treated as secrets.\n\n"
            "-----BEGIN USER NKEY SEED-----\n"
            f"{user_seed.decode()}\n"
            "------END USER NKEY SEED------\n")


def creds_claims(text: str) -> dict[str, Any]:
    """The claims of the JWT inside a ``.creds`` file's text."""
    token = text.split("-----BEGIN NATS USER JWT-----")[1].split("------END NATS USER JWT------")[0]
    return claims(token.strip())


def creds_name(text: str) -> str:
    """The user name inside a ``.creds`` file's JWT."""
    return str(creds_claims(text)["name"])
