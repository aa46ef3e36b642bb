// The page's router: hash routes, the header (who, connection, menu), and each page's
// show(container, ctx) -> cleanup function.

import { api } from "./api.js";
import { h, clear, errorText } from "./dom.js";

const PAGES = {
  login: () => import("./login.js"),
  lobby: () => import("./lobby.js"),
  table: () => import("./table.js"),
  cashier: () => import("./cashier.js"),
  history: () => import("./history.js"),
  desk: () => import("./desk.js"),
};
const NEEDS = {                       // the roles a page is for (none: any session)
  cashier: ["player", "operator"],
  history: ["player", "operator"],
  replay: ["player", "operator"],
  desk: ["operator"],
};

const TITLES = {
  login: () => "Log in", lobby: () => "Lobby", table: (a) => `Table ${a[0]}`, cashier: () => "Cashier",
  history: () => "History", replay: (a) => `Replay of hand ${a[1]} at ${a[0]}`, desk: () => "Operator's desk",
};

const main = document.getElementById("main");
let cleanup = null;
let showing = 0;

function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  return { page: parts[0] || "", args: parts.slice(1) };
}

export function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function renderNav() {
  const s = api.session;
  const nav = document.getElementById("nav");
  const who = document.getElementById("who");
  const { page } = parseRoute();
  const link = (hash, text, testid) =>
    h("a", { href: hash, testid, "aria-current": page === hash.slice(2).split("/")[0] ? "page" : null }, text);
  if (!s) {
    clear(nav);
    clear(who);
    return;
  }
  const items = [link("#/lobby", "Lobby", "nav-lobby")];
  if (s.role === "player" || s.role === "operator") {
    items.push(link("#/cashier", "Cashier", "nav-cashier"), link("#/history", "History", "nav-history"));
  }
  if (s.role === "operator") items.push(link("#/desk", "Desk", "nav-desk"));
  items.push(h("button.link", { type: "button", testid: "logout", onclick: logout }, s.role === "spectator" ? "Leave" : "Log out"));
  clear(nav, ...items);
  clear(who, s.role === "spectator" ? "Spectator" : `${s.name} (${s.role})`);
}

async function logout() {
  await api.logout();
  navigate("#/login");
}

async function route() {
  const token = ++showing;
  if (cleanup) { try { cleanup(); } catch (e) { console.error(e); } cleanup = null; }
  let { page, args } = parseRoute();
  const s = api.session;
  if (!s && page !== "login") { location.replace("#/login"); return; }
  if (s && (page === "login" || page === "")) { location.replace("#/lobby"); return; }
  if (s && NEEDS[page] && !NEEDS[page].includes(s.role)) {
    renderNav();
    clear(main, h("p.notice.error", { role: "alert", testid: "forbidden" }, `This page is not for a ${s.role}.`));
    return;
  }
  renderNav();
  clear(main);
  document.title = `${TITLES[page] ? TITLES[page](args) : "Studroom"} · Studroom`;
  try {
    if (page === "replay") {
      const module = await import("./replay.js");
      if (token !== showing) return;
      const result = module.showReplay(main, api, args[0], Number(args[1]));
      cleanup = typeof result === "function" ? result : null;
    } else {
      const load = PAGES[page];
      if (!load) { clear(main, h("p", {}, "No such page. ", h("a", { href: "#/lobby" }, "To the lobby"))); return; }
      const module = await load();
      if (token !== showing) return;
      cleanup = module.show(main, { api, args, navigate, session: s }) || null;
    }
  } catch (e) {
    console.error(e);
    clear(main, h("p.notice.error", { role: "alert" }, "The page failed: " + errorText(e)));
  }
  main.focus({ preventScroll: true });
}

const STATUS = { open: "", closed: "", connecting: "connecting…", reconnecting: "reconnecting…" };
api.on("status", (state) => {
  const el = document.getElementById("conn");
  el.textContent = STATUS[state] ?? state;
  el.dataset.state = state;
});
api.on("session", (s) => {
  if (!s) navigate("#/login");
});

window.addEventListener("hashchange", route);

(async () => {
  const s = await api.me();
  if (s) api.connect();
  route();
})();
