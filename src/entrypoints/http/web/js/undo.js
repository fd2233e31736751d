// A few seconds to take an action back (delete): a toast with Undo; the action is done when
// the time is up, or at once when the page is closed (a keepalive request outlives it).
import { el } from "/static/js/dom.js";

export const UNDO_MS = 5000;
const pending = new Set();

function box() {
  let stack = document.getElementById("toasts");
  if (!stack) { stack = el("div", { id: "toasts", class: "toasts" }); document.body.append(stack); }
  return stack;
}

export function offerUndo(text, { commit, undo, ms = UNDO_MS }) {
  const entry = { commit };
  const toast = el("div", { class: "toast", role: "status", "data-testid": "undo-toast" }, el("span", {}, text));
  const settle = (undone) => {
    if (!pending.has(entry)) return;
    pending.delete(entry);
    clearTimeout(entry.timer);
    toast.remove();
    if (undone) undo(); else commit();
  };
  toast.append(el("button", { type: "button", "data-testid": "undo-button", onclick: () => settle(true) }, "Undo"));
  entry.timer = setTimeout(() => settle(false), ms);
  entry.settle = settle;
  pending.add(entry);
  box().append(toast);
  return toast;
}

window.addEventListener("pagehide", () => { for (const entry of [...pending]) entry.settle(false); });
