"""Each role's powers as NATS permissions: what a user may publish and subscribe to.

The server enforces these; the table service enforces the rest (a player acts only
for the seat he holds, operators and services only with their commands: the domain's
``studroom.domain.authority``).  Services may use JetStream (``$JS.>``): they are the
only ones who may read the streams, the private one included.  Players, operators and
spectators may not: they get live messages on their subjects, and a player who
reconnects asks his table for its current state as he may see it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..wire import subjects
from ..wire.subjects import (
    DEAD_LETTER_BUCKET,
    JETSTREAM,
    LEASE_BUCKET,
    LOBBY_BUCKET,
    RELAY_BUCKET,
)

SERVICES = ("table", "relay", "timer", "projections", "cashier", "lobby", "history", "ledger")
DOOR = "-door"                  # a service's second identity: its connection that answers requests


def door_identity(service_name: str) -> str:
    """The identity of ``service_name``'s door: the connection on which it serves
    requests (and is observed), which may publish nothing but replies."""
    return f"{service_name}{DOOR}"


IDENTITIES = (*SERVICES, *(door_identity(name) for name in SERVICES))     # every service identity issued


@dataclass(frozen=True)
class Powers:
    publish: list[str]
    subscribe: list[str]
    deny_publish: list[str] = field(default_factory=list)    # refused where ``publish`` allows (NATS: deny wins)


# Anyone may ask the lobby (in his own name) and follow its bucket's writes (a live lobby without JetStream).
_LOBBY_READ = (subjects.lobby_changes(),)


def player(name: str) -> Powers:
    """Commands and cashier requests for himself; public events; his own private events and inbox."""
    return Powers(
        publish=[subjects.commands_as("player", name), subjects.cashier_requests("player", name),
                 subjects.lobby_query("player", name), subjects.history_requests("player", name)],
        subscribe=[subjects.all_public_events(), subjects.player_private_events(name), subjects.inbox("player", name),
                   *_LOBBY_READ],
    )


def operator(name: str) -> Powers:
    """Operator commands (tables, live-dealer input) and cashier requests; public events; his inbox;
    the services' discovery and health (``studroom health``)."""
    return Powers(
        publish=[subjects.commands_as("operator", name), subjects.cashier_requests("operator", name),
                 subjects.lobby_query("operator", name), subjects.history_requests("operator", name),
                 subjects.DISCOVERY, subjects.health_as("operator", name)],
        subscribe=[subjects.all_public_events(), subjects.inbox("operator", name), *_LOBBY_READ],
    )


def spectator(name: str) -> Powers:
    """Public events and the lobby only; may send no command."""
    return Powers(publish=[subjects.lobby_query("spectator", name)],
                  subscribe=[subjects.all_public_events(), subjects.inbox("spectator", name), *_LOBBY_READ])


def service(name: str) -> Powers:
    """Each service's own subjects (see docs/design/trust.md); a service's door
    (``<service>-door``) serves its requests and being observed (discovery ``$SRV.>``
    and its health subject) and may publish replies only: to any inbox where the
    service answers players or spectators, else to operators' (``studroom health``).
    No service's own identity may publish to an inbox: a reply subject the client chose
    never meets the powers of ``$KV`` or ``$JS`` (issue 16)."""
    if name.endswith(DOOR):
        return _door_powers(name.removesuffix(DOOR))
    own = _own_powers(name)
    return dataclasses.replace(own, deny_publish=_others_buckets(name) if own.publish else [])


# Each of these buckets is written and managed by its service alone, and each of these
# streams managed by its service alone: another service's JetStream powers ($JS.>) may
# read them (and consume the streams), not purge, delete or rewrite them (issue 16).
_OWNED_BUCKETS = {"table": LEASE_BUCKET, "relay": RELAY_BUCKET, "lobby": LOBBY_BUCKET}
_OWNED_STREAMS = {"relay": (subjects.PUBLIC_STREAM, subjects.PRIVATE_STREAM), "timer": (subjects.TIMER_STREAM,)}
_MANAGING = ("CREATE", "UPDATE", "DELETE", "PURGE", "RESTORE", "MSG.DELETE")


