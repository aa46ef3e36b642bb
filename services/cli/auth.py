"""``studroom player|operator add|revoke NAME`` and ``studroom auth server-config|service-creds|tls``:
the room's identities and the NATS server's trust settings, from the Authority."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from functools import partial
from pathlib import Path

AUTH_DIR_HELP = "the Authority's folder (default: auth/ in the data folder, STUDROOM_DATA_DIR)"
SERVERS_HELP = ("the running NATS servers to tell at once (comma separated; default STUDROOM_NATS_URL, "
                "else the data folder's embedded NATS if it runs)")


def _authority(args: argparse.Namespace):  # noqa: ANN202 (an Authority, imported lazily)
    from ..auth.authority import Authority, room_authority
    from ..runtime.settings import Settings

    return Authority(Path(args.auth_dir)) if args.auth_dir else room_authority(Settings.from_env().data_dir)


def _add_identity(role: str, args: argparse.Namespace) -> int:
    """A NATS identity of ``role``, issued now (an existing one again, with a fresh
    expiry): print its credentials' path (never their contents).  With ``--password``
    or ``--password-stdin``, its console password too (asked before anything is issued)."""
    from ..auth.passwords import BadPassword, Passwords, check_password
    from ..wire.subjects import BadName, check_name

    try:
        check_name(args.name)
        password = _password(args)
        if password is not None:
            check_password(password)
        authority = _authority(args)
        print(authority.issue(role, args.name))
        if password is not None:
            Passwords(authority.folder).set(role, args.name, password)
            print(f"console password set for {role} {args.name}")
    except (BadName, BadPassword, _NoPassword) as e:
        print(f"studroom {role} add: {e}", file=sys.stderr)
        return 2
    return 0


class _NoPassword(Exception):
    """The password could not be read (empty stdin, the two prompts differ)."""


def _password(args: argparse.Namespace) -> str | None:
    """The password asked for: prompted twice, not echoed (``--password``), or one line
    of stdin (``--password-stdin``); None if neither."""
    if args.password_stdin:
        line = sys.stdin.readline().rstrip("\r\n")
        if not line:
            raise _NoPassword("--password-stdin: no password on stdin")
        return line
    if not args.password:
        return None
    import getpass

    first = getpass.getpass(f"console password for {args.name}: ")
    if getpass.getpass("again: ") != first:
        raise _NoPassword("the two passwords differ: nothing changed")
    return first


def _revoke_identity(role: str, args: argparse.Namespace) -> int:
    """Revoke every key of the identity in the Authority, then tell the running servers
    (they close its connections and refuse it from now on)."""
    from ..auth.authority import UnknownIdentity
    from ..auth.passwords import Passwords
    from ..wire.subjects import BadName

    authority = _authority(args)
    try:
        # first: the console could otherwise issue new credentials to a password's holder
        if Passwords(authority.folder).remove(role, args.name):
            print(f"console password of {role} {args.name} removed (add it again with --password)")
        keys = authority.revoke(role, args.name)
    except (BadName, UnknownIdentity) as e:
        print(f"studroom {role} revoke: {e}", file=sys.stderr)
        return 2
    print(f"revoked {role} {args.name} ({keys} key{'s' * (keys != 1)}) in the Authority at {authority.folder}")
    if not args.auth_dir:                  # the data folder's embedded NATS: its next reload or start reads it
        from ..runtime.servers.embedded_nats import rewrite_trust
        from ..runtime.settings import Settings

        rewrite_trust(Settings.from_env().data_dir)
    servers, named = _servers(args)
    embedded = not args.auth_dir and not named
    return _push(authority, servers, named, role, "" if embedded else _REGENERATE)


_REGENERATE = "write studroom-auth.conf again on every node (studroom auth server-config)"


def _servers(args: argparse.Namespace) -> tuple[str | None, bool]:
    """Where the running NATS servers are, and whether they were named: --servers,
    STUDROOM_NATS_URL, else the data folder's embedded NATS (its last port: a stopped
    room's is not running, which is no error)."""
    from ..runtime.settings import Settings

    if args.servers:
        return str(args.servers), True
    settings = Settings.from_env()
    if settings.nats_url is not None:
        return settings.nats_url, True
    port = settings.data_dir / "nats" / "port"
    if args.auth_dir or not port.exists():
        return None, False
    return f"nats://127.0.0.1:{int(port.read_text())}", False


