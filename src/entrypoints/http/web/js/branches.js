// Edit, regenerate and branches: the controls on the messages. What they do is app.js's
// (branchActions); a message with alternatives carries `branch: {index, count, branches}`.
import { attachmentChips } from "/static/js/attachments.js";
import { el, icon } from "/static/js/dom.js";
import { scheduledMark } from "/static/js/scheduled.js";
import { state } from "/static/js/state.js";

export const branchActions = { edit: () => {}, regenerate: () => {}, switchTo: () => {} };

// ‹ 2/3 ›: the alternatives at this message; switching shows that branch at once
export function branchNav(m) {
  const b = m.branch;
  if (!b) return null;
  const go = (step) => () => branchActions.switchTo(b.branches[b.index - 1 + step]);
  return el("span", { class: "branch-nav", "data-testid": "branch-nav" },
    el("button", { type: "button", class: "icon only", "aria-label": "Previous version", "data-testid": "branch-prev",
      disabled: b.index <= 1 || state.streaming, onclick: go(-1) }, "‹"),
    el("span", { class: "branch-count", "data-testid": "branch-count" }, `${b.index}/${b.count}`),
    el("button", { type: "button", class: "icon only", "aria-label": "Next version", "data-testid": "branch-next",
      disabled: b.index >= b.count || state.streaming, onclick: go(1) }, "›"));
}

function editor(m, index) {
  const area = el("textarea", { class: "edit-input", "data-testid": "edit-input", "aria-label": "Edit your message", rows: "3" });
  area.value = m.content;
  const save = () => { const text = area.value.trim(); if (text) branchActions.edit(index, text); };
  area.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); save(); }
    if (e.key === "Escape") { e.preventDefault(); state.editing = null; branchActions.rerender(); }
  });
  setTimeout(() => { area.focus(); area.setSelectionRange(area.value.length, area.value.length); });
  return el("div", { class: "msg user editing", "data-testid": "message-editor", "data-index": index }, area,
    el("div", { class: "msg-foot" },
      el("button", { type: "button", "data-testid": "edit-cancel", onclick: () => { state.editing = null; branchActions.rerender(); } }, "Cancel"),
      el("button", { type: "button", class: "primary", "data-testid": "edit-save", onclick: save }, "Save & submit")));
}

export function userMessage(m, index) {
  if (state.editing === index) return editor(m, index);
  // while a run streams the pencil is hidden by the list's `streaming` class (thread.js), not
  // left out: a message's node then stays the same from one run to the next
  const pencil = !state.current ? null
    : el("button", { type: "button", class: "icon only", "aria-label": "Edit message", title: "Edit", "data-testid": "edit-message",
      onclick: () => { state.editing = index; branchActions.rerender(); } }, icon("pencil"));
  const nav = branchNav(m);
  return el("div", { class: "msg user", "data-testid": "user-message", "data-index": index },
    scheduledMark(m), el("div", { class: "user-text" }, m.content), attachmentChips(m),
    pencil || nav ? el("div", { class: "msg-foot" }, nav, pencil) : null);
}

// the regenerate button, on the conversation's last answer once the run is over
export function regenerateButton(index) {
  const last = state.messages.length - 1;
  // calls that wait for a decision: regenerate would be refused (DECISION_REQUIRED)
  const waits = (state.approvals || []).length || ((state.detail && state.detail.pendingToolCalls) || []).length;
  if (!state.current || index !== last || waits) return null;
  return el("button", { type: "button", class: "icon only", "aria-label": "Regenerate answer", title: "Regenerate",
    "data-testid": "regenerate", onclick: () => branchActions.regenerate() }, icon("refresh"));
}
