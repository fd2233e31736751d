// Saved settings, in the conversation's settings panel: "Use as my default" (what the
// person's new chats start with), named presets (a model with instructions, chosen in one
// go), saved and deleted in place. Kept per user on the server (GET /api/presets).
import { api } from "/static/js/api.js";
import { $, el } from "/static/js/dom.js";
import { applySettings, currentSettings, setDefaults } from "/static/js/models.js";

const hooks = { fail: () => {} };
let saved = { defaults: null, presets: [] };

export function onPresets(given) { Object.assign(hooks, given); }

const note = (text) => { $("preset-note").textContent = text; };

export async function loadPresets() {
  try { saved = await api("/api/presets"); } catch (e) { if (e.code !== "UNAUTHORIZED") hooks.fail(e, "settings"); return; }
  setDefaults(saved.defaults);
  renderPresets();
}

function describe(p) {
  const parts = [p.model || "default model", p.system ? (p.systemMode === "replace" ? "own prompt" : "+ instructions") : null];
  return parts.filter(Boolean).join(", ");
}

export function renderPresets() {
  const picker = $("preset-picker");
  const options = [el("option", { value: "" }, saved.presets.length ? "Choose a preset…" : "No presets yet"),
    ...saved.presets.map((p) => el("option", { value: p.name, title: describe(p) }, p.name))];
  const chosen = picker.value;
  picker.replaceChildren(...options);
  picker.value = saved.presets.some((p) => p.name === chosen) ? chosen : "";
  $("preset-delete").disabled = !picker.value;
  $("use-as-default").title = saved.defaults ? `Your new chats start with: ${describe(saved.defaults)}` : "New chats start with these settings";
}

async function choose() {
  const preset = saved.presets.find((p) => p.name === $("preset-picker").value);
  $("preset-delete").disabled = !preset;
  if (!preset) return;
  if (await applySettings(preset)) note(`Preset "${preset.name}" chosen`);
}

async function saveAs(event) {
  event.preventDefault();
  const name = $("preset-name").value.trim();
  if (!name) { $("preset-name").focus(); return; }
  try {
    await api(`/api/presets/named/${encodeURIComponent(name)}`, { method: "PUT", body: currentSettings() });
  } catch (e) { note(e.message); return; }
  $("preset-name").value = "";
  await loadPresets();
  $("preset-picker").value = name;
  $("preset-delete").disabled = false;
  note(`Saved as "${name}"`);
}

async function remove() {
  const name = $("preset-picker").value;
  if (!name) return;
  try { await api(`/api/presets/named/${encodeURIComponent(name)}`, { method: "DELETE" }); } catch (e) { note(e.message); return; }
  await loadPresets();
  note(`Deleted "${name}"`);
}

async function useAsDefault() {
  try {
    const body = await api("/api/presets/defaults", { method: "PUT", body: currentSettings() });
    saved = { ...saved, defaults: body.defaults };
  } catch (e) { note(e.message); return; }
  setDefaults(saved.defaults);
  renderPresets();
  note("Your new chats start with these settings");
}

export function installPresets() {
  $("preset-picker").addEventListener("change", choose);
  $("preset-form").addEventListener("submit", saveAs);
  $("preset-delete").addEventListener("click", remove);
  $("use-as-default").addEventListener("click", useAsDefault);
}
