// Tool calls waiting for a person's approval: one card per call (tool, server, arguments,
// the tool's description) with Approve / Edit / Reject / Always allow. The cards come from
// the stream's `approval` event and from `pendingApprovals` when a conversation is opened,
// so a reload or a server restart shows them again.
import { api } from "/static/js/api.js";
import { $, el, icon } from "/static/js/dom.js";
import { errorParts } from "/static/js/errors.js";
import { state } from "/static/js/state.js";

// per call: what the card is doing (editing, rejecting), the person's drafts, its error;
// kept apart from the DOM so a re-render never loses what was typed
const drafts = new Map();
let shown = "";  // what the section shows now: it is rebuilt only when that changes
let hooks = { started: () => {}, refresh: async () => {} };

export function onApprovals(h) { hooks = { ...hooks, ...h }; }

function draft(call) {
  if (!drafts.has(call.id)) drafts.set(call.id, { mode: null, text: JSON.stringify(call.args || {}, null, 2), reason: "", error: null, busy: false });
  return drafts.get(call.id);
}

async function decide(call, decision) {
  const d = draft(call);
  Object.assign(d, { busy: true, error: null });
  state.approvalNotice = null;
  renderApprovals();
  try {
    await api("/api/chat", { method: "POST", body: { conversation: state.current, resume: true, decisions: { [call.id]: decision } } });
    drafts.delete(call.id);
    state.approvals = state.approvals.filter((c) => c.id !== call.id);
    hooks.started();
  } catch (e) {
    d.busy = false;
    if (e.code === "STALE_DECISION") {
      // another tab (or a double click) answered it first: show what the server has now
      drafts.delete(call.id);
      state.approvalNotice = `${call.name} was already answered (in another tab, or a moment ago); the conversation was refreshed.`;
      await hooks.refresh();
    } else {
      d.error = { code: e.code, message: e.message };
    }
    renderApprovals();
  }
}

function submitEdit(call) {
  const d = draft(call);
  let args;
  try { args = JSON.parse(d.text); } catch (e) {
    d.error = `Not valid JSON (${e.message}). Fix the arguments, or Cancel.`;
    renderApprovals(); return;
  }
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    d.error = 'The arguments must be a JSON object, like {"amount": 5}.';
    renderApprovals(); return;
  }
  decide(call, { type: "edit", args });
}

// a page's own sentence, or the server's error: its sentence first, the code in small print
function cardError(error) {
  if (!error || typeof error === "string") return error || "";
  const [lead, detail, hint, code] = errorParts(error);
  return [[lead, detail, hint].filter(Boolean).join(" "), " ", el("small", { class: "error-code", "data-testid": "error-code" }, code)];
}

function setMode(call, mode) {
  Object.assign(draft(call), { mode, error: null });
  renderApprovals();
  const focus = mode === "edit" ? `args-${call.id}` : mode === "reject" ? `reason-${call.id}` : `approve-${call.id}`;
  const target = document.getElementById(focus);
  if (target) target.focus();
}

function button(label, testid, onclick, attrs = {}) {
  return el("button", { type: "button", "data-testid": testid, onclick, ...attrs }, label);
}

function editor(call, d, off) {
  const area = el("textarea", { id: `args-${call.id}`, class: "args-editor", rows: "6", spellcheck: "false", "data-testid": "approval-args-editor",
    "aria-describedby": `error-${call.id}`, oninput: (e) => { d.text = e.target.value; } });
  area.value = d.text;
  area.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) submitEdit(call); });
  return el("div", { class: "card-form" },
    el("label", { for: `args-${call.id}` }, "Arguments (JSON; Ctrl+Enter runs)"), area,
    el("div", { class: "card-actions" },
      button("Run with these arguments", "approval-edit-submit", () => submitEdit(call), { class: "primary", disabled: off }),
      button("Cancel", "approval-cancel", () => setMode(call, null), { disabled: off })));
}

function rejecter(call, d, off) {
  const input = el("input", { id: `reason-${call.id}`, type: "text", maxlength: "2000", "data-testid": "approval-reason",
    placeholder: "e.g. not this month", oninput: (e) => { d.reason = e.target.value; } });
  input.value = d.reason;
  const send = () => decide(call, { type: "reject", message: d.reason.trim() || "Rejected without a reason" });
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); send(); } });
  return el("div", { class: "card-form" },
    el("label", { for: `reason-${call.id}` }, "Why not? (the model is told)"), input,
    el("div", { class: "card-actions" },
      button("Reject the call", "approval-reject-submit", send, { class: "danger", disabled: off }),
      button("Cancel", "approval-cancel", () => setMode(call, null), { disabled: off })));
}

function card(call) {
  const d = draft(call);
  const off = d.busy || state.streaming;
  const head = el("div", { class: "card-head" }, icon("tool"), el("code", { class: "tool-name" }, call.name),
    call.server ? el("span", { class: "server" }, `on ${call.server}`) : null);
  const actions = d.mode ? null : el("div", { class: "card-actions" },
    button("Approve", "approval-approve", () => decide(call, { type: "approve" }), { id: `approve-${call.id}`, class: "primary", disabled: off, "aria-label": `Approve ${call.name}` }),
    button("Edit", "approval-edit", () => setMode(call, "edit"), { disabled: off, "aria-label": `Edit the arguments of ${call.name}` }),
    button("Reject", "approval-reject", () => setMode(call, "reject"), { disabled: off, "aria-label": `Reject ${call.name}` }),
    button("Always allow", "approval-always", () => decide(call, { type: "approve", always: true }),
      { disabled: off, "aria-label": `Always allow ${call.name}`, title: "Approve, and never ask again for this tool" }));
  return el("article", { class: "question-card", "data-testid": "approval-card", "data-call": call.id, "aria-labelledby": `title-${call.id}` },
    el("p", { class: "card-title", id: `title-${call.id}` }, `Run ${call.name}? It waits for your approval.`),
    head,
    call.description ? el("p", { class: "description", "data-testid": "approval-description" }, call.description) : null,
    el("pre", { class: "args", "data-testid": "approval-args", "aria-label": "Arguments" }, JSON.stringify(call.args || {}, null, 2)),
    d.mode === "edit" ? editor(call, d, off) : d.mode === "reject" ? rejecter(call, d, off) : actions,
    el("p", { class: "card-error", id: `error-${call.id}`, role: "alert", "data-testid": "approval-error", hidden: !d.error }, cardError(d.error)));
}

export function renderApprovals() {
  const calls = state.approvals || [];
  for (const id of drafts.keys()) if (!calls.some((c) => c.id === id)) drafts.delete(id);
  const key = JSON.stringify([state.current, calls.map((c) => c.id), state.streaming, state.approvalNotice,
    calls.map((c) => { const d = draft(c); return [d.mode, d.error, d.busy]; })]);
  if (key === shown) return;
  shown = key;
  const box = $("approvals");
  const active = document.activeElement && box.contains(document.activeElement) ? document.activeElement.id : null;
  const notice = state.approvalNotice ? el("p", { class: "approval-notice", role: "status", "data-testid": "approval-notice" }, state.approvalNotice) : null;
  box.replaceChildren(...[notice, ...calls.map(card)].filter(Boolean));
  box.hidden = !notice && !calls.length;
  if (active && document.getElementById(active)) document.getElementById(active).focus();
}
