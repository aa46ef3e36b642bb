// The console's one connection module: the session over fetch (login, spectate,
// logout, me) and the WebSocket (requests with ids answered as promises, pushes as
// events, reconnect with back-off, subscriptions sent again after a reconnect).
//
// Pages never touch fetch or the socket themselves: they call api.request(op, args)
// and api.subscribe(op, args, onAnswer) and listen to api.on("push:<kind>", fn).

const BACKOFF_MS = [250, 500, 1000, 2000, 4000, 8000];

async function postJson(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    credentials: "same-origin",
    body: JSON.stringify(body || {}),
  });
  let data = {};
  try { data = await response.json(); } catch (e) { /* no body */ }
  if (!response.ok || data.ok === false) {
    const error = (data && data.error) || { code: "http_" + response.status, message: response.statusText };
    if (response.status === 429 && !error.code) error.code = "rate_limited";
    throw Object.assign(new Error(error.message || error.code), { code: error.code, status: response.status });
  }
  return data;
}

export class Api {
  constructor() {
    this.session = null;          // {role, name} once logged in or spectating
    this.socket = null;
    this.nextId = 1;
    this.pending = new Map();     // id -> {resolve, reject}
    this.subscriptions = new Map(); // key -> {op, args, onAnswer}
    this.listeners = new Map();   // event name -> Set of functions
    this.attempt = 0;
    this.closing = false;
    this.opened = null;           // a promise of the open socket
    this.state = "closed";        // "connecting" | "open" | "closed"
    this.generation = 0;          // counts the sockets opened: a watch is sent once on each
  }

  // --- events -------------------------------------------------------------------
  on(name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(fn);
    return () => this.listeners.get(name).delete(fn);
  }

  emit(name, detail) {
    for (const fn of [...(this.listeners.get(name) || [])]) {
      try { fn(detail); } catch (e) { console.error(e); }
    }
  }

  // --- the session (HTTP) -----------------------------------------------------------
  async me() {
    try {
      const response = await fetch("/api/me", { credentials: "same-origin" });
      if (!response.ok) return null;
      const data = await response.json();
      this.session = data.ok ? { role: data.role, name: data.name } : null;
    } catch (e) {
      this.session = null;
    }
    return this.session;
  }

  // True only when the console answers that the session is no more (401); a console
  // that does not answer at all may come back: keep trying.
  async sessionGone() {
    try {
      const response = await fetch("/api/me", { credentials: "same-origin" });
      if (response.status !== 401) return false;
      this.session = null;
      return true;
    } catch (e) {
      return false;
    }
  }

  async login(role, name, password) {
    const data = await postJson("/api/login", { role, name, password });
    this.session = { role: data.role, name: data.name };
    this.connect();
    return this.session;
  }

  async spectate() {
    const data = await postJson("/api/spectate", {});
    this.session = { role: data.role || "spectator", name: data.name || "public" };
    this.connect();
    return this.session;
  }

  async logout() {
    this.disconnect();
    try { await postJson("/api/logout", {}); } catch (e) { /* gone already */ }
    this.session = null;
    this.emit("session", null);
  }

  // --- the socket ---------------------------------------------------------------------
  connect() {
    if (this.socket && this.state !== "closed") return this.opened;
    this.closing = false;
    this.state = "connecting";
    this.emit("status", "connecting");
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
    const socket = new WebSocket(url);
    this.socket = socket;
    this.opened = new Promise((resolve, reject) => {
      socket.addEventListener("open", () => {
        this.attempt = 0;
        this.state = "open";
        this.emit("status", "open");
        resolve(socket);
        this.resubscribe();
      });
      socket.addEventListener("close", () => reject(Object.assign(new Error("not connected"), { code: "disconnected" })));
    });
    this.opened.catch(() => {});         // a request waiting on it says so itself
    socket.addEventListener("message", (message) => this.receive(message.data));
    socket.addEventListener("close", (e) => this.dropped(socket, e.code));
    return this.opened;
  }

