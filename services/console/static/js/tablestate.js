// One table as the page shows it: built from the answer of watch_table (a player's
// TableView, domain/views.py, or a spectator's LobbyEntry, projections/lobby/entry.py)
// and kept up to date by the table's events (domain/events.py), applied in version
// order.  A gap in the versions asks for the view again (``needsResync``).

const FACES = {                      // what each player receives, street by street (domain/games.py)
  seven_card_stud: [false, false, true, true, true, true, false],
  seven_card_stud_hilo: [false, false, true, true, true, true, false],
  five_card_stud: [false, true, true, true],
};
export const STREETS = {
  seven_card_stud: ["3rd", "4th", "5th", "6th", "7th"],
  seven_card_stud_hilo: ["3rd", "4th", "5th", "6th", "7th"],
  five_card_stud: ["2nd", "3rd", "4th", "5th"],
};
const LOG_LINES = 200;

function seatMap(rows) {
  const seats = new Map();
  for (const r of rows || []) {
    seats.set(r.seat, { seat: r.seat, player: r.player, stack: r.stack || 0,
      sitting_out: !!r.sitting_out, leaving: !!r.leaving });
  }
  return seats;
}

function handPlayer(seat, player, stack) {
  return { seat, player, stack, bet: 0, cards: [], folded: false, all_in: false, action: "", amount: 0,
    said_en: "", said_de: "", showed: "", won: 0, posted: false, timed_out: false };
}

// A spectator's cards in dealing order: the lobby keeps up cards and a count of downs.
function lobbyCards(game, p) {
  if (p.shown && p.shown.length) return p.shown.map((c) => ({ card: c, up: true }));
  const ups = [...(p.up || [])];
  let downs = p.down || 0;
  const cards = [];
  for (const up of FACES[game] || []) {
    if (up && ups.length) cards.push({ card: ups.shift(), up: true });
    else if (!up && downs > 0) { cards.push({ card: null, up: false }); downs -= 1; }
  }
  while (downs-- > 0) cards.push({ card: null, up: false });
  for (const c of ups) cards.push({ card: c, up: true });
  return cards;
}

export class TableState {
  constructor(tableId, viewer) {
    this.tableId = tableId;
    this.viewer = viewer;            // the viewer's name (null: a spectator)
    this.reset();
  }

  reset() {
    this.loaded = false;
    this.version = 0;
    this.game = "";
    this.config = null;              // the whole config (players' view) or {stakes, seats} (spectators')
    this.seatCount = 0;
    this.maxPlayers = 0;             // R2: the most players seated at once (the domain's, in the answer)
    this.handNo = 0;
    this.button = null;
    this.state = "open";
    this.waiting = [];               // names (players' view); spectators get only a count
    this.waitingCount = 0;
    this.offer = null;
    this.nextConfig = null;
    this.lastEnded = null;           // {hand_no, players}: the last hand seen to its end here
    this.seats = new Map();
    this.mySeat = null;
    this.hand = null;
    this.turn = null;
    this.pause = null;
    this.log = [];
    this.needsResync = false;
  }

  // --- from a view ------------------------------------------------------------------
  // ``maxPlayers``: the answer's ``max_players`` beside a TableView (a spectator's
  // LobbyEntry has its own); the rule is the domain's (TableConfig.max_players), not ours.
  load(view, maxPlayers) {
    const { log, lastEnded } = this;
    this.reset();
    this.log = log;
    this.lastEnded = lastEnded;
    if (view.config) this.loadTableView(view);   // a player's or operator's TableView
    else this.loadLobbyEntry(view);              // a spectator's LobbyEntry
    this.maxPlayers = maxPlayers ?? view.max_players ?? this.seatCount;
    this.loaded = true;
    this.findMySeat();
  }