def _push(authority, servers: str | None, named: bool, role: str, regenerate: str) -> int:  # noqa: ANN001
    """Push the account's revocation list to ``servers``; without running servers, say
    when it takes effect (exit 1 if servers named could not be told).  ``regenerate``:
    what the administrator must do for the servers' next start or reload ("" for the
    embedded NATS, whose configuration was rewritten)."""
    import nats.errors

    from ..warden import revocation

    later = (f"the NATS servers read it when they load their trust configuration: {regenerate} and reload them"
             if regenerate else "the embedded NATS reads it at its next start")
    if servers is None:
        print(f"no running NATS server named (--servers): {later}")
        return 0
    try:
        told = asyncio.run(revocation.push(authority, servers))
    except revocation.PushRefused as e:
        print(f"studroom {role} revoke: {e}", file=sys.stderr)
        return 1
    except (OSError, TimeoutError, nats.errors.Error) as e:
        print(f"studroom {role} revoke: no NATS server at {servers} took the update ({type(e).__name__}): {later}",
              file=sys.stderr)
        return 1 if named else 0
    print(f"{told} running NATS server{'s' * (told != 1)} closed its connections and refuse it"
          + (f"; for their next start or reload, {regenerate}" if regenerate else ""))
    return 0


def _warden(args: argparse.Namespace) -> int:
    """Cap each identity's connections (warden/connections.py) until SIGTERM or SIGINT."""
    import signal

    from ..warden.connections import watching

    authority = _authority(args)
    servers, _ = _servers(args)
    if servers is None:
        print("studroom auth warden: no NATS server (--servers, STUDROOM_NATS_URL or a running room)", file=sys.stderr)
        return 2

    async def watch() -> None:
        async with watching(servers, authority):
            stop = asyncio.Event()
            for sig in (signal.SIGTERM, signal.SIGINT):
                asyncio.get_running_loop().add_signal_handler(sig, stop.set)
            print(f"studroom auth warden: capping connections on {servers}", flush=True)
            await stop.wait()

    asyncio.run(watch())
    return 0


def server_config_text(authority) -> str:  # noqa: ANN001
    """What the NATS server's configuration includes (studroom-auth.conf): the operator
    JWT, the system account and the accounts, preloaded. It holds no secret."""
    return (f"# Studroom's NATS trust: operator mode, from the Authority in {authority.folder}.\n"
            "# Generated by `studroom auth server-config`; no secret in here. Included by studroom.conf.\n"
            + json.dumps(authority.server_config(), indent=2) + "\n")


def _server_config(args: argparse.Namespace) -> int:
    sys.stdout.write(server_config_text(_authority(args)))
    return 0


def _service_creds(args: argparse.Namespace) -> int:
    """Each service's credentials, issued once and renewed past half their lifetime;
    with ``--into``, installed there (0400, ``--owner``'s) for the services to read: run
    it again often (deploy/systemd/studroom-creds.timer) and the services reconnect
    with the renewed files before the old ones end."""
    from ..auth.powers import IDENTITIES

    authority = _authority(args)
    for name in IDENTITIES:                   # each service's own and its door's (powers.door_identity)
        path = authority.ensure("service", name)
        print(_install(path, Path(args.into), args.owner) if args.into else path)
    return 0


