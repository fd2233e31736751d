// The banner of a run that stopped before it finished: worded by cause (a model that failed
// is retried, a server that stopped is resumed, a tool call that may have taken effect asks
// Retry or Skip), with the failure's code in small print.
import { $, el } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

function wording(d) {
  const status = d.conversation.status;
  if (d.decisionRequired) {
    const calls = (d.pendingToolCalls || []).filter((p) => p.outcomeUnknown && p.unsafe).map((p) => p.name).join(", ");
    return [`The last run stopped during ${calls}; it may have taken effect. Retry it, or skip it?`, "Resume"];
  }
  if (status === "cancelled") return ["You stopped this answer. Resume to let it continue, or send a new message.", "Resume"];
  if (status === "failed") {
    const last = state.messages[state.messages.length - 1];
    return [last && last.role === "assistant" && last.content
      ? "The model failed before it finished; what it wrote is kept. Retry to let it go on, or send a new message."
      : "The model failed before it answered. Retry, or send a new message.", "Retry"];
  }
  if (status === "interrupted") return ["The server stopped during this answer. Its progress is saved: Resume to let it go on.", "Resume"];
  return ["The last run stopped before it finished. Its progress is saved.", "Resume"];
}

export function renderResume() {
  const d = state.detail;
  // calls waiting for approval are answered on their cards: a plain Resume would be refused
  const resumable = !!(d && d.resumable && !state.streaming && !(state.approvals || []).length);
  const decide = resumable && !!d.decisionRequired;
  $("resume-banner").hidden = !resumable;
  $("resume-banner").classList.toggle("question-card", decide);
  $("resume").hidden = decide;
  $("retry").hidden = $("skip").hidden = !decide;
  if (!resumable) return;
  const [text, label] = wording(d);
  const error = d.conversation.status === "failed" && d.conversation.error;
  $("resume-text").replaceChildren(text, ...(error ? [" ", el("small", { class: "error-code", "data-testid": "resume-code" }, error.code)] : []));
  $("resume").textContent = label;
}