  disconnect() {
    this.closing = true;
    this.emit("status", "closed");
    this.subscriptions.clear();
    if (this.socket) this.socket.close();
    this.socket = null;
    this.state = "closed";
    this.failPending("closed", "the connection was closed");
  }

  failPending(code, message) {
    for (const { reject } of this.pending.values()) {
      reject(Object.assign(new Error(message), { code }));
    }
    this.pending.clear();
  }

  async dropped(socket, code) {
    if (socket !== this.socket) return;
    this.state = "closed";
    this.failPending("disconnected", "the connection dropped");
    if (this.closing) return;
    if (code === 4401) {                    // the session ended (logout elsewhere, revoked, expired)
      this.closing = true;
      this.emit("status", "closed");
      this.session = null;
      this.emit("session", null);
      return;
    }
    this.emit("status", "reconnecting");
    const wait = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt += 1;
    await new Promise((resolve) => setTimeout(resolve, wait * (0.75 + Math.random() / 2)));
    if (this.closing || socket !== this.socket) return;
    if (this.attempt > 2) {                 // still the same session? (a restart of the console ends it)
      if (await this.sessionGone()) {
        this.closing = true;
        this.emit("status", "closed");
        this.emit("session", null);
        return;
      }
    }
    this.socket = null;
    this.connect();
  }

  receive(text) {
    let message;
    try { message = JSON.parse(text); } catch (e) { return; }
    if (message.push !== undefined) {
      this.emit("push:" + message.push, message);
      return;
    }
    const waiting = this.pending.get(message.id);
    if (!waiting) return;
    this.pending.delete(message.id);
    if (message.ok) {
      waiting.resolve(message);
    } else {
      const error = message.error || { code: "error", message: "refused" };
      waiting.reject(Object.assign(new Error(error.message || error.code), { code: error.code, retryAfterMs: error.retry_after_ms }));
    }
  }

  // One request: resolves with the answer ({ok: true, ...}), rejects with an Error
  // carrying the answer's error code.  Over the session's quota the gateway refused it
  // unsent (`rate_limited`, `retry_after_ms`): asked again after that wait, twice at most.
  async request(op, args) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.send(op, args);
      } catch (e) {
        if (e.code !== "rate_limited" || attempt >= 2 || !(e.retryAfterMs <= 5000)) throw e;
        await new Promise((resolve) => setTimeout(resolve, e.retryAfterMs));
      }
    }
  }

  async send(op, args) {
    await this.connect();
    const id = this.nextId++;
    const socket = this.socket;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ ...(args || {}), id, op }));
    });
  }

  // A watch that must be sent again after every reconnect: onAnswer gets each answer
  // (the first and those after a reconnect: the page rebuilds its state from it).
  // Returns {answer: the first answer's promise, end(): stop (sends ``unwatchOp``)}.
  subscribe(key, op, args, onAnswer, unwatchOp) {
    let settle;
    const answer = new Promise((resolve, reject) => { settle = { resolve, reject }; });
    const sub = {
      op, args, generation: -1,
      onAnswer: (a) => { onAnswer(a); settle.resolve(a); },
      onError: (e) => { settle.reject(e); this.emit("error", e); },
    };
    this.subscriptions.set(key, sub);
    this.sendWatch(sub);
    return {
      answer,
      end: () => {
        if (this.subscriptions.get(key) !== sub) return;
        this.subscriptions.delete(key);
        if (unwatchOp && this.state === "open") this.request(unwatchOp, args).catch(() => {});
      },
    };
  }

  async sendWatch(sub) {
    try { await this.connect(); } catch (e) { return; }
    if (sub.generation === this.generation || [...this.subscriptions.values()].indexOf(sub) < 0) return;
    sub.generation = this.generation;
    this.request(sub.op, sub.args).then(sub.onAnswer, (e) => {
      if (e.code !== "disconnected" && e.code !== "closed") sub.onError(e);
    });
  }

  resubscribe() {
    this.generation += 1;
    for (const sub of this.subscriptions.values()) this.sendWatch(sub);
  }
}

export const api = new Api();
