"""The console's gateway on the shared live room (tests/live_room.py, a server in
operator mode): logins, a person's identity on NATS, spectators, malformed input,
quotas, origins.  Bots play two tables of this module's own; the console runs in the
test's event loop on a free port; the tests are its browsers (gateway_harness.py)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import aiohttp
import msgspec
import pytest
from gateway_harness import Browser, Gateway
from live_room import LiveRoom
from secrecy import Message, Truth, scan
from studroom.domain.config import TableConfig
from studroom.domain.simulate import STAKES
from studroom.services.console.desk_books import Books
from studroom.services.disputes.stored_events import table_stream
from studroom.services.wire import subjects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

RUN = uuid.uuid4().hex[:6]
ALICE, BOSS = f"gwalice{RUN}", f"gwboss{RUN}"
PASSWORD = "a good long password"
SEAT = 5                        # free at the bots' tables (3 bots: seats 0..2)


@pytest.fixture(scope="module")
def gw(live_room: LiveRoom) -> Iterator[Gateway]:
    books = Books(live_room.database_url, schemas=tuple(live_room.schemas), cashier_schema=f"{live_room.name}_pcashier")
    gateway = Gateway(live_room.url, live_room.authority, live_room.table_ids(f"gw{RUN}t", 2), books=books,
                      store_prefix=f"{live_room.name}_p")
    gateway.passwords.set("player", ALICE, PASSWORD)
    gateway.passwords.set("operator", BOSS, PASSWORD)
    try:
        gateway.run(gateway.start())
        yield gateway
        assert not live_room.dead(), f"a service died: {live_room.dead()}; logs in {live_room.log_dir}"
        gateway.run(gateway.stop())
    finally:
        gateway.close()


@pytest.fixture(autouse=True)
def fresh_address(gw: Gateway) -> None:
    """Each test's logins from 127.0.0.1 counted afresh (the per-address limit is tested apart)."""
    gw.console.limits.addresses.clear("127.0.0.1")


async def _logged_in(gw: Gateway, role: str, name: str) -> Browser:
    browser = gw.browser()
    status, body = await browser.login(role, name, PASSWORD)
    assert (status, body) == (200, {"ok": True, "role": role, "name": name})
    await browser.connect()
    return browser


async def _spectator(gw: Gateway) -> Browser:
    browser = gw.browser()
    assert (await browser.post("/api/spectate"))[0] == 200
    await browser.connect()
    return browser


def test_login_good_bad_unknown_and_limited(gw: Gateway) -> None:
    async def main() -> None:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async def login(name: str, password: str) -> tuple[int, dict[str, Any], aiohttp.ClientResponse]:
                async with http.post(gw.base + "/api/login", headers={"Origin": gw.base},
                                     json={"role": "player", "name": name, "password": password}) as r:
                    return r.status, await r.json(), r

            status, body, _ = await login(ALICE, "wrong password!")
            assert status == 401 and body["error"]["code"] == "bad_login"
            unknown_status, unknown, _ = await login(f"nobody{RUN}", PASSWORD)
            assert (unknown_status, unknown) == (status, body)           # an unknown name: the same answer
            async with http.get(gw.base + "/api/me") as r:
                assert r.status == 401
            status, body, response = await login(ALICE, PASSWORD)
            assert (status, body) == (200, {"ok": True, "role": "player", "name": ALICE})
            cookie = response.headers["Set-Cookie"]
            assert cookie.startswith("studroom_session=") and "HttpOnly" in cookie
            assert "SameSite=Strict" in cookie and "Path=/" in cookie
            async with http.get(gw.base + "/api/me") as r:
                assert (r.status, await r.json()) == (200, {"ok": True, "role": "player", "name": ALICE})
            async with http.post(gw.base + "/api/logout", headers={"Origin": gw.base}) as r:
                assert r.status == 200
            async with http.get(gw.base + "/api/me") as r:
                assert r.status == 401
            # five failures of one name: the sixth attempt waits, even with the right password
            limited = f"gwlim{RUN}"
            gw.passwords.set("player", limited, PASSWORD)
            for _ in range(5):
                assert (await login(limited, "not the password"))[0] == 401
            status, body, _ = await login(limited, PASSWORD)
            assert status == 429 and body["error"]["code"] == "rate_limited"
            assert body["error"]["retry_after_ms"] > 0
            assert (await login(ALICE, PASSWORD))[0] == 200                 # another name is not limited

    gw.run(main())


