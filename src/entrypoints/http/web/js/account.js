// Who is logged in, in the header, and one menu for "Log out" and "Log out everywhere".
// Shown only where the server needs a login (API_TOKEN, or users). On a phone the button
// shows only its icon (the name is in its title), so the header keeps to one row.
import { $, icon } from "/static/js/dom.js";
import { installMenu } from "/static/js/menu.js";

let menu = null;

export function installAccount({ logout }) {
  $("account-button").prepend(icon("user"));
  $("logout").prepend(icon("logout"));
  $("logout-everywhere").prepend(icon("logoutAll"));
  menu = installMenu($("account"), $("account-button"), $("account-menu"));
  $("logout").addEventListener("click", () => logout(false));
  $("logout-everywhere").addEventListener("click", () => logout(true));
}

// auth: GET /api/session's answer ({required, authenticated, user: {name, role}})
export function renderAccount(auth) {
  const user = auth.required && auth.authenticated ? auth.user : null;
  $("account").hidden = !user;
  if (!user) { if (menu) menu.close(); return; }
  $("account-name").textContent = user.name;
  $("account-button").title = `Logged in as ${user.name} (${user.role})`;
}
