// The replay page: a finished hand step by step, one event a step, told in plain
// English, with the board as of that step and the verdict of the deck proofs, checked
// here in the browser (proofs.js, WebCrypto) against the hand's commitment.
//
// The hand comes from the console's `replay` op: {"record": HandRecord} (domain/
// hand_record.py), a player's own hand as he may see it, or for an operator the
// dealer's full record. TurnStarted, PauseStarted and PauseEnded are not steps (the
// act that follows a turn is); every other event of the hand is one.

import { h, clear, card, chips, gameName, stakesText, errorText, when } from "./dom.js";
import { checkHand } from "./proofs.js";

const SKIPPED = new Set(["TurnStarted", "PauseStarted", "PauseEnded"]);
const STREETS = {
  seven_card_stud: ["3rd", "4th", "5th", "6th", "7th"],
  seven_card_stud_hilo: ["3rd", "4th", "5th", "6th", "7th"],
  five_card_stud: ["2nd", "3rd", "4th", "5th"],
};
const ACTIONS = {
  bring_in: (e) => `brings in for ${chips(e.amount)}`,
  complete: (e) => `completes to ${chips(e.to)}`,
  fold: () => "folds",
  check: () => "checks",
  call: (e) => `calls ${chips(e.amount)}`,
  bet: (e) => `bets ${chips(e.amount)}`,
  raise: (e) => `raises to ${chips(e.to)}`,
};
const TIMEOUTS = {
  fold: "so the hand is folded",
  check: "so it checks",
  bring_in: "so the bring-in is posted",
  protected: "but stays in for the chips already in (all-in protection)",
  show: "so the hand is shown",
};

function ensureStyles() {
  if (document.querySelector("link[data-replay-css]")) return;
  const href = new URL("../replay.css", import.meta.url).href;
  document.head.append(h("link", { rel: "stylesheet", href, dataset: { replayCss: "" } }));
}

function streetName(game, street) {
  const names = STREETS[game];
  return names && names[street] ? `${names[street]} street` : `street ${street}`;
}

function cardList(cards) {
  return h("span.cardlist", {}, cards.map((c) => card(c)));
}

// --- the hand, folded event by event into steps --------------------------------------

class Board {
  constructor(record) {
    this.game = record.config.game;
    this.viewer = record.viewer ?? null;
    this.names = { ...(record.seated || {}) };
    this.seats = {};           // seat -> {seat, player, stack, bet, cards: [{card, up}], folded, allIn, out, said, won}
    this.pot = 0;
    this.street = null;
    this.community = [];
    this.button = null;
  }

  name(seat) {
    return this.names[seat] ?? `seat ${seat}`;
  }

  seat(seat) {
    if (!this.seats[seat]) {
      this.seats[seat] = { seat, player: this.name(seat), stack: null, bet: 0, cards: [], folded: false, allIn: false,
        out: false, said: "", won: 0, shown: "" };
    }
    return this.seats[seat];
  }

  snapshot() {
    return structuredClone({ seats: this.seats, pot: this.pot, street: this.street, community: this.community,
      button: this.button });
  }

  // One event: what the step says (text and cards), the seat it is about.
  tell(e) {
    const fn = this[`on${e.type}`];
    return fn ? fn.call(this, e) : { say: [e.type.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()] };
  }

  onHandStarted(e) {
    this.button = e.button;
    for (const s of e.seats) {
      this.names[s.seat] = s.player;
      Object.assign(this.seat(s.seat), { player: s.player, stack: s.stack });
    }
    const who = e.seats.map((s) => `${s.player} (seat ${s.seat}, ${chips(s.stack)})`).join(", ");
    return { say: [`Hand ${e.hand_no} begins with ${e.seats.length} players: ${who}. The button is at seat ${e.button}.`] };
  }

  onAntePosted(e) {
    const s = this.seat(e.seat);
    s.stack -= e.amount;
    s.allIn = e.all_in;
    this.pot += e.amount;
    const entropy = e.entropy ? ", adding their own randomness to the deck" : "";
    return { seat: e.seat, say: [`${s.player} posts the ante of ${chips(e.amount)}${e.all_in ? " and is all-in" : ""}${entropy}.`] };
  }