def test_malformed_login_requests_are_refused_clearly(gw: Gateway) -> None:
    async def main() -> None:
        browser = gw.browser()
        try:
            status, body = await browser.post("/api/login", data=b"{not json")
            assert status == 400 and body["error"]["code"] == "bad_request"
            status, body = await browser.post("/api/login", {"role": "service", "name": "table", "password": "x" * 9})
            assert status == 400 and body["error"]["code"] == "bad_request"
            status, body = await browser.post("/api/login", data=b'{"a": "' + b"x" * 20_000 + b'"}')
            assert status == 413 and body["error"]["code"] == "too_large"
            evil = Browser(gw.base, "http://evil.example")
            status, body = await evil.login("player", ALICE, PASSWORD)
            assert status == 403 and body["error"]["code"] == "bad_origin"
            await evil.close()
        finally:
            await browser.close()

    gw.run(main())


def test_a_players_commands_are_his_on_the_table_and_he_sees_only_his_own_cards(gw: Gateway) -> None:
    table = gw.tables[0]

    async def main() -> None:
        boss = await _logged_in(gw, "operator", BOSS)
        alice = await _logged_in(gw, "player", ALICE)
        try:
            deposit = {"type": "Deposit", "player": ALICE, "amount": 5000, "reference": f"gw-{RUN}"}
            assert (await boss.ask("cashier", request=deposit))["ok"]
            answer = await alice.ask("watch_table", table=table)
            assert answer["ok"] and answer["view"]["table_id"] == table and answer["view"]["seat"] is None
            assert answer["max_players"] == msgspec.convert(answer["view"]["config"], TableConfig).max_players   # R2
            # his identity is the subject's: sitting another player down is refused by the table
            other = await alice.ask("command", table=table, command={"type": "SitDown", "seat": SEAT, "player": "bob"})
            assert not other["ok"] and other["error"]["code"] == "forbidden"
            sat = await alice.ask("command", table=table,
                                  command={"type": "SitDown", "seat": SEAT, "player": ALICE, "command_id": "1"})
            assert sat["ok"], sat
            pushed = await alice.until(lambda p: p["event"]["type"] == "PlayerSatDown"
                                       and p["event"]["player"] == ALICE)
            stamped = gw.console.sessions.links[("player", ALICE)].table.ids.last
            # the table names him as its sender, with the console's id (not the browser's "1")
            assert pushed["event"]["command_id"] == f"player.{ALICE}#{stamped}"
            bought = await alice.ask("cashier", request={"type": "BuyChips", "table_id": table, "seat": SEAT,
                                                         "amount": 10 * STAKES.small_bet})
            assert bought["ok"] and bought["outcome"] == "confirmed", bought
            mine = await alice.until(lambda p: p["private"] and p["event"]["type"] == "CardsDealt", timeout=90)
            cards = mine["event"]["cards"]
            assert any(c[0] == SEAT and not c[2] and c[1] is not None for c in cards)    # his down card
            assert all(c[1] is None for c in cards if c[0] != SEAT and not c[2])        # nobody else's
            assert all(not p["private"] or p["table"] == table for p in alice.pushes)
            # an operator's command from a player is refused by the table ...
            opened = await alice.ask("command", table=f"gw{RUN}x", command={
                "type": "OpenTable", "table_id": f"gw{RUN}x",
                "config": {"game": "seven_card_stud", "stakes": {"ante": 5, "bring_in": 10, "small_bet": 20,
                                                                  "big_bet": 40}}})
            assert not opened["ok"] and opened["error"]["code"] == "forbidden"
            # ... a deposit by the cashier, and the desk's ops by the console
            assert (await alice.ask("cashier", request=deposit | {"reference": "mine"}))["error"]["code"] == "forbidden"
            # ... and NATS itself refuses his connection the operator's subject
            link = gw.console.sessions.links[("player", ALICE)]
            await link.nc.publish(subjects.command_from("operator", ALICE, table), b"{}")
            await link.nc.flush()
            deadline = time.monotonic() + 10
            while "permissions violation" not in str(link.nc.last_error).lower():
                assert time.monotonic() < deadline, f"no permissions violation: {link.nc.last_error!r}"
                await asyncio.sleep(0.05)
            assert not link.ended.is_set()                  # a refusal, not the end of his connection
            left = await alice.ask("command", table=table, command={"type": "Leave", "seat": SEAT})
            assert left["ok"], left
        finally:
            await alice.close()
            await boss.close()

    gw.run(main(), timeout=200)


