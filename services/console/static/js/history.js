// The history: my hands (an operator: anyone's), one hand as I may see it in the
// room's text rendering, its PHH export (shown and downloadable), and its replay.

import { h, clear, chips, when, gameName, errorText, notice } from "./dom.js";

// The language the reader chose for the dealer at a table (table.js keeps it).
const preferredLang = () => (localStorage.getItem("studroom.lang") === "de" ? "de" : "en");

export function show(container, { api, session, args }) {
  const isOperator = session.role === "operator";
  const status = h("p.notice", { role: "status", "aria-live": "polite", testid: "history-status" });
  const rows = h("tbody", { testid: "hands" });
  const totals = h("div", { testid: "totals" });
  const handBox = h("section.hand-box", { testid: "hand", "aria-live": "polite" });
  const playerInput = h("input#history-player", { testid: "history-player", autocomplete: "off" });
  let player = isOperator ? null : session.name;
  let lastHref = null;                       // the shown export's download (a blob: URL, revoked when replaced)

  container.append(h("section.page-history", {},
    h("h1", {}, "History"),
    isOperator ? h("form.inline-form", { onsubmit: (ev) => { ev.preventDefault(); player = playerInput.value.trim() || null; loadHands(); } },
      h("div.field", {}, h("label", { for: "history-player" }, "Player"), playerInput),
      h("button", { type: "submit", testid: "history-show" }, "Show")) : null,
    status,
    handBox,
    h("h2", {}, "Hands"),
    h("div.scroll", {}, h("table.grid", {},
      h("thead", {}, h("tr", {}, ...["Played", "Table", "Hand", "Game", "Stakes", "Seat", "Net", "Rake", ""].map((t) => h("th", { scope: "col" }, t)))),
      rows)),
    h("h2", {}, "Totals"), totals));

  const ask = (request) => {
    if (isOperator && player) request.player = player;
    return api.request("history", { request });
  };

  async function loadHands() {
    if (!player) return;
    notice(status, "Loading…");
    try {
      const reply = await ask({ type: "Hands", limit: 100 });
      const hands = reply.hands || [];
      clear(rows, ...hands.map((x) => h("tr", { testid: "hand-row", dataset: { table: x.table_id, hand: String(x.hand_no) } },
        h("td", {}, when(x.played_ms)), h("td", {}, x.table_id), h("td.num", {}, `#${x.hand_no}`), h("td", {}, gameName(x.game)),
        h("td", {}, `${chips(x.small_bet)}/${chips(x.big_bet)}`), h("td.num", {}, String(x.seat)),
        h("td.num", { class: x.net < 0 ? "neg" : x.net > 0 ? "pos" : "" }, chips(x.net)), h("td.num", {}, chips(x.rake_paid)),
        h("td", {}, h("button", { type: "button", testid: "open-hand", onclick: () => openHand(x.table_id, x.hand_no, "text", preferredLang()) }, "Open")))));
      if (!hands.length) clear(rows, h("tr", {}, h("td", { colspan: "9" }, "No hands yet.")));
      notice(status, "");
      const s = await ask({ type: "Sessions" });
      clear(totals, ...(s.totals || []).map((t) => h("p", { testid: "total" },
        `${gameName(t.game)} ${chips(t.small_bet)}/${chips(t.big_bet)}: ${t.sessions} sessions, ${t.hands} hands, net ${chips(t.net)}, rake ${chips(t.rake_paid)}`)));
    } catch (e) {
      notice(status, errorText(e), "error");
    }
  }

  async function openHand(table, handNo, format, lang = "en") {
    clear(handBox, h("p", {}, `Loading hand #${handNo} at ${table}…`));
    try {
      const reply = await ask({ type: "Hand", table_id: table, hand_no: handNo, format, lang });
      const text = reply.text || "";
      const name = `${table}-hand-${handNo}${format === "phh" ? ".phh" : `.${lang}.txt`}`;
      if (lastHref) URL.revokeObjectURL(lastHref);
      const href = lastHref = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
      const tab = (f, l, label, testid) => h("button", { type: "button", role: "tab", testid, "aria-selected": f === format && (f === "phh" || l === lang) ? "true" : "false",
        onclick: () => openHand(table, handNo, f, l) }, label);
      clear(handBox,
        h("h2", {}, `Hand #${handNo} at ${table}`),
        h("div.tabs", { role: "tablist" },
          tab("text", "en", "Text (English)", "export-text"), tab("text", "de", "Text (Deutsch)", "export-text-de"), tab("phh", "en", "PHH", "export-phh")),
        h("div.buttons", {},
          h("a", { href, download: name, testid: "download" }, `Download ${name}`),
          h("a", { href: `#/replay/${encodeURIComponent(table)}/${handNo}`, testid: "open-replay" }, "Replay step by step")),
        h("pre.export", { testid: "export", tabindex: "0" }, text));
    } catch (e) {
      clear(handBox, h("p.notice.error", { role: "alert" }, errorText(e)));
    }
  }

  loadHands();
  if (args[0] && args[1]) openHand(args[0], Number(args[1]), "text", preferredLang());
}
