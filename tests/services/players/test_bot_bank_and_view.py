"""A bot under the permissions, against a fake table (no servers): it looks at its
table first (ViewTable) and again after a reconnect, credits chips only through the
bank it was handed (a player may not buy himself in), answers an open turn the view
shows it, and reads the relay's messages event by event."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from studroom.domain.commands import Act, BuyIn, SitDown
from studroom.domain.config import TableConfig
from studroom.domain.events import CardsDealt, DealtCard, SitOutChanged, TurnStarted
from studroom.domain.simulate import STAKES
from studroom.domain.views import SeatView, TableView
from studroom.services.wire import cashier_protocol
from studroom.services.client.cashier import CashierClient
from studroom.services.players.bank import CashierBank
from studroom.services.players.bot import Bot
from studroom.services.players.stats import BAD_MESSAGE
from studroom.services.client.table import TableClient
from studroom.services.wire import event_messages, protocol, subjects

CONFIG = TableConfig(game="seven_card_stud", stakes=STAKES)


class FakeTable:
    """A NATS connection to one table: answers ViewTable with ``view`` and every
    command ``ok``; records the requests (subject, decoded body)."""

    def __init__(self, view: TableView) -> None:
        self.view = view
        self.requests: list[tuple[str, Any]] = []
        self.stats = {"reconnects": 0}
        self.subscribed: dict[str, Any] = {}      # subject -> its callback

    async def subscribe(self, subject: str, cb: Any) -> Any:
        self.subscribed[subject] = cb
        return SimpleNamespace(unsubscribe=_nothing)

    async def flush(self) -> None:
        pass

    async def request(self, subject: str, data: bytes, timeout: float) -> Any:
        request = protocol.decode_request(data)
        self.requests.append((subject, request))
        if isinstance(request, protocol.ViewTable):
            return SimpleNamespace(data=msgspec.json.encode(protocol.Reply(ok=True, view=self.view)))
        return SimpleNamespace(data=protocol.ok(len(self.requests)))

    def commands(self) -> list[Any]:
        return [r for _, r in self.requests if not isinstance(r, protocol.ViewTable)]


async def _nothing() -> None:
    pass


class Bank:
    """Records what it was asked to credit; answers ``ok``."""

    def __init__(self) -> None:
        self.credits: list[tuple[str, int, int]] = []

    async def __call__(self, table_id: str, seat: int, amount: int) -> protocol.Reply:
        self.credits.append((table_id, seat, amount))
        return protocol.Reply(ok=True, version=1)


def _view(seats: list[SeatView], turn: TurnStarted | None = None) -> TableView:
    return TableView(table_id="t1", config=CONFIG, version=3, hand_no=0, button=None,
                     seats=seats, turn=turn)


def _start(nc: FakeTable, bank: Any, seat: int = 2) -> Bot:
    async def run() -> Bot:
        bot = Bot(TableClient(nc, "player", "bob"), "t1", seat, random.Random(1), bank=bank,
                  stall_seconds=60)
        await bot.start()
        await asyncio.sleep(0.05)            # answers run as tasks
        await bot.stop()
        return bot

    return asyncio.run(run())


def test_a_bot_sits_down_and_has_its_bank_credit_the_buy_in_never_itself() -> None:
    nc, bank = FakeTable(_view([])), Bank()
    bot = _start(nc, bank)
    assert isinstance(nc.requests[0][1], protocol.ViewTable)            # it looked first
    assert SitDown(seat=2, player="bob", auto_ante=True) in [
        msgspec.structs.replace(c, command_id=None) for c in nc.commands()]
    assert not any(isinstance(c, BuyIn) for c in nc.commands())         # never as a player
    assert bank.credits == [("t1", 2, bot.target_stack)]
    assert bot.seated and bot.stack == bot.target_stack
    assert {s for s, _ in nc.requests} == {subjects.command_from("player", "bob", "t1")}


def test_without_a_bank_a_bot_waits_to_be_credited() -> None:
    nc = FakeTable(_view([]))
    bot = _start(nc, None)
    assert bot.seated and bot.stack == 0
    assert not any(isinstance(c, BuyIn) for c in nc.commands())


def test_a_kept_seat_is_learnt_from_the_view_and_its_open_turn_answered() -> None:
    turn = TurnStarted(turn=5, seat=2, kind="act", deadline_ms=0, options=["fold", "call"])
    nc, bank = FakeTable(_view([SeatView(2, "bob", 900, False)], turn)), Bank()
    bot = _start(nc, bank)
    assert bot.seated and bot.stack == 900 and bank.credits == []
    commands = nc.commands()
    assert not any(isinstance(c, SitDown) for c in commands)             # the seat is his
    [answer] = [c for c in commands if isinstance(c, Act)]
    assert answer.seat == 2 and answer.action in turn.options
    ids = [int(c.command_id) for c in commands]
    assert ids == sorted(set(ids))                                        # the client's sequence


def test_a_bot_looks_at_its_table_again_after_a_reconnect() -> None:
    nc = FakeTable(_view([SeatView(2, "bob", 900, False)]))

    def views() -> int:
        return sum(isinstance(r, protocol.ViewTable) for _, r in nc.requests)

    async def run() -> tuple[int, int]:
        bot = Bot(TableClient(nc, "player", "bob"), "t1", 2, random.Random(1), stall_seconds=3.0)
        await bot.start()
        before = views()
        nc.stats["reconnects"] += 1               # the connection came back: messages may be lost
        await asyncio.sleep(1.3)                  # the watchdog looks every stall_seconds / 3
        after = views()
        await bot.stop()
        return before, after

    before, after = asyncio.run(run())
    assert (before, after) == (1, 2)


class FakeCashier:
    """A NATS connection to the cashier: records each request, answers ``reply``."""

    def __init__(self, reply: cashier_protocol.CashierReply) -> None:
        self.reply = reply
        self.requests: list[tuple[str, Any]] = []

    async def request(self, subject: str, data: bytes, timeout: float) -> Any:
        self.requests.append((subject, cashier_protocol.decode_request(data)))
        return SimpleNamespace(data=cashier_protocol.encode(self.reply))


def test_the_cashier_bank_asks_the_cashier_for_the_players_own_buy_in() -> None:
    nc = FakeCashier(cashier_protocol.CashierReply(ok=True, outcome="confirmed"))
    reply = asyncio.run(CashierBank(CashierClient(nc, "player", "bob"))("t1", 4, 500))
    assert reply.ok
    [(subject, request)] = nc.requests
    assert subject == subjects.cashier_requests("player", "bob")
    assert isinstance(request, cashier_protocol.BuyChips)
    assert (request.table_id, request.seat, request.amount) == ("t1", 4, 500)
    assert request.request_id is not None


def test_a_refused_buy_in_comes_back_with_the_tables_code() -> None:
    refused = cashier_protocol.refusal("hand_in_progress", "buy-ins and top-ups only between hands")
    reply = asyncio.run(CashierBank(CashierClient(FakeCashier(refused), "player", "bob"))("t1", 4, 500))
    assert not reply.ok and reply.error is not None and reply.error.code == "hand_in_progress"


def test_only_a_player_buys_in_through_the_cashier() -> None:
    with pytest.raises(ValueError, match="player"):
        CashierBank(CashierClient(FakeCashier(cashier_protocol.CashierReply(ok=True)), "operator", "floor"))


def test_a_bot_reads_a_message_of_several_events_one_by_one_and_counts_a_bad_one() -> None:
    nc = FakeTable(_view([SeatView(2, "bob", 900, False)]))
    turn = TurnStarted(turn=7, seat=2, kind="act", deadline_ms=0, options=["fold", "call"])
    public = event_messages.public_message("t1", 4, [SitOutChanged(seat=3, sitting_out=True), turn])
    dealt = CardsDealt(street=1, cards=[DealtCard(seat=2, card="As", up=False)])
    private = event_messages.public_message("t1", 9, [dealt])      # the relay's body and headers, one event

    async def run() -> Bot:
        bot = Bot(TableClient(nc, "player", "bob"), "t1", 2, random.Random(1), stall_seconds=60)
        await bot.start()
        await nc.subscribed[subjects.public_events("t1")](
            SimpleNamespace(subject=public.subject, headers=public.headers, data=public.payload))
        await nc.subscribed[subjects.private_events("bob", "t1")](
            SimpleNamespace(subject=subjects.private_events("bob", "t1"), headers=private.headers,
                            data=private.payload))
        await nc.subscribed[subjects.public_events("t1")](
            SimpleNamespace(subject=public.subject, headers={}, data=public.payload))    # no version: not read
        await asyncio.sleep(0.05)            # answers run as tasks
        await bot.stop()
        return bot

    bot = asyncio.run(run())
    assert bot.transcript is not None
    assert [(r.version, r.event) for r in bot.transcript.public] == [(4, SitOutChanged(seat=3, sitting_out=True)),
                                                                     (5, turn)]
    assert all(r.subject == public.subject and r.data == public.payload for r in bot.transcript.public)
    [answer] = [c for c in nc.commands() if isinstance(c, Act)]          # the turn, second in its message
    assert answer.seat == 2 and answer.action in turn.options
    assert [(r.version, r.event) for r in bot.transcript.private] == [(9, dealt)]
    assert bot.transcript.down_cards == [(0, "As")]
    assert bot.stats.error_codes == {BAD_MESSAGE: 1}


def test_of_a_messages_turns_a_bot_answers_only_the_last_the_others_are_over() -> None:
    nc = FakeTable(_view([SeatView(2, "bob", 900, False)]))
    over = TurnStarted(turn=7, seat=2, kind="act", deadline_ms=0, options=["call", "raise"])
    ended = SitOutChanged(seat=2, sitting_out=True)       # something of the table's that ended turn 7
    open_turn = TurnStarted(turn=8, seat=2, kind="act", deadline_ms=0, options=["check", "bet"])
    public = event_messages.public_message("t1", 6, [over, ended, open_turn])

    async def run() -> Bot:
        bot = Bot(TableClient(nc, "player", "bob"), "t1", 2, random.Random(1), stall_seconds=60)
        await bot.start()
        await nc.subscribed[subjects.public_events("t1")](
            SimpleNamespace(subject=public.subject, headers=public.headers, data=public.payload))
        await asyncio.sleep(0.05)            # answers run as tasks
        await bot.stop()
        return bot

    bot = asyncio.run(run())
    [answer] = [c for c in nc.commands() if isinstance(c, Act)]
    assert answer.action in open_turn.options           # one answer, to turn 8's options
    assert bot.last_turn == 8
