// One table: seats, cards, pot, whose turn with its countdown, the dealer's
// announcements and the action log; for a logged-in player also the play panel
// (seat, waiting list, buy-in, legal actions, sit out/in, leave).

import { h, clear, chips, card, gameName, stakesText, errorText, notice } from "./dom.js";
import { TableState, STREETS } from "./tablestate.js";
import { playPanel } from "./play.js";

const LANG_KEY = "studroom.lang";

export function show(container, ctx) {
  const { api, args, session } = ctx;
  const tableId = args[0];
  const isPlayer = session.role === "player";
  const state = new TableState(tableId, isPlayer ? session.name : null);
  let lang = localStorage.getItem(LANG_KEY) === "de" ? "de" : "en";
  let early = [];                          // events pushed before the view arrived

  const title = h("h1", {}, `Table ${tableId}`);
  const facts = h("p.facts", { testid: "table-facts" });
  const langSelect = h("select#lang", { testid: "lang", onchange: () => { lang = langSelect.value; localStorage.setItem(LANG_KEY, lang); render(); } },
    h("option", { value: "en", selected: lang === "en" }, "English"), h("option", { value: "de", selected: lang === "de" }, "Deutsch"));
  const status = h("p.notice", { role: "status", "aria-live": "polite", testid: "table-status" }, "Loading the table…");
  const seatsEl = h("ol.seats", { testid: "seats", "aria-label": "Seats" });
  const pot = h("span.pot-amount", { testid: "pot" }, "0");
  const community = h("span.community", { testid: "community" });
  const handInfo = h("span.hand-info", { testid: "hand-info" });
  const replayLink = h("span.replay-last");
  const turnText = h("span", { testid: "turn" });
  const countdown = h("span.countdown", { testid: "countdown", role: "timer", "aria-live": "off" });
  const announcements = h("ul.announcements", { testid: "announcements", "aria-live": "polite" });
  const logEl = h("ul.log", { testid: "log", "aria-label": "Action log, newest first" });
  const play = h("section.play", { testid: "play", "aria-label": "Play" });

  container.append(h("section.page-table", { dataset: { table: tableId } },
    h("div.page-head", {}, title,
      h("div.lang", {}, h("label", { for: "lang" }, "Dealer speaks"), langSelect)),
    facts, status,
    h("div.table-layout", {},
      h("div.felt", {},
        h("div.centre", {},
          h("div", {}, h("span.label", {}, "Pot "), pot, " ", handInfo, " ", replayLink),
          community,
          h("div.turnline", {}, turnText, " ", countdown)),
        seatsEl),
      isPlayer ? play : null,
      h("aside.side", {},
        h("h2", {}, "Dealer"), announcements,
        h("h2", {}, "Action log"), logEl))));

  const panel = isPlayer ? playPanel(play, api, state, session, () => load()) : null;

  function render() {
    if (!state.loaded) return;
    const cfg = state.config || {};
    clear(facts, `${gameName(state.game)} · ${stakesText(cfg.stakes)} · `,
      h("span", { testid: "table-players" }, `${state.playerCap} players at most`), " · ",
      h("span", { testid: "table-state", class: `state-${state.state}` }, state.state),
      state.waitingCount ? ` · ${state.waitingCount} waiting` + (state.waiting.length ? ` (${state.waiting.join(", ")})` : "") : "");
    renderSeats();
    const hand = state.hand;
    pot.textContent = chips(hand ? hand.pot : 0);
    const street = hand && hand.street >= 0 ? (STREETS[state.game] || [])[hand.street] : null;
    handInfo.textContent = hand ? `· hand #${hand.hand_no}${street ? ` · ${street} street` : ""}${hand.over ? " · over" : ""}` : "· no hand yet";
    clear(community, ...(hand ? hand.community.map((c) => card(c)) : []));
    // The last finished hand's replay: an operator any hand, a player one he was dealt into.
    const last = state.lastEnded;
    const mayReplay = last && (session.role === "operator" || (isPlayer && last.players.includes(session.name)));
    clear(replayLink, mayReplay ? h("a", { href: `#/replay/${encodeURIComponent(tableId)}/${last.hand_no}`, testid: "replay-last",
      dataset: { hand: String(last.hand_no) } }, `Replay hand #${last.hand_no}`) : null);
    renderTurn();
    renderSide();
    if (panel) panel.render();
  }

  function renderSeats() {
    const hand = state.hand;
    const items = [];
    for (let s = 0; s < state.seatCount; s++) {
      const seat = state.seats.get(s);
      const p = hand ? hand.players.get(s) : null;
      const name = (seat && seat.player) || (p && p.player);
      const turn = state.turn && (state.turn.seat === s || (state.turn.kind === "ante" && p && !p.posted && !p.folded));
      const closed = !name && state.full;     // empty, but the table holds its most players (R2)
      const empty = closed ? "closed" : "free";
      const classes = ["seat"];
      if (!name) classes.push(empty);
      if (turn) classes.push("turn");
      if (p && p.folded) classes.push("folded");
      if (s === state.mySeat) classes.push("mine");
      const flags = [];
      if (hand && !hand.over && state.button === s) flags.push(h("span.button-marker", { title: "button", "aria-label": "button" }, "D"));
      if (seat && seat.sitting_out) flags.push(h("span.tag", {}, "sitting out"));
      if (seat && seat.leaving) flags.push(h("span.tag", {}, "leaving"));
      if (p && p.all_in) flags.push(h("span.tag.allin", {}, "all-in"));
      if (p && p.folded) flags.push(h("span.tag", {}, p.action === "no ante" ? "no ante" : "folded"));
      if (p && p.timed_out) flags.push(h("span.tag.warn", {}, "timed out"));
      const said = p ? (lang === "de" ? p.said_de : p.said_en) : "";
      const stack = p && hand && !hand.over ? p.stack : seat ? seat.stack : p ? p.stack : 0;
      items.push(h("li", {
        class: classes.join(" "), testid: "seat",
        dataset: { seat: String(s), player: name || "", turn: turn ? "true" : "false" },
        "aria-label": name ? `Seat ${s}: ${name}` : `Seat ${s}: ${closed ? "closed, the table is full" : "free"}`,
      },
      h("div.seat-head", {}, h("span.seat-no", {}, `#${s}`), h("span.seat-name", { testid: "seat-name" }, name || empty), ...flags),
      name ? h("div.seat-money", {}, h("span", { testid: "seat-stack", "aria-label": "stack" }, chips(stack)),
        p && p.bet ? h("span.bet", { testid: "seat-bet" }, ` bet ${chips(p.bet)}`) : null,
        p && p.won ? h("span.won", {}, ` won ${chips(p.won)}`) : null) : null,
      p && p.cards.length ? h("div.cards", { testid: "seat-cards" }, ...p.cards.map((c) => card(c.card, { down: !c.up && !!c.card }))) : null,
      p && p.action && !p.folded ? h("div.seat-action", { testid: "seat-action" }, p.action + (p.amount ? ` ${chips(p.amount)}` : "")) : null,
      p && p.showed ? h("div.showed", {}, p.showed) : null,
      said ? h("div.said", { testid: "seat-said", lang }, `“${said}”`) : null));
    }
    clear(seatsEl, ...items);
  }

  function renderTurn() {
    const t = state.turn;
    if (state.state === "closed") {
      turnText.textContent = "The table is closed.";
    } else if (t) {
      const who = t.seat === null || t.seat === undefined ? "Antes" : state.name(t.seat);
      const what = t.kind === "show" ? "show or muck" : t.kind === "ante" ? "post the ante" : (t.options || []).map((o) => o.replace("_", " ")).join(", ");
      turnText.textContent = t.kind === "ante" ? `Antes: everyone dealt in posts` : `To act: ${who} (${what})`;
    } else if (state.pause) {
      turnText.textContent = state.pause.purpose === "seat_offer" ? "Waiting for a seat offer" :
        state.pause.purpose === "sit_out_limit" ? "Waiting (players sitting out)" : "Next hand in";
    } else if (state.state === "paused") {
      turnText.textContent = "The table is paused.";
    } else {
      turnText.textContent = state.hand && !state.hand.over ? "" : "Waiting for the next hand.";
    }
    tick();
  }

  function tick() {
    const deadline = state.turn ? state.turn.deadline_ms : state.pause ? state.pause.deadline_ms : null;
    if (!deadline || state.state === "closed") {
      countdown.textContent = "";
      delete countdown.dataset.deadline;
      return;
    }
    const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
    countdown.textContent = `${left} s`;
    countdown.dataset.deadline = String(deadline);
    countdown.classList.toggle("urgent", left <= 3);
  }

  function renderSide() {
    const dealerLines = [];
    if (state.hand) {
      for (const p of state.hand.players.values()) {
        const said = lang === "de" ? p.said_de : p.said_en;
        if (said && !p.folded) dealerLines.push(h("li", { lang }, h("strong", {}, p.player), ": ", said));
      }
    }
    clear(announcements, ...(dealerLines.length ? dealerLines : [h("li.muted", {}, lang === "de" ? "Keine Ansage" : "Nothing announced")]));
    const lines = state.log.slice(-60).reverse().map((l) => {
      const text = typeof l.text === "object" ? l.text[lang] : l.text;
      return h("li", { class: `log-${l.kind}`, lang: typeof l.text === "object" ? lang : null }, text);
    });
    clear(logEl, ...lines);
  }

  async function load() {            // the view again: a watch ended and started anew
    try {
      await api.request("unwatch_table", { table: tableId }).catch(() => {});
      const answer = await api.request("watch_table", { table: tableId });
      accept(answer);
    } catch (e) {
      notice(status, "The table did not answer: " + errorText(e), "error");
    }
  }

  function accept(answer) {
    const view = answer.view || answer.entry;
    if (!view) { notice(status, "No such table.", "error"); return; }
    state.load(view, answer.max_players);
    state.needsResync = false;
    const queued = early.sort((a, b) => a.version - b.version);
    early = [];
    for (const m of queued) state.apply(m.version, m.event);
    notice(status, "");
    render();
  }

  // A gap in the versions (a spectator's lobby entry may lag the stream a little):
  // the events are applied anyway, and the view is asked for again, at most every 5 s.
  let resyncing = false;
  let lastResync = 0;
  const offEvent = api.on("push:event", (m) => {
    if (m.table !== tableId) return;
    if (!state.loaded || resyncing) { early.push(m); return; }
    state.apply(m.version, m.event);
    if (state.needsResync) {
      state.needsResync = false;
      if (Date.now() - lastResync > 5000) {
        lastResync = Date.now();
        resyncing = true;
        setTimeout(() => load().finally(() => { resyncing = false; }), 1000);
      }
    }
    render();
  });

  const watch = api.subscribe(`table:${tableId}`, "watch_table", { table: tableId }, accept, "unwatch_table");
  watch.answer.catch((e) => notice(status, "The table did not answer: " + errorText(e), "error"));
  const timer = setInterval(tick, 250);
  return () => { clearInterval(timer); offEvent(); watch.end(); if (panel) panel.dispose(); };
}
