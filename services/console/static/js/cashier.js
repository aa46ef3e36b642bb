// The cashier: balance and movements (a player: his own; an operator: anyone's, and
// deposits and withdrawals).

import { h, clear, chips, when, errorText, notice } from "./dom.js";

const SIGN = { Deposited: 1, Withdrawn: -1, BuyInReserved: -1, BuyInRefunded: 1, CashedOut: 1 };
const WORDS = {
  Deposited: "Deposit", Withdrawn: "Withdrawal", BuyInReserved: "Buy-in (reserved)", BuyInClaimed: "Buy-in (sent again)",
  BuyInConfirmed: "Buy-in confirmed", BuyInRefunded: "Buy-in refunded", CashedOut: "Cash-out",
};

function detail(e) {
  if (e.reference) return `${e.reference}${e.operator ? ` (by ${e.operator})` : ""}`;
  if (e.table_id) return `table ${e.table_id}${e.seat !== undefined ? `, seat ${e.seat}` : ""}${e.reason ? `: ${e.reason}` : ""}`;
  return "";
}

export function show(container, { api, session }) {
  const isOperator = session.role === "operator";
  const status = h("p.notice", { role: "status", "aria-live": "polite", testid: "cashier-status" });
  const balance = h("strong", { testid: "cashier-balance" }, "–");
  const reserved = h("span.muted", { testid: "cashier-reserved" });
  const rows = h("tbody", { testid: "movements" });
  const playerInput = h("input#cashier-player", { testid: "cashier-player", value: isOperator ? "" : session.name, autocomplete: "off" });
  let player = isOperator ? null : session.name;

  const page = h("section.page-cashier", {},
    h("h1", {}, "Cashier"),
    isOperator ? h("form.inline-form", { onsubmit: (ev) => { ev.preventDefault(); player = playerInput.value.trim() || null; load(); } },
      h("div.field", {}, h("label", { for: "cashier-player" }, "Player"), playerInput),
      h("button", { type: "submit", testid: "cashier-show" }, "Show")) : null,
    h("p", {}, "Balance: ", balance, " ", reserved),
    status,
    isOperator ? moveForms() : null,
    h("h2", {}, "Movements"),
    h("div.scroll", {}, h("table.grid", {},
      h("thead", {}, h("tr", {}, ...["#", "When", "What", "Amount", "Details"].map((t) => h("th", { scope: "col" }, t)))),
      rows)));
  container.append(page);

  function moveForms() {
    const amount = h("input#move-amount", { type: "number", min: "1", step: "1", testid: "move-amount", required: true });
    const reference = h("input#move-reference", { testid: "move-reference", required: true, maxlength: "64" });
    const go = (type) => async () => {
      if (!player) { notice(status, "Name a player first.", "error"); return; }
      try {
        await api.request("cashier", { request: { type, player, amount: Number(amount.value), reference: reference.value.trim() } });
        notice(status, `${type} of ${chips(Number(amount.value))} for ${player}: done`, "ok");
        load();
      } catch (e) { notice(status, `${type}: ${errorText(e)}`, "error"); }
    };
    return h("fieldset", {}, h("legend", {}, "Deposit or withdraw"),
      h("div.inline-form", {},
        h("div.field", {}, h("label", { for: "move-amount" }, "Amount"), amount),
        h("div.field", {}, h("label", { for: "move-reference" }, "Reference"), reference),
        h("button", { type: "button", testid: "deposit", onclick: go("Deposit") }, "Deposit"),
        h("button", { type: "button", testid: "withdraw", onclick: go("Withdraw") }, "Withdraw")));
  }

  async function load() {
    if (!player) return;
    notice(status, "Loading…");
    try {
      const request = { type: "Movements", after: 0 };
      if (isOperator) request.player = player;
      const reply = await api.request("cashier", { request });
      balance.textContent = chips(reply.balance);
      reserved.textContent = reply.reserved ? `(${chips(reply.reserved)} on its way to a table)` : "";
      const movements = [...(reply.movements || [])].reverse();
      clear(rows, ...movements.map((m) => {
        const e = m.event;
        const sign = SIGN[e.type] || 0;
        return h("tr", { testid: "movement", dataset: { type: e.type } },
          h("td.num", {}, String(m.version)), h("td", {}, when(e.at_ms)), h("td", {}, WORDS[e.type] || e.type),
          h("td.num", { class: sign < 0 ? "neg" : sign > 0 ? "pos" : "" }, e.amount === undefined ? "" : (sign < 0 ? "−" : sign > 0 ? "+" : "") + chips(e.amount)),
          h("td", {}, detail(e)));
      }));
      if (!movements.length) clear(rows, h("tr", {}, h("td", { colspan: "5" }, "No movements yet.")));
      notice(status, "");
    } catch (e) {
      notice(status, errorText(e), "error");
    }
  }
  load();
}