def test_a_spectator_never_gets_a_private_message_nor_a_down_card(gw: Gateway, live_room: LiveRoom) -> None:
    table = gw.tables[1]

    async def main() -> list[dict[str, Any]]:
        spectator = await _spectator(gw)
        try:
            answer = await spectator.ask("watch_table", table=table)
            assert answer["ok"] and answer["entry"]["table_id"] == table
            hand_no = answer["entry"]["hand_no"]
            await spectator.until(lambda p: p["event"]["type"] == "HandEnded" and p["event"]["hand_no"] > hand_no,
                                  timeout=90)
            for op, args in (("command", {"table": table, "command": {"type": "Leave", "seat": 0}}),
                             ("cashier", {"request": {"type": "Balance"}}),
                             ("history", {"request": {"type": "Hands"}})):
                refused = await spectator.ask(op, **args)
                assert refused["error"]["code"] == "forbidden", refused
            held = gw.console.sessions.spectators.hub.subs
            assert held and not [s for s in held if s.startswith("studroom.priv.")]
            assert (await spectator.ask("unwatch_table", table=table))["ok"]
            return spectator.pushes
        finally:
            await spectator.close()

    pushes = gw.run(main(), timeout=200)
    events = [p for p in pushes if p["push"] == "event"]
    assert events and not [p for p in events if p["private"]]
    truth = Truth().learn_stored(table, table_stream(live_room.database_url, table, f"{live_room.name}_p"))
    report = scan([Message(table, p["version"], json.dumps(p["event"]).encode()) for p in events], truth)
    assert report.hidden_cards > 0 and not report.leaks, str(report)


def test_malformed_ops_are_answered_bad_request_and_change_nothing(gw: Gateway) -> None:
    empty = f"gw{RUN}e"

    async def main() -> None:
        boss = await _logged_in(gw, "operator", BOSS)
        try:
            config = {"game": "five_card_stud", "stakes": {"ante": 5, "bring_in": 10, "small_bet": 20, "big_bet": 40}}
            opened = await boss.ask("command", table=empty, command={"type": "OpenTable", "table_id": empty,
                                                                       "config": config})
            assert opened["ok"], opened
            before = (await boss.ask("watch_table", table=empty))["view"]["version"]
            await boss.send_raw("{not json")
            bad = [
                {"op": "lobby"},                                                       # no id
                {"id": "7", "op": "lobby"},                                            # not an integer id
                {"id": 1, "op": "no_such_op"},
                {"id": 2, "op": "command", "table": empty, "command": {"type": "Act", "seat": "three", "action": "call"}},
                {"id": 3, "op": "command", "table": "bad table", "command": {"type": "PauseTable"}},
                {"id": 4, "op": "command", "table": empty, "command": {"type": "ViewTable"}},
                {"id": 5, "op": "command", "table": empty, "command": {"type": "PauseTable"}, "extra": 1},
                {"id": 6, "op": "command", "table": empty, "command": "PauseTable"},
                {"id": 7, "op": "cashier", "request": {"type": "Deposit", "player": ALICE, "amount": "lots",
                                                       "reference": "x"}},
                {"id": 8, "op": "history", "request": {"type": "Hands", "limit": 0}},
                {"id": 9, "op": "watch_table", "table": ["t"]},
            ]
            for message in bad:
                await boss.send_raw(json.dumps(message))
            answers = [await asyncio.wait_for(boss.unasked.get(), 30) for _ in range(len(bad) + 1)]
            assert all(a["ok"] is False and a["error"]["code"] == "bad_request" for a in answers), answers
            assert sorted(a["id"] for a in answers if a["id"] is not None) == list(range(1, 10))
            await boss.ask("unwatch_table", table=empty)
            after = (await boss.ask("watch_table", table=empty))["view"]["version"]
            assert after == before
            await boss.ask("command", table=empty, command={"type": "CloseTable"})
        finally:
            await boss.close()

    gw.run(main())


def test_a_sessions_ops_beyond_its_quota_are_rate_limited(gw: Gateway) -> None:
    async def main() -> list[dict[str, Any]]:
        spectator = await _spectator(gw)
        try:
            return list(await asyncio.gather(*(spectator.ask("unwatch_lobby") for _ in range(200))))
        finally:
            await spectator.close()

    answers = gw.run(main())
    limited = [a for a in answers if not a["ok"]]
    assert len(answers) - len(limited) >= 40
    assert limited and all(a["error"]["code"] == "rate_limited" and a["error"]["retry_after_ms"] > 0 for a in limited)


