// The messages of the open conversation and the reasoning trace of its latest run.
import { branchNav, regenerateButton, userMessage } from "/static/js/branches.js";
import { $, copyButton, el, icon } from "/static/js/dom.js";
import { renderMarkdown } from "/static/js/markdown.js";
import { state } from "/static/js/state.js";
import { emptyState } from "/static/js/status.js";
import { callStatus, decisionOf, toolCard } from "/static/js/toolcards.js";

const cache = new WeakMap();  // message -> [key, node]: a token re-renders only its own bubble

function assistant(m, results, index) {
  const body = el("div", { class: "content" });
  renderMarkdown(body, m.content);
  const stopped = m.stopped ? el("span", { class: "stopped", "data-testid": "stopped-note" }, "Stopped by you") : null;
  const tools = (m.toolCalls || []).map((c) => toolCard(c, results.get(c.id)));
  const copy = m.content ? copyButton(() => m.content, "Copy message", "copy-message") : null;
  const nav = branchNav(m);
  const again = regenerateButton(index);
  const foot = copy || nav || again ? el("div", { class: "msg-foot" }, stopped, nav, again, copy) : stopped;
  return el("div", { class: "msg assistant", "data-testid": "assistant-message", "data-index": index }, m.content ? body : null, tools, foot);
}

function tool(m) {
  const failed = m.status === "error";
  return el("details", { class: `tool${failed ? " error" : ""}`, "data-testid": "tool-orphan" },
    el("summary", {}, icon(failed ? "alert" : "tool", failed ? "Failed" : null), ` ${m.name || "tool"}`), el("pre", {}, m.content));
}

// a result is shown on its call's card; one without a call on screen keeps a chip of its own
function node(m, results, index, shown) {
  const calls = (m.toolCalls || []).map((c) => { const r = results.get(c.id); return [callStatus(c, r, decisionOf(c.id)), r && r.content, r && r.durationMs]; });
  const key = JSON.stringify([index, m.content, m.toolCalls, m.stopped, m.status, state.streaming, m.branch,
    state.editing === index, index === state.messages.length - 1, !!state.current, calls, m.role === "tool" && shown.has(m.toolCallId)]);
  const hit = cache.get(m);
  if (hit && hit[0] === key) return hit[1];
  const made = m.role === "user" ? userMessage(m, index)
    : m.role === "assistant" ? ((m.content || (m.toolCalls || []).length || m.stopped) ? assistant(m, results, index) : null)
      : m.role === "tool" && !shown.has(m.toolCallId) ? tool(m) : null;
  cache.set(m, [key, made]);
  return made;
}

// the model's context: where its view of the thread began on its latest call, and the
// summaries it was given in place of older messages (role "summary")
function contextNodes(index, m) {
  const view = state.detail && state.detail.context;
  const out = [];
  if (view && index === view.sentFrom && index > 0) {
    out.push(el("div", { class: "context-marker", role: "separator", "data-testid": "context-marker" },
      `The model no longer sees the messages above (it saw about ${view.tokens} of ${view.budget} tokens)`));
  }
  if (m.role === "summary") {
    out.push(el("details", { class: "context-summary", "data-testid": "summary-message" },
      el("summary", {}, `Summary of the first ${m.covers} messages, given to the model in their place`), el("p", {}, m.content)));
  }
  return out;
}

export function renderMessages(force = false) {
  const box = $("messages");
  const stick = force || box.scrollHeight - box.scrollTop - box.clientHeight < 120;
  const results = new Map(state.messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m]));
  const shown = new Set(state.messages.flatMap((m) => (m.role === "assistant" ? (m.toolCalls || []).map((c) => c.id) : [])));
  const nodes = state.messages.flatMap((m, i) => [...contextNodes(i, m), node(m, results, i, shown)]).filter(Boolean);
  const last = state.messages[state.messages.length - 1];
  if (state.streaming && (!last || last.role !== "assistant")) {
    nodes.push(el("div", { class: "pending", role: "status", "aria-label": "Waiting for the answer" }, el("span"), el("span"), el("span")));
  }
  if (!nodes.length && !state.current) nodes.push(emptyState());
  box.replaceChildren(...nodes);
  if (stick) box.scrollTop = box.scrollHeight;
}

export function renderTrace() {
  const panel = $("trace-panel");
  panel.hidden = !state.traceOpen;
  $("trace-toggle").setAttribute("aria-expanded", String(state.traceOpen));
  $("trace-toggle").classList.toggle("on", state.traceOpen);
  $("trace-empty").hidden = state.trace.length > 0;
  $("trace-list").replaceChildren(...state.trace.map((t) => el("li", { class: `trace-${t.event}` },
    el("span", { class: "ev" }, t.event.toUpperCase()), el("span", { class: "node" }, t.node), " ", t.name,
    t.event === "call" && t.data ? el("pre", {}, JSON.stringify(t.data.arguments || {}, null, 2)) : null)));
  const list = $("trace-list");
  list.scrollTop = list.scrollHeight;
}
