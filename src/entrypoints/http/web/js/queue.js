// Messages typed while an answer streams, or while a tool call waits for approval: queued on
// the server (durable, in order), shown greyed under the answer ("sends next", or "held"
// while a card waits), edited in place and removable until they start. "Send now" steers
// the run: a text answer stops at once (its text kept) and the message is answered next; a
// tool call in flight finishes first.
import { api } from "/static/js/api.js";
import { $, el, icon } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

const hooks = { failed: () => {}, started: () => {} };
export function onQueue(events) { Object.assign(hooks, events); }

let editing = null;  // {id, text}: the queued message being edited, and its draft

// the list sits between the answer and the approval cards; made here so the page's HTML stays as it is
function box() {
  let list = $("queue");
  if (!list) {
    list = el("section", { id: "queue", class: "queue", "data-testid": "queue", "aria-label": "Messages waiting to be sent" });
    $("approvals").before(list);
  }
  return list;
}

// the detail's `queued` (or nothing), as the server knows it
export function setQueue(detail) {
  state.queued = (detail && detail.queued) || [];
  if (editing && !state.queued.some((q) => q.id === editing.id)) editing = null;  // it started meanwhile
}

// queue `text` behind the running answer; a conversation that finished meanwhile starts it at once
export async function enqueue(text, steer = false) {
  const body = { message: text, conversation: state.current, multitask: steer ? "interrupt" : "enqueue" };
  const answer = await api("/api/chat", { method: "POST", body });
  if (answer.queued) {
    state.queued = [...(state.queued || []).filter((q) => q.id !== answer.queued.id), answer.queued]
      .sort((a, b) => a.position - b.position);
    renderQueue();
  } else hooks.started(answer, text);
  return answer;
}

function startEdit(item) {
  editing = { id: item.id, text: item.text };
  renderQueue();
  const area = $(`queued-edit-${item.id}`);
  if (area) { area.focus(); area.setSelectionRange(area.value.length, area.value.length); }
}

function stopEdit(item, focus = true) {
  editing = null;
  renderQueue();
  const button = document.querySelector(`[data-queued="${item.id}"] [data-testid="queued-edit"]`);
  if (focus && button) button.focus();
}

async function saveEdit(item) {
  const text = editing && editing.id === item.id ? editing.text.trim() : "";
  if (!text) return;
  if (text === item.text) { stopEdit(item); return; }
  try {
    const { queued } = await api(`/api/conversations/${state.current}/queue/${item.id}`, { method: "PATCH", body: { message: text } });
    state.queued = state.queued.map((q) => (q.id === queued.id ? queued : q));
  } catch (e) {
    if (e.code === "QUEUED_NOT_FOUND") state.queued = state.queued.filter((q) => q.id !== item.id);  // it has started
    else { hooks.failed(e); return; }
  }
  stopEdit(item);
}

async function remove(item) {
  try { await api(`/api/conversations/${state.current}/queue/${item.id}`, { method: "DELETE" }); } catch (e) {
    if (e.code !== "QUEUED_NOT_FOUND") { hooks.failed(e); return; }  // it has started: the refresh shows it
  }
  state.queued = state.queued.filter((q) => q.id !== item.id);
  renderQueue();
}

// "send now": the queued message becomes a steer (dropped from the queue, sent first in line)
async function sendNow(item) {
  try {
    await api(`/api/conversations/${state.current}/queue/${item.id}`, { method: "DELETE" });
  } catch (e) { if (e.code === "QUEUED_NOT_FOUND") return; hooks.failed(e); return; }
  state.queued = state.queued.filter((q) => q.id !== item.id);
  try { await enqueue(item.text, true); } catch (e) { $("input").value = item.text; hooks.failed(e); }
  renderQueue();
}

// what a waiting message does next, in the person's words
function note(item, i) {
  if ((state.approvals || []).length) return "held: sends after you answer the tool call below";
  if (!state.streaming) return "held: sends after the next answer";
  return item.steer ? "steers the answer" : i === 0 ? "sends next" : "queued";
}

function editor(item) {
  const area = el("textarea", { id: `queued-edit-${item.id}`, class: "queued-editor", rows: "2", "data-testid": "queued-edit-input",
    "aria-label": "Edit the queued message (Enter saves, Esc cancels)" });
  area.value = editing.text;
  area.addEventListener("input", () => { editing.text = area.value; });
  area.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); saveEdit(item); }
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); stopEdit(item); }
  });
  return el("div", { class: "queued-edit" }, area, el("div", { class: "queued-actions" },
    el("button", { type: "button", class: "primary", "data-testid": "queued-edit-save", onclick: () => saveEdit(item) }, "Save"),
    el("button", { type: "button", "data-testid": "queued-edit-cancel", onclick: () => stopEdit(item) }, "Cancel")));
}

function entry(item, i) {
  if (editing && editing.id === item.id) {
    return el("div", { class: "queued-message editing", "data-testid": "queued-message", "data-queued": item.id }, editor(item));
  }
  return el("div", { class: "queued-message", "data-testid": "queued-message", "data-queued": item.id },
    el("div", { class: "queued-text" }, item.text),
    el("div", { class: "queued-actions" },
      el("span", { class: "queued-note", "data-testid": "queued-note" }, note(item, i)),
      el("button", { type: "button", class: "link", "data-testid": "queued-send-now", onclick: () => sendNow(item) }, "Send now"),
      el("button", { type: "button", class: "icon only", "aria-label": "Edit queued message", title: "Edit", "data-testid": "queued-edit",
        onclick: () => startEdit(item) }, icon("pencil")),
      el("button", { type: "button", class: "icon only", "aria-label": "Remove queued message", title: "Remove", "data-testid": "queued-remove",
        onclick: () => remove(item) }, icon("trash"))));
}

// drawn again only when what it shows changed: a redraw would take the focus from the editor
let shown = "";
export function renderQueue() {
  const list = box();
  const items = state.queued || [];
  const key = JSON.stringify([items, editing && editing.id, state.streaming, (state.approvals || []).length]);
  if (key === shown && list.childElementCount === items.length) return;
  shown = key;
  list.hidden = !items.length;
  const focused = list.contains(document.activeElement) ? document.activeElement.id : null;
  list.replaceChildren(...items.map(entry));
  if (focused && $(focused)) $(focused).focus();
}
