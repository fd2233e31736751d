// The model and instructions of a conversation: the picker in the header (and in the
// empty state), the instructions of the conversation's settings (added after the server's
// prompt, or replacing it), and the choices of a new chat, sent with its first message; a
// new chat starts from the user's saved default (js/presets.js). The list comes from
// GET /api/models, asked for once the page is up (never holding its load back) and again
// when the picker opens.
import { api } from "/static/js/api.js";
import { $, el } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

const hooks = { fail: () => {}, loaded: () => {} };
let listed = { default: "", models: [], error: null };
let draft = {};  // a new chat's choices: {model?, system?, systemMode?}
let defaults = null;  // the user's saved default for new chats (GET /api/presets), or none
let asked = 0;

export const autoTitles = () => listed.autoTitle === true;
// the user's default changed (js/presets.js): a new chat shows it
export function setDefaults(saved) { defaults = saved; renderModels(); }

export function onModels(given) { Object.assign(hooks, given); }

// asked by boot (after a login, where one is needed: a 401 here would ask for the token)
export async function loadModels() {
  const now = Date.now();
  if (now - asked < 5000) return;  // the server keeps the list for 10 s anyway
  asked = now;
  try { listed = await api("/api/models"); hooks.loaded(listed); } catch (e) { listed = { ...listed, error: { code: e.code, message: e.message } }; }
  renderModels();
}

const conversation = () => (state.current && state.detail ? state.detail.conversation : null);
// a new chat's field: what the person chose for it, else their saved default
const drafted = (field) => (field in draft ? draft[field] : (defaults || {})[field]) || "";
const chosenModel = () => (state.current ? (conversation() || {}).model || "" : drafted("model"));
const chosenSystem = () => (state.current ? (conversation() || {}).system || "" : drafted("system"));
const chosenMode = () => (state.current ? (conversation() || {}).systemMode : drafted("systemMode")) || "add";

// the settings on screen (the panel's text as typed, saved or not): what "Use as my default"
// and "Save as preset" keep
export function currentSettings() {
  const open = !$("settings-panel").hidden;
  const system = open ? $("system-input").value : chosenSystem();
  const mode = open ? ($("system-replace").checked ? "replace" : "add") : chosenMode();
  return { model: chosenModel() || null, system: system.trim() ? system : null, systemMode: mode };
}

// a preset chosen: the conversation's settings from its next turn, or the new chat's
export async function applySettings(settings) {
  const change = { model: settings.model || null, system: settings.system || null, systemMode: settings.systemMode || "add" };
  if (!state.current) { draft = { ...change }; renderModels(); refreshPanel(); return true; }
  const saved = await save(change, "settings");
  renderModels();
  refreshPanel();
  return saved;
}

// what a POST /api/chat starting a new conversation carries; cleared once it is sent
export function draftSettings() {
  const out = { ...draft };
  draft = {};
  return out;
}

// a new chat begins from the user's default again
export function newDraft() { draft = {}; }

function options(select) {
  const current = chosenModel();
  const names = listed.models.map((m) => m.name);
  const signature = JSON.stringify([listed.default, names, current]);
  if (select.dataset.signature === signature) return;  // an open picker is not rebuilt under the pointer
  select.dataset.signature = signature;
  const shown = [el("option", { value: "" }, `Default (${listed.default || "server"})`),
    ...names.map((n) => el("option", { value: n }, n))];
  if (current && !names.includes(current)) shown.push(el("option", { value: current }, current));
  select.replaceChildren(...shown);
  select.value = current;
  select.title = listed.error ? `The model list is unavailable: ${listed.error.message}` : "The model that answers from the next message on";
}

// the latest change of the open conversation's settings on its way to the server: a message
// sent meanwhile waits for it, so the model or prompt just chosen is the one that answers
let saving = Promise.resolve(false);
export const settingsSaved = () => saving;

// `where`: the place of its error (js/errors.js): beside the picker, or in the settings
function save(change, where) {
  saving = (async () => {
    try {
      const body = await api(`/api/conversations/${state.current}`, { method: "PATCH", body: change });
      if (state.detail) state.detail.conversation = { ...state.detail.conversation, ...body.conversation };
      return true;
    } catch (e) { hooks.fail(e, where); return false; }
  })();
  return saving;
}

async function choose(model) {
  if (!state.current) { draft.model = model || undefined; renderModels(); return; }
  await save({ model: model || null }, "header");
  renderModels();
}

async function saveSystem() {
  const text = $("system-input").value;
  const mode = $("system-replace").checked ? "replace" : "add";
  const note = $("settings-note");
  if (!state.current) {
    Object.assign(draft, { system: text.trim() ? text : null, systemMode: mode });
    note.textContent = "Used from the first message on";
    return;
  }
  if (await save({ system: text.trim() ? text : null, systemMode: mode }, "settings")) note.textContent = "Saved: used from the next message on";
}

function refreshPanel() {
  if ($("settings-panel").hidden) return;
  $("system-input").value = chosenSystem();
  $("system-replace").checked = chosenMode() === "replace";
}

// a picker of its own for the empty state of a new chat (status.js's welcome)
export function emptyPicker() {
  const picker = el("select", { class: "model-picker", "data-testid": "empty-model-picker", "aria-label": "Model",
    onchange: (e) => choose(e.target.value), onfocus: loadModels });
  options(picker);
  return el("label", { class: "empty-model" }, "The answer comes from ", picker);
}

export function renderModels() {
  options($("model-picker"));
  const panel = $("settings-panel");
  $("settings-toggle").setAttribute("aria-expanded", String(!panel.hidden));
  const box = document.querySelector('[data-testid="empty-model-picker"]');
  if (box) options(box);
}

function toggleSettings() {
  const panel = $("settings-panel");
  panel.hidden = !panel.hidden;
  if (!panel.hidden) {
    refreshPanel();
    $("settings-note").textContent = state.current ? "" : "For the new conversation";
    $("system-input").focus();
  }
  renderModels();
}

export function installModels() {
  $("model-picker").addEventListener("change", (e) => choose(e.target.value));
  $("model-picker").addEventListener("focus", loadModels);
  $("settings-toggle").addEventListener("click", toggleSettings);
  $("system-save").addEventListener("click", saveSystem);
  $("system-input").addEventListener("keydown", (e) => { if (e.key === "Escape") { e.stopPropagation(); toggleSettings(); } });
}

// the settings panel follows the conversation on screen
export function conversationChanged() {
  const panel = $("settings-panel");
  if (!panel.hidden) { refreshPanel(); $("settings-note").textContent = ""; }
  renderModels();
}
