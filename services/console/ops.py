"""The WebSocket's ops: each checked against the session's role, its arguments read
strictly, then carried out on the person's own NATS connection (his identity, his
permissions).  Answers and pushes: docs/design/console.md, "WebSocket".

An op is ``async def op(tab, args) -> dict`` (the answer's fields, ``ok`` included) or
raises :class:`OpError`; ``tab.after_answer`` runs once the answer is sent (a
``watch_table`` lets the events through after its view).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import nats.errors
import psycopg
from studroom.domain.commands import TableCommand
from studroom.projections.history import protocol as history
from studroom.projections.lobby.queries import LobbyQuery
from studroom.projections.lobby.watching import LobbyUnavailable, ask

from ..client.requests import Requests
from ..client.table import Refused
from ..wire import cashier_protocol, protocol, subjects
from ..wire.door import retry_after_ms
from .lobby_feed import LobbyFeed, tables_json
from .shapes import whole
from .links import event_pushes

log = logging.getLogger("studroom.console")

ANY = ("spectator", "player", "operator")
PEOPLE = ("player", "operator")
OPERATOR = ("operator",)
MOST_TABLES = 16                    # tables one tab follows at once

BAD_REQUEST = protocol.BAD_REQUEST
FORBIDDEN = "forbidden"
RATE_LIMITED = protocol.RATE_LIMITED
UNAVAILABLE = protocol.UNAVAILABLE


class OpError(Exception):
    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code, self.message, self.extra = code, message, extra

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.extra}


Handler = Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Op:
    roles: tuple[str, ...]
    run: Handler


OPS: dict[str, Op] = {}


def op(name: str, roles: tuple[str, ...]) -> Callable[[Handler], Handler]:
    def register(run: Handler) -> Handler:
        OPS[name] = Op(roles, run)
        return run
    return register


def register_external(name: str, roles: tuple[str, ...],
                      run: Callable[..., Awaitable[dict[str, Any]]]) -> None:
    """An op answered by another module's function ``run(link, args)`` (the desk's, the
    replay's): its ``Refused`` answers its code, the database or NATS away
    ``unavailable``, a ``ValueError`` ``bad_request``."""
    async def external(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return {"ok": True, **await run(tab.session.link, args)}
        except OpError:
            raise
        except Refused as e:
            raise OpError(e.code, e.message) from None
        except (psycopg.OperationalError, nats.errors.Error) as e:
            raise OpError(UNAVAILABLE, f"{type(e).__name__}: {str(e)[:200]}") from None
        except (ValueError, msgspec.ValidationError) as e:
            raise OpError(BAD_REQUEST, str(e)) from None
    OPS[name] = Op(roles, external)


def _only(args: dict[str, Any], *names: str) -> None:
    extra = sorted(set(args) - set(names))
    if extra:
        raise OpError(BAD_REQUEST, f"unknown argument(s): {', '.join(extra)}")


def _table(args: dict[str, Any]) -> str:
    table = args.get("table")
    if not isinstance(table, str) or not subjects.is_name(table):
        raise OpError(BAD_REQUEST, "table: a table id (letters, digits, '_' or '-') is required")
    return table


def _struct(value: Any, kind: Any, what: str) -> Any:
    if not isinstance(value, dict):
        raise OpError(BAD_REQUEST, f"{what}: a JSON object is required")
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as e:
        raise OpError(BAD_REQUEST, f"{what}: {e}") from None


def _lobby_refusal(e: LobbyUnavailable) -> OpError:
    code, _, message = str(e).partition(": ")
    return OpError(code, message) if message and subjects.is_name(code) else OpError(UNAVAILABLE, str(e))


# ---------------------------------------------------------------- the lobby


@op("lobby", ANY)
async def lobby(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    _only(args, "game", "stakes")
    query = _struct(args, LobbyQuery, "lobby")
    try:
        return {"ok": True, "tables": tables_json(await ask(tab.session.link.nc, query))}
    except LobbyUnavailable as e:
        raise _lobby_refusal(e) from None


@op("desk_tables", OPERATOR)
async def desk_tables(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Every table with its floor state ("open", "paused", "closing", "closed"), as the lobby has it."""
    _only(args)
    return await lobby(tab, {})


