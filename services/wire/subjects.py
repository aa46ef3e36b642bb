"""Every NATS subject and stream name Studroom uses, built in this ONE module.

Commands (request/reply; who may send what: docs/design/trust.md)
    Each sender sends to a subject of his role that ends in his own name:
        ``studroom.cmd.<table>.<player>``    a player, for himself
        ``studroom.op.<table>.<operator>``   an operator (floor, live dealer, cashier desk)
        ``studroom.svc.<table>.<service>``   a service (the timer; later the cashier)
    The NATS server maps all three deterministically onto the table's partition,
    ``studroom.pcmd.<p>.<table>.<role>.<name>`` (``{{partition(N,1)}}``, see
    :func:`role_command_mapping`), and exactly one table-service instance at a time
    serves each partition.  A user may publish only to mapped subjects ending in his
    own role and name (the server checks permissions on the MAPPED subject), so the
    table service reads the sender from the subject (:func:`sender_of`), never from
    the body.  Replies go to the sender's own inbox, ``_INBOX.<role>.<name>.*``, and
    nowhere else (every responder's door: services/wire/door.py).

Events (JetStream, written only by the relay)
    ``studroom.pub.<table_id>``            public view of every event (no hidden card,
                                           no seed before its time: rule R33)
    ``studroom.priv.<player>.<table_id>``  one player's private copies (his own down
                                           cards); only he and the services may read it

The cashier (request/reply)
    ``studroom.cashier.<role>.<name>``     a player's or an operator's requests (balance,
                                           movements, buy-ins; deposits, withdrawals)

Players' histories (request/reply)
    ``studroom.history.<role>.<name>``     a player's requests about his own hands, an
                                           operator's about anyone's

Relay
    ``studroom.relay.nudge.<store>``       core NATS nudge: "store <store> has new events"
                                           (KV bucket ``studroom_relay`` keeps positions)

Timers (JetStream stream ``STUDROOM_TIMERS``, written only by the timer service)
    ``studroom.timer.sched.<table_id>``    the table's one pending timer (a message
                                           schedule: ``Nats-Schedule: @at <time>``)
    ``studroom.timer.fire.<table_id>``     where the server publishes it when due

Discovery and health (NATS micro: docs/design/observability.md)
    ``$SRV.PING|INFO|STATS[.<name>[.<id>]]``  every service instance answers
    ``studroom.health.<service>.<role>.<name>``  an operator asks; one instance answers

The lobby (KV bucket ``studroom_lobby``, written only by the lobby service)
    ``studroom.lobby.query.<role>.<name>`` request/reply: the lobby's tables (anyone,
                                           in his own name)
    ``$KV.studroom_lobby.<table_id>``      every write of a table's entry (anyone may
                                           subscribe: a live lobby without JetStream)

Ids used in subjects are names (studroom.domain.names): 1..64 letters, digits, ``_``
and ``-``.
"""

from __future__ import annotations

from studroom.domain.names import NAME_RULE, is_name

PREFIX = "studroom"
PARTITIONS = 16                       # fixed for the life of an installation

PUBLIC_STREAM = "STUDROOM_PUBLIC"
PRIVATE_STREAM = "STUDROOM_PRIVATE"


class BadName(ValueError):
    """An id that cannot be a subject token."""


def check_name(name: str) -> str:
    if not is_name(name):
        raise BadName(f"{name!r}: ids are {NAME_RULE}")
    return name


# Who sends a command (the trust boundary: see the module docstring)

ROLES = ("player", "operator", "service")
_ROLE_TOKEN = {"player": "cmd", "operator": "op", "service": "svc"}


def command_from(role: str, name: str, table_id: str) -> str:
    """Where ``name`` (of ``role``) sends a command for a table."""
    return f"{PREFIX}.{_ROLE_TOKEN[role]}.{check_name(table_id)}.{check_name(name)}"