  loadTableView(v) {
    this.version = v.version;
    this.config = v.config;
    this.game = v.config.game;
    this.seatCount = v.config.seats;
    this.handNo = v.hand_no;
    this.button = v.button;
    this.state = v.state || "open";
    this.waiting = [...(v.waiting || [])];
    this.waitingCount = this.waiting.length;
    this.offer = v.offer || null;
    this.nextConfig = v.next_config || null;
    this.seats = seatMap(v.seats);
    this.mySeat = v.seat ?? null;
    if (v.hand) {
      const players = new Map();
      const anteWindow = !!(v.turn && v.turn.kind === "ante");   // the view does not say who posted
      for (const p of v.hand.players) {
        const hp = handPlayer(p.seat, p.player, p.stack);
        Object.assign(hp, { bet: p.bet, folded: p.folded, all_in: p.all_in, posted: !anteWindow });
        hp.cards = p.cards.map((c) => (Array.isArray(c) ? { card: c[0], up: c[1] } : { card: c.card, up: c.up }));
        players.set(p.seat, hp);
      }
      this.hand = { hand_no: v.hand.hand_no, street: v.hand.street, pot: v.hand.pot,
        community: [...(v.hand.community || [])], players, over: false };
    }
    this.turn = v.turn || null;
  }

  loadLobbyEntry(e) {
    this.version = e.version || 0;
    this.game = e.game;
    this.config = { game: e.game, stakes: e.stakes, seats: e.seats, min_buy_in: e.min_buy_in, max_buy_in: e.max_buy_in };
    this.seatCount = e.seats;
    this.handNo = e.hand_no || 0;
    this.state = e.state || "open";
    this.waitingCount = e.waiting || 0;
    this.seats = seatMap(e.players);
    const hp = e.hand;
    if (hp) {
      this.button = hp.button;
      const players = new Map();
      for (const p of hp.players || []) {
        const x = handPlayer(p.seat, p.player, p.stack);
        Object.assign(x, { bet: p.bet || 0, folded: !!p.folded, all_in: !!p.all_in, action: p.action || "",
          amount: p.amount || 0, said_en: p.said_en || "", said_de: p.said_de || "", won: p.won || 0,
          showed: p.showed || "", showed_de: p.showed_de || "", timed_out: !!p.timed_out, posted: true });
        x.cards = lobbyCards(e.game, p);
        players.set(p.seat, x);
      }
      this.hand = { hand_no: hp.hand_no, street: hp.street ?? -1, pot: hp.pot || 0,
        community: [...(hp.community || [])], players, over: !!hp.over };
      this.turn = hp.turn || null;
    }
  }

  findMySeat() {
    if (!this.viewer) return;
    for (const s of this.seats.values()) if (s.player === this.viewer) { this.mySeat = s.seat; return; }
    if (this.hand) for (const p of this.hand.players.values()) if (p.player === this.viewer) { this.mySeat = p.seat; return; }
    this.mySeat = null;
  }

  // --- events -------------------------------------------------------------------------
  // Applies one pushed event; returns false when it was old news.
  apply(version, event) {
    if (!this.loaded) return false;
    if (version <= this.version) {
      if (version === this.version || version > this.version - 50) this.merge(version, event);
      return false;
    }
    if (version > this.version + 1) this.needsResync = true;   // applied anyway; the page asks again
    this.version = version;
    const fn = this["on" + event.type];
    if (fn) fn.call(this, event, version);
    return true;
  }

  // A private copy arriving after its public copy (same version): the viewer's own
  // down cards, or a hand mucked at his showdown.
  merge(version, e) {
    if (e.type === "CardsDealt" && this.hand) {
      for (const [seat, text, up] of e.cards) {
        if (!text || up) continue;
        const p = this.hand.players.get(seat);
        const c = p && p.cards.find((x) => x.v === version && !x.card);
        if (c) c.card = text;
      }
    } else if (e.type === "HandMucked" && e.cards && e.cards.length) {
      this.say(`${this.name(e.seat)} mucked ${e.cards.join(" ")} (seen by the showdown's players only)`);
    }
  }

  say(text, kind = "action") {
    this.log.push({ text, kind, at: Date.now() });
    if (this.log.length > LOG_LINES) this.log.splice(0, this.log.length - LOG_LINES);
  }

