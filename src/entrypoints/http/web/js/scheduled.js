// The "Scheduled" list (the sidebar's Scheduled button): the person's schedules (GET
// /api/schedules, docs/schedules.md), each with its next firing, the outcome of its last run,
// Pause/Resume and Delete, and a form that makes one: repeat (cron, in a time zone) or once,
// into this conversation or a new conversation per firing. While a schedule is enabled the
// page asks again every POLL_MS: a firing into the open conversation reloads it (its run
// streams in), one into a new conversation refreshes the list.
import { api } from "/static/js/api.js";
import { $, el, icon } from "/static/js/dom.js";
import { errorNote, errorParts } from "/static/js/errors.js";
import { state } from "/static/js/state.js";

const POLL_MS = 2000;
const hooks = { open: () => {}, fired: () => {}, shown: () => {} };
let schedules = [];
let seen = null;  // schedule id -> the last run id already known (null: not read yet)
let timer = null;

const when = (iso) => new Date(iso).toLocaleString([], { dateStyle: "medium", timeStyle: "medium" });
const LAST = { completed: "done", failed: "failed", running: "running", waiting: "waits for your approval",
  cancelled: "stopped", interrupted: "interrupted" };

// a message a schedule sent, in the conversation: "Scheduled · <the firing's time>"
export function scheduledMark(m) {
  if (!m.scheduledFor) return null;
  return el("div", { class: "scheduled-mark", "data-testid": "scheduled-mark", title: `Sent by a schedule, for ${when(m.scheduledFor)}` },
    `Scheduled · ${when(m.scheduledFor)}`);
}

function showError(e) {
  const slot = $("schedule-error");
  slot.hidden = !e;
  slot.replaceChildren(...(e ? [errorNote(e, { testid: "schedule-error-note", dismiss: () => showError(null) })] : []));
}

function lastRun(s) {
  const run = s.lastRun;
  if (!run && !s.lastRunId) return el("span", { class: "schedule-last" }, "Not fired yet");
  if (!run) return el("span", { class: "schedule-last", "data-testid": "schedule-last" }, `Last: queued, for ${when(s.lastFiredFor)}`);
  const failed = run.status === "failed" && run.error ? `: ${errorParts(run.error)[0]}` : "";
  return el("span", { class: `schedule-last ${run.status}`, "data-testid": "schedule-last", "data-status": run.status },
    `Last: ${LAST[run.status] || run.status}${failed}, for ${when(s.lastFiredFor)} `,
    el("button", { type: "button", class: "linkish", "data-testid": "schedule-open", onclick: () => hooks.open(run.conversationId) }, "Open"));
}

function row(s) {
  const timing = s.cron ? [el("code", {}, s.cron), ` · ${s.tz}`] : [`once, ${when(s.at)}`];
  const into = s.conversationId ? (s.conversationId === state.current ? " · into this conversation" : " · into one conversation")
    : " · a new conversation each time";
  const next = s.enabled ? (s.nextAt ? `Next: ${when(s.nextAt)}` : "Nothing left to fire") : "Paused";
  const toggle = el("button", { type: "button", "data-testid": "schedule-pause", onclick: () => change(s, { enabled: !s.enabled }) },
    s.enabled ? "Pause" : "Resume");
  const remove = el("button", { type: "button", "data-testid": "schedule-delete", "aria-label": `Delete the schedule "${s.message.slice(0, 40)}"`,
    onclick: () => drop(s) }, icon("trash"), "Delete");
  return el("li", { class: `schedule-item${s.enabled ? "" : " paused"}`, "data-testid": "schedule-item", "data-id": s.id },
    el("span", { class: "schedule-text", "data-testid": "schedule-text" }, s.message),
    el("span", { class: "schedule-when" }, ...timing, into),
    el("span", { class: "schedule-next", "data-testid": "schedule-next" }, next),
    lastRun(s),
    el("span", { class: "schedule-actions" }, toggle, remove));
}

