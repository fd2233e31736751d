// The conversation list: date groups, titles in full on hover, row actions on hover/focus.
import { $, el, icon } from "/static/js/dom.js";
import { errorNote } from "/static/js/errors.js";
import { state } from "/static/js/state.js";

const DAY = 86400000;

function dayOffset(iso) {
  const then = new Date(iso), now = new Date();
  return Math.round((new Date(now.toDateString()) - new Date(then.toDateString())) / DAY);
}

export function dateGroup(iso) {
  const days = dayOffset(iso);
  return days <= 0 ? "Today" : days === 1 ? "Yesterday" : "Earlier";
}

function when(iso) {
  const then = new Date(iso), days = dayOffset(iso);
  if (days <= 1) return then.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (days < 7) return then.toLocaleDateString([], { weekday: "short" });
  return then.toLocaleDateString([], { month: "short", day: "numeric" });
}

export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// the title in place, editable: Enter or leaving the box saves, Escape cancels
function renameBox(c, actions) {
  const input = el("input", { type: "text", class: "rename-input", maxlength: "200", "data-testid": "rename-input", "aria-label": `New title for ${c.title}` });
  input.value = c.title;
  let done = false;
  const finish = (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    actions.renamed(c, save && title && title !== c.title ? title : null);
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
  setTimeout(() => { input.focus(); input.select(); });
  return el("li", { class: "conversation-item renaming", "data-testid": `conversation-${c.id}` }, input);
}

function row(c, actions) {
  if (state.renaming === c.id) return renameBox(c, actions);
  const active = c.id === state.current;
  const badge = c.status && c.status !== "completed" ? el("span", { class: `badge ${c.status}` }, c.status) : null;
  return el("li", { class: `conversation-item${active ? " active" : ""}`, "data-testid": `conversation-${c.id}` },
    el("button", {
      type: "button", class: "open", title: c.title, "aria-current": active ? "true" : null,
      "data-testid": "open-conversation", onclick: () => actions.open(c.id),
    },
      el("span", { class: "title" }, c.title),
      el("span", { class: "meta" }, el("span", {}, when(c.updatedAt)), el("span", {}, plural(c.messageCount, "message")), badge)),
    el("span", { class: "actions" },
      el("button", { type: "button", class: "icon only", "aria-label": `Rename ${c.title}`, title: "Rename", "data-testid": "rename-button", onclick: () => actions.rename(c) }, icon("pencil")),
      el("button", { type: "button", class: "icon only", "aria-label": `Delete ${c.title}`, title: "Delete", "data-testid": "delete-button", onclick: () => actions.remove(c) }, icon("trash"))));
}

export function renderList(actions) {
  const nodes = [];
  let group = null;
  for (const c of state.conversations.filter((x) => !(state.deleting || {})[x.id])) {
    const g = dateGroup(c.updatedAt);
    if (g !== group) { group = g; nodes.push(el("li", { class: "group", role: "presentation", "data-testid": "date-group" }, g)); }
    nodes.push(row(c, actions));
    // an error of a rename or delete of this conversation: under its row
    if (state.error && state.error.where === `row:${c.id}`) {
      nodes.push(el("li", { class: "row-error", role: "presentation" }, errorNote(state.error, { testid: "row-error", dismiss: actions.dismiss })));
    }
  }
  $("conversation-list").replaceChildren(...nodes);
  $("list-state").textContent = nodes.length ? "" : "No conversations yet";
  $("load-more").hidden = !state.cursor;
}