  onAnteSkipped(e) {
    this.seat(e.seat).out = true;
    return { seat: e.seat, say: [`${this.name(e.seat)} posts no ante and sits this hand out.`] };
  }

  onHandCancelled(e) {
    for (const [seat, amount] of Object.entries(e.refunds || {})) {
      this.seat(seat).stack += amount;
      this.pot -= amount;
    }
    return { say: [`The hand is cancelled (${e.reason}); the antes go back.`] };
  }

  onAntesCollected(e) {
    const committed = e.deck_root
      ? `The deck is now fixed: the dealer commits to its top ${e.deck_size} cards (format ${e.deck_format ?? 1}), so every card dealt can be checked.`
      : "A live dealer deals physical cards: there is no deck commitment to check.";
    return { say: [`The antes are in: the pot is ${chips(this.pot)}. ${committed}`] };
  }

  onCardsDealt(e) {
    this.street = e.street;
    const say = [`${streetName(this.game, e.street)}:`];
    if (e.reshuffled) say.push(" the burned cards are shuffled back in, as the deck ran short;");
    const got = new Map();
    for (const [seat, c, up] of e.cards || []) {
      this.seat(seat).cards.push({ card: c, up });
      if (!got.has(seat)) got.set(seat, []);
      got.get(seat).push(c);
    }
    for (const [seat, cards] of got) say.push(` ${this.name(seat)} gets `, cardList(cards), ";");
    if (e.community) {
      this.community.push(e.community);
      say.push(" one community card for everyone (too few cards left to deal each player one): ", cardList([e.community]));
    }
    if (say.length > 1 && typeof say[say.length - 1] === "string") say[say.length - 1] = say[say.length - 1].replace(/;$/, ".");
    return { say };
  }

  onLastCardsExposed(e) {
    const say = [];
    for (const [seat, c, up] of e.turned || []) {
      const cards = this.seat(seat).cards;
      if (cards.length) cards[cards.length - 1] = { card: c, up };
      say.push(`${this.name(seat)}'s last card is turned up: `, cardList([c]), ". ");
    }
    if (e.skip_betting) say.push("The last cards can no longer be told apart: there is no last betting round.");
    return { say: say.length ? say : ["The seventh cards stay as dealt."] };
  }

  onRoundStarted(e) {
    for (const s of Object.values(this.seats)) s.bet = 0;
    const opener = this.name(e.opener);
    const why = e.bring_in
      ? `${opener} has the lowest door card${e.door_card ? " " : ""}` : `${opener} shows the best board and opens`;
    const say = [`Betting on ${streetName(this.game, e.street)}: ${why}`];
    if (e.bring_in && e.door_card) say.push(cardList([e.door_card]), " and must bring in");
    if (e.open_pair) say.push("; an open pair allows the big bet");
    say.push(".");
    return { seat: e.opener, say };
  }

  onActed(e) {
    const s = this.seat(e.seat);
    s.stack -= e.amount;
    s.bet = e.to;
    s.allIn = s.allIn || e.all_in;
    this.pot += e.amount;
    if (e.action === "fold") s.folded = true;
    const text = (ACTIONS[e.action] || (() => e.action))(e);
    s.said = text;
    return { seat: e.seat, say: [`${s.player} ${text}${e.all_in ? " and is all-in" : ""}.`] };
  }

  onTimedOut(e) {
    const s = this.seat(e.seat);
    if (e.outcome === "fold") s.folded = true;
    s.said = "timed out";
    return { seat: e.seat, timeout: true, say: [`${s.player}'s time ran out, ${TIMEOUTS[e.outcome] || e.outcome}.`] };
  }

  onAnnounced(e) {
    return { seat: e.seat, say: [e.en ? `The dealer announces ${this.name(e.seat)}'s board: ${e.en}.` : "The dealer announces nothing."] };
  }