function render() {
  $("schedule-list").replaceChildren(...schedules.map(row));
  $("schedule-empty").hidden = schedules.length > 0;
  const here = $("schedule-target").querySelector("option[value=current]");
  here.disabled = !state.current || state.temporary;
  if (here.disabled && $("schedule-target").value === "current") $("schedule-target").value = "new";
}

// new runs since the last read: the page shows them (app.js)
function announce() {
  const before = seen;
  seen = Object.fromEntries(schedules.map((s) => [s.id, s.lastRunId]));
  if (before === null) return;
  for (const s of schedules) {
    if (s.lastRunId && before[s.id] !== s.lastRunId) hooks.fired(s.conversationId || (s.lastRun && s.lastRun.conversationId) || null);
  }
}

export async function loadSchedules() {
  clearTimeout(timer);
  if (state.auth.required && !state.auth.authenticated) return;  // logged out: asked again after the login
  try { schedules = (await api("/api/schedules")).schedules; } catch (e) {
    if ($("scheduled-panel").hidden || e.code === "SERVER_UNREACHABLE") return;  // a server that keeps none: nothing to show
    showError(e);
    return;
  }
  announce();
  render();
  if (schedules.some((s) => s.enabled && s.nextAt) || schedules.some((s) => s.lastRun && s.lastRun.status === "running")) {
    timer = setTimeout(loadSchedules, POLL_MS);
  }
}

async function change(s, body) {
  try { await api(`/api/schedules/${s.id}`, { method: "PATCH", body }); } catch (e) { showError(e); return; }
  showError(null);
  await loadSchedules();
}

async function drop(s) {
  try { await api(`/api/schedules/${s.id}`, { method: "DELETE" }); } catch (e) { showError(e); return; }
  showError(null);
  await loadSchedules();
}

function formBody() {
  const body = { message: $("schedule-message").value.trim() };
  if ($("schedule-kind").value === "cron") {
    body.cron = $("schedule-cron").value.trim();
    body.tz = $("schedule-tz").value.trim() || "UTC";
  } else {
    const at = new Date($("schedule-at").value);
    if (Number.isNaN(at.getTime())) throw Object.assign(new Error("Choose the day and time it sends."), { code: "BAD_REQUEST" });
    body.at = at.toISOString();
  }
  if ($("schedule-target").value === "current" && state.current) body.conversationId = state.current;
  return body;
}

async function add(event) {
  event.preventDefault();
  try {
    await api("/api/schedules", { method: "POST", body: formBody() });
  } catch (e) { showError(e); return; }
  showError(null);
  $("schedule-message").value = "";
  await loadSchedules();
}

function kind() {
  const once = $("schedule-kind").value === "at";
  $("schedule-cron").hidden = once;
  $("schedule-tz").hidden = once;
  $("schedule-at").hidden = !once;
}

export function toggleScheduled(open = $("scheduled-panel").hidden) {
  $("scheduled-panel").hidden = !open;
  $("scheduled-view").setAttribute("aria-expanded", String(open));
  if (open) { hooks.shown(); render(); loadSchedules(); $("schedule-message").focus(); }
}

// open(id): show a conversation; fired(conversationId or null): a firing started a run;
// shown(): the list was opened (a phone's sidebar makes way for it)
export function installScheduled(actions) {
  Object.assign(hooks, actions);
  $("scheduled-view").prepend(icon("clock"));
  $("scheduled-close").append(icon("close"));
  $("scheduled-view").addEventListener("click", () => toggleScheduled());
  $("scheduled-close").addEventListener("click", () => { toggleScheduled(false); $("scheduled-view").focus(); });
  $("schedule-form").addEventListener("submit", add);
  $("schedule-kind").addEventListener("change", kind);
  $("schedule-tz").value = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  $("schedule-message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("schedule-form").requestSubmit(); }
  });
}
