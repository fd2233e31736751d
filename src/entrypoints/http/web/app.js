// The Sophos page: plain ES modules over the HTTP API (no build step).
import { installAccount, renderAccount } from "/static/js/account.js";
import { installAllowed, refreshAllowed } from "/static/js/allowed.js";
import { ApiError, api, onApi, serverUp, session } from "/static/js/api.js";
import { hasAttachments, installAttachments, setAttachmentLimits, takeAttachments } from "/static/js/attachments.js";
import { onApprovals, renderApprovals } from "/static/js/approvals.js";
import { branchActions } from "/static/js/branches.js";
import { $, el, icon } from "/static/js/dom.js";
import { installResizer } from "/static/js/layout.js";
import { installShortcuts } from "/static/js/shortcuts.js";
import { autoTitles, conversationChanged, draftSettings, installModels, loadModels, newDraft, onModels, settingsSaved } from "/static/js/models.js";
import { installOrganise, leaving, listParams, loadPinned, onOrganise, setArchived, setPinned, titleLater } from "/static/js/organise.js";
import { installKnowledge, loadKnowledge } from "/static/js/knowledge.js";
import { installMemory } from "/static/js/memory.js";
import { installPresets, loadPresets, onPresets } from "/static/js/presets.js";
import { renderErrors } from "/static/js/errors.js";
import { installMore, renderMore } from "/static/js/more.js";
import { enqueue, onQueue, renderQueue, setQueue } from "/static/js/queue.js";
import { renderResume } from "/static/js/resume.js";
import { renderList } from "/static/js/sidebar.js";
import { installScheduled, loadSchedules } from "/static/js/scheduled.js";
import { installUsage, renderUsageItem } from "/static/js/usage.js";
import { offerUndo } from "/static/js/undo.js";
import { currentSummary, state } from "/static/js/state.js";
import { installPinning, onMessageKey, renderMessages, renderStreaming, renderTrace, threadActions } from "/static/js/thread.js";
import { checkReadiness, onReadiness, renderReadiness, sendBlocked } from "/static/js/status.js";
import { addReasoning, answerStarted } from "/static/js/thinking.js";
import { installTransfer } from "/static/js/transfer.js";
import { installSearch } from "/static/search.js";

const narrow = () => window.matchMedia("(max-width: 640px)").matches;
// an error, shown next to the control that caused it (js/errors.js: "composer", "transfer", ...)
const fail = (e, where = "conversation") => { state.error = { code: e.code, message: e.message, where }; render(); };
const failAt = (where) => (e) => fail(e, where);
const dismissError = () => { state.error = null; render(); };

// --- rendering
const actions = { open: (id) => { state.chosen = true; openConversation(id); }, rename: (c) => rename(c), remove: (c) => remove(c),
  renamed: (c, title) => renamed(c, title), dismiss: () => dismissError(), pin: (c) => setPinned(c, !c.pinned),
  archive: (c) => setArchived(c, !c.archived) };

function renderHeader() {
  const conv = currentSummary();
  $("current-title").textContent = state.current ? (conv ? conv.title : state.pendingTitle || "Conversation") : "New conversation";
  $("current-title").title = $("current-title").textContent;
  $("responding").hidden = !state.streaming;
  $("connection").hidden = !state.offline;
  renderReadiness();
  renderAccount(state.auth);
  renderUsageItem(state.auth);
  renderMore();
  $("layout").classList.toggle("sidebar-open", state.sidebarOpen);
  $("scrim").hidden = !(state.sidebarOpen && narrow());
  $("menu").setAttribute("aria-expanded", String(state.sidebarOpen));
}

function renderComposer() {
  const blocked = sendBlocked();
  $("send").hidden = state.streaming;
  $("send").disabled = (!$("input").value.trim() && !hasAttachments()) || !!blocked;
  $("send").title = blocked || "";
  $("send-reason").textContent = blocked || "";
  $("send-reason").hidden = !blocked;
  $("stop").hidden = !state.streaming;
}

function render() { renderList(actions); renderHeader(); renderErrors(dismissError); renderResume(); renderMessages(); renderQueue(); renderApprovals(); renderTrace(); renderComposer(); conversationChanged(); }