  onRoundEnded(e) {
    for (const s of Object.values(this.seats)) s.bet = 0;
    const say = [`The betting on ${streetName(this.game, e.street)} is over; the pot is ${chips(this.pot - (e.returned || 0))}.`];
    if (e.returned && e.returned_seat !== null && e.returned_seat !== undefined) {
      this.seat(e.returned_seat).stack += e.returned;
      this.pot -= e.returned;
      say.push(` The uncalled ${chips(e.returned)} goes back to ${this.name(e.returned_seat)}.`);
    }
    return { say };
  }

  onShowdownStarted(e) {
    const order = (e.order || []).map((seat) => this.name(seat));
    return { say: [`Showdown: ${order[0]} shows first${order.length > 1 ? `, then ${order.slice(1).join(", then ")}` : ""}.`] };
  }

  onHandShown(e) {
    const s = this.seat(e.seat);
    s.cards = e.cards.map((c, i) => ({ card: c, up: s.cards[i] ? s.cards[i].up : true, shown: true }));
    s.shown = [e.high, e.low].filter(Boolean).join("; low: ");
    return { seat: e.seat, say: [`${s.player} shows `, cardList(e.cards), s.shown ? `: ${s.shown}.` : "."] };
  }

  onHandMucked(e) {
    const s = this.seat(e.seat);
    s.folded = true;
    s.said = "mucked";
    if (e.cards && e.cards.length) {
      s.cards = e.cards.map((c, i) => ({ card: c, up: s.cards[i] ? s.cards[i].up : false }));
      return { seat: e.seat, say: [`${s.player} mucks `, cardList(e.cards), "."] };
    }
    return { seat: e.seat, say: [`${s.player} mucks without showing.`] };
  }

  onPotAwarded(e) {
    const pot = e.pot === 0 ? "The main pot" : `Side pot ${e.pot}`;
    this.pot -= e.amount;
    const shares = [];
    for (const [half, won] of [["high", e.high || {}], ["low", e.low || {}]]) {
      for (const [seat, amount] of Object.entries(won)) {
        const s = this.seat(seat);
        s.stack += amount;
        s.won += amount;
        shares.push(`${s.player} wins ${chips(amount)}${Object.keys(e.low || {}).length ? ` (${half})` : ""}`);
      }
    }
    const rake = e.rake ? `, less ${chips(e.rake)} rake` : "";
    return { say: [`${pot} of ${chips(e.amount)}${rake}: ${shares.join(", ") || "nobody wins it"}.`] };
  }

  onHandEnded(e) {
    for (const [seat, stack] of Object.entries(e.stacks || {})) this.seat(seat).stack = stack;
    const net = Object.entries(e.net || {}).map(([seat, n]) => `${this.name(seat)} ${n > 0 ? "+" : n < 0 ? "−" : "±"}${chips(Math.abs(n))}`);
    const how = e.ended_on === "fold" ? "everyone else folded" : "at the showdown";
    return { say: [`The hand is over (${how}). ${net.join(", ")}${e.rake ? `; rake ${chips(e.rake)}` : ""}.`] };
  }

  // the table around the hand: what may happen while it is played
  onSitOutChanged(e) {
    const why = { timed_out: " after a timeout", operator: " (the floor's decision)" }[e.reason] || "";
    return { seat: e.seat, say: [`${this.name(e.seat)} ${e.sitting_out ? `sits out from the next hand${why}` : "is back from the next hand"}.`] };
  }

  onPlayerSatDown(e) {
    this.names[e.seat] = e.player;
    return { say: [`${e.player} sits down at seat ${e.seat} for the next hand.`] };
  }

  onChipsBought(e) {
    return { say: [`${this.name(e.seat)} buys ${chips(e.amount)} in chips for the next hand.`] };
  }

  onPlayerLeft(e) {
    return { say: [`${e.player} leaves seat ${e.seat} with ${chips(e.cashed_out)}.`] };
  }

