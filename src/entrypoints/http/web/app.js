// The Sophos page: plain ES module over the HTTP API (no build step).
import { marked } from "/static/vendor/marked.js";
import DOMPurify from "/static/vendor/purify.js";
import { installSearch } from "/static/search.js";

const $ = (id) => document.getElementById(id);
const state = {
  conversations: [], cursor: null, filter: "",
  current: null, detail: null, messages: [], trace: [],
  source: null, streaming: false, error: null,
};

// --- Markdown, sanitized: no scripts, handlers, javascript: URLs or forms; images never load
const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
marked.use({
  gfm: true, breaks: true,
  renderer: { image({ href, text }) { return `<a href="${escapeHtml(href || "")}">🖼 ${escapeHtml(text || "image")}</a>`; } },
});
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});
function renderMarkdown(text) {
  let html;
  try { html = marked.parse(text || ""); } catch { html = escapeHtml(text || ""); }
  return DOMPurify.sanitize(html, {
    FORBID_TAGS: ["img", "form", "input", "button", "textarea", "select", "style", "iframe", "object", "embed", "svg", "math"],
    FORBID_ATTR: ["style", "srcset"],
  });
}

// --- API
class ApiError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}
async function api(path, options = {}) {
  const init = { ...options, headers: { ...(options.body ? { "Content-Type": "application/json" } : {}) } };
  if (options.body) init.body = JSON.stringify(options.body);
  let response;
  try { response = await fetch(path, init); } catch { throw new ApiError("FETCH_ERROR", "The server could not be reached."); }
  if (response.status === 204) return null;
  let body = null;
  try { body = await response.json(); } catch { /* not JSON */ }
  if (!response.ok) {
    const error = body && body.error;
    throw new ApiError(error ? error.code : `HTTP_${response.status}`, error ? error.message : response.statusText);
  }
  return body;
}