// --- data
async function loadList(more = false) {
  try {
    const params = listParams();
    if (state.query) params.set("q", state.query);
    if (more && state.cursor) params.set("before", state.cursor);
    const [body] = await Promise.all([api(`/api/conversations?${params}`), more ? null : loadPinned()]);
    state.conversations = more ? [...state.conversations, ...body.conversations] : body.conversations;
    state.cursor = body.nextCursor;
  } catch (e) { if (e.code !== "UNAUTHORIZED" && e.code !== "SERVER_UNREACHABLE") fail(e); }
  render();
}

async function openConversation(id, { keepError = false, keepBusy = false } = {}) {
  const same = state.current === id;
  if (!same) leaving(state.current);
  detach();
  state.editing = null;
  if (!same) Object.assign(state, { trace: [], approvals: [], approvalNotice: null });
  state.current = id;
  if (!keepError) state.error = null;
  if (narrow()) state.sidebarOpen = false;
  busy(true);
  try {
    const d = await api(`/api/conversations/${id}`);
    if (state.current !== id) return;  // another conversation was opened meanwhile
    state.detail = d;
    state.messages = d.messages;
    state.approvals = d.pendingApprovals || [];
    setQueue(d);
    const conv = d.conversation;
    if (conv.status === "failed" && conv.error && !keepError) state.error = { ...conv.error, where: "composer" };
    // a model that failed may be down now: Send says so at once, not at the next check
    if (conv.status === "failed" && conv.error && /^MODEL_/.test(conv.error.code)) checkReadiness();
    const last = state.messages[state.messages.length - 1];
    // the server keeps what a stopped answer had written: it stays on screen, marked
    if (conv.status === "cancelled" && last && last.role === "assistant") state.messages[state.messages.length - 1] = { ...last, stopped: true };
    if (conv.status === "failed" && last && last.role === "assistant" && last.content && !(last.toolCalls || []).length) {
      state.messages[state.messages.length - 1] = { ...last, failed: true };  // the partial answer the server kept
    }
    if (conv.status === "running") {
      // re-attach: show what was durable when the run started, the replay rebuilds the rest
      if (d.activeRun) state.messages = d.messages.slice(0, d.activeRun.baseMessageCount);
      attach(id);
    }
  } catch (e) {
    if (e.code === "SERVER_UNREACHABLE") return;
    state.error = { code: e.code === "NOT_FOUND" ? "NOT_FOUND" : e.code, message: e.message };
  }
  render();
  renderMessages(true);
  if (!keepBusy) busy(state.streaming);
}

function lastAssistant(createIfToolCalls) {
  const last = state.messages[state.messages.length - 1];
  if (last && last.role === "assistant" && !(createIfToolCalls && (last.toolCalls || []).length)) return last;
  const fresh = { role: "assistant", content: "", toolCalls: [] };
  state.messages.push(fresh);
  return fresh;
}

// the message list is aria-busy while a run streams into it or the conversation is being read
const busy = (on) => $("messages").setAttribute("aria-busy", String(on));

function attach(id) {
  detach();
  state.streaming = true;
  busy(true);
  const source = new EventSource(`/api/chat?conversation=${encodeURIComponent(id)}`);
  state.source = source;
  source.addEventListener("open", () => setOffline(false));
  const answer = () => Object.assign(lastAssistant(true), state.liveModel ? { model: state.liveModel } : {});
  source.addEventListener("token", (e) => { const m = answer(); answerStarted(m); m.content += JSON.parse(e.data); renderStreaming(); });
  source.addEventListener("reasoning", (e) => { addReasoning(answer(), JSON.parse(e.data)); renderStreaming(); });
  source.addEventListener("trace", (e) => {
    const t = JSON.parse(e.data);
    state.trace.push(t);
    if (t.event === "enter" && t.node === "agent") state.liveModel = t.name;  // the model answering this step
    if (t.event === "call") {
      const msg = lastAssistant(false);
      msg.toolCalls = [...(msg.toolCalls || []), { id: t.data.tool_call_id, name: t.data.name, args: t.data.arguments }];
    } else if (t.event === "result") {
      state.messages.push({ role: "tool", name: t.data.name, toolCallId: t.data.tool_call_id, content: t.data.result, status: "success", durationMs: t.data.durationMs });
    }
    renderMessages(); renderTrace();
  });
  source.addEventListener("approval", (e) => { state.approvals = JSON.parse(e.data).calls || []; render(); });
  const finish = async (error) => {
    detach();
    if (error) { state.error = { ...error, where: "composer" }; checkReadiness(); }
    const listed = loadList();
    await openConversation(id, { keepError: !!error, keepBusy: true });
    await listed;  // the list too is drawn again (titles, counts) before the run's end is over
    titleLater(id);
    busy(state.streaming);
    if (!typingElsewhere()) $("input").focus();
  };
  source.addEventListener("end", () => finish(null));
  source.addEventListener("chat-error", (e) => { const d = JSON.parse(e.data); finish({ code: d.code, message: d.message }); });
  source.onerror = async () => {
    // the server went away (or refused the stream): stop this stream, say so, and reopen
    // the conversation from its durable state once the server answers again
    detach();
    if (!(await serverUp())) { setOffline(true); render(); return; }
    const s = await session.get().catch(() => null);
    if (s && s.required && !s.authenticated) { showLogin(); return; }
    openConversation(id);
  };
  render();
}

