// The header's "More" menu: the open conversation's exports, the theme (system, light or
// dark, remembered in this browser) and, on a phone, the reasoning trace. Keeps the header
// to one row at 375 px.
import { $, icon } from "/static/js/dom.js";
import { installMenu } from "/static/js/menu.js";
import { state } from "/static/js/state.js";

const KEY = "sophos.theme";
const THEMES = ["system", "light", "dark"];

export const chosenTheme = () => (THEMES.includes(localStorage.getItem(KEY)) ? localStorage.getItem(KEY) : "system");

// light or dark on the root element (style.css), or nothing: the system's setting
export function applyTheme() {
  const theme = chosenTheme();
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  for (const item of document.querySelectorAll("[data-theme-choice]")) item.setAttribute("aria-checked", String(item.dataset.themeChoice === theme));
}

function choose(theme) {
  if (theme === "system") localStorage.removeItem(KEY); else localStorage.setItem(KEY, theme);
  applyTheme();
}

export function renderMore() {
  for (const [id, suffix] of [["export-md", ""], ["export-jsonl", "?format=jsonl"], ["export-json", "?format=json"]]) {
    $(id).hidden = !state.current;
    if (state.current) $(id).href = `/api/conversations/${state.current}/export${suffix}`;
  }
  $("trace-item").setAttribute("aria-checked", String(!!state.traceOpen));
}

export function installMore({ toggleTrace }) {
  $("more-button").append(icon("more"));
  installMenu($("more"), $("more-button"), $("more-menu"));
  for (const item of document.querySelectorAll("[data-theme-choice]")) item.addEventListener("click", () => choose(item.dataset.themeChoice));
  $("trace-item").addEventListener("click", () => toggleTrace(!state.traceOpen));
  applyTheme();
}
