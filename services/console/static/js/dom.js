// Small DOM helpers shared by every page: element building, chips, times, cards.

// h("div.seat", {dataset: {testid: "seat"}}, child, "text", ...)
export function h(tag, attrs, ...children) {
  const [head, ...classes] = tag.split(".");
  const [name, id] = head.split("#");
  const el = document.createElement(name || "div");
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "testid") el.dataset.testid = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = value;
    else if (key === "class") el.className += (el.className ? " " : "") + value;
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const chipFormat = new Intl.NumberFormat("en-US");
export function chips(n) {
  return n === null || n === undefined ? "–" : chipFormat.format(n);
}

export function when(ms) {
  if (!ms) return "–";
  const d = new Date(ms);
  return d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
}

export const GAME_NAMES = {
  seven_card_stud: "Seven-card stud",
  seven_card_stud_hilo: "Seven-card stud hi-lo",
  five_card_stud: "Five-card stud",
};

export function gameName(game) {
  return GAME_NAMES[game] || game;
}

export function stakesText(stakes) {
  if (!stakes) return "";
  const ante = stakes.ante ? `, ante ${chips(stakes.ante)}` : "";
  return `${chips(stakes.small_bet)}/${chips(stakes.big_bet)}${ante}`;
}

// --- cards ---------------------------------------------------------------------------

const SUITS = { c: ["♣", "clubs", "black"], d: ["♦", "diamonds", "red"], h: ["♥", "hearts", "red"], s: ["♠", "spades", "black"] };
const RANK_NAMES = { T: "10", J: "J", Q: "Q", K: "K", A: "A" };
const RANK_WORDS = { T: "ten", J: "jack", Q: "queen", K: "king", A: "ace" };

// One card: ``text`` like "Kd" (face), or null (a back: a down card not the viewer's).
// ``down`` marks the viewer's own down card (face shown, marked as hidden to others).
export function card(text, { down = false } = {}) {
  if (!text) {
    return h("span.card.back", { testid: "card", dataset: { card: "back" }, role: "img", "aria-label": "face-down card" });
  }
  const [rank, suit] = [text[0], text[1]];
  const [symbol, suitWord, colour] = SUITS[suit] || ["?", suit, "black"];
  const label = `${RANK_WORDS[rank] || rank} of ${suitWord}${down ? " (down)" : ""}`;
  return h(`span.card.${colour}${down ? ".down" : ""}`,
    { testid: "card", dataset: { card: text }, role: "img", "aria-label": label, title: label },
    h("span.rank", {}, RANK_NAMES[rank] || rank), h("span.suit", { "aria-hidden": "true" }, symbol));
}

export function errorText(e) {
  if (!e) return "";
  return e.code ? `${e.message || e.code} (${e.code})` : String(e.message || e);
}

// A status line (role=status) that pages put messages into.
export function notice(el, text, kind = "info") {
  el.textContent = text || "";
  el.className = `notice ${kind}`;
}