  name(seat) {
    const p = (this.hand && this.hand.players.get(seat)) || this.seats.get(seat);
    return p ? `${p.player} (seat ${seat})` : `seat ${seat}`;
  }

  player(seat) {
    return this.hand ? this.hand.players.get(seat) : undefined;
  }

  onTableOpened(e) {
    this.config = e.config; this.game = e.config.game; this.seatCount = e.config.seats;
    this.say(`Table ${e.table_id} opened`, "table");
  }
  onTableConfigured(e) {
    if (!this.hand || this.hand.over) { this.config = e.config; this.seatCount = e.config.seats; }
    else this.nextConfig = e.config;
    this.say("New settings (from the next hand)", "table");
  }
  onTablePaused() { this.state = "paused"; this.say("The table is paused", "table"); }
  onTableResumed() { this.state = "open"; this.say("The table deals again", "table"); }
  onTableClosing() { this.state = "closing"; this.say("The table closes after this hand", "table"); }
  onTableClosed() { this.state = "closed"; this.turn = null; this.pause = null; this.say("The table is closed", "table"); }

  onPlayerSatDown(e) {
    this.seats.set(e.seat, { seat: e.seat, player: e.player, stack: 0, sitting_out: false, leaving: false });
    if (e.player === this.viewer) this.mySeat = e.seat;
    this.say(`${e.player} sits down in seat ${e.seat}`, "table");
  }
  onChipsBought(e) {
    const s = this.seats.get(e.seat);
    if (s) s.stack += e.amount;
    this.say(`${this.name(e.seat)} buys ${e.amount} chips`, "table");
  }
  onSitOutChanged(e) {
    const s = this.seats.get(e.seat);
    if (s) s.sitting_out = e.sitting_out;
    const why = e.reason === "timed_out" ? " (timed out)" : e.reason === "operator" ? " (by the floor)" : "";
    this.say(`${this.name(e.seat)} ${e.sitting_out ? "sits out" : "is back in"}${why}`, "table");
  }
  onLeaveRequested(e) {
    const s = this.seats.get(e.seat);
    if (s) s.leaving = true;
    this.say(`${this.name(e.seat)} leaves after this hand`, "table");
  }
  onPlayerLeft(e) {
    this.seats.delete(e.seat);
    if (e.player === this.viewer) this.mySeat = null;
    this.say(`${e.player} leaves seat ${e.seat} with ${e.cashed_out} chips${e.reason !== "own" ? ` (${e.reason.replaceAll("_", " ")})` : ""}`, "table");
  }
  onWaitingListJoined(e) {
    this.waiting.push(e.player); this.waitingCount += 1;
    this.say(`${e.player} joins the waiting list`, "table");
  }
  onWaitingListLeft(e) {
    const i = this.waiting.indexOf(e.player);
    if (i >= 0) this.waiting.splice(i, 1);
    this.waitingCount = Math.max(0, this.waitingCount - 1);
    if (this.offer && this.offer.player === e.player) this.offer = null;
  }
  onSeatOffered(e) {
    this.offer = e;
    this.say(`Seat ${e.seat} is offered to ${e.player}`, "table");
  }