@op("watch_lobby", ANY)
async def watch_lobby(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    _only(args)
    link = tab.session.link
    if link.lobby is None:
        link.lobby = LobbyFeed(link.nc)
    if tab.lobby_listener is not None:
        return {"ok": True, "tables": link.lobby.tables()}

    def listener(tables: list[Any]) -> None:
        tab.send({"push": "lobby", "tables": tables})

    try:
        tables = await link.lobby.add(listener)
    except LobbyUnavailable as e:
        raise _lobby_refusal(e) from None
    tab.lobby_listener = listener
    return {"ok": True, "tables": tables}


@op("unwatch_lobby", ANY)
async def unwatch_lobby(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    _only(args)
    await tab.unwatch_lobby()
    return {"ok": True}


# ---------------------------------------------------------------- a table


class TableListener:
    """A tab's events of one table: held back until its view is answered, then sent."""

    def __init__(self, tab: Any, table: str) -> None:
        self.tab, self.table = tab, table
        self.held: list[dict[str, Any]] | None = []

    def __call__(self, msg: Any) -> None:
        pushes = event_pushes(self.table, msg)
        if self.held is None:
            for push in pushes:
                self.tab.send(push)
        else:
            self.held += pushes

    def release(self) -> None:
        held, self.held = self.held or [], None
        for push in held:
            self.tab.send(push)


def table_subjects(role: str, name: str, table: str) -> list[str]:
    """What an identity follows of a table: its public events, and a player his own
    private copies (a spectator's or operator's connection never subscribes to a
    private subject)."""
    own = [subjects.private_events(name, table)] if role == "player" else []
    return [subjects.public_events(table), *own]


@op("watch_table", ANY)
async def watch_table(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    _only(args, "table")
    table = _table(args)
    if table in tab.tables:
        raise OpError(BAD_REQUEST, f"already watching table {table}")
    if len(tab.tables) >= MOST_TABLES:
        raise OpError(BAD_REQUEST, f"at most {MOST_TABLES} tables at once: unwatch one first")
    link = tab.session.link
    listener = TableListener(tab, table)
    tab.tables[table] = listener
    try:
        for subject in table_subjects(link.role, link.name, table):
            await link.hub.add(subject, listener)
        await link.nc.flush()
        answer = await _initial_view(link, table)
    except BaseException:
        await tab.unwatch_table(table)
        raise
    tab.after_answer(listener.release)
    return {"ok": True, **answer}


async def _initial_view(link: Any, table: str) -> dict[str, Any]:
    if link.table is None:                  # a spectator: the lobby's entry, with its running hand
        try:
            entry, = await ask(link.nc, LobbyQuery(table=table))
        except LobbyUnavailable as e:
            raise _lobby_refusal(e) from None
        except ValueError:
            raise OpError(protocol.UNKNOWN_TABLE, f"no table {table}") from None
        return {"entry": whole(entry)}
    try:
        view = await link.table.view(table)
    except Refused as e:
        raise OpError(e.code, e.message) from None
    # R2 as the domain counts it (a property of the config, so not in the view's JSON);
    # a spectator's entry carries its own
    return {"view": msgspec.to_builtins(view), "max_players": view.config.max_players}


@op("unwatch_table", ANY)
async def unwatch_table(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    _only(args, "table")
    await tab.unwatch_table(_table(args))
    return {"ok": True}


# ---------------------------------------------------------------- requests in the person's name


@op("command", PEOPLE)
async def command(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    """A table command as the person (the console stamps its id; the table decides)."""
    _only(args, "table", "command")
    table = _table(args)
    body = args.get("command")
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k != "command_id"}
    sent = _struct(body, TableCommand, "command")
    return whole(await tab.session.link.table.send(table, sent))


@op("cashier", PEOPLE)
async def cashier(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    _only(args, "request")
    body = args.get("request")
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k != "request_id"}
    request = _struct(body, cashier_protocol.CashierRequest, "request")
    client = tab.session.link.cashier
    if isinstance(request, cashier_protocol.BuyChips):
        request = msgspec.structs.replace(request, request_id=client.ids.next())
    return whole(await client.request(request))


@op("history", PEOPLE)
async def history_op(tab: Any, args: dict[str, Any]) -> dict[str, Any]:
    _only(args, "request")
    body = args.get("request")
    if not isinstance(body, dict):
        raise OpError(BAD_REQUEST, "request: a JSON object is required")
    try:
        request = history.decode_request(msgspec.json.encode(body))
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise OpError(BAD_REQUEST, f"request: {e}") from None
    link = tab.session.link
    asking: Requests[Any] = Requests(link.nc, retry_for=5.0, decode=history.decode_reply,
                                     refusal=history.refused, carried_out=lambda reply: None)
    reply = await asking.request(subjects.history_requests(link.role, link.name), history.encode(request), 5.0)
    return whole(reply)


# ---------------------------------------------------------------- one message


async def answer(tab: Any, text: str) -> dict[str, Any]:
    """The answer to one frame (its ``id`` included when it had one); every frame,
    even one that is not JSON, counts against the session's quota."""
    try:
        message, bad = msgspec.json.decode(text), None
    except msgspec.DecodeError as e:
        message, bad = None, f"not JSON: {e}"
    ident = message.get("id") if isinstance(message, dict) else None
    ident = ident if isinstance(ident, int) and not isinstance(ident, bool) else None
    name = None
    try:
        wait = tab.session.quota.take()
        if wait > 0:
            raise OpError(RATE_LIMITED, "too many requests: slow down", retry_after_ms=retry_after_ms(wait))
        if bad is not None:
            raise OpError(BAD_REQUEST, bad)
        if not isinstance(message, dict) or ident is None:
            raise OpError(BAD_REQUEST, 'a message is a JSON object {"id": <integer>, "op": <name>, ...}')
        name = message.pop("op", None)
        message.pop("id")
        chosen = OPS.get(name) if isinstance(name, str) else None
        if chosen is None:
            raise OpError(BAD_REQUEST, f"no op {name!r}; ops: {', '.join(sorted(OPS))}")
        if tab.session.role not in chosen.roles:
            raise OpError(FORBIDDEN, f"{name} is not for a {tab.session.role}")
        result = await chosen.run(tab, message)
    except OpError as e:
        return {"id": ident, "ok": False, "error": e.body()}
    except Exception as e:              # ours: said in the log, the browser told in one word
        log.exception("console: op %r failed", name)
        return {"id": ident, "ok": False, "error": {"code": protocol.INTERNAL, "message": type(e).__name__}}
    return {"id": ident, **result}
