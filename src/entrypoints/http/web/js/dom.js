// DOM helpers and the page's icons: inline SVG (no emoji, no icon font).
export const $ = (id) => document.getElementById(id);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

// 24×24 stroke paths (after the Feather/Lucide style)
const PATHS = {
  plus: "M12 5v14M5 12h14",
  menu: "M3 6h18M3 12h18M3 18h18",
  pencil: "M12 20h9M16.5 3.5a2.1 2.1 0 0 1 3 3L7 19l-4 1 1-4z",
  trash: "M3 6h18M8 6V4h8v2M19 6l-1 14H6L5 6",
  check: "M20 6 9 17l-5-5",
  copy: "M8 8h12v12H8zM4 16V4h12",
  tool: "M14.7 6.3a4 4 0 0 0-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 0 0 5.4-5.4l-2.5 2.5-2.5-.5-.5-2.5z",
  alert: "M12 3 2 21h20zM12 10v5M12 18h.01",
  image: "M3 5h18v14H3zM3 16l5-5 5 5 3-3 5 5M15.5 9.5h.01",
  trace: "M4 6h10M4 12h16M4 18h7",
  close: "M6 6l12 12M18 6 6 18",
  logout: "M9 21H5V3h4M16 17l5-5-5-5M21 12H9",
  logoutAll: "M8 21H4V3h4M12 16l4-4-4-4M17 16l4-4-4-4M16 12H8",
  user: "M20 21v-2a4 4 0 0 0-4-4H8a4 4 0 0 0-4 4v2M12 11a4 4 0 1 0 0-8 4 4 0 0 0 0 8z",
  stop: "M6 6h12v12H6z",
  refresh: "M21 12a9 9 0 1 1-3-6.7L21 8M21 3v5h-5",
  fork: "M6 3v4a4 4 0 0 0 4 4h4a4 4 0 0 0 4-4V3M12 11v10",
  paperclip: "M21 11l-8.5 8.5a5 5 0 0 1-7-7L14 4a3.5 3.5 0 0 1 5 5l-8.5 8.5a2 2 0 0 1-3-3L15 7",
  sliders: "M4 6h10M18 6h2M14 4v4M4 12h4M12 12h8M8 10v4M4 18h12M20 18h0M16 16v4",
  more: "M5 12h.01M12 12h.01M19 12h.01",
  down: "M12 5v14M6 13l6 6 6-6",
  pin: "M12 17v5M9 3h6l-1 7 4 3v2H6v-2l4-3z",
  archive: "M3 4h18v4H3zM5 8v12h14V8M10 12h4",
  hourglass: "M6 2h12M6 22h12M7 2v3l5 7-5 7v3M17 2v3l-5 7 5 7v3",
  clock: "M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18zM12 7v5l3 2",
};

export function icon(name, label) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  for (const [k, v] of Object.entries({ viewBox: "0 0 24 24", width: "16", height: "16", fill: "none", stroke: "currentColor",
    "stroke-width": "2", "stroke-linecap": "round", "stroke-linejoin": "round", class: `icon-svg icon-${name}` })) svg.setAttribute(k, v);
  if (label) { svg.setAttribute("role", "img"); svg.setAttribute("aria-label", label); } else svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", PATHS[name]);
  svg.append(path);
  return svg;
}

export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try { await navigator.clipboard.writeText(text); return true; } catch { /* fall back below */ }
  }
  const area = el("textarea", { class: "offscreen", "aria-hidden": "true" });
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  return ok;
}

// a copy button: copies what `text()` returns, then says so for a moment
export function copyButton(text, label, testid) {
  const button = el("button", { type: "button", class: "icon only copy", "aria-label": label, title: label, "data-testid": testid }, icon("copy"));
  button.addEventListener("click", async () => {
    const ok = await copyText(text());
    button.replaceChildren(icon(ok ? "check" : "alert"));
    button.setAttribute("aria-label", ok ? "Copied" : "Copy failed");
    setTimeout(() => { button.replaceChildren(icon("copy")); button.setAttribute("aria-label", label); }, 1500);
  });
  return button;
}
