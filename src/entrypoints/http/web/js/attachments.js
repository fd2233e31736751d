// Files on a message: the attach button, drag-and-drop anywhere on the conversation, an
// image pasted into the composer; chips under the composer until sent, chips on the sent
// message (an image as a thumbnail, a text file's content opened in place) read back from
// GET /api/conversations/ID/attachments/DIGEST. The server checks every file again.
import { $, el, icon } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

// the server's limits (GET /api/models' `attachments`); these defaults until it says
let limits = { maxBytes: 10 * 1024 * 1024, maxFiles: 8, types: null, shown: "" };
let pending = [];  // {name, type, size, data (base64), url (images: a local preview)}
let changed = () => {};
let failed = () => {};

function size(n) {
  const whole = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(1));
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${whole(n / 1024)} KB` : `${whole(n / 1048576)} MB`;
}

// what the accept attribute of the file picker lists: the server's types, and extensions
// for the text kinds a browser may not name
const EXTENSIONS = { "text/markdown": ".md", "text/csv": ".csv", "application/json": ".json", "text/x-python": ".py",
  "text/javascript": ".js,.ts", "application/x-yaml": ".yaml,.yml", "application/toml": ".toml", "application/sql": ".sql",
  "text/x-shellscript": ".sh", "text/x-go": ".go", "text/x-rust": ".rs", "text/x-java": ".java", "text/x-c": ".c,.h" };

function accepted() {
  if (!limits.types) return ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/*", ...Object.values(EXTENSIONS)].join(",");
  return limits.types.flatMap((t) => (EXTENSIONS[t] ? [t, EXTENSIONS[t]] : [t])).join(",");
}

// the server's limits, from GET /api/models: the attach button is gone when it takes no files
export function setAttachmentLimits(given) {
  if (!given) return;
  limits = given;
  const input = $("attach-input");
  if (input) input.accept = accepted();
  const button = $("attach");
  if (button) button.hidden = !limits.maxFiles || !limits.types || !limits.types.length;
}

function base64(buffer) {
  const bytes = new Uint8Array(buffer);
  let out = "";
  for (let i = 0; i < bytes.length; i += 0x8000) out += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(out);
}

async function add(files) {
  for (const file of files) {
    if (!limits.maxFiles) { failed({ code: "TOO_MANY_ATTACHMENTS", message: "This server accepts no attachments" }); break; }
    if (pending.length >= limits.maxFiles) { failed({ code: "TOO_MANY_ATTACHMENTS", message: `A message carries at most ${limits.maxFiles} files` }); break; }
    if (file.size > limits.maxBytes) { failed({ code: "ATTACHMENT_TOO_LARGE", message: `${file.name} is larger than ${size(limits.maxBytes)}` }); continue; }
    // a type the browser names and the server does not take (the server also reads extensions: let it judge the rest)
    if (limits.types && file.type && file.type !== "application/octet-stream" && !limits.types.includes(file.type) && !file.type.startsWith("text/")) {
      failed({ code: "ATTACHMENT_TYPE_NOT_ALLOWED", message: `${file.name}: ${file.type} is not a file type this server accepts (${limits.shown})` });
      continue;
    }
    const data = base64(await file.arrayBuffer());
    const image = file.type.startsWith("image/");
    pending.push({ name: file.name || "pasted image.png", type: file.type, size: file.size, data, url: image ? URL.createObjectURL(file) : null });
  }
  renderPending();
  changed();
}

function renderPending() {
  const box = $("attachments-pending");
  box.replaceChildren(...pending.map((f, i) => el("span", { class: "file-chip", "data-testid": "pending-attachment" },
    f.url ? el("img", { src: f.url, alt: "" }) : icon("paperclip"),
    el("span", { class: "chip-name" }, f.name), el("span", { class: "chip-size" }, size(f.size)),
    el("button", { type: "button", class: "icon only", "aria-label": `Remove ${f.name}`, "data-testid": "remove-attachment",
      onclick: () => { pending.splice(i, 1); renderPending(); changed(); } }, icon("close")))));
  box.hidden = !pending.length;
}

export function hasAttachments() { return pending.length > 0; }

// what POST /api/chat carries, and the chips the sent message shows until the detail reloads
export function takeAttachments() {
  const taken = pending;
  pending = [];
  renderPending();
  return { body: taken.map((f) => ({ name: f.name, type: f.type, data: f.data })),
    shown: taken.map((f) => ({ name: f.name, type: f.type, size: f.size, url: f.url })), restore: () => { pending = taken; renderPending(); changed(); } };
}

function fileUrl(a) {
  return a.url || (state.current && a.digest ? `/api/conversations/${encodeURIComponent(state.current)}/attachments/${a.digest}` : null);
}

async function preview(a, chip) {
  const open = chip.nextElementSibling && chip.nextElementSibling.classList.contains("attachment-preview");
  if (open) { chip.nextElementSibling.remove(); chip.setAttribute("aria-expanded", "false"); return; }
  const url = fileUrl(a);
  if (!url) return;
  let body;
  if (a.type.startsWith("image/")) body = el("img", { src: url, alt: a.name });
  else if (a.type === "application/pdf") body = el("a", { href: url, download: a.name }, `Download ${a.name}`);
  else {
    const response = await fetch(url);
    body = el("pre", {}, response.ok ? await response.text() : "This file can no longer be read.");
  }
  chip.after(el("div", { class: "attachment-preview", "data-testid": "attachment-preview" }, body));
  chip.setAttribute("aria-expanded", "true");
}

// the chips of a user message: a click shows the file under them
export function attachmentChips(m) {
  if (!m.attachments || !m.attachments.length) return null;
  return el("div", { class: "attachments" }, m.attachments.map((a) => {
    const url = fileUrl(a);
    const chip = el("button", { type: "button", class: "file-chip", "data-testid": "attachment-chip", "aria-expanded": "false",
      title: `${a.name} · ${size(a.size)}` },
    a.type.startsWith("image/") && url ? el("img", { src: url, alt: "" }) : icon("paperclip"),
    el("span", { class: "chip-name" }, a.name), el("span", { class: "chip-size" }, size(a.size)));
    chip.addEventListener("click", () => preview(a, chip));
    return chip;
  }));
}

export function installAttachments(events) {
  changed = events.changed;
  failed = events.failed;
  const input = el("input", { type: "file", multiple: true, hidden: true, id: "attach-input", "data-testid": "attach-input",
    accept: accepted() });
  input.addEventListener("change", () => { add([...input.files]); input.value = ""; });
  const button = el("button", { type: "button", id: "attach", class: "icon only", "aria-label": "Attach files", title: "Attach files",
    "data-testid": "attach-button", onclick: () => input.click() }, icon("paperclip"));
  $("composer").prepend(button, input);
  $("composer").before(el("div", { id: "attachments-pending", class: "attachments pending", "data-testid": "pending-attachments", hidden: true }));
  const zone = $("composer").closest("main") || document.body;
  zone.addEventListener("dragover", (e) => { if (e.dataTransfer && [...e.dataTransfer.types].includes("Files")) { e.preventDefault(); zone.classList.add("dropping"); } });
  zone.addEventListener("dragleave", (e) => { if (e.target === zone) zone.classList.remove("dropping"); });
  zone.addEventListener("drop", (e) => {
    zone.classList.remove("dropping");
    if (!e.dataTransfer || !e.dataTransfer.files.length) return;
    e.preventDefault();
    add([...e.dataTransfer.files]);
  });
  $("input").addEventListener("paste", (e) => {
    const files = [...(e.clipboardData ? e.clipboardData.files : [])];
    if (!files.length) return;  // text pastes as text
    e.preventDefault();
    add(files);
  });
}