  onWaitingListJoined(e) { return { say: [`${e.player} joins the waiting list.`] }; }
  onWaitingListLeft(e) { return { say: [`${e.player} is off the waiting list.`] }; }
  onSeatOffered(e) { return { say: [`Seat ${e.seat} is offered to ${e.player}, first on the waiting list.`] }; }
  onTableConfigured() { return { say: ["The floor changes the table's settings, from the next hand."] }; }
  onTablePaused() { return { say: ["The floor pauses the table: no new hand after this one."] }; }
  onTableResumed() { return { say: ["The floor resumes the table."] }; }
  onTableClosing() { return { say: ["The floor closes the table when this hand ends."] }; }

  onLeaveRequested(e) {
    this.seat(e.seat).folded = true;
    return { seat: e.seat, say: [`${this.name(e.seat)} leaves the table; the hand is folded.`] };
  }
}

export function replaySteps(record) {
  const board = new Board(record);
  const steps = [];
  for (const event of record.events) {
    if (SKIPPED.has(event.type)) continue;
    const told = board.tell(event);
    steps.push({ event, ...told, board: board.snapshot() });
  }
  return steps;
}

// --- the page --------------------------------------------------------------------------

function plainSay(say) {                        // a step in words only, for the list of steps
  const cardText = (el) => (el.dataset.card === "back" ? "(face down)" : el.textContent);
  return say.map((part) => (typeof part === "string" ? part
    : [...part.querySelectorAll(".card")].map(cardText).join(" "))).join("");
}

function renderSeat(s, step, ctx) {
  const classes = ["seat"];
  if (s.folded || s.out) classes.push("folded");
  if (step.seat !== undefined && String(step.seat) === String(s.seat)) classes.push("turn");
  if (ctx.viewer !== null && String(ctx.viewer) === String(s.seat)) classes.push("mine");
  const cards = s.cards.map((c) => {
    const el = card(c.card, { down: Boolean(c.card) && !c.up && !c.shown });
    if (c.card && ctx.failed.has(`${s.seat}:${c.card}`)) {
      el.classList.add("proof-failed");
      el.setAttribute("aria-label", `${el.getAttribute("aria-label")}: its proof fails`);
    }
    return el;
  });
  const tags = [];
  if (String(ctx.button) === String(s.seat)) tags.push(h("span.button-marker", { title: "button", "aria-label": "button" }, "D"));
  if (s.allIn) tags.push(h("span.tag.allin", {}, "all-in"));
  if (s.out) tags.push(h("span.tag", {}, "sits out"));
  else if (s.folded) tags.push(h("span.tag", {}, "out of the hand"));
  return h(`li.${classes.join(".")}`, { testid: "replay-seat", dataset: { seat: s.seat } },
    h("div.seat-head", {}, h("span.seat-no", {}, `Seat ${s.seat}`), h("span.seat-name", {}, s.player), tags),
    h("div.seat-money", {}, `Stack ${chips(s.stack)}`, s.bet ? h("span.bet", {}, ` · bet ${chips(s.bet)}`) : null,
      s.won ? h("span.won", {}, ` · won ${chips(s.won)}`) : null),
    h("div.cards", {}, cards),
    s.shown ? h("div.showed", {}, s.shown) : s.said ? h("div.seat-action", {}, s.said) : null);
}

function renderBoard(el, step, ctx) {
  const b = step.board;
  const seats = Object.values(b.seats).sort((x, y) => x.seat - y.seat);
  clear(el,
    h("div.centre", {},
      h("div", {}, b.street === null ? "Before the deal" : streetName(ctx.game, b.street)),
      h("div", {}, "Pot ", h("span.pot-amount", { testid: "replay-pot" }, chips(b.pot))),
      b.community.length ? h("div", {}, "Community card ", cardList(b.community)) : null),
    h("ol.seats", { "aria-label": "Seats" }, seats.map((s) => renderSeat(s, step, { ...ctx, button: b.button }))));
}

