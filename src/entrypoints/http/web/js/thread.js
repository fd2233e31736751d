// The messages of the open conversation and the reasoning trace of its latest run.
import { branchNav, regenerateButton, userMessage } from "/static/js/branches.js";
import { $, copyButton, el, icon } from "/static/js/dom.js";
import { linkCitations } from "/static/js/knowledge.js";
import { renderMarkdown } from "/static/js/markdown.js";
import { state } from "/static/js/state.js";
import { emptyState } from "/static/js/status.js";
import { modelLabel, thinkingBlock } from "/static/js/thinking.js";
import { callStatus, decisionOf, toolCard } from "/static/js/toolcards.js";

// message -> [key, node]: a message is rebuilt only when it changed. Stored messages are
// found by id, so re-reading the conversation after a run keeps every node already drawn
const cache = new WeakMap();
const byId = new Map();
const cached = (m) => (m.id ? byId.get(m.id) : cache.get(m));
function remember(m, entry) {
  if (!m.id) { cache.set(m, entry); return; }
  byId.delete(m.id);
  byId.set(m.id, entry);
  if (byId.size > 5000) byId.delete(byId.keys().next().value);
}

// An answer that was stopped (or failed) and then resumed is two assistant messages in a
// row, the first without tool calls: they show as one bubble, the second part after a thin
// "continued" mark. `continues(i)`: message i is such a second part.
const continues = (i) => {
  const m = state.messages[i], before = state.messages[i - 1];
  return !!(m && before && m.role === "assistant" && before.role === "assistant" && !(before.toolCalls || []).length);
};

function parts(index) {
  const out = [index];
  while (continues(out[out.length - 1] + 1)) out.push(out[out.length - 1] + 1);
  return out;
}

function assistant(group, results) {
  const index = group[0];
  const msgs = group.map((i) => state.messages[i]);
  const last = msgs[msgs.length - 1];
  const body = msgs.flatMap((m, k) => {
    const out = [];
    if (k > 0) out.push(el("div", { class: "continued-mark", role: "separator", "data-testid": "continued-mark" }, "continued"));
    out.push(thinkingBlock(m));
    if (m.content) { const div = el("div", { class: "content" }); renderMarkdown(div, m.content); linkCitations(div, m.cited); out.push(div); }
    out.push(...(m.toolCalls || []).map((c) => toolCard(c, results.get(c.id))));
    return out;
  });
  // a cut answer's run fails (ANSWER_TOO_LONG) but the model did not: the note says what stopped it
  const cut = msgs.some((m) => m.cut);
  const stopped = last.stopped ? el("span", { class: "stopped", "data-testid": "stopped-note" }, "Stopped by you")
    : cut ? el("span", { class: "stopped cut", "data-testid": "cut-note",
      title: "The answer reached the server's length limit for one answer (MODEL_MAX_TOKENS) and was stopped there" }, "Cut at the length limit")
      : last.failed ? el("span", { class: "stopped failed", "data-testid": "failed-note" }, "The model failed here") : null;
  const text = msgs.map((m) => m.content).filter(Boolean).join("\n\n");
  const copy = text ? copyButton(() => text, "Copy message", "copy-message") : null;
  const nav = branchNav(msgs[0]);
  const again = regenerateButton(group[group.length - 1]);
  const model = modelLabel([...msgs].reverse().find((m) => m.model) || last);  // a resume may have switched models
  const foot = copy || nav || again || stopped || model ? el("div", { class: "msg-foot" }, model, stopped, nav, again, copy) : null;
  return el("div", { class: "msg assistant", "data-testid": "assistant-message", "data-index": index }, body, foot);
}

function tool(m) {
  const failed = m.status === "error";
  return el("details", { class: `tool${failed ? " error" : ""}`, "data-testid": "tool-orphan" },
    el("summary", {}, icon(failed ? "alert" : "tool", failed ? "Failed" : null), ` ${m.name || "tool"}`), el("pre", {}, m.content));
}

// One tab stop per message: the bubble is focusable, its own controls are reached with the
// arrow keys (see onMessageKey), and its action icons float over its corner on hover or
// focus instead of reserving a row.
const CONTROLS = "button, a[href], summary, textarea, input";
export const threadActions = { fork: () => {} };

// "Fork into a new conversation" from any message (the last of a continued answer's parts)
function forkButton(index) {
  if (!state.current) return null;
  return el("button", { type: "button", class: "icon only", "aria-label": "Fork into a new conversation from here",
    title: "Fork into a new conversation", "data-testid": "fork-message", onclick: () => threadActions.fork(index) }, icon("fork"));
}

function decorate(made, last) {
  if (!made || !made.classList.contains("msg") || made.classList.contains("editing")) return made;
  made.tabIndex = 0;
  const foot = made.querySelector(":scope > .msg-foot");
  const buttons = foot ? [...foot.querySelectorAll(":scope > button")] : [];
  const fork = forkButton(last);
  if (fork) buttons.unshift(fork);
  if (buttons.length) made.append(el("span", { class: "msg-actions", "data-testid": "message-actions" }, buttons));
  if (foot && !foot.children.length) foot.remove();
  for (const c of made.querySelectorAll(CONTROLS)) c.tabIndex = -1;
  return made;
}