def _install(path: Path, folder: Path, owner: str | None) -> Path:
    """A copy of the credentials ``path`` in ``folder``, replaced at once, mode 0400,
    owned by ``owner`` (a user name or id) if given."""
    import os
    import pwd
    import shutil
    import tempfile

    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.")
    os.close(fd)
    shutil.copyfile(path, temporary)
    os.chmod(temporary, 0o400)
    if owner is not None:
        uid = int(owner) if owner.isdecimal() else pwd.getpwnam(owner).pw_uid
        os.chown(temporary, uid, -1)
    os.replace(temporary, folder / path.name)
    return folder / path.name


def _tls(args: argparse.Namespace) -> int:
    """A NATS server's TLS files from the room's CA (services/auth/tls.py): print their paths."""
    from ..auth import tls

    ca_dir = Path(args.ca_dir) if args.ca_dir else _authority(args).folder / "tls"
    try:
        written = tls.write_server_files(ca_dir, Path(args.out), args.host, args.days)
    except ValueError as e:
        print(f"studroom auth tls: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


def _add_tls_command(what: argparse._SubParsersAction) -> None:
    tls = what.add_parser("tls", help="make the room's CA (once) and a NATS server's certificate; print the paths")
    tls.add_argument("--out", required=True, help="where the server's files go (e.g. /etc/nats/tls)")
    tls.add_argument("--host", action="append", required=True,
                     help="a DNS name or IP address clients and the other nodes reach it by (repeatable)")
    tls.add_argument("--ca-dir", default=None, help="the CA's folder, private (default: tls/ in the Authority's)")
    tls.add_argument("--days", type=int, default=365, help="the server certificate's life (default 365)")
    tls.add_argument("--auth-dir", default=None, help=AUTH_DIR_HELP)
    tls.set_defaults(run=_tls)


def add_commands(commands: argparse._SubParsersAction) -> None:
    for role, who in (("player", "a player (his own seat only)"),
                      ("operator", "an operator (tables, live-dealer input, the cashier desk)")):
        group = commands.add_parser(role, help=f"NATS identities of {role}s").add_subparsers(dest=role, required=True)
        add = group.add_parser("add", help=f"create {who} and print the path of its NATS credentials")
        add.add_argument("name", help="1..64 letters, digits, '_' or '-'")
        add.add_argument("--auth-dir", default=None, help=AUTH_DIR_HELP)
        given = add.add_mutually_exclusive_group()
        given.add_argument("--password", action="store_true",
                           help="set a password for the web console too (prompted, not echoed)")
        given.add_argument("--password-stdin", action="store_true",
                           help="set a password for the web console, read as one line from stdin (scripts)")
        add.set_defaults(run=partial(_add_identity, role))
        revoke = group.add_parser("revoke", help=f"revoke {who} at once: disconnected and refused")
        revoke.add_argument("name", help="the name given to add")
        revoke.add_argument("--auth-dir", default=None, help=AUTH_DIR_HELP)
        revoke.add_argument("--servers", default=None, help=SERVERS_HELP)
        revoke.set_defaults(run=partial(_revoke_identity, role))
    auth = commands.add_parser("auth", help="the NATS server's trust settings and the services' credentials")
    what = auth.add_subparsers(dest="auth", required=True)
    config = what.add_parser("server-config", help="print the trust part of the NATS configuration (studroom-auth.conf)")
    creds = what.add_parser("service-creds", help="issue each service's credentials (once; again past half "
                                                  "their lifetime) and print their paths")
    for parser, run in ((config, _server_config), (creds, _service_creds)):
        parser.add_argument("--auth-dir", default=None, help=AUTH_DIR_HELP)
        parser.set_defaults(run=run)
    creds.add_argument("--into", default=None, help="install a copy of each there (0400) and print those paths")
    warden = what.add_parser("warden", help="cap each player's and operator's connections (NATS counts only the "
                                            "account's) until stopped")
    warden.add_argument("--auth-dir", default=None, help=AUTH_DIR_HELP)
    warden.add_argument("--servers", default=None, help=SERVERS_HELP)
    warden.set_defaults(run=_warden)
    creds.add_argument("--owner", default=None, help="the copies' owner (user name or id; needs root)")
    _add_tls_command(what)
