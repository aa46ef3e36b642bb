// The lobby: every table, live from watch_lobby pushes.

import { h, clear, chips, gameName, stakesText, errorText } from "./dom.js";

export function show(container, { api, navigate }) {
  const body = h("tbody", { testid: "lobby-rows" });
  const status = h("p.notice", { role: "status", "aria-live": "polite", testid: "lobby-status" }, "Loading the tables…");
  const updated = h("span.muted", { testid: "lobby-updated" });
  container.append(h("section.page-lobby", {},
    h("div.page-head", {}, h("h1", {}, "Lobby"), updated),
    h("div.scroll", {}, h("table.grid.lobby", { testid: "lobby" },
      h("caption.sr-only", {}, "Tables of the room"),
      h("thead", {}, h("tr", {},
        ...["Table", "Game", "Stakes", "Seats", "Avg pot", "Hands/h", "Waiting", "State"].map((t) => h("th", { scope: "col" }, t)))),
      body)),
    status));

  const open = (id) => navigate(`#/table/${encodeURIComponent(id)}`);

  function render(tables) {
    const rows = [...tables].sort((a, b) => a.table_id.localeCompare(b.table_id)).map((t) => {
      const f = t.figures || {};
      const taken = (t.players || []).length;
      const state = (t.state || "open") === "open" ? (t.running ? `hand #${t.hand_no}` : "open") : t.state;   // an entry omits its defaults
      return h("tr", {
        testid: "lobby-row", dataset: { table: t.table_id, state: t.state || "open" }, tabindex: "0",
        onclick: () => open(t.table_id),
        onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(t.table_id); } },
      },
      h("th", { scope: "row" }, h("a", { href: `#/table/${encodeURIComponent(t.table_id)}`, tabindex: "-1" }, t.table_id)),
      h("td", { "data-label": "Game" }, gameName(t.game)),
      h("td", { "data-label": "Stakes" }, stakesText(t.stakes)),
      h("td", { testid: "lobby-seats", "data-label": "Seats" }, `${taken}/${Math.min(t.seats, t.max_players || t.seats)}`),
      h("td.num", { "data-label": "Avg pot" }, f.average_pot === null || f.average_pot === undefined ? "–" : chips(f.average_pot)),
      h("td.num", { "data-label": "Hands/h" }, String(f.hands_per_hour || 0)),
      h("td.num", { testid: "lobby-waiting", "data-label": "Waiting" }, String(t.waiting || 0)),
      h("td", { class: `state-${t.state || "open"}`, "data-label": "State", testid: "lobby-state" }, state + (t.served === false ? " (unserved)" : "")));
    });
    const focused = document.activeElement && body.contains(document.activeElement) ? document.activeElement.dataset.table : null;
    clear(body, ...rows);
    if (focused) {                         // a push redraws the rows: the keyboard's place stays
      const again = body.querySelector(`[data-table="${CSS.escape(focused)}"]`);
      if (again) again.focus({ preventScroll: true });
    }
    status.textContent = rows.length ? "" : "No tables yet.";
    updated.textContent = "updated " + new Date().toLocaleTimeString();
  }

  const off = api.on("push:lobby", (m) => render(m.tables || []));
  const watch = api.subscribe("lobby", "watch_lobby", {}, (a) => render(a.tables || []), "unwatch_lobby");
  watch.answer.catch((e) => { status.textContent = "The lobby did not answer: " + errorText(e); status.className = "notice error"; });
  return () => { off(); watch.end(); };
}