def _others_buckets(name: str) -> list[str]:
    """What service ``name`` may not publish: writes to other services' buckets, and
    the JetStream requests that would manage their buckets' and their own streams."""
    buckets = {owner: [subjects.bucket_stream(bucket)] for owner, bucket in _OWNED_BUCKETS.items()}
    streams = {owner: [*buckets.get(owner, []), *_OWNED_STREAMS.get(owner, ())]
               for owner in {*buckets, *_OWNED_STREAMS}}
    return [*(subjects.bucket_writes(bucket) for owner, bucket in _OWNED_BUCKETS.items() if owner != name),
            *(subjects.stream_api(api, stream) for owner in sorted(streams) if owner != name
              for stream in streams[owner] for api in _MANAGING)]


def _door_powers(name: str) -> Powers:
    _own_powers(name)                      # a service's door, or none
    asked = {
        "table": [subjects.all_commands()],
        "cashier": [subjects.all_cashier_requests()],
        "lobby": [subjects.all_lobby_queries()],
        "history": [subjects.all_history_requests()],
    }.get(name, [])
    # its observer reads its consumers' lag too: a read-only JetStream request, whose
    # answer comes to the door's own inbox
    return Powers(publish=[subjects.all_inboxes() if asked else subjects.role_inboxes("operator"),
                           subjects.CONSUMER_INFO],
                  subscribe=[*asked, subjects.DISCOVERY, subjects.health_asked(name),
                             subjects.inbox("service", door_identity(name))])


_DEAD_LETTERS = subjects.bucket_writes(DEAD_LETTER_BUCKET)     # a JetStream consumer sets messages aside


def _own_powers(name: str) -> Powers:
    own_inbox = subjects.inbox("service", name)
    if name == "table":
        return Powers(
            publish=[JETSTREAM, subjects.bucket_writes(LEASE_BUCKET), subjects.all_relay_nudges(),
                     subjects.preflight_probe("service", name)],
            subscribe=[own_inbox, subjects.preflight_probe("service", name)],
        )
    if name == "relay":
        return Powers(
            publish=[JETSTREAM, subjects.bucket_writes(RELAY_BUCKET), _DEAD_LETTERS,
                     subjects.all_public_events(),
                     subjects.all_private_events()],
            subscribe=[subjects.all_relay_nudges(), own_inbox],
        )
    if name == "timer":
        return Powers(
            publish=[JETSTREAM, subjects.all_timer_subjects(), subjects.commands_as("service", "timer"),
                     _DEAD_LETTERS],
            subscribe=[own_inbox, subjects.preflight_probe("service", name), subjects.all_turn_notices()],
        )
    if name == "projections":           # a read-side tool's: reads the streams and buckets, writes none
        return Powers(publish=[JETSTREAM], subscribe=[own_inbox])
    if name == "lobby":
        return Powers(publish=[JETSTREAM, subjects.bucket_writes(LOBBY_BUCKET),
                               subjects.commands_as("service", "lobby"), _DEAD_LETTERS],
                      subscribe=[own_inbox, subjects.preflight_probe("service", name)])
    if name == "history":                 # serves requests only: all on its door
        return Powers(publish=[], subscribe=[])
    if name == "cashier":
        return Powers(publish=[JETSTREAM, subjects.commands_as("service", "cashier"), _DEAD_LETTERS],
                      subscribe=[own_inbox, subjects.preflight_probe("service", name)])
    if name == "ledger":                  # reads and writes PostgreSQL only: no power on NATS but being observed
        return Powers(publish=[], subscribe=[])
    raise ValueError(f"no service {name!r}; services: {', '.join(SERVICES)}")


def of(role: str, name: str) -> Powers:
    if role == "player":
        return player(name)
    if role == "operator":
        return operator(name)
    if role == "service":
        return service(name)
    if role == "spectator":
        return spectator(name)
    raise ValueError(f"no role {role!r}")
