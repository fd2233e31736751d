// Knowledge collections: the settings panel's "Your documents" (upload files into a named
// collection, see and delete collections), the composer's picker that writes `#name` into
// the message, and the citations of an answer ([file.md:12-30]) shown as links that open the
// cited passage (GET /api/knowledge/{collection}/files/{file}/passage).
import { api } from "/static/js/api.js";
import { $, el } from "/static/js/dom.js";

const note = (text) => { $("knowledge-note").textContent = text; };
const path = (name) => `/api/knowledge/${encodeURIComponent(name)}`;

function row(c) {
  const remove = el("button", { type: "button", "data-testid": "knowledge-delete", "aria-label": `Delete #${c.name}` }, "Delete");
  remove.addEventListener("click", async () => {
    if (!window.confirm(`Delete the collection #${c.name} and all its files?`)) return;
    try { await api(path(c.name), { method: "DELETE" }); } catch (e) { note(e.message); return; }
    await loadKnowledge();
    note(`Deleted #${c.name}`);
  });
  return el("li", { class: "memory-item", "data-testid": "knowledge-item" },
    el("span", { "data-testid": "knowledge-name" }, `#${c.name}`), ` ${c.files} files, ${c.passages} passages `, remove);
}

export async function loadKnowledge() {
  let found;
  try { found = (await api("/api/knowledge")).collections; } catch (e) { note(e.message); return; }
  $("knowledge-list").replaceChildren(...found.map(row));
  $("knowledge-picker").replaceChildren(el("option", { value: "" }, "#"),
    ...found.map((c) => el("option", { value: c.name }, `#${c.name}`)));
  $("knowledge-picker").hidden = found.length === 0;
}

async function upload(event) {
  event.preventDefault();
  const name = $("knowledge-collection").value.trim().toLowerCase();
  const files = $("knowledge-files").files;
  if (!name || !files.length) { note("Name a collection and choose files"); return; }
  const form = new FormData();
  for (const f of files) form.append("files", f, f.name);
  note("Uploading…");
  let response;
  try { response = await fetch(`${path(name)}/files`, { method: "POST", body: form }); } catch { note("The server could not be reached"); return; }
  const body = await response.json().catch(() => null);
  if (!response.ok) { note((body && body.error && body.error.message) || response.statusText); return; }
  $("knowledge-files").value = "";
  await loadKnowledge();
  note(body.files.map((f) => `${f.name}: ${f.outcome}`).join(", "));
}

function pick() {
  const picker = $("knowledge-picker"), input = $("input");
  if (!picker.value) return;
  const tag = `#${picker.value} `;
  if (!input.value.includes(tag.trim())) input.value = tag + input.value;
  picker.value = "";
  input.dispatchEvent(new Event("input", { bubbles: true }));
  input.focus();
}

// An answer's citations as links: each "[file:lines]" of a cited passage in its text opens
// the passage under the answer.
export function linkCitations(div, cited) {
  if (!cited || !cited.length) return;
  const bySign = new Map(cited.map((c) => [c.last > c.first ? `[${c.file}:${c.first}-${c.last}]` : `[${c.file}:${c.first}]`, c]));
  const walker = document.createTreeWalker(div, NodeFilter.SHOW_TEXT);
  const texts = [];
  while (walker.nextNode()) if (walker.currentNode.nodeValue.includes("[") && !walker.currentNode.parentElement.closest("pre, code")) texts.push(walker.currentNode);
  for (const t of texts) {
    const parts = t.nodeValue.split(/(\[[^\[\]\n]{1,300}:\d+(?:-\d+)?\])/);
    if (parts.length < 2) continue;
    t.replaceWith(...parts.map((p) => (bySign.has(p) ? citation(p, bySign.get(p), div) : p)));
  }
}

function citation(sign, c, div) {
  const link = el("a", { href: `${path(c.collection)}/files/${encodeURIComponent(c.file)}/passage?lines=${c.first}-${c.last}`,
    class: "citation", "data-testid": "citation", title: `#${c.collection}: ${c.file}, lines ${c.first}-${c.last}` }, sign);
  link.addEventListener("click", async (event) => {
    event.preventDefault();
    const open = div.querySelector(`[data-sign="${CSS.escape(sign)}"]`);
    if (open) { open.remove(); return; }
    let body;
    try { body = await api(link.getAttribute("href")); } catch (e) { body = { passages: [{ text: e.message }] }; }
    div.append(el("blockquote", { class: "cited-passage", "data-testid": "cited-passage", "data-sign": sign },
      el("div", { class: "cited-where" }, `#${c.collection} · ${c.file} · lines ${c.first}-${c.last}`),
      el("pre", {}, body.passages.map((p) => p.text).join("\n…\n"))));
  });
  return link;
}

export function installKnowledge() {
  $("knowledge-panel").addEventListener("toggle", () => { if ($("knowledge-panel").open) loadKnowledge(); });
  $("knowledge-form").addEventListener("submit", upload);
  $("knowledge-picker").addEventListener("change", pick);
}
