// The play panel of a logged-in player at a table: take a seat or join the waiting
// list, buy in from the cashier balance, act with the legal actions and sizes only,
// sit out and in, leave.  It is drawn again only when what it offers changes, so the
// keyboard focus stays on its buttons while the table moves.

import { h, clear, chips, errorText, notice } from "./dom.js";

const DEFAULT_MAX_BUY_IN_BIG_BETS = 100;   // domain/limits.py: a table's ceiling when it sets none
const LABELS = { bring_in: "Bring in", complete: "Complete", fold: "Fold", check: "Check", call: "Call", bet: "Bet", raise: "Raise" };

export function playPanel(el, api, state, session, reload) {
  const status = h("p.notice", { role: "status", "aria-live": "polite", testid: "play-status" });
  const body = h("div.play-body");
  const alert = h("p.sr-only", { "aria-live": "assertive", testid: "turn-alert" });   // "Your turn" for screen readers
  clear(el, h("h2", {}, "Play"), body, status, alert);
  let alerted = null;
  let balance = null;
  let signature = "";
  let busy = false;

  async function refreshBalance() {
    try {
      const reply = await api.request("cashier", { request: { type: "Balance" } });
      balance = reply.balance ?? 0;
    } catch (e) {
      balance = null;
    }
    signature = "";
    render();
  }

  async function send(command, what) {
    if (busy) return;
    busy = true;
    notice(status, `${what}…`);
    try {
      await api.request("command", { table: state.tableId, command });
      notice(status, `${what}: done`, "ok");
    } catch (e) {
      notice(status, `${what}: ${errorText(e)}`, "error");
      if (e.code === "not_your_turn" || e.code === "illegal_action") reload();
    } finally {
      busy = false;
    }
  }

  async function buyIn(amount) {
    if (busy) return;
    busy = true;
    notice(status, `Buying in ${chips(amount)}…`);
    try {
      const reply = await api.request("cashier", { request: { type: "BuyChips", table_id: state.tableId, seat: state.mySeat, amount } });
      notice(status, reply.outcome === "confirmed" || reply.ok ? `Bought in ${chips(amount)}` : `Buy-in: ${reply.outcome}`, "ok");
    } catch (e) {
      notice(status, `Buy-in refused: ${errorText(e)}`, "error");
    } finally {
      busy = false;
      refreshBalance();
    }
  }

  function limits() {
    const c = state.config || {};
    const st = c.stakes || { small_bet: 0, big_bet: 0 };
    const min = c.min_buy_in ?? 10 * st.small_bet;
    const ceiling = c.max_buy_in ?? DEFAULT_MAX_BUY_IN_BIG_BETS * st.big_bet;
    return { min, ceiling };
  }

  function actionButtons(turn) {
    const seat = state.mySeat;
    const st = (state.config && state.config.stakes) || {};
    if (turn.kind === "ante") {
      return [
        h("button.primary", { type: "button", testid: "action-ante", onclick: () => send({ type: "PostAnte", seat }, "Ante") }, `Post ante ${chips(st.ante || 0)}`),
        h("button", { type: "button", testid: "action-skip-ante", onclick: () => send({ type: "SkipAnte", seat }, "Skip ante") }, "Skip this hand"),
      ];
    }
    if (turn.kind === "show") {
      return [
        h("button.primary", { type: "button", testid: "action-show", onclick: () => send({ type: "Show", seat }, "Show") }, "Show"),
        h("button", { type: "button", testid: "action-muck", onclick: () => send({ type: "Muck", seat }, "Muck") }, "Muck"),
      ];
    }
    const buttons = [];
    const top = state.currentBet;
    const amountOf = (option, size) => (option === "raise" ? `to ${chips(top + state.betSize(size))}` : chips(state.betSize(size)));
    for (const option of turn.options || []) {
      const act = (size) => () => send({ type: "Act", seat, action: option, ...(size ? { size } : {}) }, LABELS[option] || option);
      if ((option === "bet" || option === "raise") && (turn.sizes || []).length) {
        for (const size of turn.sizes) {
          buttons.push(h("button", { type: "button", testid: `action-${option}-${size}`, dataset: { action: option, size }, onclick: act(size) },
            `${LABELS[option]} ${amountOf(option, size)}`));
        }
        continue;
      }
      let label = LABELS[option] || option;
      if (option === "call") label += ` ${chips(turn.to_call)}`;
      else if (option === "bet" || option === "raise") label += ` ${amountOf(option, null)}`;
      else if (option === "bring_in") label += ` ${chips(st.bring_in ?? Math.floor(st.small_bet / 2))}`;
      else if (option === "complete") label += ` to ${chips(st.small_bet)}`;
      buttons.push(h(option === "fold" ? "button.danger" : "button", { type: "button", testid: `action-${option}`, dataset: { action: option }, onclick: act(null) }, label));
    }
    return buttons;
  }

  function signatureNow() {
    const mine = state.mySeat !== null ? state.seats.get(state.mySeat) : null;
    const turn = state.myTurn;
    return JSON.stringify([state.mySeat, mine && mine.sitting_out, mine && mine.leaving, mine && mine.stack === 0,
      turn && turn.turn, turn && turn.kind, state.waiting.includes(session.name), state.offer && state.offer.player === session.name && state.offer.seat,
      state.state, state.freeSeats.join(","), balance, state.hand && !state.hand.over && state.mySeat !== null && state.hand.players.has(state.mySeat)]);
  }

  function render() {
    const sig = signatureNow();
    if (sig === signature) return;
    signature = sig;
    const had = document.activeElement && el.contains(document.activeElement) ? document.activeElement.dataset.testid : null;
    clear(body, ...(state.mySeat === null ? unseated() : seated()));
    if (had) {
      const again = body.querySelector(`[data-testid="${had}"]`) || body.querySelector("button");
      if (again) again.focus();
    }
  }

  function unseated() {
    const parts = [];
    if (state.state === "closed") return [h("p", {}, "The table is closed.")];
    const offer = state.offer && state.offer.player === session.name ? state.offer : null;
    if (offer) {
      const left = Math.max(0, Math.round((offer.until_ms - Date.now()) / 1000));
      parts.push(h("p.notice.ok", { testid: "seat-offer", dataset: { seat: String(offer.seat) } },
        `Seat ${offer.seat} is offered to you for ${left} s more: `,
        h("button.primary", { type: "button", testid: "take-offer",
          onclick: () => send({ type: "SitDown", seat: offer.seat, player: session.name }, `Sit down in seat ${offer.seat}`) }, `Take seat ${offer.seat}`)));
    }
    const free = state.freeSeats.filter((s) => !state.offer || state.offer.seat !== s || offer);
    if (free.length) {
      parts.push(h("div.field", {}, h("span.label", {}, "Take a free seat: "),
        h("div.buttons", { testid: "free-seats" }, ...free.map((s) =>
          h("button", { type: "button", testid: "sit", dataset: { seat: String(s) },
            onclick: () => send({ type: "SitDown", seat: s, player: session.name }, `Sit down in seat ${s}`) }, `Seat ${s}`)))));
    } else {
      parts.push(h("p", { testid: "no-seat" }, state.full ? `The table is full: ${state.playerCap} players at most.` : "No free seat."));
    }
    if (state.waiting.includes(session.name)) {
      const place = state.waiting.indexOf(session.name) + 1;
      parts.push(h("p", {}, `You are number ${place} on the waiting list. `,
        h("button", { type: "button", testid: "leave-waiting", onclick: () => send({ type: "LeaveWaitingList", player: session.name }, "Leave the waiting list") }, "Leave the waiting list")));
    } else if (!free.length || state.waiting.length) {
      parts.push(h("button", { type: "button", testid: "join-waiting", onclick: () => send({ type: "JoinWaitingList", player: session.name }, "Join the waiting list") }, "Join the waiting list"));
    }
    parts.push(h("p.muted", { testid: "balance" }, `Cashier balance: ${chips(balance)}`));
    return parts;
  }

  function seated() {
    const seat = state.mySeat;
    const mine = state.seats.get(seat);
    const parts = [h("p", { testid: "my-seat" }, `You sit in seat ${seat}` + (mine ? ` with ${chips(mine.stack)} chips.` : "."))];
    const turn = state.myTurn;
    if (turn && alerted !== turn.turn) {
      alerted = turn.turn;
      alert.textContent = `Your turn: ${turn.kind === "act" ? (turn.options || []).join(", ").replaceAll("_", " ") : turn.kind === "show" ? "show or muck" : "ante"}`;
    }
    if (turn) {
      parts.push(h("div.actions", { testid: "actions", role: "group", "aria-label": "Your turn" },
        h("span.label", {}, "Your turn: "), ...actionButtons(turn)));
    }
    if (mine && !mine.leaving) {
      const { min, ceiling } = limits();
      const room = Math.max(0, ceiling - mine.stack);
      const amount = h("input#buyin-amount", { type: "number", inputmode: "numeric", min: String(Math.min(min, room) || 1), max: String(room), step: "1",
        value: String(Math.min(room, Math.max(min - mine.stack, Math.min(min, room)))), testid: "buyin-amount" });
      const form = h("form.buyin", { testid: "buyin-form", onsubmit: (ev) => {
        ev.preventDefault();
        const n = Number(amount.value);
        if (!Number.isInteger(n) || n <= 0) { notice(status, "The amount is a whole number of chips.", "error"); return; }
        buyIn(n);
      } },
      h("label", { for: "buyin-amount" }, mine.stack === 0 ? "Buy in" : "Top up"), amount,
      h("button", { type: "submit", testid: "buyin-submit", disabled: room <= 0 }, mine.stack === 0 ? "Buy in" : "Top up"),
      h("span.muted", { testid: "balance" }, ` balance ${chips(balance)}; the seat holds ${chips(min)}..${chips(ceiling)}`));
      parts.push(form);
      parts.push(h("div.buttons", {},
        mine.sitting_out ?
          h("button", { type: "button", testid: "sit-in", onclick: () => send({ type: "SitOut", seat, sitting_out: false }, "Sit in") }, "Sit in") :
          h("button", { type: "button", testid: "sit-out", onclick: () => send({ type: "SitOut", seat, sitting_out: true }, "Sit out") }, "Sit out"),
        h("button.danger", { type: "button", testid: "leave", onclick: () => send({ type: "Leave", seat }, "Leave") }, "Leave the table")));
    } else if (mine && mine.leaving) {
      parts.push(h("p", {}, "You leave when this hand ends."));
    }
    return parts;
  }

  refreshBalance();
  const offBalance = api.on("push:event", (m) => {
    if (m.table === state.tableId && m.event && (m.event.type === "PlayerLeft" || m.event.type === "ChipsBought")) refreshBalance();
  });
  return { render, dispose: offBalance };
}
