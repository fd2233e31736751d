// The conversation list: pinned ones first, then date groups (or the archive), titles in
// full on hover, turn counts, row actions on hover/focus (js/organise.js organises them).
import { $, el, icon } from "/static/js/dom.js";
import { errorNote } from "/static/js/errors.js";
import { turnsOf } from "/static/js/organise.js";
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

function counted(c) {
  const turns = turnsOf(c);
  return turns === null || turns === undefined ? null : el("span", { "data-testid": "turn-count" }, plural(turns, "turn"));
}

function row(c, actions) {
  if (state.renaming === c.id) return renameBox(c, actions);
  const active = c.id === state.current;
  const badge = c.status && c.status !== "completed" ? el("span", { class: `badge ${c.status}` }, c.status) : null;
  const pin = c.pinned ? "Unpin" : "Pin", archive = c.archived ? "Unarchive" : "Archive";
  return el("li", { class: `conversation-item${active ? " active" : ""}`, "data-testid": `conversation-${c.id}` },
    el("button", {
      type: "button", class: "open", title: c.title, "aria-current": active ? "true" : null,
      "data-testid": "open-conversation", onclick: () => actions.open(c.id),
    },
      el("span", { class: "title" }, c.title),
      el("span", { class: "meta" }, el("span", {}, when(c.updatedAt)), counted(c), badge)),
    el("span", { class: "actions" },
      c.archived ? null : el("button", { type: "button", class: "icon only", "aria-label": `${pin} ${c.title}`, title: pin, "aria-pressed": String(!!c.pinned), "data-testid": "pin-button", onclick: () => actions.pin(c) }, icon("pin")),
      el("button", { type: "button", class: "icon only", "aria-label": `${archive} ${c.title}`, title: archive, "data-testid": "archive-button", onclick: () => actions.archive(c) }, icon("archive")),
      el("button", { type: "button", class: "icon only", "aria-label": `Rename ${c.title}`, title: "Rename", "data-testid": "rename-button", onclick: () => actions.rename(c) }, icon("pencil")),
      el("button", { type: "button", class: "icon only", "aria-label": `Delete ${c.title}`, title: "Delete", "data-testid": "delete-button", onclick: () => actions.remove(c) }, icon("trash"))));
}

// the temporary chat on screen: never listed by the server, shown here while the page has it
function temporaryRow(actions) {
  const open = state.temporaryId && state.current === state.temporaryId;
  if (!open && !(state.temporary && !state.current)) return null;
  return el("li", { class: "conversation-item temporary-item active", "data-testid": "temporary-item" },
    el("button", { type: "button", class: "open", "aria-current": "true", onclick: () => open && actions.open(state.current) },
      el("span", { class: "title" }, open && state.detail ? state.detail.conversation.title : "Temporary chat"),
      el("span", { class: "meta temporary-note" }, "Not kept: deleted when you leave it")));
}

export function renderList(actions) {
  const shown = (x) => !(state.deleting || {})[x.id];
  const pinned = state.archiveView ? [] : (state.pinned || []).filter(shown);
  const pinnedIds = new Set(pinned.map((c) => c.id));
  const nodes = [temporaryRow(actions)].filter(Boolean);
  if (state.archiveView) nodes.push(el("li", { class: "group", role: "presentation", "data-testid": "archive-heading" }, "Archived"));
  const rowOf = (c) => {
    nodes.push(row(c, actions));
    // an error of a rename, delete, pin or archive of this conversation: under its row
    if (state.error && state.error.where === `row:${c.id}`) {
      nodes.push(el("li", { class: "row-error", role: "presentation" }, errorNote(state.error, { testid: "row-error", dismiss: actions.dismiss })));
    }
  };
  if (pinned.length) {
    nodes.push(el("li", { class: "group pinned-group", role: "presentation", "data-testid": "pinned-group" }, icon("pin"), "Pinned"));
    pinned.forEach(rowOf);
  }
  let group = null;
  const rest = state.conversations.filter((x) => shown(x) && !pinnedIds.has(x.id));
  for (const c of rest) {
    const g = dateGroup(c.updatedAt);
    if (g !== group) { group = g; nodes.push(el("li", { class: "group", role: "presentation", "data-testid": "date-group" }, g)); }
    rowOf(c);
  }
  $("conversation-list").replaceChildren(...nodes);
  const none = !pinned.length && !rest.length;
  $("list-state").textContent = !none ? "" : state.archiveView ? "Nothing archived" : nodes.length ? "" : "No conversations yet";
  $("load-more").hidden = !state.cursor;
}
