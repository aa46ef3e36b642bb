// The operator's desk: tables (open, configure, pause, resume, close; sit out or
// remove a player), the rake per day and per table, the ledger's last reconcile, the
// services' health and projection lag, the dead letters.  Charts: charts.js.

import { h, clear, chips, when, gameName, stakesText, errorText, notice, GAME_NAMES } from "./dom.js";
import { barChart } from "./charts.js";

const POLL_MS = 5000;
const LAG_POINTS = 30;

export function show(container, { api }) {
  const status = h("p.notice", { role: "status", "aria-live": "polite", testid: "desk-status" });
  const tablesBody = h("div", { testid: "desk-tables" });
  const configBox = h("div", { testid: "desk-config" });
  const rakeBox = h("div", { testid: "desk-rake" });
  const reconcileBox = h("div", { testid: "desk-reconcile" });
  const healthBox = h("div", { testid: "desk-health" });
  const lagBox = h("div", { testid: "desk-lag" });
  const lettersBox = h("div", { testid: "desk-dead-letters" });
  let rakeBy = "day";
  let reconcileAgain = null;
  const lagHistory = [];

  container.append(h("section.page-desk", {},
    h("h1", {}, "Operator's desk"), status,
    h("div.desk-grid", {},
      h("section", { "aria-labelledby": "desk-tables-h" }, h("h2#desk-tables-h", {}, "Tables"), tablesBody, configBox, openForm()),
      h("section", { "aria-labelledby": "desk-rake-h" }, h("h2#desk-rake-h", {}, "Rake"),
        h("div.tabs", { role: "tablist" },
          h("button", { type: "button", role: "tab", testid: "rake-by-day", "aria-selected": "true", onclick: (e) => setRake("day", e.target) }, "Per day"),
          h("button", { type: "button", role: "tab", testid: "rake-by-table", "aria-selected": "false", onclick: (e) => setRake("table", e.target) }, "Per table")),
        rakeBox),
      h("section", { "aria-labelledby": "desk-rec-h" }, h("h2#desk-rec-h", {}, "Ledger: last reconcile"), reconcileBox),
      h("section", { "aria-labelledby": "desk-health-h" }, h("h2#desk-health-h", {}, "Services"), healthBox, lagBox),
      h("section", { "aria-labelledby": "desk-dl-h" }, h("h2#desk-dl-h", {}, "Dead letters"), lettersBox))));

  const failed = (box, e) => clear(box, h("p.notice.error", {}, errorText(e)));

  // --- tables ---------------------------------------------------------------------------
  async function command(table, cmd, what) {
    notice(status, `${what}…`);
    try {
      await api.request("command", { table, command: cmd });
      notice(status, `${what}: done`, "ok");
      loadTables();
    } catch (e) {
      notice(status, `${what}: ${errorText(e)}`, "error");
    }
  }

  function tableRow(t) {
    const id = t.table_id;
    const state = t.state || "open";
    const players = (t.players || []).map((p) => h("li", { testid: "desk-player", dataset: { player: p.player, seat: String(p.seat) } },
      `#${p.seat} ${p.player} (${chips(p.stack)})${p.sitting_out ? " · sitting out" : ""} `,
      h("button", { type: "button", testid: "desk-sit-out", disabled: p.sitting_out, onclick: () => command(id, { type: "SitOutPlayer", player: p.player }, `Sit ${p.player} out`) }, "Sit out"), " ",
      h("button.danger", { type: "button", testid: "desk-remove", onclick: () => command(id, { type: "RemovePlayer", player: p.player }, `Remove ${p.player}`) }, "Remove")));
    const closed = state === "closed";
    return h("details", { testid: "desk-table", dataset: { table: id, state } },
      h("summary", {}, h("strong", {}, id), ` ${gameName(t.game)} ${stakesText(t.stakes)} · ${(t.players || []).length}/${t.seats} · `,
        h("span", { class: `state-${state}`, testid: "desk-table-state" }, state), t.served === false ? " (unserved)" : ""),
      h("div.buttons", {},
        h("a", { href: `#/table/${encodeURIComponent(id)}` }, "Watch"),
        state === "paused" ?
          h("button", { type: "button", testid: "desk-resume", disabled: closed, onclick: () => command(id, { type: "ResumeTable" }, `Resume ${id}`) }, "Resume") :
          h("button", { type: "button", testid: "desk-pause", disabled: closed || state === "closing", onclick: () => command(id, { type: "PauseTable" }, `Pause ${id}`) }, "Pause"),
        h("button", { type: "button", testid: "desk-configure", disabled: closed, onclick: () => configure(id) }, "Configure"),
        h("button.danger", { type: "button", testid: "desk-close", disabled: closed || state === "closing", onclick: () => {
          if (confirm(`Close table ${id}? Every seat is cashed out.`)) command(id, { type: "CloseTable" }, `Close ${id}`);
        } }, "Close")),
      players.length ? h("ul", {}, ...players) : h("p.muted", {}, "No one seated."));
  }

  // desk_tables when the gateway has it, else the lobby's entries (the same shape).
  let deskTables = true;
  async function loadTables() {
    try {
      let answer;
      if (deskTables) {
        answer = await api.request("desk_tables", {}).catch((e) => {
          if (e.code !== "bad_request") throw e;
          deskTables = false;
          return null;
        });
      }
      if (!answer) answer = await api.request("lobby", {});
      renderTables(answer.tables || []);
    } catch (e) { failed(tablesBody, e); }
  }

  function renderTables(list) {
    const tables = [...list].sort((a, b) => a.table_id.localeCompare(b.table_id));
    const open = new Set([...tablesBody.querySelectorAll("details[open]")].map((d) => d.dataset.table));
    const focused = document.activeElement;
    const keep = focused && tablesBody.contains(focused) && focused.closest("[data-table]") ?
      [focused.closest("[data-table]").dataset.table, focused.dataset.testid, focused.tagName] : null;
    clear(tablesBody, ...(tables.length ? tables.map(tableRow) : [h("p", {}, "No tables.")]));
    for (const d of tablesBody.querySelectorAll("details")) if (open.has(d.dataset.table)) d.open = true;
    if (keep) {
      const row = tablesBody.querySelector(`[data-table="${CSS.escape(keep[0])}"]`);
      const again = row && (keep[1] ? row.querySelector(`[data-testid="${keep[1]}"]:not([disabled])`) : row.querySelector(keep[2].toLowerCase()));
      if (again) again.focus(); else if (row) row.querySelector("summary").focus();
    }
  }

  function configFields(c, prefix) {
    const st = c.stakes || {};
    const num = (name, label, value, extra = {}) => {
      const id = `${prefix}-${name}`;
      return h("div.field", {}, h("label", { for: id }, label),
        h(`input#${id}`, { type: "number", step: "1", min: "0", name, value: value === null || value === undefined ? "" : String(value), testid: id, ...extra }));
    };
    return [
      num("small_bet", "Small bet", st.small_bet ?? 10, { required: true }), num("big_bet", "Big bet", st.big_bet ?? 20, { required: true }),
      num("ante", "Ante", st.ante ?? 0), num("bring_in", "Bring-in (empty: half the small bet)", st.bring_in),
      num("rake_bp", "Rake (basis points)", (c.rake || {}).basis_points ?? 0), num("rake_cap", "Rake cap (empty: none)", (c.rake || {}).cap),
      num("max_buy_in", "Max buy-in (empty: default)", c.max_buy_in), num("action_seconds", "Action seconds", c.action_seconds ?? 10),
      num("ante_seconds", "Ante seconds", c.ante_seconds ?? 10), num("showdown_seconds", "Showdown seconds", c.showdown_seconds ?? 10),
      num("sit_out_seconds", "Sit-out limit (s)", c.sit_out_seconds ?? 600), num("seat_offer_seconds", "Seat offer (s)", c.seat_offer_seconds ?? 60),
    ];
  }

  function readConfig(form, base) {
    const v = (name) => { const x = form.elements[name].value.trim(); return x === "" ? null : Number(x); };
    const config = { ...base };
    config.stakes = { small_bet: v("small_bet"), big_bet: v("big_bet"), ante: v("ante") ?? 0 };
    if (v("bring_in") !== null) config.stakes.bring_in = v("bring_in");
    config.rake = { basis_points: v("rake_bp") ?? 0 };
    if (v("rake_cap") !== null) config.rake.cap = v("rake_cap");
    config.max_buy_in = v("max_buy_in");
    for (const name of ["action_seconds", "ante_seconds", "showdown_seconds", "sit_out_seconds", "seat_offer_seconds"]) {
      if (v(name) !== null) config[name] = v(name);
    }
    return config;
  }

  async function configure(id) {
    clear(configBox, h("p", {}, `Loading the settings of ${id}…`));
    let config;
    try {
      const answer = await api.request("watch_table", { table: id });
      api.request("unwatch_table", { table: id }).catch(() => {});
      const view = answer.view || {};
      config = view.next_config || view.config;
      if (!config) throw Object.assign(new Error("no settings in the table's view"), { code: "unavailable" });
    } catch (e) { failed(configBox, e); return; }
    const form = h("form.card-box", { testid: "desk-config-form", onsubmit: (ev) => {
      ev.preventDefault();
      command(id, { type: "ConfigureTable", config: readConfig(form, config) }, `Configure ${id}`);
      clear(configBox);
    } },
    h("h3", {}, `Settings of ${id} (${gameName(config.game)}, ${config.seats} seats)`),
    h("div.inline-form", {}, ...configFields(config, "cfg")),
    h("div.buttons", {}, h("button.primary", { type: "submit", testid: "desk-config-submit" }, "Save (from the next hand)"),
      h("button", { type: "button", onclick: () => clear(configBox) }, "Cancel")));
    clear(configBox, form);
    form.querySelector("input").focus();
  }

  function openForm() {
    const idInput = h("input#open-table-id", { name: "table_id", required: true, testid: "open-table-id", maxlength: "32", autocomplete: "off" });
    const game = h("select#open-game", { name: "game", testid: "open-game" },
      ...Object.entries(GAME_NAMES).map(([k, v]) => h("option", { value: k }, v)));
    const seats = h("input#open-seats", { type: "number", name: "seats", min: "2", max: "10", value: "8", testid: "open-seats" });
    const form = h("form", { testid: "open-table-form", onsubmit: (ev) => {
      ev.preventDefault();
      const config = readConfig(form, { game: game.value, seats: Number(seats.value) });
      const id = idInput.value.trim();
      command(id, { type: "OpenTable", table_id: id, config }, `Open ${id}`);
    } },
    h("div.inline-form", {},
      h("div.field", {}, h("label", { for: "open-table-id" }, "Table id"), idInput),
      h("div.field", {}, h("label", { for: "open-game" }, "Game"), game),
      h("div.field", {}, h("label", { for: "open-seats" }, "Seats"), seats)),
    h("details", {}, h("summary", {}, "Stakes and timers"), h("div.inline-form", {}, ...configFields({}, "open"))),
    h("button.primary", { type: "submit", testid: "open-table-submit" }, "Open the table"));
    return h("details", { testid: "open-table" }, h("summary", {}, h("strong", {}, "Open a table")), form);
  }

  // --- rake --------------------------------------------------------------------------------
  function setRake(by, button) {
    rakeBy = by;
    for (const b of button.parentElement.children) b.setAttribute("aria-selected", b === button ? "true" : "false");
    loadRake();
  }

  async function loadRake() {
    try {
      const days = window.innerWidth < 600 ? 7 : 14;
      const args = rakeBy === "day" ? { by: "day", days } : { by: "table" };
      const answer = await api.request("desk_rake", args);
      const rows = (answer.rows || []).map((r) => ({ label: rakeBy === "day" ? r.key.slice(5) : r.key, value: r.rake }));
      const total = answer.total || {};
      clear(rakeBox,
        barChart(rows, { title: rakeBy === "day" ? `Rake per day (UTC), last ${answer.days || days} days` : "Rake per table", testid: "rake-chart" }),
        h("p", { testid: "rake-total" }, `Total: ${chips(total.rake)} chips rake from ${chips(total.hands)} hands, ${chips(total.pots)} pots.`));
    } catch (e) { failed(rakeBox, e); }
  }

  // --- reconcile -------------------------------------------------------------------------
  async function loadReconcile() {
    try {
      const a = await api.request("desk_reconcile", {});
      const last = a.last;
      const parts = [];
      if (last) {
        parts.push(h("p", { testid: "reconcile-verdict" },
          h("span", { class: `badge ${last.clean ? "ok" : "bad"}` }, last.clean ? "clean" : `${last.difference_count} differences`),
          ` ${when(last.at_ms)} · ${last.tables} tables, ${chips(last.hands)} hands, ${chips(last.events)} events · ${last.seconds} s`));
        if ((last.equation || []).length) {
          parts.push(h("div.scroll", {}, h("table.grid", {}, h("thead", {}, h("tr", {}, h("th", {}, "Line"), h("th.num", {}, "Books"), h("th.num", {}, "Domain"))),
            h("tbody", {}, ...last.equation.map((l) => h("tr", {}, h("td", {}, l.name), h("td.num", {}, chips(l.books)),
              h("td.num", { class: l.domain !== null && l.domain !== undefined && l.books !== l.domain ? "neg" : "" }, chips(l.domain))))))));
        }
        for (const d of last.differences || []) parts.push(h("pre.export", {}, JSON.stringify(d)));
      } else {
        parts.push(h("p", {}, a.running ? "The first reconcile is running…" : "No reconcile yet."));
      }
      if (a.running && last) parts.push(h("p.muted", {}, "A newer reconcile is running."));
      if (a.failed) parts.push(h("p.notice.error", {}, `The last attempt failed: ${a.failed}`));
      if (a.daily) parts.push(h("p", {}, `Daily timer: `, h("span", { class: `badge ${a.daily.clean ? "ok" : "bad"}` }, a.daily.clean ? "clean" : `exit ${a.daily.exit_code}`), ` ${when(a.daily.at_ms)}`));
      parts.push(h("button", { type: "button", testid: "reconcile-refresh", onclick: loadReconcile }, "Refresh"));
      clear(reconcileBox, ...parts);
      clearTimeout(reconcileAgain);
      if (a.running) reconcileAgain = setTimeout(loadReconcile, 3000);   // the op answers at once: ask until it finished
    } catch (e) { failed(reconcileBox, e); }
  }

  // --- health and lag ---------------------------------------------------------------------
  async function loadHealth() {
    try {
      const a = await api.request("desk_health", {});
      const services = a.services || [];
      const byService = new Map();
      for (const s of services) {
        const x = byService.get(s.service) || { ready: 0, not: 0 };
        if (s.ready === "ready") x.ready += 1; else x.not += 1;
        byService.set(s.service, x);
      }
      const bars = [];
      for (const [name, x] of byService) {
        bars.push({ label: name, value: x.ready, kind: "alt" });
        if (x.not) bars.push({ label: `${name} (not ready)`, value: x.not, kind: "bad" });
      }
      clear(healthBox,
        barChart(bars, { title: "Ready instances per service", testid: "health-chart", format: String }),
        h("details", {}, h("summary", {}, `${services.length} instances`),
          h("div.scroll", {}, h("table.grid", { testid: "health-table" },
            h("thead", {}, h("tr", {}, ...["Service", "Instance", "Version", "Up", "Ready"].map((t) => h("th", {}, t)))),
            h("tbody", {}, ...services.map((s) => h("tr", { testid: "health-row", dataset: { service: s.service, ready: s.ready } },
              h("td", {}, s.service), h("td", {}, s.instance), h("td", {}, s.version || ""),
              h("td.num", {}, s.up_seconds === null ? "?" : `${Math.round(s.up_seconds)} s`),
              h("td", {}, h("span", { class: `badge ${s.ready === "ready" ? "ok" : "bad"}` }, s.ready)))))))));
      const lag = new Map();
      for (const s of services) for (const [k, v] of Object.entries(s.lag || {})) lag.set(k, Math.max(lag.get(k) || 0, v));
      const total = [...lag.values()].reduce((a, b) => a + b, 0);
      lagHistory.push({ label: new Date(a.at_ms || Date.now()).toISOString().slice(11, 19), value: total });
      if (lagHistory.length > LAG_POINTS) lagHistory.shift();
      clear(lagBox,
        barChart([...lag].map(([k, v]) => ({ label: k.replace("projection_lag_events.", "").replace("relay_backlog_events.", "relay "), value: v })),
          { title: "Projection lag and relay backlog (relay <store>) now, events", testid: "lag-chart", format: String }),
        barChart(lagHistory, { title: `Total lag, every ${POLL_MS / 1000} s (events)`, testid: "lag-history-chart", format: String }));
    } catch (e) { failed(healthBox, e); }
  }

  // --- dead letters -----------------------------------------------------------------------
  async function loadLetters() {
    try {
      const a = await api.request("desk_dead_letters", {});
      const letters = a.letters || [];
      clear(lettersBox,
        h("p", { testid: "dead-letter-count" }, `${a.count || 0} held`),
        ...(letters.length ? [h("div.scroll", {}, h("table.grid", {},
          h("thead", {}, h("tr", {}, ...["When", "Kind", "Subject", "Reason", "What"].map((t) => h("th", {}, t)))),
          h("tbody", {}, ...letters.map((l) => h("tr", { testid: "dead-letter" },
            h("td", {}, when(l.at_ms)), h("td", {}, l.kind), h("td", {}, l.subject || ""), h("td", {}, l.reason || ""),
            h("td", { title: l.body || "" }, l.what || ""))))))] : [h("p.muted", {}, "None.")]));
    } catch (e) { failed(lettersBox, e); }
  }

  loadTables(); loadRake(); loadReconcile(); loadHealth(); loadLetters();
  let pending = null;
  const offLobby = api.on("push:lobby", (m) => {
    if (!deskTables) { renderTables(m.tables || []); return; }
    if (!pending) pending = setTimeout(() => { pending = null; loadTables(); }, 500);
  });
  const lobbyWatch = api.subscribe("desk-lobby", "watch_lobby", {}, () => {}, "unwatch_lobby");
  lobbyWatch.answer.catch(() => {});
  const timer = setInterval(() => { loadHealth(); }, POLL_MS);
  const slow = setInterval(() => { loadTables(); loadReconcile(); loadLetters(); }, 6 * POLL_MS);
  return () => { clearInterval(timer); clearInterval(slow); clearTimeout(pending); clearTimeout(reconcileAgain); offLobby(); lobbyWatch.end(); };
}