def role_command_mapping(partitions: int = PARTITIONS) -> dict[str, str]:
    """The server-side subject mappings of the three roles' command subjects."""
    return {
        f"{PREFIX}.{token}.*.*":
            f"{PREFIX}.pcmd.{{{{partition({partitions},1)}}}}.{{{{wildcard(1)}}}}.{role}.{{{{wildcard(2)}}}}"
        for role, token in _ROLE_TOKEN.items()
    }


def commands_in_partition(partition: int) -> str:
    """What the owner of a partition subscribes to: every sender's commands."""
    return f"{PREFIX}.pcmd.{partition}.>"


def commands_as(role: str, name: str) -> str:
    """The one (mapped) subject pattern a user may publish commands to: his own."""
    return f"{PREFIX}.pcmd.*.*.{role}.{check_name(name)}"


PREFLIGHT_TABLE = "studroom_preflight"    # the table id of the start-up check of the mapping


def preflight_probe(role: str, name: str) -> str:
    """Where a sender's probe command lands when the server maps it (the start-up
    check, ``runtime/preflight.py``): he may publish and read only his own."""
    return f"{PREFIX}.pcmd.*.{PREFLIGHT_TABLE}.{role}.{check_name(name)}"


def sender_of(subject: str) -> tuple[str, str, str]:
    """``studroom.pcmd.<p>.<table>.<role>.<name>`` -> (table, role, name); BadName for
    any other subject."""
    parts = subject.split(".")
    if len(parts) != 6 or parts[4] not in ROLES:
        raise BadName(f"{subject!r} is not a command subject")
    return check_name(parts[3]), parts[4], check_name(parts[5])


def inbox_prefix(role: str, name: str) -> str:
    """A user's own reply inbox (nats-py ``inbox_prefix``): only he may read it."""
    return f"_INBOX.{role}.{check_name(name)}"


def public_events(table_id: str) -> str:
    return f"{PREFIX}.pub.{check_name(table_id)}"


def all_public_events() -> str:
    return f"{PREFIX}.pub.>"


def private_events(player: str, table_id: str) -> str:
    return f"{PREFIX}.priv.{check_name(player)}.{check_name(table_id)}"


def player_private_events(player: str) -> str:
    """Everything private to one player (his permission in deploy/ allows just this)."""
    return f"{PREFIX}.priv.{check_name(player)}.>"


def all_private_events() -> str:
    return f"{PREFIX}.priv.>"


def table_private_events(table_id: str) -> str:
    """Every player's private copies at one table (the relay's recovery scan; never a
    client permission)."""
    return f"{PREFIX}.priv.*.{check_name(table_id)}"


# The cashier (services/cashier/): requests by request/reply, the sender in the subject

CASHIER_ROLES = ("player", "operator")


def cashier_requests(role: str, name: str) -> str:
    """Where a player or an operator sends his requests to the cashier (only he may)."""
    if role not in CASHIER_ROLES:
        raise BadName(f"{role!r} sends no requests to the cashier")
    return f"{PREFIX}.cashier.{role}.{check_name(name)}"


def all_cashier_requests() -> str:
    return f"{PREFIX}.cashier.*.*"


def cashier_sender(subject: str) -> tuple[str, str]:
    """``studroom.cashier.<role>.<name>`` -> (role, name); BadName for any other subject."""
    parts = subject.split(".")
    if len(parts) != 4 or parts[:2] != [PREFIX, "cashier"] or parts[2] not in CASHIER_ROLES:
        raise BadName(f"{subject!r} is not a cashier request subject")
    return parts[2], check_name(parts[3])


# Players' histories (projections/history/): requests by request/reply, the sender in the subject

HISTORY_ROLES = ("player", "operator")


def history_requests(role: str, name: str) -> str:
    """Where a player (about himself) or an operator asks for hand histories."""
    if role not in HISTORY_ROLES:
        raise BadName(f"{role!r} asks for no history")
    return f"{PREFIX}.history.{role}.{check_name(name)}"


def all_history_requests() -> str:
    return f"{PREFIX}.history.*.*"


