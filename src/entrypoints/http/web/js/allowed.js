// "Allowed tools": the tools a person chose to always allow (Always allow on a card), each
// with a Revoke button, so the rule can be seen and undone without the CLI. Read when the
// panel opens and after each change; the API is GET/DELETE /api/approvals/always.
import { api } from "/static/js/api.js";
import { $, el } from "/static/js/dom.js";
import { errorNote } from "/static/js/errors.js";

const since = (iso) => new Date(iso).toLocaleString([], { dateStyle: "medium", timeStyle: "short" });

async function revoke(tool) {
  try {
    await api(`/api/approvals/always/${encodeURIComponent(tool)}`, { method: "DELETE" });
  } catch (e) { if (e.code !== "NOT_FOUND") { say(e); return; } }
  await refreshAllowed();
}

// a line under the list: what it holds, or an error (sentence first, code small)
function say(what) { $("allowed-state").replaceChildren(typeof what === "string" ? what : errorNote(what)); }

export async function refreshAllowed() {
  if (!$("allowed").open) return;
  let rules;
  try { rules = (await api("/api/approvals/always")).alwaysAllowed || []; } catch (e) { say(e); return; }
  $("allowed-list").replaceChildren(...rules.map((r) => el("li", { class: "allowed-rule", "data-testid": "allowed-rule" },
    el("span", { class: "rule" }, el("code", {}, r.tool), el("span", { class: "since" }, `since ${since(r.since)}`)),
    el("button", { type: "button", "data-testid": "revoke-rule", "aria-label": `Revoke: ask again before ${r.tool} runs`,
      title: "Ask again before it runs", onclick: () => revoke(r.tool) }, "Revoke"))));
  say(rules.length ? "" : "No tool is always allowed: each asks as the approval setting says.");
}

export function installAllowed() {
  $("allowed").addEventListener("toggle", refreshAllowed);
}
