"""Reconciliation's audit (projections/ledger/table_audit.py, account_audit.py): the books
beside the stored events and the domain's own results, pure (no database).  A clean
room has no difference; every planted one is found and named where it happened."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from studroom.domain.account import Account, BuyInConfirmed, CashedOut
from studroom.domain.account import stream_id as account_stream
from studroom.domain.events import Acted, ChipsBought, PlayerLeft
from studroom.projections.ledger.account_audit import (
    ACCOUNT,
    TRANSFER,
    AccountAudit,
    transfers,
)
from studroom.projections.ledger.account_entries import CashierBook, account_entries
from studroom.projections.ledger.table_audit import (
    BOOKS_VS_STORE,
    HAND,
    Difference,
    TableAudit,
)
from studroom.projections.ledger.entries import TableBook, table_entries
from studroom.projections.ledger.reconcile import Scope
from studroom.domain.simulate import play_room

Tamper = Callable[[str, int, list], list]


def _room(hands: int = 60, seed: int = 5) -> tuple[dict[str, list], dict[str, list]]:
    tables, accounts = play_room(3, rounds=hands, seed=seed)
    return tables, {account_stream(player): events for player, events in accounts.items()}


def _audit(tables: dict[str, list], accounts: dict[str, list], booked_as: Tamper = lambda s, v, e: e,
           stored_as: dict[tuple[str, int], object] | None = None) -> list[Difference]:
    """Book every stream (``booked_as`` may change what the books hold), then audit the
    streams as stored (``stored_as`` may replace a stored event) beside those books."""
    stored_as = stored_as or {}
    table_audits, account_audits = [], []
    for stream, events in tables.items():
        book, audit = TableBook(), TableAudit("p0", stream)
        for v, event in enumerate(events, 1):
            booked = booked_as(stream, v, table_entries(book, stream, event))
            audit.event(v, stored_as.get((stream, v), event), booked)
        audit.finish()
        table_audits.append(audit)
    for stream, events in accounts.items():
        audit = AccountAudit("cashier", stream)
        for v, event in enumerate(events, 1):
            booked = booked_as(stream, v, account_entries(CashierBook(), stream, event))
            audit.event(v, stored_as.get((stream, v), event), booked)
        audit.finish()
        account_audits.append(audit)
    moved = transfers(table_audits, account_audits)
    return [d for a in [*table_audits, *account_audits] for d in a.differences] + moved.differences


def _version(events: list, kind: type, nth: int = 3) -> int:
    return [v for v, e in enumerate(events, 1) if isinstance(e, kind) and getattr(e, "amount", 1)][nth]


def test_a_clean_room_has_no_difference() -> None:
    tables, accounts = _room()
    assert _audit(tables, accounts) == []


def test_a_corrupted_entry_is_found_at_its_event_and_where_its_hand_ends() -> None:
    tables, accounts = _room()
    table = "sim-1"
    v = _version(tables[table], Acted)

    def plus_one(stream: str, version: int, entries: list) -> list:
        if (stream, version) == (table, v):
            return [msgspec.structs.replace(entries[0], amount=entries[0].amount + 1)]
        return entries

    found = _audit(tables, accounts, plus_one)
    assert found[0].check == BOOKS_VS_STORE and found[0].event == f"p0 {table} v{v} (Acted)"
    assert "the stored event gives" in found[0].what and found[0].hand is not None
    hand = [d for d in found if d.check == HAND]
    assert hand and all(d.hand == found[0].hand for d in hand)
    assert any("chips put into the hand" in d.what for d in hand)


def test_a_stored_event_altered_after_booking_is_named() -> None:
    tables, accounts = _room()
    table = "sim-2"
    v = _version(tables[table], Acted)
    acted = tables[table][v - 1]
    found = _audit(tables, accounts, stored_as={(table, v): msgspec.structs.replace(acted, amount=acted.amount * 2)})
    assert found and found[0].check == BOOKS_VS_STORE and found[0].event == f"p0 {table} v{v} (Acted)"


def test_a_stored_event_altered_before_booking_breaks_its_hand() -> None:
    tables, accounts = _room()
    table = "sim-0"
    v = _version(tables[table], Acted)
    acted = tables[table][v - 1]
    tables[table][v - 1] = msgspec.structs.replace(acted, amount=acted.amount + 5)
    found = _audit(tables, accounts)
    assert found and all(d.check == HAND and d.table == table for d in found)
    assert any("went into no pot" in d.what for d in found)
    assert any("ends the hand with" in d.what and d.player for d in found)
    assert all(d.event.endswith("(HandEnded)") for d in found)


def test_entries_missing_from_the_books_are_named() -> None:
    tables, accounts = _room()
    v = _version(tables["sim-0"], ChipsBought, 0)
    found = _audit(tables, accounts, lambda s, version, e: [] if (s, version) == ("sim-0", v) else e)
    assert found[0].check == BOOKS_VS_STORE and found[0].event.endswith(f"v{v} (ChipsBought)")
    assert "the books hold" not in found[0].what


def test_books_of_an_event_the_store_does_not_have_are_named() -> None:
    audit = TableAudit("p0", "t")
    audit.missing(12)
    assert audit.differences[0].event == "p0 t v12" and audit.differences[0].check == BOOKS_VS_STORE


def test_an_accounts_balance_in_the_books_must_be_the_domains() -> None:
    tables, accounts = _room()
    stream = min(accounts)

    def drop_deposit(s: str, version: int, entries: list) -> list:
        return [] if (s, version) == (stream, 1) else entries

    found = _audit(tables, accounts, drop_deposit)
    assert {d.check for d in found} >= {BOOKS_VS_STORE, ACCOUNT}
    assert any(d.check == ACCOUNT and d.player == stream.removeprefix("account.") for d in found)


def test_a_refunded_buy_in_the_table_credited_too_is_chips_from_nowhere() -> None:
    tables, accounts = _room()
    stream, events = next((s, e) for s, e in accounts.items() if any(isinstance(x, BuyInConfirmed) for x in e))
    i = next(i for i, e in enumerate(events) if isinstance(e, BuyInConfirmed))
    c = events[i]
    refunded = Account(stream.removeprefix("account."))
    for e in events[:i]:
        refunded.apply(e)
    events[i] = refunded.refund(c.table_id, c.command_id, "forged", c.at_ms)
    found = [d for d in _audit(tables, accounts) if d.check == TRANSFER]
    assert len(found) == 1 and "refunded buy-in" in found[0].what and c.table_id in found[0].what


def test_a_buy_in_no_account_reserved_and_a_cash_out_nobody_left_are_named() -> None:
    tables, accounts = _room()
    table = "sim-0"
    forged = ChipsBought(seat=next(e.seat for e in tables[table] if isinstance(e, ChipsBought)), amount=999,
                         command_id="service.cashier#99999")
    tables[table].insert(_version(tables[table], ChipsBought, 0), forged)
    stream = min(accounts)
    accounts[stream].append(CashedOut(table_id=table, version=1, seat=0, amount=50, at_ms=1))
    found = [d.what for d in _audit(tables, accounts) if d.check == TRANSFER]
    assert any("no account reserved" in w and "99999" in w for w in found)
    assert any(f"{table} v1" in w and "no PlayerLeft" in w for w in found)


def test_chips_in_transit_are_the_uncredited_cash_outs_and_the_pending_reservations() -> None:
    tables, accounts = _room()
    left = [(s, v, e) for s, evs in tables.items() for v, e in enumerate(evs, 1)
            if isinstance(e, PlayerLeft) and e.cashed_out]
    table, version, last = left[-1]
    stream = account_stream(last.player)
    accounts[stream] = [e for e in accounts[stream]
                        if not (isinstance(e, CashedOut) and (e.table_id, e.version) == (table, version))]
    audits = []
    for s, events in tables.items():
        book, audit = TableBook(), TableAudit("p0", s)
        for v, event in enumerate(events, 1):
            audit.event(v, event, table_entries(book, s, event))
        audits.append(audit)
    cashier = []
    for s, events in accounts.items():
        audit = AccountAudit("cashier", s)
        for v, event in enumerate(events, 1):
            audit.event(v, event, account_entries(CashierBook(), s, event))
        cashier.append(audit)
    moved = transfers(audits, cashier)
    assert moved.differences == [] and moved.in_transit == last.cashed_out


def test_a_scope_covers_its_hand_table_player_and_days() -> None:
    d = Difference(HAND, "x", table="t1", hand=4, player="ann", at_ms=Scope.days("2026-11-30", None).from_ms)
    assert Scope(table="t1", hand=4).covers(d, set()) and not Scope(table="t1", hand=5).covers(d, set())
    assert Scope(player="bob").covers(d, {("t1", 4)}) and not Scope(player="bob").covers(d, set())
    assert Scope.days("2026-11-30", "2026-11-30").covers(d, set())
    assert not Scope.days("2026-12-01", None).covers(d, set()) and not Scope.days(None, "2026-11-29").covers(d, set())