function detach() {
  if (state.source) { state.source.close(); state.source = null; }
  state.streaming = false;
}

// --- connection: "Reconnecting…" while the server is away, then pick up where it was
let polling = false;
async function setOffline(offline) {
  if (state.offline === offline) return;
  state.offline = offline;
  renderHeader();
  if (!offline || polling) return;
  polling = true;
  while (!(await serverUp())) await new Promise((r) => setTimeout(r, 1000));
  polling = false;
  state.offline = false;
  checkReadiness();
  await loadList();
  if (state.current && !state.streaming) await openConversation(state.current, { keepError: false });
  else render();
}

// --- actions
// the person is deciding on a call or typing in another field: the end of a run must not
// take the focus from them (a card's reason, clicked while the run was still ending)
function typingElsewhere() {
  const a = document.activeElement;
  if (!a || a === $("input") || !a.isConnected) return false;
  return $("approvals").contains(a) || a.matches("input, textarea, select, [contenteditable]");
}

async function send(text) {
  state.chosen = true;  // a message sent before the list loads: boot must not switch away from it
  state.error = null;
  await settingsSaved();  // a model or prompt chosen just before is the one that answers
  const body = state.current ? { message: text, conversation: state.current } : { message: text, ...draftSettings() };
  if (!state.current && state.temporary) body.temporary = true;
  const files = takeAttachments();
  if (files.body.length) body.attachments = files.body;
  try {
    const started = await api("/api/chat", { method: "POST", body });
    if (started.conversation !== body.conversation) state.pendingTitle = (text || files.shown[0].name).split("\n")[0].slice(0, 50);
    if (body.temporary) Object.assign(state, { temporaryId: started.conversation, temporary: false });
    state.current = started.conversation;
    state.detail = null;
    const sent = { role: "user", content: text, ...(files.shown.length ? { attachments: files.shown } : {}) };
    state.messages = [...(state.current === body.conversation ? state.messages.map((m) => ({ ...m, stopped: false, failed: false })) : []), sent];
    state.trace = [];
    $("input").value = "";
    attach(started.conversation);
    loadList();
  } catch (e) {
    $("input").value = text;
    files.restore();
    if (e.code === "SESSION_IN_PROGRESS" && state.current) { attach(state.current); return; }
    if (e.code !== "UNAUTHORIZED") fail(e, "composer");
  }
}

async function resume(decision) {
  state.error = null;
  await settingsSaved();
  try {
    await api("/api/chat", { method: "POST", body: { resume: true, conversation: state.current, ...(decision ? { decision } : {}) } });
    continued();
  } catch (e) { fail(e); }
}

// a run on a new branch: the messages it starts from stay on screen, its answer streams in
async function startBranch(body, keep) {
  state.error = null;
  state.editing = null;
  await settingsSaved();  // a regenerate right after picking another model is answered by that one
  try {
    await api("/api/chat", { method: "POST", body: { conversation: state.current, ...body } });
    state.messages = keep;
    state.detail = { ...state.detail, resumable: false };
    state.trace = [];
    attach(state.current);
    loadList();
  } catch (e) {
    if (e.code === "SESSION_IN_PROGRESS") { attach(state.current); return; }
    fail(e);
  }
}

branchActions.edit = (index, text) =>
  startBranch({ message: text, editOf: index }, [...state.messages.slice(0, index), { role: "user", content: text }]);
