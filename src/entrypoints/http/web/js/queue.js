// Messages typed while an answer streams: queued on the server (durable, in order), shown
// greyed under the answer ("sends next"), editable and removable until they start; "Send
// now" steers the run (it hands over at its next step, never inside a tool call).
import { api } from "/static/js/api.js";
import { $, el, icon } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

const hooks = { failed: () => {}, started: () => {} };
export function onQueue(events) { Object.assign(hooks, events); }

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
export function setQueue(detail) { state.queued = (detail && detail.queued) || []; }

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

async function edit(item) {
  const text = window.prompt("Edit the queued message", item.text);
  if (text === null || !text.trim()) return;
  try {
    const { queued } = await api(`/api/conversations/${state.current}/queue/${item.id}`, { method: "PATCH", body: { message: text } });
    state.queued = state.queued.map((q) => (q.id === queued.id ? queued : q));
  } catch (e) { hooks.failed(e); }
  renderQueue();
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

export function renderQueue() {
  const list = box();
  const items = state.queued || [];
  list.hidden = !items.length;
  list.replaceChildren(...items.map((item, i) => el("div", { class: "queued-message", "data-testid": "queued-message" },
    el("div", { class: "queued-text" }, item.text),
    el("div", { class: "queued-actions" },
      el("span", { class: "queued-note" }, item.steer ? "steers the answer" : i === 0 ? "sends next" : "queued"),
      el("button", { type: "button", class: "link", "data-testid": "queued-send-now", onclick: () => sendNow(item) }, "Send now"),
      el("button", { type: "button", class: "icon only", "aria-label": "Edit queued message", title: "Edit", "data-testid": "queued-edit",
        onclick: () => edit(item) }, icon("pencil")),
      el("button", { type: "button", class: "icon only", "aria-label": "Remove queued message", title: "Remove", "data-testid": "queued-remove",
        onclick: () => remove(item) }, icon("trash"))))));
}
