// "What Sophos remembers about you", in the settings panel: the person's memories (what the
// agent's memory__remember tool wrote for them), each edited or forgotten in place. Kept per
// user on the server (GET /api/memory); read when the list is opened.
import { api } from "/static/js/api.js";
import { $, el } from "/static/js/dom.js";

const note = (text) => { $("memory-note").textContent = text; };

function row(memory) {
  const text = el("input", { value: memory.text, maxlength: "2000", "aria-label": "What Sophos remembers", "data-testid": "memory-text" });
  const save = el("button", { type: "button", "data-testid": "memory-save" }, "Save");
  const forget = el("button", { type: "button", "data-testid": "memory-forget" }, "Forget");
  save.addEventListener("click", async () => {
    try { await api(`/api/memory/${encodeURIComponent(memory.id)}`, { method: "PATCH", body: { text: text.value } }); }
    catch (e) { note(e.message); return; }
    note("Saved");
  });
  forget.addEventListener("click", async () => {
    try { await api(`/api/memory/${encodeURIComponent(memory.id)}`, { method: "DELETE" }); } catch (e) { note(e.message); return; }
    await loadMemory();
    note("Forgotten");
  });
  return el("li", { class: "memory-item", "data-testid": "memory-item" }, text, save, forget);
}

export async function loadMemory() {
  let found;
  try {
    const body = await api("/api/memory");
    found = body.memories;
    $("memory-enabled").checked = body.enabled !== false;
  } catch (e) { note(e.message); return; }
  $("memory-list").replaceChildren(...found.map(row));
  $("memory-empty").hidden = found.length > 0;
}

export function installMemory() {
  $("memory-panel").addEventListener("toggle", () => { if ($("memory-panel").open) loadMemory(); });
  $("memory-enabled").addEventListener("change", async (event) => {
    const enabled = event.target.checked;
    try { await api("/api/memory", { method: "PATCH", body: { enabled } }); }
    catch (e) { event.target.checked = !enabled; note(e.message); return; }
    note(enabled ? "Memory on" : "Memory off: nothing new is remembered");
  });
}
