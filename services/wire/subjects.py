"""Every NATS subject, stream and bucket name Studroom uses, built in this ONE module.

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
    ``studroom.pub.<table_id>.<mark>``     public views of a run of a table's events, one
                                           message per commit (no hidden card, no seed
                                           before its time: rule R33); the mark names who
                                           wants it (``turn``, ``left``, ``turn_left``,
                                           ``plain``), so a consumer that needs a few kinds
                                           (the cashier, the timer) filters on them and the
                                           server never sends it the rest
    ``studroom.priv.<player>.<table_id>``  one player's private copies (his own down
                                           cards); only he and the services may read it
    Each message's headers ``Studroom-Events`` and ``Studroom-Version`` name its events'
    types and the table's version after the last (read them without parsing the body);
    the format, written and read in one place: ``event_messages.py``.

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
    ``studroom.timer.turn.<table_id>``     core NATS, instance to instance: "this table's
                                           turn N is set in my wheel" (drop your older one)

Discovery and health (NATS micro: docs/design/observability.md)
    ``$SRV.PING|INFO|STATS[.<name>[.<id>]]``  every service instance answers
    ``studroom.health.<service>.<role>.<name>``  an operator asks; one instance answers

The lobby (KV bucket ``studroom_lobby``, written only by the lobby service)
    ``studroom.lobby.query.<role>.<name>`` request/reply: the lobby's tables (anyone,
                                           in his own name)
    ``$KV.studroom_lobby.<table_id>``      every write of a table's entry (anyone may
                                           subscribe: a live lobby without JetStream)

The server's own subjects, as our permissions and clients name them
    ``_INBOX.<role>.<name>.*``             a user's replies (above)
    ``$KV.<bucket>.<key>``                 a write of a KV bucket's key; the bucket is the
                                           stream ``KV_<bucket>``
    ``$JS.API.>``                          JetStream's API (only services may use it)

Ids used in subjects are names (studroom.domain.names): 1..64 letters, digits, ``_``
and ``-``.
"""

from __future__ import annotations

from studroom.domain.names import NAME_RULE, is_name

PREFIX = "studroom"
PARTITIONS = 16                       # fixed for the life of an installation

PUBLIC_STREAM = "STUDROOM_PUBLIC"
PRIVATE_STREAM = "STUDROOM_PRIVATE"
EVENTS_HEADER = "Studroom-Events"     # the relay names a message's event types here ...
VERSION_HEADER = "Studroom-Version"   # ... and its table's version after the last


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


def partition_command(partition: int, table_id: str, role: str, name: str) -> str:
    """Where the server maps ``name``'s command for a table (in partition ``partition``)."""
    return f"{PREFIX}.pcmd.{partition}.{check_name(table_id)}.{role}.{check_name(name)}"


def commands_in_partition(partition: int) -> str:
    """What the owner of a partition subscribes to: every sender's commands."""
    return f"{PREFIX}.pcmd.{partition}.>"


def all_commands() -> str:
    """Every sender's commands in every partition (the table service's door answers them)."""
    return f"{PREFIX}.pcmd.>"


def commands_as(role: str, name: str) -> str:
    """The one (mapped) subject pattern a user may publish commands to: his own."""
    return f"{PREFIX}.pcmd.*.*.{role}.{check_name(name)}"


PREFLIGHT_TABLE = "studroom_preflight"    # the table id of the start-up check of the mapping


def preflight_probe(role: str, name: str) -> str:
    """Where a sender's probe command lands when the server maps it (the start-up
    check, ``runtime/processes/preflight.py``): he may publish and read only his own."""
    return f"{PREFIX}.pcmd.*.{PREFLIGHT_TABLE}.{role}.{check_name(name)}"