function failureLine(f, ctx) {
  const message = f.message.replace(/street (\d+)/, (_, n) => streetName(ctx.game, Number(n)))
    .replace(/seat (\d+)/, (_, n) => `seat ${n} (${ctx.names[n] ?? "?"})`);
  return h("li", { dataset: { card: f.card ?? "" } }, f.card ? cardList([f.card]) : null, f.card ? " " : null, message);
}

function renderVerdict(el, result, ctx) {
  el.dataset.ok = String(result.ok);
  el.className = `verdict ${result.ok ? "ok" : "bad"}`;
  if (result.ok && !result.committed) {
    clear(el, h("strong", {}, "✓ Nothing to verify: "), ctx.dealt
      ? "a live dealer dealt physical cards; no deck was committed." : "no card was dealt in this hand.");
  } else if (result.ok) {
    const n = result.checked;
    clear(el, h("strong", {}, "✓ Deck verified: "),
      `${n} card${n === 1 ? "" : "s"} checked against the commitment (format ${result.format}), in this browser with SHA-256: `,
      ctx.full ? "every card dealt or shown." : "every card this reader could see.");
  } else {
    clear(el, h("strong", {}, "✗ Deck proofs fail: "),
      `${result.failures.length} problem${result.failures.length === 1 ? "" : "s"} (${result.checked} cards checked).`,
      h("ul.failures", { testid: "replay-failures" }, result.failures.map((f) => failureLine(f, ctx))));
  }
}

// The room's own re-run of the hand (services/disputes, answered with the record):
// shown beside the browser's check, which does not depend on it.
function roomVerdict(v) {
  if (!v || typeof v.consistent !== "boolean") return null;
  const why = v.rules && v.rules.why ? `: ${v.rules.why}` : "";
  const findings = v.deck && Array.isArray(v.deck.findings) && v.deck.findings.length ? ` (${v.deck.findings.map((f) => (typeof f === "string" ? f : JSON.stringify(f))).join("; ")})` : "";
  const deck = v.deck ? `; its deck audit with the seed: ${v.deck.fair ? "fair" : `NOT fair${findings}`}` : "";
  return h(`p.room-verdict.${v.consistent ? "ok" : "bad"}`, { testid: "replay-room-verdict", dataset: { ok: String(v.consistent) } },
    `The room's own re-run of this hand: ${v.consistent ? "consistent" : `NOT consistent${why}`}${deck}.`);
}

