// Errors as a person reads them: a plain sentence first, then what the server said when it
// adds something, and what to do, with the code in small print last. Each is shown next to
// the control that caused it: `state.error.where` names the place ("composer", "transfer",
// "settings", "header", "row:<conversation id>", or "conversation", the banner over the
// messages). Commands of the CLI or of make are the docs' business, not the page's: they are
// left out of what the server says.
import { $, el, icon } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

// the sentence a person reads first, where the server's own message is technical
const SENTENCES = {
  MODEL_UNREACHABLE: "The model server did not answer.",
  MODEL_UNAVAILABLE: "The model server does not have this model.",
  MODEL_BAD_RESPONSE: "The model server sent an answer Sophos could not read.",
  MODEL_CANNOT_SEE: "This model cannot read images.",
  AGENT_FAILURE: "The answer failed on the server.",
  STORAGE_FAILURE: "The server could not save this.",
  SESSION_IN_PROGRESS: "An answer is still being written in this conversation.",
  DECISION_REQUIRED: "A tool call waits for your answer first.",
  QUEUE_FULL: "Too many messages are already waiting in this conversation.",
  SHUTTING_DOWN: "The server is shutting down.",
  UNKNOWN_MODEL: "The model server has no model by that name.",
  ANSWER_TOO_LONG: "The answer reached the length limit for one answer.",
  RECURSION_LIMIT: "The answer took more steps than the server allows.",
  ADOPTION_FAILED: "The server could not finish this answer by itself.",
  RUN_LOST: "Another server process took this answer over.",
  USER_LIMIT: "You have too many answers going or messages waiting.",
};

// what to do, when the server's message does not say it already
const FIXES = {
  MODEL_UNREACHABLE: [/ollama serve/i, "Start Ollama (ollama serve), or set OLLAMA_HOST to where it runs."],
  MODEL_UNAVAILABLE: [/ollama pull/i, "Pull the model on the model server, or pick another model."],
  DECISION_REQUIRED: [/below/i, "Answer the tool calls waiting below (Approve, Edit or Reject); your message stays in the box."],
  SESSION_IN_PROGRESS: [/wait|stop/i, "Wait for it to finish, or stop it."],
};

// the server's words without the commands of the CLI (`sophos …`) or of make (`make demo`):
// a clause naming one goes, the rest of the sentence stays
export function forPage(text) {
  return String(text || "")
    .replace(/\s*\([^()]*\b(?:sophos|make) [a-z][^()]*\)/g, "")
    .replace(/,?\s*(?:or )?(?:run|with|see|use) `(?:sophos|make) [^`]*`/g, "")
    .replace(/`(?:sophos|make) [^`]*`/g, "")
    .replace(/\s+([.,;:])/g, "$1")
    .trim();
}

function sentence(text) {
  const t = forPage(text).replace(/[\s:;,]+$/, "");
  if (!t) return "";
  // a plain first word gets its capital; a file name or a code keeps its own spelling
  const s = /^[a-z]+\s/.test(t) ? t[0].toUpperCase() + t.slice(1) : t;
  return /[.!?)]$/.test(s) ? s : `${s}.`;
}

// the parts of an error in reading order: [lead, detail, fix, code]
export function errorParts(error) {
  const code = error.code || "ERROR";
  const said = sentence(error.message);
  const lead = SENTENCES[code] || said || "Something went wrong.";
  const detail = said && said !== lead ? said : "";
  const [known, fix] = FIXES[code] || [];
  const hint = fix && !known.test(error.message || "") ? fix : "";
  return [lead, detail, hint, code];
}

// one error as a note: the sentence, the rest, the code small, and × to put it away
export function errorNote(error, { testid, dismiss } = {}) {
  const [lead, detail, hint, code] = errorParts(error);
  return el("div", { class: "error-note", role: "alert", "data-testid": testid },
    icon("alert"),
    el("p", { class: "error-text" },
      el("span", { class: "error-lead", "data-testid": "error-lead" }, lead),
      detail ? el("span", { class: "error-detail" }, ` ${detail}`) : null,
      hint ? el("span", { class: "fix", "data-testid": "error-fix" }, ` ${hint}`) : null,
      " ", el("small", { class: "error-code", "data-testid": "error-code" }, code)),
    dismiss ? el("button", { type: "button", class: "icon only", "aria-label": "Dismiss", title: "Dismiss", onclick: dismiss }, icon("close")) : null);
}

// the places an error can show besides a conversation's row (sidebar.js draws those)
const SLOTS = { conversation: "error-banner", composer: "composer-error", transfer: "transfer-error", settings: "settings-error", header: "header-error" };
let drawn = null;

export function renderErrors(dismiss) {
  const error = state.error;
  if (error === drawn) return;  // the same error stays the same node (a screen reader reads it once)
  drawn = error;
  for (const [where, id] of Object.entries(SLOTS)) {
    const slot = $(id);
    if (!slot) continue;
    const here = !!error && (error.where || "conversation") === where;
    slot.hidden = !here;
    slot.replaceChildren(...(here ? errorNote(error, { dismiss }).childNodes : []));
  }
}