def sender_of(subject: str) -> tuple[str, str, str]:
    """``studroom.pcmd.<p>.<table>.<role>.<name>`` -> (table, role, name); BadName for
    any other subject."""
    parts = subject.split(".")
    if len(parts) != 6 or parts[4] not in ROLES:
        raise BadName(f"{subject!r} is not a command subject")
    return check_name(parts[3]), parts[4], check_name(parts[5])


INBOXES = "_INBOX"


def inbox_prefix(role: str, name: str) -> str:
    """A user's own reply inbox (nats-py ``inbox_prefix``): only he may read it."""
    return f"{INBOXES}.{role}.{check_name(name)}"


def inbox(role: str, name: str) -> str:
    """Every reply to ``name`` (what he subscribes to)."""
    return f"{inbox_prefix(role, name)}.>"


def role_inboxes(role: str) -> str:
    """Every reply to any user of ``role``."""
    return f"{INBOXES}.{role}.>"


def all_inboxes() -> str:
    """Every reply to anyone (a door that answers players, spectators and operators)."""
    return f"{INBOXES}.>"


def public_message(table_id: str, mark: str) -> str:
    """Where the relay publishes public views of a table's events (``mark``:
    ``event_messages.mark_of``)."""
    return f"{PREFIX}.pub.{check_name(table_id)}.{check_name(mark)}"


def public_events(table_id: str) -> str:
    """Every public event of one table."""
    return f"{PREFIX}.pub.{check_name(table_id)}.*"


def table_of_public(subject: str) -> str:
    """``studroom.pub.<table>.<mark>`` -> the table's id; BadName for any other subject."""
    parts = subject.split(".")
    if len(parts) != 4 or parts[1] != "pub":
        raise BadName(f"{subject!r} is not a public event subject")
    return check_name(parts[2])


def public_marked(mark: str) -> str:
    """The public messages of one mark at every table (a filtered consumer's subject)."""
    return f"{PREFIX}.pub.*.{check_name(mark)}"


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


# Requests by request/reply with the sender in the subject: the cashier, the
# histories, the lobby and health.  One shape, ``<where>.<role>.<name>``, written once.


class Desk:
    """A responder's request subjects, ``<where>.<role>.<name>``: only ``name`` (of
    ``role``) may publish his own (his permissions pin it), so the responder reads the
    sender from the subject it received on.  A ``*`` token in ``where`` stands for any
    token (health: any service's)."""

    def __init__(self, where: str, roles: tuple[str, ...], asked: str) -> None:
        self.where, self.roles, self.asked = where, roles, asked
        self._tokens = where.split(".")

    def of(self, role: str, name: str, *, where: str | None = None) -> str:
        """Where ``name`` sends his requests (``where`` fills a ``*`` of the desk's)."""
        if role not in self.roles:
            raise BadName(f"{role!r} sends no requests to {self.asked}")
        return f"{where or self.where}.{role}.{check_name(name)}"

    def every(self) -> str:
        """Every sender's requests (what the responder subscribes to)."""
        return f"{self.where}.*.*"

    def sender(self, subject: str) -> tuple[str, str]:
        """``<where>.<role>.<name>`` -> (role, name); BadName for any other subject."""
        parts = subject.split(".")
        n = len(self._tokens)
        if (len(parts) != n + 2 or parts[n] not in self.roles
                or any(t not in ("*", p) for t, p in zip(self._tokens, parts))):
            raise BadName(f"{subject!r} is not a request subject of {self.asked}")
        return parts[n], check_name(parts[n + 1])


CASHIER = Desk(f"{PREFIX}.cashier", ("player", "operator"), "the cashier")
CASHIER_ROLES = CASHIER.roles
cashier_requests, all_cashier_requests, cashier_sender = CASHIER.of, CASHIER.every, CASHIER.sender

HISTORY = Desk(f"{PREFIX}.history", ("player", "operator"), "the histories")   # a player about himself
HISTORY_ROLES = HISTORY.roles
history_requests, all_history_requests, history_sender = HISTORY.of, HISTORY.every, HISTORY.sender