/** The replay page of hand ``hand`` at ``table`` in ``container``. */
export async function showReplay(container, api, table, hand) {
  ensureStyles();
  const title = h("h1", { id: "replay-title" }, `Replay: hand ${hand} at table ${table}`);
  const status = h("p.notice", { role: "status", testid: "replay-status" }, "Loading the hand…");
  const root = h("section.replay", { testid: "replay", "aria-labelledby": "replay-title" },
    h("div.page-head", {}, title, h("a", { href: "#/history" }, "Back to the history")), status);
  clear(container, root);
  if (!Number.isInteger(hand) || hand < 0 || !table) {
    status.className = "notice error";
    status.setAttribute("role", "alert");
    status.textContent = "No such hand: the address should be #/replay/<table>/<hand number>.";
    return;
  }
  let record, answer;
  try {
    answer = await api.request("replay", { table, hand_no: hand });
    record = answer && answer.record;
    if (!record || !Array.isArray(record.events) || !record.events.length || !record.config) {
      throw new Error("the answer holds no hand record");
    }
  } catch (e) {
    status.className = "notice error";
    status.setAttribute("role", "alert");
    status.textContent = `This hand cannot be shown: ${errorText(e)}`;
    return;
  }
  if (!root.isConnected) return;                  // the reader went elsewhere meanwhile
  status.remove();

  const steps = replaySteps(record);
  const first = record.events[0] || {};
  const names = {};
  for (const s of first.seats || []) names[s.seat] = s.player;
  const ctx = { game: record.config.game, viewer: record.viewer ?? null, failed: new Set(), names,
    dealt: record.events.some((e) => e.type === "CardsDealt"), full: Boolean(record.full) };
  const seen = record.full ? "the dealer's full record (every card)"
    : record.viewer !== null && record.viewer !== undefined ? `as ${names[record.viewer] ?? `seat ${record.viewer}`} saw it` : "as anyone saw it";
  const facts = h("p.facts", {}, `${gameName(record.config.game)} ${stakesText(record.config.stakes)}`,
    record.started_ms ? ` · ${when(record.started_ms)}` : "", ` · ${seen}`);
  const verdict = h("div.verdict.pending", { testid: "replay-verdict", role: "status" }, "Checking the deck proofs…");

  const button = (testid, label, text, go) =>
    h("button", { type: "button", testid, "aria-label": label, onclick: () => go() }, text);
  let at = 0;
  const show = (i) => { at = Math.max(0, Math.min(steps.length - 1, i)); update(); };
  const buttons = {
    first: button("replay-first", "First step", "« First", () => show(0)),
    prev: button("replay-prev", "Previous step", "‹ Previous", () => show(at - 1)),
    next: button("replay-next", "Next step", "Next ›", () => show(at + 1)),
    last: button("replay-last", "Last step", "Last »", () => show(steps.length - 1)),
  };
  const position = h("span.replay-position", { testid: "replay-position" });
  const text = h("p.replay-step", { testid: "replay-step", "aria-live": "polite" });
  const board = h("div.felt", { testid: "replay-board" });
  const log = h("ol.log.replay-log", { testid: "replay-log", "aria-label": "Every step" },
    steps.map((step, i) => h("li", {}, h("button.link", { type: "button", onclick: () => show(i) }, plainSay(step.say)))));
  const controls = h("div.buttons.replay-controls", { role: "group", "aria-label": "Step through the hand" },
    buttons.first, buttons.prev, position, buttons.next, buttons.last);

  root.append(...[facts, verdict, roomVerdict(answer.verdict), controls, text].filter(Boolean),
    h("div.table-layout", {}, board, h("aside.side", { "aria-label": "The hand's steps" }, h("h2", {}, "Steps"), log)),
    h("p.muted.replay-keys", {}, "Keys: ← and → step, Home and End jump to the first and last step."));

  function update() {
    const step = steps[at];
    position.textContent = `Step ${at + 1} of ${steps.length}`;
    text.dataset.step = String(at);
    text.dataset.event = step.event.type;
    text.classList.toggle("timeout", Boolean(step.timeout));
    clear(text, step.say);
    renderBoard(board, step, ctx);
    for (const [key, el] of Object.entries(buttons)) {
      const end = key === "first" || key === "prev" ? at === 0 : at === steps.length - 1;
      el.setAttribute("aria-disabled", String(end));   // not disabled: a focused button keeps the focus
    }
    const inLog = log.contains(document.activeElement);
    [...log.children].forEach((li, i) => {        // one tab stop in the list: the current step
      const b = li.firstChild;
      b.tabIndex = i === at ? 0 : -1;
      if (i === at) b.setAttribute("aria-current", "step"); else b.removeAttribute("aria-current");
    });
    if (inLog) log.children[at].firstChild.focus({ preventScroll: true });
    const current = log.children[at];
    if (current && log.scrollHeight > log.clientHeight) {
      log.scrollTop = Math.max(0, current.offsetTop - log.offsetTop - log.clientHeight / 2);
    }
  }

  // on the container: a click on the board focuses it (main has a tabindex), not the page
  const keys = (e) => {
    if (!root.isConnected) { container.removeEventListener("keydown", keys); return; }
    if (e.altKey || e.ctrlKey || e.metaKey || /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName)) return;
    const to = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: steps.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    show(to);
  };
  container.addEventListener("keydown", keys);
  update();
  buttons.next.focus({ preventScroll: true });

  const result = await checkHand(record.events);
  for (const f of result.failures) if (f.card) ctx.failed.add(`${f.seat}:${f.card}`);
  verdict.classList.remove("pending");
  renderVerdict(verdict, result, ctx);
  if (result.failures.length) update();
}