def test_the_websocket_needs_a_session_and_the_consoles_own_origin(gw: Gateway) -> None:
    async def main() -> None:
        browser = gw.browser()
        try:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await browser.connect()                                  # no session yet
            assert refused.value.status == 401
            assert (await browser.post("/api/spectate"))[0] == 200
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await browser.http.ws_connect(gw.base + "/ws", headers={"Origin": "http://evil.example"})
            assert refused.value.status == 403
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await browser.http.ws_connect(gw.base + "/ws")          # no Origin: no browser's page
            assert refused.value.status == 403
            await browser.connect()
            assert (await browser.ask("lobby"))["ok"]
        finally:
            await browser.close()
        evil = Browser(gw.base, "http://evil.example")
        status, body = await evil.post("/api/spectate")
        assert status == 403 and body["error"]["code"] == "bad_origin"
        await evil.close()

    gw.run(main())


def test_logout_closes_the_persons_connection_and_his_tabs(gw: Gateway) -> None:
    carol = f"gwcarol{RUN}"
    gw.passwords.set("player", carol, PASSWORD)

    async def main() -> None:
        first = await _logged_in(gw, "player", carol)
        second = gw.browser()
        try:
            link = gw.console.sessions.links[("player", carol)]
            await second.login("player", carol, PASSWORD)
            assert gw.console.sessions.links[("player", carol)] is link      # one connection per person
            await second.connect()
            lobby = await second.ask("lobby")
            assert lobby["ok"] and {gw.tables[0], gw.tables[1]} <= {t["table_id"] for t in lobby["tables"]}
            await first.post("/api/logout")
            assert not link.ended.is_set()                                    # his other session holds it
            await second.post("/api/logout")
            assert link.ended.is_set() and link.nc.is_closed
            assert ("player", carol) not in gw.console.sessions.links
            for browser in (first, second):
                assert browser.reader is not None
                await asyncio.wait_for(browser.reader, 10)
                assert browser.closed_with == 4401
        finally:
            await first.close()
            await second.close()

    gw.run(main())


def test_the_desks_ops_are_an_operators_and_replay_a_players_own_hands(gw: Gateway) -> None:
    table = gw.tables[0]

    async def main() -> None:
        boss = await _logged_in(gw, "operator", BOSS)
        alice = await _logged_in(gw, "player", ALICE)
        spectator = await _spectator(gw)
        try:
            for op in ("desk_tables", "desk_health", "desk_rake", "desk_reconcile", "desk_dead_letters"):
                assert (await alice.ask(op))["error"]["code"] == "forbidden", op
                assert (await spectator.ask(op))["error"]["code"] == "forbidden", op
            tables = await boss.ask("desk_tables")
            assert {t["table_id"]: t["state"] for t in tables["tables"]}[table] == "open"
            health = await boss.ask("desk_health")
            assert health["ok"] and {"table", "relay", "lobby"} <= {s["service"] for s in health["services"]}
            letters = await boss.ask("desk_dead_letters", limit=5)
            assert letters["ok"] and letters["count"] >= 0
            assert (await boss.ask("desk_rake", by="week"))["error"]["code"] == "bad_request"
            # a hand the bots played to the end: whole for the operator, not alice's to see
            hand_no = (await boss.ask("watch_table", table=table))["view"]["hand_no"] - 1
            whole = await boss.ask("replay", table=table, hand_no=hand_no)
            assert whole["ok"] and whole["record"]["full"] and whole["verdict"]["consistent"], whole
            assert (await alice.ask("replay", table=table, hand_no=hand_no))["error"]["code"] in ("forbidden",)
            assert (await spectator.ask("replay", table=table, hand_no=hand_no))["error"]["code"] == "forbidden"
            assert (await boss.ask("replay", table=table, hand_no="1"))["error"]["code"] == "bad_request"
            # his own account and history, over his own connection; another's are the services' to refuse
            balance = await alice.ask("cashier", request={"type": "Balance"})
            assert balance["ok"] and balance["player"] == ALICE and balance["balance"] >= 0
            assert (await alice.ask("cashier", request={"type": "Balance", "player": BOSS}))["error"]["code"] == "forbidden"
            mine = await alice.ask("history", request={"type": "Hands"})
            assert mine["ok"] and isinstance(mine["hands"], list)
            theirs = await alice.ask("history", request={"type": "Hands", "player": f"{table}-p0"})
            assert theirs["error"]["code"] == "forbidden"
            anyone = await boss.ask("history", request={"type": "Hands", "player": f"{table}-p0"})
            assert anyone["ok"] and anyone["hands"], anyone
        finally:
            for browser in (boss, alice, spectator):
                await browser.close()

    gw.run(main())


