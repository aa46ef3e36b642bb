// The login page: a player's or operator's name and password, or "watch as a spectator".

import { h, errorText, notice } from "./dom.js";

export function show(container, { api, navigate }) {
  const status = h("p.notice", { role: "status", "aria-live": "polite", testid: "login-status" });
  const role = h("select#login-role", { name: "role", testid: "login-role" },
    h("option", { value: "player" }, "Player"), h("option", { value: "operator" }, "Operator"));
  const name = h("input#login-name", { name: "name", autocomplete: "username", required: true, testid: "login-name",
    maxlength: "64", autocapitalize: "none", spellcheck: "false" });
  const password = h("input#login-password", { name: "password", type: "password", autocomplete: "current-password",
    required: true, testid: "login-password" });
  const submit = h("button.primary", { type: "submit", testid: "login-submit" }, "Log in");
  const spectate = h("button", { type: "button", testid: "login-spectate" }, "Watch as a spectator");

  const form = h("form.card-box.login", { testid: "login-form", "aria-labelledby": "login-title" },
    h("h1#login-title", {}, "Studroom"),
    h("p.muted", {}, "Stud poker room: log in to play or run the room, or watch the tables."),
    h("div.field", {}, h("label", { for: "login-role" }, "I am a"), role),
    h("div.field", {}, h("label", { for: "login-name" }, "Name"), name),
    h("div.field", {}, h("label", { for: "login-password" }, "Password"), password),
    h("div.buttons", {}, submit),
    h("hr"),
    h("div.buttons", {}, spectate),
    status);

  const busy = (on) => { submit.disabled = on; spectate.disabled = on; };

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    busy(true);
    notice(status, "Logging in…");
    try {
      await api.login(role.value, name.value.trim(), password.value);
      password.value = "";
      navigate("#/lobby");
    } catch (e) {
      const text = e.code === "bad_login" ? "Wrong name or password." :
        e.code === "rate_limited" ? "Too many attempts: wait a few minutes." : errorText(e);
      notice(status, text, "error");
      status.setAttribute("role", "alert");
      password.select();
    } finally {
      busy(false);
    }
  });
  spectate.addEventListener("click", async () => {
    busy(true);
    try {
      await api.spectate();
      navigate("#/lobby");
    } catch (e) {
      notice(status, errorText(e), "error");
    } finally {
      busy(false);
    }
  });

  container.append(h("section.page-login", {}, form));
  name.focus();
}
