"""A day's seal: what ``studroom ledger close DAY`` stores and a later reconcile compares.

The day's entries are those dated in it (UTC); an entry without a time (a table's
buy-ins before its first turn) is dated like the next dated entry of its stream (the
table's clock starts there: docs/design/ledger.md, Dates).  Of them the seal keeps:

- the totals per account class (debits, credits, the net change of the day);
- the rake per table and game (hands raked, rake);
- each player's movements (deposited, withdrawn, the change of his account, of his
  chips in transit and at the tables);
- the digest: SHA-256 over every entry of the day in the order (store, notification,
  seq), each as one canonical line (:func:`entry_line`);
- per event of the day: a digest of its entries and one of the stored event (its topic
  and state as stored), so that a later change of either is named exactly.

Pure of storage: seal_store.py keeps seals, close_text.py prints them.
"""

from __future__ import annotations

import datetime
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import psycopg
from psycopg import sql
from studroom.domain.events import TableConfigured, TableOpened
from studroom.services.store.inspect import open_reader, store_exists
from studroom.services.store.postgres import DEFAULT_TABLE

from . import accounts
from .cut import Cut, upto
from .entries import DEPOSIT, WITHDRAWAL
from .sources import Source

DAY_MS: Final = 86_400_000

_DAY_ENTRIES: Final = """
    WITH dated AS (
        SELECT store, notification, seq, stream, version, kind, debit, credit, amount, table_id, hand_no, player,
               at_ms, coalesce(at_ms, min(at_ms) OVER (PARTITION BY store, stream
                                                      ORDER BY notification DESC, seq DESC)) AS dated_ms
        FROM {s}.entries WHERE {upto})
    SELECT store, notification, seq, stream, version, kind, debit, credit, amount, table_id, hand_no, player, at_ms
    FROM dated WHERE dated_ms >= %s AND dated_ms < %s ORDER BY store, notification, seq"""


@dataclass(frozen=True)
class SealedEvent:
    """One event of the day: where it is, its entries' digest and the stored event's."""

    store: str
    notification: int
    stream: str
    version: int
    entries_digest: str
    event_digest: str

    @property
    def where(self) -> str:
        return f"{self.store} {self.stream} v{self.version}"


@dataclass
class Seal:
    """A day's books as of a cut."""

    day: datetime.date
    cut: Cut
    digest: str = ""
    entries: int = 0
    totals: list[list[Any]] = field(default_factory=list)     # class, debits, credits, net
    rake: list[list[Any]] = field(default_factory=list)       # table, game, hands raked, rake
    players: list[list[Any]] = field(default_factory=list)    # player, deposited, withdrawn, account, transit, tables
    events: list[SealedEvent] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        """The seal's figures as JSON takes them (its events' digests left out)."""
        return {"day": self.day.isoformat(), "entries": self.entries, "digest": self.digest, "cut": self.cut,
                "totals": [dict(zip(TOTALS, row, strict=True)) for row in self.totals],
                "rake": [dict(zip(RAKE, row, strict=True)) for row in self.rake],
                "players": [dict(zip(PLAYERS, row, strict=True)) for row in self.players]}


TOTALS: Final = ("account class", "debits", "credits", "net")
RAKE: Final = ("table", "game", "hands raked", "rake")
PLAYERS: Final = ("player", "deposited", "withdrawn", "account", "in transit", "at the tables")


def day_range_ms(day: datetime.date) -> tuple[int, int]:
    start = int(datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC).timestamp() * 1000)
    return start, start + DAY_MS


def entry_line(row: Sequence[Any]) -> bytes:
    """One entry as the digests read it: its columns in order, '|' between, '' for none."""
    return ("|".join("" if v is None else str(v) for v in row) + "\n").encode()


def seal_day(conn: psycopg.Connection[Any], database_url: str, sources: Sequence[Source], ledger_schema: str,
             day: datetime.date, cut: Cut) -> Seal:
    """The seal of ``day`` from the books as of ``cut`` and the stores."""
    condition, params = upto(cut)
    query = sql.SQL(_DAY_ENTRIES).format(s=sql.Identifier(ledger_schema), upto=condition)
    rows = conn.execute(query, (*params, *day_range_ms(day))).fetchall()
    seal = Seal(day, cut, entries=len(rows))
    day_digest = hashlib.sha256()
    by_event: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for row in rows:
        day_digest.update(entry_line(row))
        by_event[(row[0], row[1])].append(row)
    seal.digest = day_digest.hexdigest()
    seal.totals = _totals(rows)
    seal.rake = _rake(rows, _games(conn, database_url, sources, {r[9] for r in rows if r[5] == "rake"}))
    seal.players = _players(rows)
    seal.events = _events(conn, sources, by_event)
    return seal


