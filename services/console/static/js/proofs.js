// The deck proofs of a hand (rule R32), checked in the browser with WebCrypto.
//
// The same checks, in the same order and with the same words, as the standalone
// verifier (verifier/verify_deck.py), written from docs/design/fair-dealing.md:
// the commitment (AntesCollected: deck_root, deck_size, deck_format, deck_leaves)
// comes before the first card and, in format 2, its leaves make its root; every card
// the reader sees opens the commitment at the place it was dealt from; no place opens
// to two cards; a shown or mucked hand is the cards dealt to that seat.
//
// Events are the domain events as msgspec JSON: a DealtCard is [seat, card, up, proof],
// a proof {"place", "salt", "path"} with salt and path in base64, hashes in hex.

const RANKS = "23456789TJQKA";
const SUITS = "cdhs";
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

class Unreadable extends Error {}

/** Python's b64decode(s, validate=strict): binascii.a2b_base64 step by step, so a
 *  string decodes here exactly when it decodes there, to the same bytes. */
export function b64decode(s, strict = false) {
  if (typeof s !== "string") throw new Unreadable("not a string");
  if (/[^\x00-\x7f]/.test(s)) throw new Unreadable("string argument should contain only ASCII characters");
  if (strict && s.startsWith("=")) throw new Unreadable("Leading padding not allowed");
  const out = [];
  let quad = 0, left = 0, pads = 0, padding = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === "=") {
      padding = true;
      if (quad >= 2 && quad + ++pads >= 4) {
        if (strict && i + 1 < s.length) throw new Unreadable("Excess data after padding");
        return Uint8Array.from(out);
      }
      continue;
    }
    const v = B64.indexOf(ch);
    if (v < 0) {
      if (strict) throw new Unreadable("Only base64 data is allowed");
      continue;
    }
    if (strict && padding) throw new Unreadable("Discontinuous padding not allowed");
    pads = 0;
    if (quad === 0) { left = v; quad = 1; }
    else if (quad === 1) { out.push(((left << 2) | (v >> 4)) & 0xff); left = v & 0x0f; quad = 2; }
    else if (quad === 2) { out.push(((left << 4) | (v >> 2)) & 0xff); left = v & 0x03; quad = 3; }
    else { out.push(((left << 6) | v) & 0xff); left = 0; quad = 0; }
  }
  if (quad === 1) throw new Unreadable("number of data characters cannot be 1 more than a multiple of 4");
  if (quad !== 0) throw new Unreadable("Incorrect padding");
  return Uint8Array.from(out);
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

