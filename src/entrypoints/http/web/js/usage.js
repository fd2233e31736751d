// The usage view, for admins (the More menu's "Usage"): every user's tokens in and out, model
// and tool seconds and calls per model and UTC day, over a date range (GET /api/usage?all=true,
// docs/usage.md); a row with estimated counts (the model server gave none) is marked ≈. The
// item shows only for an admin, or on a server without logins; the server refuses the others.
import { api } from "/static/js/api.js";
import { $, el, icon } from "/static/js/dom.js";
import { errorNote } from "/static/js/errors.js";

const DAY_MS = 86400000;
const isoDay = (t) => new Date(t).toISOString().slice(0, 10);
const int = (n) => n.toLocaleString();
const secs = (n) => n.toLocaleString([], { maximumFractionDigits: 1, minimumFractionDigits: 1 });

function showError(e) {
  const slot = $("usage-error");
  slot.hidden = !e;
  slot.replaceChildren(...(e ? [errorNote(e, { testid: "usage-error-note", dismiss: () => showError(null) })] : []));
}

function cells(values, estimated) {
  return values.map((v, i) => el("td", i === 3 && estimated ? { title: estimated } : {}, i === 3 && estimated ? `≈ ${v}` : v));
}

function row(r) {
  const estimated = r.estimated ? `Estimated: ${r.estimatedCalls} of ${r.calls} calls had no counts from the model server` : "";
  return el("tr", { "data-testid": "usage-row", "data-user": r.user, "data-model": r.model, ...(r.estimated ? { "data-estimated": "true" } : {}) },
    ...cells([r.day, r.user, r.model, int(r.inputTokens), int(r.outputTokens), secs(r.modelSeconds), secs(r.toolSeconds), int(r.calls)], estimated));
}

function total(rows) {
  const sum = (key) => rows.reduce((n, r) => n + r[key], 0);
  return el("tr", { "data-testid": "usage-total" }, el("td", { colspan: "3" }, "Total"),
    ...[int(sum("inputTokens")), int(sum("outputTokens")), secs(sum("modelSeconds")), secs(sum("toolSeconds")), int(sum("calls"))].map((v) => el("td", {}, v)));
}

export async function loadUsage() {
  const params = new URLSearchParams({ from: $("usage-from").value, to: $("usage-to").value, all: "true" });
  let rows;
  try { rows = (await api(`/api/usage?${params}`)).rows; } catch (e) {
    showError(e);
    $("usage-table").hidden = true;  // no rows of another range stay under the error
    $("usage-empty").hidden = true;
    return;
  }
  showError(null);
  rows.sort((a, b) => b.day.localeCompare(a.day) || a.user.localeCompare(b.user) || a.model.localeCompare(b.model));
  $("usage-rows").replaceChildren(...rows.map(row));
  $("usage-total").replaceChildren(...(rows.length ? [total(rows)] : []));
  $("usage-table").hidden = !rows.length;
  $("usage-empty").hidden = rows.length > 0;
}

// auth: GET /api/session's answer; the item shows for an admin, or where no login is needed
export function renderUsageItem(auth) {
  const admin = !auth.required || (auth.authenticated && auth.user && auth.user.role === "admin");
  $("usage-item").hidden = !admin;
  if (!admin) $("usage-panel").hidden = true;
}

function toggle(open) {
  $("usage-panel").hidden = !open;
  if (open) loadUsage();
}

export function installUsage() {
  const today = Date.now();
  $("usage-to").value = isoDay(today);
  $("usage-from").value = isoDay(today - 29 * DAY_MS);
  $("usage-close").append(icon("close"));
  $("usage-item").addEventListener("click", () => toggle(true));
  $("usage-close").addEventListener("click", () => { toggle(false); $("more-button").focus(); });
  $("usage-form").addEventListener("submit", (e) => { e.preventDefault(); loadUsage(); });
}
