"""The table service's core: commands in, events stored, a reply out. No NATS here.

:class:`CommandHandler` decodes and checks a request (``request_decoding.py``), runs its command on the table
(cached, or replayed from the store) as its sender (``Table.execute(command, by=...)``:
the domain decides his powers and his command ids), dated by the service's clock,
starts the next hand (or the pause before it) when it is due (``Table.next_hand_due``)
and appends the events of a whole batch of tables in ONE ``store.append``, with
optimistic concurrency; a conflict retries each command alone.  A ``ViewTable``
request is answered with the table as its sender may see it.  The steps, the error
codes and the retry rules: docs/design/table-service.md.

Its steps yield their store calls (``store_calls.py``): ``handle_batch`` makes them
blocking, ``handle_batch_async`` in the event loop (the table service's worker).  Not
thread-safe: one batch at a time.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec
from studroom.domain.authority import Sender
from studroom.domain.commands import OpenTable, ScheduleHand, StartHand
from studroom.domain.deck import SEED_BYTES
from studroom.domain.errors import DomainError
from studroom.domain.table import Table
from studroom.domain.views import seat_of, table_view

from ..store.port import EventStore, Snapshot, VersionConflict
from ..wire.protocol import BAD_REQUEST, CONFLICT, INTERNAL, UNKNOWN_TABLE, Reply, ViewTable, refusal
from .loading import SNAPSHOT_EVERY, Loaded, load_table, load_tables, snapshot_due, snapshot_of
from .request_decoding import BadRequest, Request, Submission, check_request, decode_request
from .store_calls import Call, Steps, run_awaited, run_blocking

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def new_seed() -> str:
    """A fresh secret deck seed (R32): SEED_BYTES random bytes as hex."""
    return secrets.token_hex(SEED_BYTES)


@dataclass(slots=True)
class Outcome:
    """The reply to one command."""

    reply: Reply


@dataclass(slots=True)
class HandlerStats:
    commands: int = 0
    refused: int = 0
    appends: int = 0
    events: int = 0
    hands_started: int = 0
    pauses: int = 0                     # pauses before a hand opened (ScheduleHand)
    conflicts: int = 0
    internal_errors: int = 0
    loads: int = 0
    replayed: int = 0                   # events applied by loads (after a snapshot, or all)
    snapshots: int = 0                  # snapshots stored
    batch_sizes: dict[int, int] = field(default_factory=dict)   # commands per append -> count


@dataclass(slots=True)
class _Staged:
    """A table's events waiting for the batch's append."""

    table: Table
    expected: int                       # version before the batch's first command
    events: list = field(default_factory=list)
    from_store: bool = False            # loaded (not cached) in this batch
    replayed: int = 0                   # events its load applied
    dirty: bool = False                 # an exception left the object unusable


class CommandHandler:
    """See the module docstring. ``store`` is the event store of the tables handed in."""

    def __init__(
        self,
        store: EventStore,
        *,
        auto_start: bool = True,
        pause_ms: int = 0,
        clock: Callable[[], int] = wall_clock_ms,
        seed: Callable[[], str] = new_seed,
        cache_size: int = 10_000,
        snapshot_every: int = SNAPSHOT_EVERY,
        verify_refusals: bool = True,
    ) -> None:
        self.store = store
        self.auto_start = auto_start
        self.pause_ms = pause_ms
        self.clock = clock
        self.new_seed = seed
        self.cache_size = cache_size
        self.snapshot_every = snapshot_every
        self.verify_refusals = verify_refusals
        self.cache: OrderedDict[str, Table] = OrderedDict()
        self.stats = HandlerStats()

    # -- the cache

    def drop(self, table_id: str) -> None:
        self.cache.pop(table_id, None)

    def drop_where(self, predicate: Callable[[str], bool]) -> int:
        """Forget the cached tables whose id matches (a partition given up)."""
        gone = [t for t in self.cache if predicate(t)]
        for table_id in gone:
            del self.cache[table_id]
        return len(gone)

    def clear(self) -> None:
        self.cache.clear()

    def _remember(self, table_id: str, table: Table) -> None:
        self.cache[table_id] = table
        self.cache.move_to_end(table_id)
        while len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)

    def _load(self, table_id: str) -> Steps[Loaded]:
        """A table not in the cache: from its snapshot and the events after it."""
        loaded = yield Call(load_table, (self.store, table_id, self.snapshot_every > 0))
        self.stats.loads += 1
        self.stats.replayed += loaded.replayed
        return loaded

    def _preload(self, table_ids: Sequence[str]) -> Steps[dict[str, Loaded]]:
        """The tables of a batch that are not in the cache, in one read of the store
        (past the cache, most of them); after a failure each loads on its own."""
        missing = [t for t in dict.fromkeys(table_ids) if t not in self.cache]
        if len(missing) < 2:
            return {}
        try:
            loaded = yield Call(load_tables, (self.store, missing, self.snapshot_every > 0))
        except Exception:   # noqa: BLE001
            log.exception("loading %d tables at once failed", len(missing))
            return {}
        self.stats.loads += len(loaded)
        self.stats.replayed += sum(found.replayed for found in loaded.values())
        return loaded

    def _snapshots(self, staged: dict[str, _Staged]) -> list[Snapshot]:
        """The snapshots due with this append (stored in its transaction)."""
        return [
            snapshot_of(table_id, s.table) for table_id, s in staged.items()
            if not s.dirty and snapshot_due(self.snapshot_every, s.expected, s.table.version, s.replayed)
        ]

    # -- commands

    def handle(self, table_id: str, message: bytes | Request, by: Sender | None = None) -> Reply:
        """One request, one append."""
        return self.handle_batch([Submission(table_id, message, by)])[0].reply

    def handle_batch(self, items: Sequence[Submission]) -> list[Outcome]:
        """:meth:`_batch`, the store called in this thread."""
        return run_blocking(self._batch(items))

    async def handle_batch_async(self, items: Sequence[Submission]) -> list[Outcome]:
        """:meth:`_batch` in the running event loop (the append awaited, no thread)."""
        return await run_awaited(self._batch(items))

    def _batch(self, items: Sequence[Submission]) -> Steps[list[Outcome]]:
        """Execute every command and append all their events in one transaction.

        Commands of the same table run one after the other in item order (each on the
        state the previous left; a view shows that state too: the worker never puts
        two requests of one table in a batch).  Replies are decided only after the
        append."""
        outcomes: list[Outcome | None] = [None] * len(items)
        requests: list[Request | None] = [None] * len(items)
        staged: dict[str, _Staged] = {}
        versions: list[int] = [0] * len(items)
        preloaded = yield from self._preload([item.table_id for item in items])
        for i, (table_id, message, sender) in enumerate(items):
            self.stats.commands += 1
            try:
                request = (
                    decode_request(table_id, message)
                    if isinstance(message, (bytes, bytearray, memoryview))
                    else check_request(table_id, message)
                )
            except BadRequest as e:
                outcomes[i] = Outcome(refusal(BAD_REQUEST, e.message))
                self.stats.refused += 1
                continue
            requests[i] = request
            outcome = yield from self._stage(table_id, request, sender, staged, preloaded)
            if outcome is not None:
                outcomes[i] = outcome
            else:
                versions[i] = staged[table_id].table.version
        batch = [(t, s.expected, s.events) for t, s in staged.items() if s.events]
        if batch:
            snapshots = self._snapshots(staged)
            try:
                yield self._append(batch, snapshots)
            except VersionConflict as conflict:
                self.stats.conflicts += 1
                log.info("version conflict on %s: retrying %d commands one by one",
                         conflict.stream_ids, sum(r is not None for r in requests))
                return (yield from self._retry_alone(items, requests, outcomes, staged))
            except Exception:   # noqa: BLE001 (the store failed: nothing is known to be written)
                log.exception("append of %d tables failed", len(batch))
                self.stats.internal_errors += 1
                for table_id in staged:
                    self.drop(table_id)
                failed = Outcome(refusal(INTERNAL, "the event store failed; the command may not have been carried out"))
                return [o if o is not None else failed for o in outcomes]
            self.stats.appends += 1
            self.stats.events += sum(len(events) for _, _, events in batch)
            self.stats.snapshots += len(snapshots)
            n = sum(1 for i, o in enumerate(outcomes) if o is None)
            self.stats.batch_sizes[n] = self.stats.batch_sizes.get(n, 0) + 1
        for table_id, s in staged.items():
            if s.dirty:
                self.drop(table_id)
            elif s.table.config is not None:      # an opened table: worth keeping
                self._remember(table_id, s.table)
        result: list[Outcome] = []
        for i, outcome in enumerate(outcomes):
            if outcome is None:
                outcome = Outcome(Reply(ok=True, version=versions[i]))
            result.append(outcome)
        return result

    def _stage(self, table_id: str, request: Request, sender: Sender | None,
               staged: dict[str, _Staged], preloaded: dict[str, Loaded] | None = None) -> Steps[Outcome | None]:
        """Execute one command into ``staged``; an Outcome if it is refused (or is a view)."""
        s = staged.get(table_id)
        if s is None:
            cached = self.cache.get(table_id)
            try:
                found = (preloaded or {}).pop(table_id, None)
                table, replayed = (cached, 0) if cached is not None else found or (yield from self._load(table_id))
            except Exception:   # noqa: BLE001
                log.exception("loading table %s failed", table_id)
                self.stats.internal_errors += 1
                return Outcome(refusal(INTERNAL, "the table could not be loaded"))
            s = _Staged(table=table, expected=table.version, from_store=cached is None, replayed=replayed)
            staged[table_id] = s
        if s.dirty:
            return Outcome(refusal(INTERNAL, "an earlier command of this batch failed"))
        table = s.table
        if table.version == 0 and not isinstance(request, OpenTable):
            self.stats.refused += 1
            return Outcome(refusal(UNKNOWN_TABLE, f"there is no table {table_id!r}"))
        if isinstance(request, ViewTable):
            return Outcome(_view_reply(table, sender))
        command = msgspec.structs.replace(request, now_ms=self.clock())   # the service's clock, never the sender's
        try:
            try:
                events = table.execute(command, by=sender)
            except DomainError:
                if not (self.verify_refusals and not s.from_store and not s.events):
                    raise
                fresh = yield Call(self.store.load, (table_id, table.version))
                if not fresh:
                    raise
                log.info("table %s was %d events behind the store: caught up", table_id, len(fresh))
                for event in fresh:
                    table.apply(event)
                s.expected = table.version
                s.from_store = True
                events = table.execute(command, by=sender)
        except DomainError as refused:
            self.stats.refused += 1
            if self.auto_start and not s.events and _moves_on(table):    # a table found idle
                s.events.extend(self._next_hand(table_id, table, s))
            return Outcome(refusal(refused.code, refused.message))
        except Exception:   # noqa: BLE001 (a bug: never crash the service for it)
            log.exception("command %s on table %s failed", type(command).__name__, table_id)
            self.stats.internal_errors += 1
            s.dirty = True
            self.drop(table_id)
            if not s.events:
                del staged[table_id]
            return Outcome(refusal(INTERNAL, f"internal error running {type(command).__name__}"))
        s.events.extend(events)
        if self.auto_start and _moves_on(table):
            s.events.extend(self._next_hand(table_id, table, s))
        return None

    def _append(self, batch: list[tuple[str, int, list]], snapshots: list[Snapshot]) -> Call:
        return Call(self.store.append, (batch, snapshots), self.store.append_async)

    def _next_hand(self, table_id: str, table: Table, s: _Staged) -> list:
        """The next hand's events: StartHand with a fresh seed, or, with ``pause_ms > 0``
        and no pause ended since the last hand, the pause before it (ScheduleHand: the
        timer service ends it, and the Timeout's batch starts the hand here; see
        docs/design/timer.md); or the pause an idle table holds for its sat-out players
        (R34: the table sets its end, when the first of them passes the limit).  None if
        the table refuses."""
        pause = table.next_pause_due() or (self.pause_ms > 0 and not table.pause_served)
        command = (ScheduleHand(pause_ms=self.pause_ms, now_ms=self.clock()) if pause
                   else StartHand(seed=self.new_seed(), now_ms=self.clock()))
        try:
            events = table.execute(command)
        except DomainError as refused:
            log.debug("table %s did not start a hand: %s", table_id, refused)
            return []
        except Exception:   # noqa: BLE001
            log.exception("starting a hand on table %s failed", table_id)
            self.stats.internal_errors += 1
            s.dirty = True      # the command's own events stand; the object is dropped
            return []
        if pause:
            self.stats.pauses += 1
        else:
            self.stats.hands_started += 1
        return events

    def _retry_alone(
        self,
        items: Sequence[Submission],
        requests: list[Request | None],
        outcomes: list[Outcome | None],
        staged: dict[str, _Staged],
    ) -> Steps[list[Outcome]]:
        """After a conflict in a batch: every table of it reloaded, every command
        executed and appended on its own (a second conflict: reload, retry once)."""
        for table_id in staged:
            self.drop(table_id)
        for item in items:
            self.drop(item.table_id)
        result: list[Outcome] = []
        for i, (table_id, _, sender) in enumerate(items):
            request = requests[i]
            if request is None:                      # bad request: stands
                result.append(outcomes[i])           # type: ignore[arg-type]
                continue
            for attempt in range(2):
                one: dict[str, _Staged] = {}
                outcome = yield from self._stage(table_id, request, sender, one)
                if outcome is not None:
                    break
                s = one[table_id]
                try:
                    if s.events:
                        snapshots = self._snapshots(one)
                        yield self._append([(table_id, s.expected, s.events)], snapshots)
                        self.stats.snapshots += len(snapshots)
                        self.stats.appends += 1
                        self.stats.events += len(s.events)
                        self.stats.batch_sizes[1] = self.stats.batch_sizes.get(1, 0) + 1
                except VersionConflict:
                    self.stats.conflicts += 1
                    self.drop(table_id)
                    outcome = Outcome(refusal(CONFLICT, "another writer changed the table first; try again"))
                    continue
                except Exception:   # noqa: BLE001
                    log.exception("append for table %s failed", table_id)
                    self.stats.internal_errors += 1
                    self.drop(table_id)
                    outcome = Outcome(refusal(INTERNAL, "the event store failed"))
                    break
                if s.dirty:
                    self.drop(table_id)
                else:
                    self._remember(table_id, s.table)
                outcome = Outcome(Reply(ok=True, version=s.table.version))
                break
            result.append(outcome)                   # type: ignore[arg-type]
        return result


def _view_reply(table: Table, sender: Sender | None) -> Reply:
    """The table as ``sender`` may see it: a player his own down cards too."""
    seat = seat_of(table, sender.name) if sender is not None and sender.role == "player" else None
    return Reply(ok=True, version=table.version, view=table_view(table, seat))


def _moves_on(table: Table) -> bool:
    """Does the table want its service to deal (a hand due) or to wait for its sat-out
    players (R34: the pause that removes them when they pass the limit)?"""
    return table.next_hand_due() or table.next_pause_due()