// a result is shown on its call's card; one without a call on screen keeps a chip of its own
function node(m, results, index, shown) {
  if (m.role === "assistant" && continues(index)) return null;  // drawn in the bubble it continues
  const group = m.role === "assistant" ? parts(index) : [index];
  const msgs = group.map((i) => state.messages[i]);
  const calls = msgs.flatMap((x) => (x.toolCalls || []).map((c) => { const r = results.get(c.id); return [callStatus(c, r, decisionOf(c.id)), r && r.content, r && r.durationMs]; }));
  // `state.streaming` only where it shows (branch arrows; calls use it through their status):
  // the edit, regenerate and fork icons are hidden by a class while a run streams
  const key = JSON.stringify([index, msgs.map((x) => [x.content, x.toolCalls, !!x.stopped, !!x.failed, !!x.cut, x.reasoning, !!x.thinking && state.streaming, x.reasoningSeconds, x.model, x.cited]), m.status, m.branch ? state.streaming : null, m.branch,
    state.editing === index, group[group.length - 1] === state.messages.length - 1, !!state.current, calls, m.role === "tool" && shown.has(m.toolCallId)]);
  const hit = cached(m);
  if (hit && hit[0] === key) return hit[1];
  const visible = msgs.some((x) => x.content || x.reasoning || (x.toolCalls || []).length || x.stopped || x.failed);
  const made = decorate(m.role === "user" ? userMessage(m, index)
    : m.role === "assistant" ? (visible ? assistant(group, results) : null)
      : m.role === "tool" && !shown.has(m.toolCallId) ? tool(m) : null, group[group.length - 1]);
  remember(m, [key, made]);
  return made;
}

export function onMessageKey(e) {
  const msg = e.target.closest && e.target.closest("#messages .msg");
  if (!msg || msg.classList.contains("editing")) return;
  const controls = [...msg.querySelectorAll(CONTROLS)].filter((c) => c.offsetParent !== null || c.closest(".msg-actions"));
  if (e.target === msg) {
    const all = [...$("messages").querySelectorAll(":scope > .msg")];
    const at = all.indexOf(msg);
    const go = { ArrowDown: all[at + 1], ArrowUp: all[at - 1], Home: all[0], End: all[all.length - 1], ArrowRight: controls[0], Enter: controls[0] }[e.key];
    if (go) { e.preventDefault(); go.focus(); }
    return;
  }
  const at = controls.indexOf(e.target);
  if (at < 0) return;
  const go = { ArrowRight: controls[at + 1], ArrowDown: controls[at + 1], ArrowLeft: controls[at - 1] || msg, ArrowUp: controls[at - 1] || msg, Escape: msg }[e.key];
  if (go) { e.preventDefault(); e.stopPropagation(); go.focus(); }
}

// the model's context: where its view of the thread began on its latest call, and the
// summaries it was given in place of older messages (role "summary")
const contextCache = new Map();  // the same marker or summary node while it says the same

function contextNodes(index, m) {
  const view = state.detail && state.detail.context;
  const searched = view && view.searched && m.role === "user" && m.attachments
    ? m.attachments.map((a) => a.name).filter((name) => view.searched.includes(name)) : [];
  const key = JSON.stringify([index, view && index === view.sentFrom ? view : null, m.role === "summary" ? [m.covers, m.content] : null, searched]);
  if (key.endsWith("null,null,[]]")) return [];
  const hit = contextCache.get(key);
  if (hit) return hit;
  const out = [];
  if (view && index === view.sentFrom && index > 0) {
    out.push(el("div", { class: "context-marker", role: "separator", "data-testid": "context-marker" },
      `The model no longer sees the messages above (it saw about ${view.tokens} of ${view.budget} tokens)`));
  }
  if (searched.length) {
    out.push(el("div", { class: "context-marker", role: "note", "data-testid": "searched-note" },
      `${searched.join(", ")}: too long for the model to read whole, so it was searched: the model saw the passages that best match the message`));
  }
  if (m.role === "summary") {
    out.push(el("details", { class: "context-summary", "data-testid": "summary-message" },
      el("summary", {}, `Summary of the first ${m.covers} messages, given to the model in their place`), el("p", {}, m.content)));
  }
  if (contextCache.size > 64) contextCache.clear();
  contextCache.set(key, out);
  return out;
}

let drawn = { count: -1, tail: -1, node: null };  // what renderMessages last put at the end of the list

