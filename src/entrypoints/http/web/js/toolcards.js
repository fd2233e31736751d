// One card per tool call, inside the answer that made it: the tool, the arguments that
// actually ran (the model's own shown as "edited from" when a person changed them), what
// was decided (approved, edited, rejected, always allowed, skipped), how long it took, and
// the result's first two lines, which unfold. Decisions come from the detail's
// `toolDecisions`, durations from the result (`durationMs`) or, while streaming, the trace.
import { el, icon } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

const expanded = new Set();  // call ids whose result is unfolded: kept across re-renders

export const decisionOf = (id) => ((state.detail && state.detail.toolDecisions) || {})[id] || null;

// the chip: what happened to the call, in the person's words
export function callStatus(call, result, decision) {
  if (result && result.skipped) return "skipped";
  if (decision) {
    if (decision.type === "reject") return "rejected";
    if (decision.type === "edit") return "edited";
    return decision.always ? "always-allowed" : "approved";
  }
  if (!result) {
    if ((state.approvals || []).some((a) => a.id === call.id)) return "waiting";
    return state.streaming ? "running" : "not run";
  }
  return result.status === "error" ? "failed" : "done";
}

export function duration(ms) {
  if (typeof ms !== "number") return null;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

const pretty = (args) => JSON.stringify(args || {}, null, 2);

function resultView(call, result) {
  const failed = result.status === "error";
  const open = expanded.has(call.id);
  const text = result.content || "";
  const long = text.split("\n").length > 2 || text.length > 160;
  const pre = el("pre", { class: `result-text${open ? " open" : ""}`, "data-testid": "tool-result-text" }, text);
  const toggle = long ? el("button", { type: "button", class: "link", "data-testid": "tool-expand", "aria-expanded": String(open),
    onclick: (e) => {
      if (expanded.has(call.id)) expanded.delete(call.id); else expanded.add(call.id);
      const now = expanded.has(call.id);
      pre.classList.toggle("open", now);
      e.currentTarget.textContent = now ? "Show less" : "Show all";
      e.currentTarget.setAttribute("aria-expanded", String(now));
    } }, open ? "Show less" : "Show all") : null;
  return el("div", { class: `tool-result${failed ? " error" : ""}`, "data-testid": "tool-result" },
    el("div", { class: "result-head" }, icon(failed ? "alert" : "check", failed ? "Failed" : null), ` Result of ${result.name || call.name}`), pre, toggle);
}

export function toolCard(call, result) {
  const decision = decisionOf(call.id);
  const status = callStatus(call, result, decision);
  const ran = decision && decision.type === "edit" && decision.args ? decision.args : call.args;
  const edited = decision && decision.type === "edit" && pretty(decision.args) !== pretty(call.args);
  const ms = result ? result.durationMs : null;
  const spinner = status === "running"
    ? el("span", { class: "spinner", role: "status", "aria-label": `${call.name} is running`, "data-testid": "tool-spinner" }) : null;
  return el("article", { class: `tool-card status-${status.replace(/ /g, "-")}`, "data-testid": "tool-call", "data-call": call.id },
    el("div", { class: "tool-head" }, icon("tool"), el("code", { class: "tool-name" }, call.name),
      el("span", { class: "chip", "data-testid": "tool-status" }, status), spinner,
      duration(ms) ? el("span", { class: "took", "data-testid": "tool-duration" }, duration(ms)) : null),
    el("pre", { class: "args", "data-testid": "tool-args", "aria-label": edited ? "Arguments that ran" : "Arguments" }, pretty(ran)),
    edited ? el("div", { class: "edited-from", "data-testid": "tool-edited-from" }, el("span", {}, "edited from the model's:"),
      el("pre", { class: "args" }, pretty(call.args))) : null,
    decision && decision.type === "reject" && decision.message ? el("p", { class: "reason", "data-testid": "tool-reason" }, `Reason: ${decision.message}`) : null,
    result ? resultView(call, result) : null);
}