function ascii(text) {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function equal(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

async function sha256(bytes) {
  if (!globalThis.crypto || !crypto.subtle) {
    throw new Error("WebCrypto is not available here (the page is not in a secure context)");
  }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

/** Python's str() of a JSON value, as the verifier's messages print it. */
function py(value) {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (Array.isArray(value)) return "[" + value.map(pyRepr).join(", ") + "]";
  return String(value);
}

function pyRepr(value) {
  return typeof value === "string" ? `'${value}'` : py(value);
}

function truthy(value) {            // Python's truth of a JSON value
  if (Array.isArray(value)) return value.length > 0;
  if (value && typeof value === "object") return Object.keys(value).length > 0;
  return Boolean(value);
}

function int(value) {               // a JSON integer as Python sees it (bool is an int)
  if (value === true || value === false) return Number(value);
  return Number.isInteger(value) ? value : null;
}

/** What a hand's AntesCollected published (section 3 of the design note). */
class Commitment {
  constructor(event) {
    this.root = "deck_root" in event ? event.deck_root : "";
    this.size = "deck_size" in event ? event.deck_size : 0;
    this.format = "deck_format" in event ? event.deck_format : 1;
    try {
      this.leaves = b64decode("deck_leaves" in event ? event.deck_leaves : "", true);
    } catch (e) {
      if (!(e instanceof Unreadable)) throw e;
      this.leaves = null;
    }
  }

  /** Why it does not hold together, if it does not (null: it does). */
  async problem() {
    if (this.leaves === null) {
      this.leaves = new Uint8Array(0);
      return "the leaves are not base64";
    }
    if (!truthy(this.root)) {
      return !truthy(this.size) && !this.leaves.length ? null : "no root, but places or leaves";
    }
    if (this.format === 2) {
      if (this.leaves.length !== 32 * this.size) {
        return `${Math.floor(this.leaves.length / 32)} leaves published for ${py(this.size)} places`;
      }
      if (hex(await sha256(concat([2], this.leaves))) !== this.root) {
        return "the published leaves do not make the root";
      }
      return null;
    }
    if (this.format !== 1 || this.leaves.length) {
      return `format ${py(this.format)} with ${this.leaves.length} bytes of leaves is not one this verifier knows`;
    }
    return null;
  }
}

/** Section 3 of the design note: the card and its proof make the published leaf
 *  (format 2), or lead to the root (format 1). */
export async function proofOpens(commitment, card, proof) {
  let place, salt, path;
  try {
    if (!proof || typeof proof !== "object" || Array.isArray(proof)) return false;
    if (!("place" in proof) || !("salt" in proof) || !("path" in proof)) return false;
    place = int(proof.place);
    salt = b64decode(proof.salt);
    path = b64decode(proof.path);
  } catch (e) {
    if (e instanceof Unreadable) return false;
    throw e;
  }
  if (!(place !== null && place >= 0 && place < commitment.size && salt.length === 16)) return false;
  if (!(typeof card === "string" && card.length === 2 && RANKS.includes(card[0]) && SUITS.includes(card[1]))) {
    return false;
  }
  let h = await sha256(concat([0], [place], ascii(card), salt));
  if (commitment.format === 2) {
    return path.length === 0 && equal(h, commitment.leaves.subarray(32 * place, 32 * place + 32));
  }
  let index = place, width = commitment.size, used = 0;
  while (width > 1) {
    if (index % 2 === 1 || index + 1 < width) {        // a sibling on this level
      const sibling = path.subarray(used, used + 32);
      if (sibling.length !== 32) return false;
      h = await sha256(index % 2 === 1 ? concat([1], sibling, h) : concat([1], h, sibling));
      used += 32;
    }
    index = Math.floor(index / 2);
    width = Math.floor((width + 1) / 2);
  }
  return used === path.length && hex(h) === commitment.root;
}

/** One hand, checked as its events come (verify_deck.Hand). */
class Hand {
  constructor(number) {
    this.number = number;
    this.commitment = null;
    this.street = -1;
    this.place = 0;                  // the next card's place in the committed order
    this.reshuffled = false;
    this.opened = new Map();
    this.seats = new Map();          // seat -> his cards in order (null: hidden from us)
    this.proofs = 0;
    this.problems = [];              // {message, card?, seat?, place?}
  }

  fail(message, details = {}) {
    this.problems.push({ message, ...details });
  }

  async check(event) {
    const kind = event.type;
    if (kind === "AntesCollected") {
      this.commitment = new Commitment(event);
      const problem = await this.commitment.problem();
      if (problem) this.fail(`the commitment does not hold together: ${problem}`);
    } else if (kind === "CardsDealt") {
      await this.deal(event);
    } else if (kind === "LastCardsExposed") {
      for (const [seat, card, , ...proof] of event.turned || []) {
        await this.card(card, proof.length ? proof[0] : null, null, `seat ${py(seat)}'s turned card`, seat);
      }
    } else if ((kind === "HandShown" || kind === "HandMucked") && truthy(event.cards)) {
      await this.shown(event);
    }
  }

  async deal(event) {
    if (!("street" in event)) throw new Unreadable("a CardsDealt without its street");
    const street = event.street;
    const where = `street ${py(street)}`;
    if (this.commitment === null) this.fail(`${where} was dealt before the deck was committed`);
    if (street !== this.street + 1) this.fail(`${where} came after street ${this.street}`);
    this.street = street;
    this.reshuffled = this.reshuffled || truthy(event.reshuffled);
    const place = this.place + (truthy(street) ? 1 : 0);   // one burn before every later street
    const cards = event.cards || [];
    for (const [k, [seat, card, , ...proof]] of cards.entries()) {
      if (!this.seats.has(seat)) this.seats.set(seat, []);
      this.seats.get(seat).push(card);
      await this.card(card, proof.length ? proof[0] : null, place + k, `${where}, seat ${py(seat)}`, seat);
    }
    const community = event.community ?? null;
    if (community !== null) {
      await this.card(community, event.community_proof ?? null, place, `${where}, community card`, null);
    }
    this.place = place + cards.length + (community !== null ? 1 : 0);
  }

  async shown(event) {
    const seat = event.seat, cards = event.cards, proofs = event.proofs || [];
    const dealt = this.seats.get(seat) || [];
    if (dealt.length !== cards.length || dealt.some((d, i) => i < cards.length && d !== null && d !== cards[i])) {
      this.fail(`seat ${py(seat)} showed ${py(cards)}, but was dealt ${py(dealt)}`, { seat });
    }
    if (this.commitment && truthy(this.commitment.root) && proofs.length !== cards.length) {
      this.fail(`seat ${py(seat)} showed ${cards.length} cards with ${proofs.length} proofs`, { seat });
    }
    for (let i = 0; i < Math.min(cards.length, proofs.length); i++) {
      await this.card(cards[i], proofs[i], null, `seat ${py(seat)}'s shown ${py(cards[i])}`, seat);
    }
  }

  async card(card, proof, place, whose, seat) {
    if (card === null || card === undefined) return;
    if (this.commitment === null || !truthy(this.commitment.root)) return;   // a live dealer's physical card
    const about = { card, seat, place: proof && typeof proof === "object" ? proof.place : place, where: whose };
    if (proof === null || proof === undefined) {
      this.fail(`${whose}: ${py(card)} came without a proof`, about);
      return;
    }
    this.proofs += 1;
    if (!(await proofOpens(this.commitment, card, proof))) {
      this.fail(`${whose}: ${py(card)} does not open the commitment at place ${py(proof.place)}`, about);
      return;
    }
    if (place !== null && !this.reshuffled && int(proof.place) !== place) {
      this.fail(`${whose}: ${py(card)} opens place ${py(proof.place)}, but was dealt from place ${place}`, about);
    }
    const at = int(proof.place);
    if (!this.opened.has(at)) this.opened.set(at, card);
    if (this.opened.get(at) !== card) {
      this.fail(`${whose}: place ${py(proof.place)} opened to ${py(this.opened.get(at))} before`, about);
    }
  }

  result() {
    const c = this.commitment;
    return {
      ok: this.problems.length === 0,
      hand_no: this.number,
      checked: this.proofs,
      committed: c !== null && truthy(c.root),
      format: c === null ? null : c.format,
      failures: this.problems,
    };
  }
}

/** One event per version from a reader's messages ({version, event}: public copies
 *  and his private ones; each card taken from the copy that shows it), or the events
 *  as they are when they come without versions (verify_deck.events_of). */
export function eventsOf(data) {
  if (!(data.length && data[0] && typeof data[0] === "object" && "event" in data[0])) return [...data];
  const byVersion = new Map();
  for (const message of [...data].sort((a, b) => a.version - b.version)) {
    const known = byVersion.get(message.version);
    byVersion.set(message.version, known === undefined ? message.event : merge(known, message.event));
  }
  return [...byVersion.keys()].sort((a, b) => a - b).map((v) => byVersion.get(v));
}

function merge(a, b) {
  if (a.type === "CardsDealt") {
    return { ...a, cards: a.cards.map((x, i) => (x[1] !== null ? x : b.cards[i])).slice(0, b.cards.length) };
  }
  if (a.type === "HandMucked") return truthy(a.cards) ? a : b;
  return a;
}

/** Every hand in ``events`` (each begins with HandStarted), checked: a list of
 *  {ok, hand_no, checked, committed, format, failures: [{message, card, seat, place, where}]}. */
export async function verifyHands(events) {
  const hands = [];
  for (const event of events) {
    if (event && event.type === "HandStarted") hands.push(new Hand(event.hand_no));
    else if (hands.length) await hands[hands.length - 1].check(event);
  }
  return hands.map((hand) => hand.result());
}

/** One hand's events (HandStarted first, as a HandRecord holds them), checked:
 *  {ok, checked, committed, format, failures}.  Never throws: unreadable events are a
 *  failure too. */
export async function checkHand(events) {
  try {
    const hands = await verifyHands(Array.isArray(events) ? events : []);
    if (hands.length === 1) return hands[0];
    const message = hands.length ? `${hands.length} hands where one was expected` : "no hand in these events";
    return { ok: false, hand_no: null, checked: 0, committed: false, format: null, failures: [{ message }] };
  } catch (e) {
    const message = `the hand cannot be read: ${e.message}`;
    return { ok: false, hand_no: null, checked: 0, committed: false, format: null, failures: [{ message }] };
  }
}
