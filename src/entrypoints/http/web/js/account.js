// Who is logged in, in the header, and one menu for "Log out" and "Log out everywhere".
// Shown only where the server needs a login (API_TOKEN, or users).
import { $, icon } from "/static/js/dom.js";

function close(focus = false) {
  $("account-menu").hidden = true;
  $("account-button").setAttribute("aria-expanded", "false");
  if (focus) $("account-button").focus();
}

// it opens leftwards, under the button's right edge; a button near the left edge (a phone's
// wrapped header) opens it rightwards instead, so that it stays on screen
function place() {
  const menu = $("account-menu");
  menu.classList.remove("start");
  if (!menu.hidden && menu.getBoundingClientRect().left < 0) menu.classList.add("start");
}

function open() {
  $("account-menu").hidden = false;
  place();
  $("account-button").setAttribute("aria-expanded", "true");
  $("logout").focus();
}

export function installAccount({ logout }) {
  $("account-button").prepend(icon("user"));
  $("logout").prepend(icon("logout"));
  $("logout-everywhere").prepend(icon("logoutAll"));
  $("account-button").addEventListener("click", () => ($("account-menu").hidden ? open() : close()));
  $("logout").addEventListener("click", () => { close(); logout(false); });
  $("logout-everywhere").addEventListener("click", () => { close(); logout(true); });
  $("account").addEventListener("keydown", (e) => {
    const items = [$("logout"), $("logout-everywhere")];
    if (e.key === "Escape" && !$("account-menu").hidden) { e.stopPropagation(); close(true); }
    else if ((e.key === "ArrowDown" || e.key === "ArrowUp") && !$("account-menu").hidden) {
      e.preventDefault();
      const at = items.indexOf(document.activeElement);
      items[(at + (e.key === "ArrowDown" ? 1 : items.length - 1)) % items.length].focus();
    }
  });
  document.addEventListener("click", (e) => { if (!$("account").contains(e.target)) close(); });
  window.addEventListener("resize", place);
}

// auth: GET /api/session's answer ({required, authenticated, user: {name, role}})
export function renderAccount(auth) {
  const user = auth.required && auth.authenticated ? auth.user : null;
  $("account").hidden = !user;
  if (!user) { close(); return; }
  $("account-name").textContent = user.name;
  $("account-button").title = `Logged in as ${user.name} (${user.role})`;
}