// Waiting for the answer's first token: three dots and, from the second second on, how long
// (a cold model loads for a while before it writes). One node while it waits, ticking.
let awaiting = null;
function pending() {
  const last = state.messages[state.messages.length - 1];
  if (!state.streaming || (last && last.role === "assistant")) { stopWaiting(); return null; }
  if (awaiting && awaiting.node.isConnected) return awaiting.node;
  stopWaiting();
  const waited = el("span", { class: "waited", "data-testid": "awaiting-time", "aria-hidden": "true" });
  const node = el("div", { class: "awaiting", role: "status", "aria-label": "Waiting for the answer", "data-testid": "awaiting" },
    el("span", { class: "dot" }), el("span", { class: "dot" }), el("span", { class: "dot" }), waited);
  const since = Date.now();
  const tick = () => {
    const s = Math.floor((Date.now() - since) / 1000);
    waited.textContent = s >= 1 ? `Waiting for the model · ${s} s` : "";
  };
  awaiting = { node, timer: setInterval(tick, 1000) };
  return node;
}
function stopWaiting() {
  if (awaiting) clearInterval(awaiting.timer);
  awaiting = null;
}

function resultsOf() { return new Map(state.messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m])); }

// A token changes only the streaming bubble: rebuild that one node in place instead of the
// whole list (which grew with the conversation: 3 s per answer at 200 messages), once per
// frame however many tokens came in it, measuring the scroll before changing anything (a
// read after a change forces a layout). Anything else that changed (a new message, a tool
// call) takes the full path.
let frame = 0;
export function renderStreaming() {
  if (!frame) frame = requestAnimationFrame(() => { frame = 0; streamNow(); });
}

// whether the reader is at the list's end (or close enough to mean it)
const nearEnd = (box) => box.scrollHeight - box.scrollTop - box.clientHeight < 120;

// "Jump to latest" shows while the reader is away from the end (they scrolled up, and what
// comes in no longer pulls the list down); a click takes them there, and the list keeps to it
function showJump(box) { $("jump-latest").hidden = nearEnd(box); }

function streamNow() {
  const n = state.messages.length;
  const last = state.messages[n - 1];
  if (!last || last.role !== "assistant" || drawn.count !== n || !drawn.node || !drawn.node.isConnected) { renderMessages(); return; }
  let head = n - 1;
  while (continues(head)) head--;
  if (head !== drawn.tail) { renderMessages(); return; }
  const box = $("messages");
  const stick = nearEnd(box);
  const made = node(state.messages[head], resultsOf(), head, new Set());
  if (!made) { renderMessages(); return; }
  if (made !== drawn.node) { drawn.node.replaceWith(made); drawn.node = made; watchEnd(box); }
  if (stick) box.scrollTop = box.scrollHeight;
  showJump(box);
}

// The list keeps to its end while the reader is there. What grows or shrinks without a render
// (a bubble's late parts, a banner or the composer taking room) moves no scroll event, so
// the latest lines would stay below the fold until the next render.
let pinned = true;
const sizes = new ResizeObserver(() => {
  const box = $("messages");
  if (pinned) box.scrollTop = box.scrollHeight;
  showJump(box);
});

export function installPinning() {
  const box = $("messages");
  box.addEventListener("scroll", () => { pinned = nearEnd(box); showJump(box); }, { passive: true });
  $("jump-latest").prepend(icon("down"));
  $("jump-latest").addEventListener("click", () => {
    box.scrollTop = box.scrollHeight;
    pinned = true;
    showJump(box);
  });
}

function watchEnd(box) {
  sizes.disconnect();
  sizes.observe(box);
  if (box.lastElementChild) sizes.observe(box.lastElementChild);
}

export function renderMessages(force = false) {
  const box = $("messages");
  const stick = force || nearEnd(box);
  const results = resultsOf();
  const shown = new Set(state.messages.flatMap((m) => (m.role === "assistant" ? (m.toolCalls || []).map((c) => c.id) : [])));
  const nodes = state.messages.flatMap((m, i) => [...contextNodes(i, m), node(m, results, i, shown)]).filter(Boolean);
  const n = state.messages.length;
  let head = n - 1;
  while (continues(head)) head--;
  const tail = n && state.messages[n - 1].role === "assistant" ? cached(state.messages[head]) : null;
  drawn = { count: n, tail: head, node: tail ? tail[1] : null };
  const wait = pending();
  if (wait) nodes.push(wait);
  if (!nodes.length && !state.current) nodes.push(emptyState());
  box.classList.toggle("streaming", state.streaming);
  reconcile(box, nodes);
  if (stick) box.scrollTop = box.scrollHeight;
  pinned = stick;
  watchEnd(box);
  showJump(box);
}

// the list as `nodes`, touching only what changed: the messages already in place stay (a
// long chat is not laid out again for an answer added at its end)
function reconcile(box, nodes) {
  const kids = box.children;
  const wanted = new Set(nodes);
  nodes.forEach((n, i) => {
    const at = kids[i];
    if (at === n) return;
    if (at && !wanted.has(at)) at.replaceWith(n);  // a message redrawn: in its place
    else box.insertBefore(n, at || null);
  });
  while (kids.length > nodes.length) box.lastElementChild.remove();
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