  onHandStarted(e) {
    if (this.nextConfig) { this.config = this.nextConfig; this.seatCount = this.config.seats; this.nextConfig = null; }
    this.handNo = e.hand_no;
    this.button = e.button;
    this.pause = null;
    const players = new Map();
    for (const s of e.seats) players.set(s.seat, handPlayer(s.seat, s.player, s.stack));
    this.hand = { hand_no: e.hand_no, street: -1, pot: 0, community: [], players, over: false };
    this.turn = null;
    this.say(`Hand #${e.hand_no} starts, button at seat ${e.button}`, "hand");
  }
  onAntePosted(e) {
    const p = this.player(e.seat);
    if (!p) return;
    p.stack -= e.amount; p.posted = true; p.all_in = p.all_in || p.stack === 0;
    this.hand.pot += e.amount;
  }
  onAnteSkipped(e) {
    const p = this.player(e.seat);
    if (p) { p.folded = true; p.action = "no ante"; }
    this.say(`${this.name(e.seat)} posts no ante`);
  }
  onHandCancelled(e) {
    if (!this.hand) return;
    for (const [seat, refund] of Object.entries(e.refunds || {})) {
      const p = this.player(Number(seat));
      if (p) { p.stack += refund; this.hand.pot -= refund; }
    }
    this.hand.over = true; this.turn = null;
    this.say(`Hand #${e.hand_no} cancelled: ${e.reason}`, "hand");
  }
  onAntesCollected(e) {
    if (!this.hand) return;
    const players = new Map();
    for (const seat of e.seats) if (this.hand.players.has(seat)) players.set(seat, this.hand.players.get(seat));
    this.hand.players = players;
    this.turn = null;
  }
  onCardsDealt(e, version) {
    const hand = this.hand;
    if (!hand) return;
    hand.street = e.street;
    this.turn = null;
    for (const p of hand.players.values()) { p.bet = 0; p.action = ""; p.amount = 0; }
    for (const [seat, text, up] of e.cards) {
      const p = hand.players.get(seat);
      if (p) p.cards.push({ card: text, up, v: version });
    }
    if (e.community) { hand.community.push(e.community); this.say(`Community card: ${e.community}`, "hand"); }
    const street = (STREETS[this.game] || [])[e.street];
    this.say(`${street ? street + " street" : "Street " + e.street}${e.reshuffled ? " (reshuffled)" : ""}`, "street");
  }
  onLastCardsExposed(e) {
    for (const [seat, text] of e.turned || []) {
      const p = this.player(seat);
      const last = p && [...p.cards].reverse().find((c) => !c.up);
      if (last) { last.card = text; last.up = true; }
    }
  }
  onRoundStarted(e) {
    this.turn = null;
    if (this.hand) this.hand.open_pair = !!e.open_pair;
    if (e.bring_in) this.say(`Lowest door card${e.door_card ? ` ${e.door_card}` : ""}: ${this.name(e.opener)} brings in`, "dealer-plain");
    if (e.open_pair) this.say("An open pair: the big bet is allowed", "dealer-plain");
  }
  onRoundEnded(e) {
    if (!this.hand) return;
    if (e.returned_seat !== null && e.returned_seat !== undefined && e.returned) {
      const p = this.player(e.returned_seat);
      if (p) { p.stack += e.returned; p.bet -= e.returned; this.hand.pot -= e.returned; }
      this.say(`${e.returned} chips go back to ${this.name(e.returned_seat)}`);
    }
    this.turn = null;
  }
  onTurnStarted(e) {
    this.turn = e;
    this.pause = null;
    if (e.seat !== null && e.seat !== undefined) {
      const p = this.player(e.seat);
      if (p) p.timed_out = false;
    }
  }
  onActed(e) {
    const p = this.player(e.seat);
    if (!p || !this.hand) return;
    p.stack -= e.amount; p.bet += e.amount; this.hand.pot += e.amount;
    p.folded = p.folded || e.action === "fold";
    p.all_in = p.all_in || e.all_in || p.stack === 0;
    p.action = e.action.replace("_", " ");
    p.amount = ["complete", "bet", "raise"].includes(e.action) ? e.to : e.amount;
    this.turn = null;
    const amount = ["complete", "bet", "raise"].includes(e.action) ? ` to ${e.to}` : e.amount ? ` ${e.amount}` : "";
    this.say(`${this.name(e.seat)} ${p.action}s${amount}${e.all_in ? " (all-in)" : ""}`.replace("checks", "checks").replace("bring ins", "brings in"));
  }
  onTimedOut(e) {
    const p = this.player(e.seat);
    if (p) p.timed_out = true;
    if (e.outcome === "protected" && p) { p.all_in = true; this.turn = null; }
    this.say(`${this.name(e.seat)} timed out: ${e.outcome}`, "timeout");
  }
  onAnnounced(e) {
    const p = this.player(e.seat);
    if (p) { p.said_en = e.en; p.said_de = e.de; }
    this.say({ en: `${this.name(e.seat)}: ${e.en}`, de: `${this.name(e.seat)}: ${e.de}` }, "dealer");
  }
  onShowdownStarted() { this.turn = null; this.say("Showdown", "street"); }
  onHandShown(e) {
    const p = this.player(e.seat);
    if (p) {
      const was = p.cards;                  // the same cards in the order received: keep which were down
      p.cards = e.cards.map((c, i) => ({ card: c, up: was.length === e.cards.length ? was[i].up : true }));
      p.showed = e.low ? `${e.high} / ${e.low}` : e.high;
      p.action = "shows";
    }
    this.turn = null;
    this.say(`${this.name(e.seat)} shows ${e.cards.join(" ")}${e.high ? ": " + (e.low ? `${e.high} / ${e.low}` : e.high) : ""}`);
  }
  onHandMucked(e) {
    const p = this.player(e.seat);
    if (p) p.action = "mucks";
    this.turn = null;
    this.say(`${this.name(e.seat)} mucks${e.cards && e.cards.length ? " " + e.cards.join(" ") : ""}`);
  }
  onPotAwarded(e) {
    const names = (share) => Object.entries(share || {}).map(([s, n]) => `${this.name(Number(s))} ${n}`);
    for (const share of [e.high, e.low]) {
      for (const [s, n] of Object.entries(share || {})) {
        const p = this.player(Number(s));
        if (p) p.won += n;
      }
    }
    const low = names(e.low);
    this.say(`${e.pot === 0 ? "Main pot" : "Side pot " + e.pot} ${e.amount}${e.rake ? ` (rake ${e.rake})` : ""}: ${names(e.high).join(", ")}${low.length ? "; low: " + low.join(", ") : ""}`, "win");
  }
  onHandEnded(e) {
    for (const [s, stack] of Object.entries(e.stacks || {})) {
      const seat = this.seats.get(Number(s));
      if (seat) seat.stack = stack;
      const p = this.player(Number(s));
      if (p) { p.stack = stack; p.bet = 0; }
    }
    if (this.hand) {
      this.hand.over = true;
      this.lastEnded = { hand_no: e.hand_no, players: [...this.hand.players.values()].map((p) => p.player) };
    }
    this.turn = null;
    this.say(`Hand #${e.hand_no} is over`, "hand");
  }
  onPauseStarted(e) { this.pause = e; }
  onPauseEnded() { this.pause = null; }