branchActions.regenerate = () => {
  const lastUser = state.messages.map((m) => m.role).lastIndexOf("user");
  startBranch({ regenerate: true }, state.messages.slice(0, lastUser + 1));
};
branchActions.switchTo = async (number) => {
  const id = state.current;
  try { await api(`/api/conversations/${id}`, { method: "PATCH", body: { activeBranch: number } }); } catch (e) { fail(e); return; }
  await openConversation(id);
  loadList();
};
branchActions.rerender = () => renderMessages();
threadActions.fork = async (index) => {
  try {
    const body = await api(`/api/conversations/${state.current}/fork`, { method: "POST", body: { messageIndex: index } });
    state.chosen = true;
    await loadList();
    await openConversation(body.conversation.id);
  } catch (e) { fail(e); }
};


// a resume (or a decision on a waiting call) was accepted: follow the run it started
function continued() {
  state.error = null;
  state.detail = { ...state.detail, resumable: false };
  state.messages = state.messages.map((m) => (m.stopped || m.failed ? { ...m, stopped: false, failed: false } : m));
  // a resume starts a new step: a new message, drawn inside the kept answer's bubble after a "continued" mark
  if ((state.messages[state.messages.length - 1] || {}).role === "assistant") state.messages.push({ role: "assistant", content: "", toolCalls: [] });
  state.trace = [];
  attach(state.current);
}

async function stop() {
  if (!state.streaming || !state.current) return;
  try { await api("/api/chat/cancel", { method: "POST", body: { conversation: state.current } }); }
  catch (e) { if (e.code !== "NO_ACTIVE_RUN") fail(e, "composer"); }
}

function rename(c) {
  state.renaming = c.id;
  renderList(actions);
}

async function renamed(c, title) {
  state.renaming = null;
  if (title) {
    try { await api(`/api/conversations/${c.id}`, { method: "PATCH", body: { title } }); } catch (e) { fail(e, `row:${c.id}`); }
    await loadList();
    renderHeader();
  } else renderList(actions);
  const row = document.querySelector(`[data-testid="conversation-${c.id}"] .open`);
  if (row) row.focus();
}

// gone from the list at once, deleted on the server only once the Undo time is over
function remove(c) {
  const wasOpen = state.current === c.id;
  state.deleting = { ...state.deleting, [c.id]: true };
  if (wasOpen) newChat(); else renderList(actions);
  offerUndo(`Deleted "${c.title}"`, {
    commit: async () => {
      try { await api(`/api/conversations/${c.id}`, { method: "DELETE", keepalive: true }); } catch (e) { fail(e, `row:${c.id}`); }
      delete state.deleting[c.id];
      await loadList();
    },
    undo: async () => {
      delete state.deleting[c.id];
      renderList(actions);
      if (wasOpen && !state.current) await openConversation(c.id);
    },
  });
}

function newChat(temporary = false) {
  state.chosen = true;
  leaving(state.current);
  state.temporary = temporary === true;
  newDraft();
  detach();
  busy(false);
  Object.assign(state, { current: null, detail: null, messages: [], trace: [], error: null, pendingTitle: null, sidebarOpen: false, approvals: [], approvalNotice: null, editing: null, queued: [] });
  render();
  $("input").focus();
}

// --- login (API_TOKEN): the token is exchanged once for an HttpOnly session cookie
function showLogin(message = "") {
  detach();
  Object.assign(state, { auth: { required: true, authenticated: false }, conversations: [], current: null, detail: null, messages: [], trace: [], approvals: [], approvalNotice: null });
  render();
  $("login").hidden = false;
  $("layout").inert = true;
  $("login-error").hidden = !message;
  $("login-error").textContent = message;
  $("token").focus();
}

async function login(event) {
  event.preventDefault();
  try {
    state.auth = await session.login($("token").value);
    $("token").value = "";
    $("login").hidden = true;
    $("layout").inert = false;
    await boot();
  } catch (e) { showLogin(e instanceof ApiError ? e.message : String(e)); }
}

async function logout(everywhere = false) {
  try { await (everywhere ? session.logoutEverywhere() : session.logout()); } catch (e) { fail(e, "header"); return; }
  showLogin(everywhere ? "Every browser was logged out." : "");
}

async function boot() {
  checkReadiness();
  loadModels();
  loadKnowledge();
  loadPresets();
  loadSchedules();
  await loadList();
  // the latest conversation, unless the person already chose one or a new chat meanwhile
  if (state.conversations.length && !state.chosen) await openConversation(state.conversations[0].id);
  else render();
  if (!narrow() && !typingElsewhere()) $("input").focus();
}

