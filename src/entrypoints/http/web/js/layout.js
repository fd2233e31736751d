// The sidebar's width: dragged with its edge, or the arrow keys on it, and remembered.
import { $ } from "/static/js/dom.js";

const KEY = "sophos.sidebarWidth";
const MIN = 14 * 16, MAX = 36 * 16, STEP = 16;

function apply(px) {
  const width = Math.round(Math.min(MAX, Math.max(MIN, px)));
  $("layout").style.setProperty("--sidebar-width", `${width}px`);
  $("sidebar-resize").setAttribute("aria-valuenow", String(width));
  return width;
}

export function installResizer() {
  const handle = $("sidebar-resize");
  handle.setAttribute("aria-valuemin", String(MIN));
  handle.setAttribute("aria-valuemax", String(MAX));
  const saved = Number(localStorage.getItem(KEY));
  let width = apply(saved || $("sidebar").getBoundingClientRect().width || 20 * 16);
  const save = () => localStorage.setItem(KEY, String(width));
  handle.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    handle.setPointerCapture(e.pointerId);
    const left = $("sidebar").getBoundingClientRect().left;
    const move = (ev) => { width = apply(ev.clientX - left); };
    const up = () => { handle.removeEventListener("pointermove", move); handle.removeEventListener("pointerup", up); save(); };
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
  });
  handle.addEventListener("keydown", (e) => {
    const step = { ArrowLeft: -STEP, ArrowRight: STEP }[e.key];
    if (!step) return;
    e.preventDefault();
    width = apply(width + step);
    save();
  });
}