# JetStream KV buckets: each is written by one service alone (services/auth/powers.py)

RELAY_BUCKET = "studroom_relay"       # the relay's (services/relay/): one position record per event store
DEAD_LETTER_BUCKET = "studroom_dead_letters"   # one record per message set aside (wire/dead_letters.py)
LEASE_BUCKET = "studroom_leases"      # the table service's (services/table/partitions.py): key = partition,
                                      # value = the instance holding it
LOBBY_BUCKET = "studroom_lobby"       # the lobby's (projections/lobby/): key = table id, value = a
                                      # LobbyEntry (projections/lobby/entry.py)


def bucket_writes(bucket: str) -> str:
    """Every write of a KV bucket's keys (a KV put is a publish here)."""
    return f"$KV.{bucket}.>"


def bucket_stream(bucket: str) -> str:
    """The JetStream stream that holds a KV bucket."""
    return f"KV_{bucket}"


# JetStream's API, where permissions and pull consumers name it

JETSTREAM = "$JS.>"                   # all of JetStream: a service's power
CONSUMER_INFO = "$JS.API.CONSUMER.INFO.>"     # read-only: a consumer's state (its lag)


def stream_api(api: str, stream: str) -> str:
    """A JetStream request about one stream (``api``: ``CREATE``, ``PURGE``, ...)."""
    return f"$JS.API.STREAM.{api}.{stream}"


def consumer_next(stream: str, consumer: str) -> str:
    """Where a pull consumer's client asks for its next messages."""
    return f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"


# The relay (services/relay/)

def relay_nudge(store: str) -> str:
    """Core NATS (no JetStream): the table service publishes here after each commit to
    store ``store`` (its schema name, e.g. ``studroom_p3``) so the relay reads at once."""
    return f"{PREFIX}.relay.nudge.{check_name(store)}"


def all_relay_nudges() -> str:
    return f"{PREFIX}.relay.nudge.>"


# The timer service (services/timer/)

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


def turn_notice(table_id: str) -> str:
    """Core NATS, to every timer instance: the table's turn set in one instance's wheel."""
    return f"{PREFIX}.timer.turn.{check_name(table_id)}"


def all_turn_notices() -> str:
    return f"{PREFIX}.timer.turn.*"


def all_timer_subjects() -> str:
    """Schedules, fires and turn notices: what only the timer service may publish."""
    return f"{PREFIX}.timer.>"


# Discovery and health (services/runtime/processes/observe.py)

HEALTH = Desk(f"{PREFIX}.health.*", ("operator",), "a service's health")   # one instance answers
HEALTH_ROLES = HEALTH.roles
health_sender = HEALTH.sender


def health(service: str, role: str, name: str) -> str:
    """Where ``name`` (an operator) asks a service's instances "are you well"."""
    return HEALTH.of(role, name, where=f"{PREFIX}.health.{check_name(service)}")


def health_asked(service: str) -> str:
    """What a service's instances answer: every operator's health requests."""
    return f"{PREFIX}.health.{check_name(service)}.*.*"


def health_as(role: str, name: str) -> str:
    """The health requests ``name`` may send: to any service, as himself."""
    return HEALTH.of(role, name)


DISCOVERY = "$SRV.>"                  # NATS micro: $SRV.PING|INFO|STATS[.<name>[.<id>]]
DISCOVERY_STATS = "$SRV.STATS"        # every instance of every service answers its counters


# The lobby (projections/lobby/)

LOBBY = Desk(f"{PREFIX}.lobby.query", ("player", "operator", "spectator", "service"), "the lobby")  # anyone
LOBBY_ROLES = LOBBY.roles
lobby_query, all_lobby_queries, lobby_asker = LOBBY.of, LOBBY.every, LOBBY.sender


def lobby_changes(bucket: str = LOBBY_BUCKET) -> str:
    """Every write of the lobby's bucket, as core NATS messages (its KV subjects)."""
    return bucket_writes(bucket)