def _totals(rows: Iterable[Any]) -> list[list[Any]]:
    debits: dict[str, int] = defaultdict(int)
    credits: dict[str, int] = defaultdict(int)
    for row in rows:
        debits[accounts.class_of(row[6])] += row[8]
        credits[accounts.class_of(row[7])] += row[8]
    return [[c, debits[c], credits[c], debits[c] - credits[c]] for c in accounts.CLASSES]


def _rake(rows: Iterable[Any], games: dict[str, str]) -> list[list[Any]]:
    hands: dict[str, set[int]] = defaultdict(set)
    raked: dict[str, int] = defaultdict(int)
    for row in rows:
        if row[5] == "rake":
            hands[row[9]].add(row[10])
            raked[row[9]] += row[8]
    return [[table, games.get(table, ""), len(hands[table]), raked[table]] for table in sorted(raked)]


def _players(rows: Iterable[Any]) -> list[list[Any]]:
    moved: dict[str, list[int]] = {}
    for row in rows:
        player, kind, debit, credit, amount = row[11], row[5], row[6], row[7], row[8]
        if player is None:
            continue
        line = moved.setdefault(player, [0, 0, 0, 0, 0])
        line[0] += amount if kind == DEPOSIT else 0
        line[1] += amount if kind == WITHDRAWAL else 0
        for account, sign in ((debit, 1), (credit, -1)):
            where = {accounts.PLAYER: 2, accounts.TRANSIT: 3, accounts.SEAT: 4}.get(accounts.class_of(account))
            if where is not None and account.endswith(f":{player}"):
                line[where] += sign * amount
    return [[player, *line] for player, line in sorted(moved.items())]


def _games(conn: psycopg.Connection[Any], database_url: str, sources: Sequence[Source],
           tables: set[str]) -> dict[str, str]:
    """The game each of ``tables`` was last opened or configured with."""
    games: dict[str, str] = {}
    for source in sources:
        if not tables or not store_exists(conn, source.schema):
            continue
        reader = open_reader(database_url, source.schema)
        try:
            query = sql.SQL("SELECT originator_id, topic, state FROM {}.{} WHERE originator_id = ANY(%s) AND "
                            "(topic LIKE '%%TableOpened' OR topic LIKE '%%TableConfigured') "
                            "ORDER BY notification_id").format(sql.Identifier(reader.schema),
                                                               sql.Identifier(reader.table))
            for table, topic, state in conn.execute(query, (sorted(tables),)).fetchall():
                event = reader.mapper.decode(topic, bytes(state))
                if isinstance(event, (TableOpened, TableConfigured)):
                    games[table] = str(event.config.game)
        finally:
            reader.close()
    return games


def _events(conn: psycopg.Connection[Any], sources: Sequence[Source],
            by_event: dict[tuple[str, int], list[Any]]) -> list[SealedEvent]:
    """Each event of the day with its entries' digest and the stored event's."""
    stored: dict[tuple[str, int], str] = {}
    for source in sources:
        ids = sorted(n for store, n in by_event if store == source.name)
        if not ids:
            continue
        query = sql.SQL("SELECT notification_id, topic, state FROM {}.{} WHERE notification_id = ANY(%s)").format(
            sql.Identifier(source.schema), sql.Identifier(DEFAULT_TABLE))
        for notification, topic, state in conn.execute(query, (ids,)).fetchall():
            stored[(source.name, notification)] = hashlib.sha256(topic.encode() + b"\n" + bytes(state)).hexdigest()
    out = []
    for (store, notification), rows in sorted(by_event.items()):
        entries = hashlib.sha256(b"".join(entry_line(row) for row in rows)).hexdigest()
        out.append(SealedEvent(store, notification, rows[0][3], rows[0][4], entries,
                               stored.get((store, notification), "")))
    return out