// --- wiring
onReadiness(() => { renderComposer(); if (!state.current) renderMessages(); });
onApprovals({ started: () => { continued(); refreshAllowed(); }, refresh: () => openConversation(state.current) });
installAllowed();
installResizer();
installPinning();
installShortcuts({
  newChat,
  toggleSidebar: () => {
    if (narrow()) { state.sidebarOpen = !state.sidebarOpen; renderHeader(); } else $("layout").classList.toggle("sidebar-hidden");
  },
  openSidebar: () => { state.sidebarOpen = true; renderHeader(); },
  editMessage: (index) => { state.editing = index; renderMessages(); },
});
onModels({ fail, loaded: (listed) => setAttachmentLimits(listed.attachments) });
onPresets({ fail });
onOrganise({ reload: () => loadList(), fail, newTemporary: () => newChat(true), autoTitles });
onApi({ unauthorized: () => showLogin("Your session ended; enter the token again."), unreachable: () => setOffline(true) });
$("new-chat").append(icon("plus"), el("span", {}, "New Chat"));
$("menu").append(icon("menu"));
$("trace-toggle").append(icon("trace"));
$("settings-toggle").append(icon("sliders"));
installModels();
installPresets();
installMemory();
installKnowledge();
installOrganise();
installAttachments({ changed: () => renderComposer(), failed: failAt("composer") });
$("trace-close").append(icon("close"));
installAccount({ logout });
installUsage();
// a schedule fired: the open conversation it sent into is read again (its run streams in), or the list shows the new one
installScheduled({ open: actions.open, shown: () => { if (narrow()) { state.sidebarOpen = false; renderHeader(); } }, fired: (cid) => {
  if (cid && cid === state.current) { if (!state.streaming) openConversation(cid, { keepError: true }); } else loadList();
} });
// Enter while an answer streams, or while a tool call waits for approval: the message waits
// on the server, in order (js/queue.js)
$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("input").value.trim();
  if (!text && !hasAttachments()) return;
  const busy = state.streaming || (state.approvals || []).length > 0;
  if (busy && state.current) { if (text) queueText(text); }  // files wait for the run's end
  else if (!state.streaming && !sendBlocked()) send(text);
});
async function queueText(text) {
  $("input").value = "";
  renderComposer();
  try { await enqueue(text); } catch (e) { $("input").value = text; fail(e, "composer"); }
}
onQueue({ failed: failAt("composer"), started: () => openConversation(state.current) });
$("input").addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); } });
$("input").addEventListener("input", renderComposer);
$("new-chat").addEventListener("click", () => newChat());
$("messages").addEventListener("keydown", onMessageKey);
installSearch($("filter"), openConversation);  // titles and contents of every conversation, in place of the list
$("load-more").addEventListener("click", () => loadList(true));
installTransfer({ imported: async (list) => { await loadList(); if (list.length) { state.chosen = true; await openConversation(list[0].id); } }, failed: failAt("transfer") });
$("resume").addEventListener("click", () => resume(null));
$("retry").addEventListener("click", () => resume("retry"));
$("skip").addEventListener("click", () => resume("skip"));
$("stop").addEventListener("click", stop);
$("menu").addEventListener("click", () => { state.sidebarOpen = !state.sidebarOpen; renderHeader(); if (state.sidebarOpen) $("filter").focus(); });
$("scrim").addEventListener("click", () => { state.sidebarOpen = false; renderHeader(); });
const toggleTrace = (open) => { state.traceOpen = open; localStorage.setItem("sophos.trace", open ? "1" : ""); renderTrace(); renderMore(); };
installMore({ toggleTrace });
$("trace-toggle").addEventListener("click", () => toggleTrace(!state.traceOpen));
$("trace-close").addEventListener("click", () => { toggleTrace(false); $("trace-toggle").focus(); });
$("login-form").addEventListener("submit", login);
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape") return;
  if (state.streaming) { e.preventDefault(); stop(); }
  else if (state.sidebarOpen) { state.sidebarOpen = false; renderHeader(); $("menu").focus(); }
});
window.addEventListener("resize", renderHeader);
state.traceOpen = localStorage.getItem("sophos.trace") === "1";

(async () => {
  try { state.auth = await session.get(); } catch { /* unreachable: the list says so */ }
  if (state.auth.required && !state.auth.authenticated) showLogin();
  else await boot();
})();