  // --- what the page asks -------------------------------------------------------------
  get myTurn() {
    const t = this.turn;
    if (!t || this.mySeat === null) return null;
    if (t.kind === "ante") {
      const p = this.player(this.mySeat);
      return p && !p.posted && !p.folded ? t : null;
    }
    return t.seat === this.mySeat ? t : null;
  }

  // The bet or raise size now (R11, R12): big on the big streets, and after an open
  // pair where only the big one is offered (TurnStarted lists both sizes otherwise).
  betSize(sizeName) {
    const st = (this.config && this.config.stakes) || { small_bet: 0, big_bet: 0 };
    if (sizeName) return sizeName === "big" ? st.big_bet : st.small_bet;
    const hand = this.hand;
    const street = hand ? hand.street : 0;
    const openPair = hand && (hand.open_pair || (street === 1 && this.currentBet >= st.big_bet));
    return street >= 2 || openPair ? st.big_bet : st.small_bet;
  }

  get currentBet() {
    let top = 0;
    if (this.hand) for (const p of this.hand.players.values()) top = Math.max(top, p.bet);
    return top;
  }

  get playerCap() {                  // seat numbers may run past the cap (R2: 10 seats, 8 players)
    return Math.min(this.seatCount, this.maxPlayers || this.seatCount);
  }

  get full() {
    return this.seats.size >= this.playerCap;
  }

  // The seats a player may take now: none while the table holds its most players.
  get freeSeats() {
    if (this.full) return [];
    const free = [];
    for (let s = 0; s < this.seatCount; s++) if (!this.seats.has(s)) free.push(s);
    return free;
  }
}