def history_sender(subject: str) -> tuple[str, str]:
    """``studroom.history.<role>.<name>`` -> (role, name); BadName for any other subject."""
    parts = subject.split(".")
    if len(parts) != 4 or parts[:2] != [PREFIX, "history"] or parts[2] not in HISTORY_ROLES:
        raise BadName(f"{subject!r} is not a history request subject")
    return parts[2], check_name(parts[3])


# The relay (services/relay.py)

RELAY_BUCKET = "studroom_relay"       # JetStream KV: one position record per event store


def relay_nudge(store: str) -> str:
    """Core NATS (no JetStream): the table service publishes here after each commit to
    store ``store`` (its schema name, e.g. ``studroom_p3``) so the relay reads at once."""
    return f"{PREFIX}.relay.nudge.{check_name(store)}"


# The timer service (services/timer_service.py)

TIMER_STREAM = "STUDROOM_TIMERS"      # JetStream, message schedules on, work-queue retention


def timer_schedule(table_id: str) -> str:
    """A table's ONE pending timer (a JetStream message schedule; publishing again
    replaces it)."""
    return f"{PREFIX}.timer.sched.{check_name(table_id)}"


def timer_fire(table_id: str) -> str:
    """Where the server publishes a table's timer when it is due."""
    return f"{PREFIX}.timer.fire.{check_name(table_id)}"


def all_timer_schedules() -> str:
    return f"{PREFIX}.timer.sched.*"


def all_timer_fires() -> str:
    return f"{PREFIX}.timer.fire.*"


# The lobby (projections/lobby/; its bucket's name: projections/lobby/jetstream.py)


HEALTH_ROLES = ("operator",)


def health(service: str, role: str, name: str) -> str:
    """Where ``name`` (an operator) asks a service's instances "are you well"
    (request/reply, one answers; only he may send here)."""
    if role not in HEALTH_ROLES:
        raise BadName(f"{role!r} asks no service's health")
    return f"{PREFIX}.health.{check_name(service)}.{role}.{check_name(name)}"


def health_asked(service: str) -> str:
    """What a service's instances answer: every operator's health requests."""
    return f"{PREFIX}.health.{check_name(service)}.*.*"


def health_as(role: str, name: str) -> str:
    """The health requests ``name`` may send: to any service, as himself."""
    return f"{PREFIX}.health.*.{role}.{check_name(name)}"


def health_sender(subject: str) -> tuple[str, str]:
    """``studroom.health.<service>.<role>.<name>`` -> (role, name); BadName for any other subject."""
    parts = subject.split(".")
    if len(parts) != 5 or parts[:2] != [PREFIX, "health"] or parts[3] not in HEALTH_ROLES:
        raise BadName(f"{subject!r} is not a health request subject")
    return parts[3], check_name(parts[4])


DISCOVERY = "$SRV.>"                  # NATS micro: $SRV.PING|INFO|STATS[.<name>[.<id>]]


LOBBY_ROLES = ("player", "operator", "spectator", "service")


def lobby_query(role: str, name: str) -> str:
    """Where ``name`` (of any role) asks the lobby (request/reply, answered by one lobby
    instance; only he may send here)."""
    if role not in LOBBY_ROLES:
        raise BadName(f"no role {role!r}")
    return f"{PREFIX}.lobby.query.{role}.{check_name(name)}"


def all_lobby_queries() -> str:
    return f"{PREFIX}.lobby.query.*.*"


def lobby_asker(subject: str) -> tuple[str, str]:
    """``studroom.lobby.query.<role>.<name>`` -> (role, name); BadName for any other subject."""
    parts = subject.split(".")
    if len(parts) != 5 or parts[:3] != [PREFIX, "lobby", "query"] or parts[3] not in LOBBY_ROLES:
        raise BadName(f"{subject!r} is not a lobby query subject")
    return parts[3], check_name(parts[4])


def lobby_changes(bucket: str) -> str:
    """Every write of the lobby's bucket, as core NATS messages (its KV subjects)."""
    return f"$KV.{bucket}.>"
