// Whether the model can answer (GET /api/readyz): the header badge with the fix under it,
// the reason Send is disabled while it cannot, and the empty chat's welcome with the same
// status and example prompts. A model that is down is asked again every few seconds, so
// the page unlocks by itself once it is started.
import { $, el, icon } from "/static/js/dom.js";
import { forPage } from "/static/js/errors.js";
import { emptyPicker } from "/static/js/models.js";
import { state } from "/static/js/state.js";

const RETRY_MS = 5000;
let timer = null;
let changed = () => {};

export function onReadiness(fn) { changed = fn; }

export async function checkReadiness() {
  clearTimeout(timer);
  let ready;
  try {
    const response = await fetch("/api/readyz", { cache: "no-store" });
    const body = await response.json();
    ready = { ok: response.ok, message: body.message || "", fix: body.fix || "", tools: body.tools || [] };
  } catch {
    // the server is away: what the model does is unknown, not "down" (the page reconnects)
    ready = { ...(state.ready || { ok: true, message: "", fix: "", tools: [] }), unknown: true };
  }
  state.ready = ready;
  renderReadiness();
  changed();
  if (!ready.ok || ready.unknown) timer = setTimeout(checkReadiness, RETRY_MS);
}

// why Send is disabled, or null: only when the server says the model cannot answer (a
// message would only leave one more failed conversation behind)
export function sendBlocked() {
  const r = state.ready;
  if (!r || r.ok || r.unknown || state.offline) return null;
  return `${forPage(r.message) || "The model is not ready"}: sending is off until it is.`;
}

export function renderReadiness() {
  const r = state.ready;
  const box = $("readiness");
  const fix = $("readiness-fix");
  if (!r) { box.textContent = ""; fix.hidden = true; return; }
  const down = r.tools.filter((t) => !t.ok).map((t) => t.name);
  const text = r.ok ? "Model ready" : (forPage(r.message) || "Model not ready");
  box.textContent = down.length ? `${text} · tools down: ${down.join(", ")}` : text;
  const stale = state.offline || r.unknown;
  box.className = `readiness ${stale ? "stale" : r.ok && !down.length ? "ok" : "bad"}`;
  fix.textContent = !r.ok && r.fix ? `Fix: ${forPage(r.fix)}` : "";
  // on a phone the badge is a dot: its words, and the fix, are in its title
  box.title = stale ? "Unknown while the server cannot be reached" : [box.textContent, fix.textContent].filter(Boolean).join(". ");
  fix.hidden = stale || r.ok || !r.fix;
}

function examples(tools) {
  const names = new Set(tools.filter((t) => t.ok).map((t) => t.name));
  const tool = names.has("demo") ? "What time is it now, and how many words are in this question?"
    : names.has("fetch") ? "Fetch https://example.com and tell me what the page says."
      : names.has("memory") ? "Remember that my favourite editor is Vim, then tell me what you remember."
        : "Which tools can you use? Show me one of them at work.";
  return [
    "Explain the difference between a process and a thread, with an example.",
    "Write a Python function that says whether a string is a palindrome, with a test.",
    tool,
  ];
}

function use(text) {
  const input = $("input");
  input.value = text;
  input.dispatchEvent(new Event("input"));
  input.focus();
}

// the welcome of an empty chat: the status, and prompts a click puts in the box
export function emptyState() {
  const r = state.ready;
  const status = !r ? "Checking the model…" : r.unknown || state.offline ? "The server cannot be reached; the page reconnects by itself."
    : r.ok ? "The model is ready. Ask anything, or start from an example:"
      : `${forPage(r.message) || "The model is not ready"}.${r.fix ? ` Fix: ${forPage(r.fix)}` : ""}`;
  return el("div", { class: "empty-state", "data-testid": "empty-state" },
    el("h2", {}, "Σοφός"),
    el("p", { class: `empty-status${r && !r.ok && !r.unknown ? " bad" : ""}`, "data-testid": "empty-status" }, status),
    emptyPicker(),
    el("div", { class: "examples" }, examples((r && r.tools) || []).map((text) =>
      el("button", { type: "button", class: "example", "data-testid": "example-prompt", onclick: () => use(text) }, icon("plus"), el("span", {}, text)))));
}