// --- rendering
function relativeTime(iso) {
  const then = new Date(iso), now = new Date();
  const days = Math.floor((new Date(now.toDateString()) - new Date(then.toDateString())) / 86400000);
  if (days <= 0) return then.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (days === 1) return "Yesterday";
  if (days < 7) return then.toLocaleDateString([], { weekday: "short" });
  return then.toLocaleDateString([], { month: "short", day: "numeric" });
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function renderList() {
  const list = $("conversation-list");
  const needle = state.filter.toLowerCase();
  const items = state.conversations.filter((c) => c.title.toLowerCase().includes(needle));
  list.replaceChildren(...items.map((c) => {
    const active = c.id === state.current;
    const badge = c.status && c.status !== "completed" ? el("span", { class: `badge ${c.status}` }, c.status) : null;
    return el("li", {
      class: `conversation-item${active ? " active" : ""}`, "data-testid": `conversation-${c.id}`,
      "aria-current": active ? "true" : null, onclick: () => openConversation(c.id),
    },
      el("div", { class: "body" },
        el("span", { class: "title", title: c.title }, c.title),
        el("span", { class: "meta" }, el("span", {}, relativeTime(c.updatedAt)), el("span", {}, `${c.messageCount} messages`), badge)),
      active ? el("span", { class: "check", "aria-label": "Active conversation", role: "img" }, "✓") : null,
      el("span", { class: "actions" },
        el("button", { "aria-label": `Rename ${c.title}`, "data-testid": "rename-button", onclick: (e) => { e.stopPropagation(); rename(c); } }, "✎"),
        el("button", { "aria-label": `Delete ${c.title}`, "data-testid": "delete-button", onclick: (e) => { e.stopPropagation(); remove(c); } }, "✕")));
  }));
  $("list-state").textContent = state.conversations.length ? (items.length ? "" : "No match") : "No conversations yet";
  $("load-more").hidden = !state.cursor;
}

function renderHeader() {
  const conv = state.detail && state.detail.conversation;
  $("current-title").textContent = state.current ? `Current: ${conv ? conv.title : state.current}` : "New conversation";
  $("responding").hidden = !state.streaming;
  for (const [id, suffix] of [["export-md", ""], ["export-jsonl", "?format=jsonl"]]) {
    $(id).hidden = !state.current;
    if (state.current) $(id).href = `/api/conversations/${state.current}/export${suffix}`;
  }
}

function renderBanners() {
  const err = $("error-banner");
  err.hidden = !state.error;
  if (state.error) err.replaceChildren(el("strong", {}, `Error: ${state.error.code}`), el("span", {}, state.error.message));
  const d = state.detail;
  const resumable = !!(d && d.resumable && !state.streaming);
  const decide = resumable && d.decisionRequired;
  $("resume-banner").hidden = !resumable;
  $("resume").hidden = decide;
  $("retry").hidden = $("skip").hidden = !decide;
  if (decide) {
    const calls = (d.pendingToolCalls || []).filter((p) => p.outcomeUnknown && p.unsafe).map((p) => p.name).join(", ");
    $("resume-text").textContent = `The last run stopped during ${calls}; it may have taken effect. Retry it, or skip it?`;
  } else {
    $("resume-text").textContent = "The last run stopped before it finished. Its progress is saved.";
  }
}

// --- the model's context: where its view of the thread began on its latest call, and the
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

function renderMessages() {
  const box = $("messages");
  const nodes = [];
  for (const [index, m] of state.messages.entries()) {
    nodes.push(...contextNodes(index, m));
    if (m.role === "user") nodes.push(el("div", { class: "msg user", "data-testid": "user-message", "data-index": index }, m.content));
    else if (m.role === "assistant") {
      const bubble = el("div", { class: "msg assistant", "data-testid": "assistant-message", "data-index": index });
      bubble.innerHTML = renderMarkdown(m.content);  // sanitized above
      for (const call of m.toolCalls || []) {
        bubble.append(el("div", { class: "tool-call", "data-testid": "tool-call" }, "→ ", el("code", {}, call.name), " ", JSON.stringify(call.args || {})));
      }
      if (m.content || (m.toolCalls || []).length) nodes.push(bubble);
    } else if (m.role === "tool") {
      const failed = m.status === "error";
      nodes.push(el("details", { class: `tool${failed ? " error" : ""}`, "data-testid": "tool-result" },
        el("summary", {}, `${failed ? "⚠" : "🔧"} ${m.name || "tool"}`), el("pre", {}, m.content)));
    }
  }
  const last = state.messages[state.messages.length - 1];
  if (state.streaming && (!last || last.role !== "assistant")) nodes.push(el("div", { class: "pending", "aria-label": "Waiting for the answer" }, "• • •"));
  box.replaceChildren(...nodes);
  box.scrollTop = box.scrollHeight;
}

function renderTrace() {
  $("trace-panel").hidden = state.trace.length === 0;
  $("trace-list").replaceChildren(...state.trace.map((t) => el("li", {}, el("span", { class: "ev" }, t.event.toUpperCase()), `${t.node}: ${t.name}`)));
}

function renderComposer() {
  $("input").disabled = state.streaming;
  $("send").hidden = state.streaming;
  $("send").disabled = !$("input").value.trim();
  $("stop").hidden = $("detach").hidden = !state.streaming;
}

function render() { renderList(); renderHeader(); renderBanners(); renderMessages(); renderTrace(); renderComposer(); }

// --- data
async function loadList(more = false) {
  try {
    const params = new URLSearchParams({ limit: "50" });
    if (more && state.cursor) params.set("before", state.cursor);
    const body = await api(`/api/conversations?${params}`);
    state.conversations = more ? [...state.conversations, ...body.conversations] : body.conversations;
    state.cursor = body.nextCursor;
  } catch (e) { state.error = { code: "LOAD_CONVERSATIONS_ERROR", message: e.message }; }
  render();
}

async function openConversation(id, { keepError = false, keepTrace = false } = {}) {
  detach();
  if (!keepTrace || state.current !== id) state.trace = [];
  state.current = id; if (!keepError) state.error = null;
  $("list-state").textContent = "Loading…";
  try {
    const d = await api(`/api/conversations/${id}`);
    state.detail = d;
    state.messages = d.messages;
    const conv = d.conversation;
    if (conv.status === "failed" && conv.error && !keepError) state.error = conv.error;
    if (conv.status === "running") {
      // re-attach: show what was durable when the run started, the replay rebuilds the rest
      if (d.activeRun) state.messages = d.messages.slice(0, d.activeRun.baseMessageCount);
      attach(id);
    }
  } catch (e) { state.error = { code: e.code === "NOT_FOUND" ? "NOT_FOUND" : "LOAD_CONVERSATION_ERROR", message: e.message }; }
  render();
}

function lastAssistant(createIfToolCalls) {
  const last = state.messages[state.messages.length - 1];
  if (last && last.role === "assistant" && !(createIfToolCalls && (last.toolCalls || []).length)) return last;
  const fresh = { role: "assistant", content: "", toolCalls: [] };
  state.messages.push(fresh);
  return fresh;
}

function attach(id) {
  detach();
  state.streaming = true;
  const source = new EventSource(`/api/chat?conversation=${encodeURIComponent(id)}`);
  state.source = source;
  source.addEventListener("token", (e) => { lastAssistant(true).content += JSON.parse(e.data); renderMessages(); });
  source.addEventListener("trace", (e) => {
    const t = JSON.parse(e.data);
    state.trace.push(t);
    if (t.event === "call") {
      const msg = lastAssistant(false);
      msg.toolCalls = [...(msg.toolCalls || []), { id: t.data.tool_call_id, name: t.data.name, args: t.data.arguments }];
    } else if (t.event === "result") {
      state.messages.push({ role: "tool", name: t.data.name, toolCallId: t.data.tool_call_id, content: t.data.result, status: "success" });
    }
    renderMessages(); renderTrace();
  });
  const finish = (error) => {
    detach();
    if (error) state.error = error;
    loadList();
    openConversation(id, { keepError: !!error, keepTrace: true });
  };
  source.addEventListener("end", () => finish(null));
  source.addEventListener("chat-error", (e) => { const d = JSON.parse(e.data); finish({ code: d.code, message: d.message }); });
  source.onerror = () => {
    if (source.readyState === EventSource.CONNECTING) return;  // the browser reconnects with Last-Event-ID
    detach();
    state.error = { code: "SSE_ERROR", message: "Connection failed." };
    render();
  };
  render();
}

function detach() {
  if (state.source) { state.source.close(); state.source = null; }
  state.streaming = false;
}

async function send(text) {
  state.error = null;
  const body = state.current ? { message: text, conversation: state.current } : { message: text };
  try {
    const started = await api("/api/chat", { method: "POST", body });
    state.current = started.conversation;
    state.detail = null;
    state.messages = [...(state.current === body.conversation ? state.messages : []), { role: "user", content: text }];
    state.trace = [];
    $("input").value = "";
    attach(started.conversation);
    loadList();
  } catch (e) {
    $("input").value = text;
    if (e.code === "SESSION_IN_PROGRESS" && state.current) { attach(state.current); return; }
    state.error = { code: e.code, message: e.message };
    render();
  }
}

async function resume(decision) {
  state.error = null;
  try {
    await api("/api/chat", { method: "POST", body: { resume: true, conversation: state.current, ...(decision ? { decision } : {}) } });
    state.detail = { ...state.detail, resumable: false };
    state.trace = [];
    attach(state.current);
  } catch (e) { state.error = { code: e.code, message: e.message }; render(); }
}

async function rename(c) {
  const title = window.prompt("Rename conversation", c.title);
  if (title === null) return;
  try { await api(`/api/conversations/${c.id}`, { method: "PATCH", body: { title } }); }
  catch (e) { state.error = { code: e.code, message: e.message }; }
  await loadList();
  if (state.current === c.id) openConversation(c.id);
}

async function remove(c) {
  if (!window.confirm(`Delete "${c.title}"? This cannot be undone.`)) return;
  try {
    await api(`/api/conversations/${c.id}`, { method: "DELETE" });
    if (state.current === c.id) newChat();
  } catch (e) { state.error = { code: e.code, message: e.message }; }
  await loadList();
}

function newChat() {
  detach();
  Object.assign(state, { current: null, detail: null, messages: [], trace: [], error: null });
  render();
  $("input").focus();
}

async function readiness() {
  const box = $("readiness");
  try {
    const response = await fetch("/api/readyz");
    const body = await response.json();
    const downTools = (body.tools || []).filter((t) => !t.ok).map((t) => t.name);
    const text = response.ok ? "Model ready" : (body.message || "Model not ready");
    box.textContent = downTools.length ? `${text} · tools down: ${downTools.join(", ")}` : text;
    box.className = `readiness ${response.ok && !downTools.length ? "ok" : "bad"}`;
  } catch { box.textContent = "Server unreachable"; box.className = "readiness bad"; }
}

// --- wiring
$("composer").addEventListener("submit", (e) => { e.preventDefault(); const text = $("input").value.trim(); if (text && !state.streaming) send(text); });
$("input").addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); } });
$("input").addEventListener("input", renderComposer);
$("new-chat").addEventListener("click", newChat);
$("filter").addEventListener("input", (e) => { state.filter = e.target.value; renderList(); });
$("load-more").addEventListener("click", () => loadList(true));
installSearch($("filter"), openConversation);
$("resume").addEventListener("click", () => resume(null));
$("retry").addEventListener("click", () => resume("retry"));
$("skip").addEventListener("click", () => resume("skip"));
$("stop").addEventListener("click", async () => {
  try { await api("/api/chat/cancel", { method: "POST", body: { conversation: state.current } }); }
  catch (e) { if (e.code !== "NO_ACTIVE_RUN") { state.error = { code: e.code, message: e.message }; render(); } }
});
$("detach").addEventListener("click", () => { detach(); render(); });

(async () => {
  readiness();
  await loadList();
  if (state.conversations.length) await openConversation(state.conversations[0].id);
  else render();
})();