def test_a_revoked_person_is_disconnected_his_session_ends_and_he_cannot_log_in(gw: Gateway) -> None:
    from studroom.services.warden import revocation

    dan = f"gwdan{RUN}"
    gw.passwords.set("player", dan, PASSWORD)
    gw.authority.issue("player", dan)                          # as `studroom player add` does

    async def main() -> None:
        browser = await _logged_in(gw, "player", dan)
        try:
            link = gw.console.sessions.links[("player", dan)]
            assert (await browser.ask("lobby"))["ok"]
            gw.passwords.remove("player", dan)                 # as `studroom player revoke` does, then:
            assert gw.authority.revoke("player", dan) == 2     # his file's key and the console's
            assert await revocation.push(gw.authority, gw.url) == 1
            await asyncio.wait_for(link.ended.wait(), 30)
            assert browser.reader is not None
            await asyncio.wait_for(browser.reader, 30)
            assert browser.closed_with == 4401
            assert ("player", dan) not in gw.console.sessions.links
            async with browser.http.get(gw.base + "/api/me") as r:
                assert r.status == 401
            status, body = await browser.login("player", dan, PASSWORD)
            assert status == 401 and body["error"]["code"] == "bad_login"
        finally:
            await browser.close()

    gw.run(main())


def test_the_lobby_pushes_the_tables_as_they_change(gw: Gateway) -> None:
    async def main() -> None:
        spectator = await _spectator(gw)
        try:
            answer = await spectator.ask("watch_lobby")
            hands = {t["table_id"]: t["hand_no"] for t in answer["tables"]}
            assert set(gw.tables) <= set(hands)
            table = gw.tables[1]
            pushed = await spectator.until(lambda p: p["push"] == "lobby" and any(
                t["table_id"] == table and t["hand_no"] > hands[table] for t in p["tables"]), timeout=90)
            assert all(set(t) >= {"table_id", "game", "stakes", "players", "waiting", "state", "figures"}
                       for t in pushed["tables"])
            assert (await spectator.ask("unwatch_lobby"))["ok"]
            assert gw.console.sessions.spectators.lobby.sub is None        # its last listener gone
        finally:
            await spectator.close()

    gw.run(main())


def test_a_console_that_stops_closes_its_tabs_going_away(gw: Gateway) -> None:
    """Else its stop would wait for every open page (the room stops it with SIGTERM)."""
    from aiohttp import web
    from studroom.services.console.gateway import Console

    async def main() -> None:
        console = Console(gw.url, gw.authority)
        await console.start()
        runner = web.AppRunner(console.app())
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        browser = Browser(base, base)
        try:
            assert (await browser.post("/api/spectate"))[0] == 200
            await browser.connect()
            assert (await browser.ask("lobby"))["ok"]
            await asyncio.wait_for(runner.cleanup(), 30)
            assert browser.reader is not None
            await asyncio.wait_for(browser.reader, 10)
            assert browser.closed_with == 1001
        finally:
            await console.stop()
            await browser.close()

    gw.run(main())


async def _ask_again_once(nc: Any, query: Any) -> list[Any]:
    """The lobby's answer, asked a second time if the first went unanswered."""
    from studroom.projections.lobby.watching import LobbyUnavailable, ask

    try:
        return await ask(nc, query)
    except LobbyUnavailable:
        return await ask(nc, query)


def test_a_persons_connection_outlives_its_first_credentials(gw: Gateway) -> None:
    """Issued again at half their life, the connection made again with them: it is
    still there, and answered, after the first ones ended (the server closes a
    connection whose JWT expired)."""
    from studroom.projections.lobby.queries import LobbyQuery
    from studroom.services.console.links import connect_person

    erin = f"gwerin{RUN}"

    async def main() -> None:
        link = await connect_person(gw.url, gw.authority, "player", erin, lifetime=4)
        try:
            first = link.expires
            # past the first credentials' end, midway between two renewals (every 2 s, the
            # first at ``first - 2``): a renewal reconnects, and a request in flight then may
            # go unanswered (core NATS request/reply is at most once), so it is asked again
            while time.time() < first + 3:
                assert not link.ended.is_set(), "the connection ended with its first credentials"
                await asyncio.sleep(0.2)
            assert link.expires > first and link.nc.is_connected
            assert {e.table_id for e in await _ask_again_once(link.nc, LobbyQuery())} >= set(gw.tables)
        finally:
            await link.close()

    gw.run(main())
