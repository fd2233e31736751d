// Keyboard shortcuts, as ChatGPT has them (Ctrl on Linux and Windows, Cmd on a Mac), and
// the `?` overlay that lists them. What each does is app.js's (`install(actions)`).
import { $, copyText, el } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

const MAC = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
const MOD = MAC ? "⌘" : "Ctrl";

// [keys shown, what it does, matcher]
const mod = (e) => (MAC ? e.metaKey : e.ctrlKey);
export const SHORTCUTS = [
  [[MOD, "Shift", "O"], "New chat", (e) => mod(e) && e.shiftKey && e.code === "KeyO", "newChat"],
  [["Shift", "Esc"], "Focus the message box", (e) => e.shiftKey && e.key === "Escape", "focusInput"],
  [[MOD, "K"], "Search conversations", (e) => mod(e) && !e.shiftKey && e.code === "KeyK", "search"],
  [[MOD, "Shift", "C"], "Copy the last answer", (e) => mod(e) && e.shiftKey && e.code === "KeyC", "copyAnswer"],
  [[MOD, "Shift", ";"], "Copy the last code block", (e) => mod(e) && e.shiftKey && e.code === "Semicolon", "copyCode"],
  [[MOD, "Shift", "S"], "Show or hide the conversations", (e) => mod(e) && e.shiftKey && e.code === "KeyS", "toggleSidebar"],
  [["Esc"], "Stop the answer", null, null],
  [["↑"], "Edit your last message (in an empty message box)", null, null],
  [["?"], "This list (or " + MOD + " /)", (e) => (mod(e) && e.code === "Slash") || (e.key === "?" && !typing(e)), "help"],
];

function typing(e) {
  const t = e.target;
  return t && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName));
}

export function notify(text) {
  let stack = document.getElementById("toasts");
  if (!stack) { stack = el("div", { id: "toasts", class: "toasts" }); document.body.append(stack); }
  const toast = el("div", { class: "toast", role: "status", "data-testid": "notice" }, el("span", {}, text));
  stack.append(toast);
  setTimeout(() => toast.remove(), 2000);
}

function overlay() {
  let dialog = $("shortcuts");
  if (dialog) return dialog;
  dialog = el("dialog", { id: "shortcuts", class: "shortcuts", "data-testid": "shortcuts", "aria-labelledby": "shortcuts-title" },
    el("div", { class: "trace-head" }, el("h2", { id: "shortcuts-title" }, "Keyboard shortcuts"),
      el("button", { type: "button", "data-testid": "shortcuts-close", onclick: () => dialog.close() }, "Close")),
    el("table", {}, el("tbody", {}, SHORTCUTS.map(([keys, what]) => el("tr", {},
      el("td", {}, keys.flatMap((k, i) => (i ? [" + ", el("kbd", {}, k)] : [el("kbd", {}, k)]))), el("td", {}, what))))));
  dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); });  // a click outside closes it
  document.body.append(dialog);
  return dialog;
}

export const lastAnswer = () => [...state.messages].reverse().find((m) => m.role === "assistant" && m.content);

export function installShortcuts(actions) {
  const all = {
    ...actions,
    focusInput: () => $("input").focus(),
    search: () => { if (window.matchMedia("(max-width: 640px)").matches) actions.openSidebar(); $("filter").focus(); $("filter").select(); },
    copyAnswer: async () => {
      const m = lastAnswer();
      notify(m && (await copyText(m.content)) ? "Copied the last answer" : "No answer to copy");
    },
    copyCode: async () => {
      const blocks = document.querySelectorAll("#messages .code-block pre code");
      const code = blocks.length ? blocks[blocks.length - 1].textContent : null;
      notify(code !== null && (await copyText(code)) ? "Copied the last code block" : "No code block to copy");
    },
    help: () => { const d = overlay(); if (d.open) d.close(); else d.showModal(); },
  };
  document.addEventListener("keydown", (e) => {
    if (e.isComposing) return;
    const hit = SHORTCUTS.find(([, , match]) => match && match(e));
    if (!hit || ($("shortcuts") && $("shortcuts").open && hit[3] !== "help")) return;
    e.preventDefault();
    e.stopPropagation();
    all[hit[3]]();
  }, true);
  // Up in an empty message box edits the last message you sent
  $("input").addEventListener("keydown", (e) => {
    if (e.key !== "ArrowUp" || e.shiftKey || e.altKey || mod(e) || $("input").value) return;
    const index = state.messages.map((m) => m.role).lastIndexOf("user");
    if (index < 0 || state.streaming || !state.current) return;
    e.preventDefault();
    actions.editMessage(index);
  });
}
