"""Each role's terms: what one of its connections may hold, and how long its credentials last.

The server enforces ``subs`` and ``payload`` on every connection of a user (the N+1st
subscription is refused with ``maximum subscriptions exceeded``, a larger message closes
the connection with ``Maximum Payload Violation``) and closes a connection when its JWT
expires.  ``data`` is stated in the JWT but nats-server (2.15) does not enforce it for
client connections.  NATS has no per-user connection count: the account's ``conn`` caps
all connections of the room's account, and the warden (warden/connections.py) each identity's
(docs/design/trust.md, "Quotas").
Figures and reasoning: docs/design/trust.md, "Quotas" and "Credentials that end".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.protocol import MAX_REQUEST_BYTES

HOUR = 3600
DAY = 24 * HOUR
KIB = 1024
MIB = 1024 * KIB
UNLIMITED = -1

# Connections of the whole STUDROOM account (players, operators, spectators, services):
# a room of a few thousand players with two connections each, and its services.
ACCOUNT_CONNECTIONS = 10_000


@dataclass(frozen=True)
class Terms:
    subs: int          # subscriptions per connection
    payload: int       # bytes per published message (headers included)
    data: int          # bytes a connection is meant to send (stated; not enforced by nats-server)
    lifetime: int      # seconds from issue to the JWT's ``exp``
    connections: int | None = None   # at once, counted by the warden (warden/connections.py); None: no cap

    def limits(self) -> dict[str, int]:
        """The user JWT's limit claims."""
        return {"subs": self.subs, "data": self.data, "payload": self.payload}


# A request body is at most MAX_REQUEST_BYTES (refused unread above); twice that leaves
# room for headers, and anything larger is no honest request: the server drops the connection.
_REQUEST = 2 * MAX_REQUEST_BYTES

_TERMS = {
    # An honest client: its inbox, the public and private subjects of each table it
    # follows, the lobby's changes (a handful per table, a few tables at once).
    # Connections: one or two per device, a handful of devices.
    "player": Terms(subs=200, payload=_REQUEST, data=64 * MIB, lifetime=7 * DAY, connections=5),
    # Staff watch many tables; their powers are larger, so their credentials end sooner.
    "operator": Terms(subs=500, payload=_REQUEST, data=64 * MIB, lifetime=1 * DAY, connections=10),
    # One public identity shared by everyone: the limits are per connection, so they
    # bound what each anonymous connection costs (it only asks the lobby and listens).
    # A subscription per table followed: the room's own fan-out to its bots follows
    # every table on one spectator connection (services/room/bots.py), up to 1,000.
    "spectator": Terms(subs=1_000, payload=4 * KIB, data=4 * MIB, lifetime=7 * DAY),
    # The room itself: every table's events, JetStream's API, NATS micro endpoints.
    # Short-lived: renewed by the room (runtime/processes/credentials.py) before they end.
    "service": Terms(subs=100_000, payload=1 * MIB, data=UNLIMITED, lifetime=1 * DAY),
    # The system account's own users the Authority makes: the one that pushes an account
    # update (revocations) and the warden (renewed like a service).
    "system": Terms(subs=10, payload=64 * KIB, data=UNLIMITED, lifetime=1 * DAY),
}


def of(role: str) -> Terms:
    try:
        return _TERMS[role]
    except KeyError:
        raise ValueError(f"no role {role!r}") from None
