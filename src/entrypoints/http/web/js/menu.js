// A button that opens a menu under it (the header's "More" and account menus): the first item
// takes the focus, ↑/↓ move among the items, Esc closes it and gives the focus back to the
// button, a click elsewhere or on an item closes it. It opens leftwards under the button's
// right edge, or rightwards when that would leave the screen.

const installed = [];

// `root` holds `button` and `menu`; the items are the menu's visible [role^=menuitem]
export function installMenu(root, button, menu) {
  const items = () => [...menu.querySelectorAll("[role^=menuitem]")].filter((i) => i.offsetParent !== null);
  const place = () => {
    menu.classList.remove("start");
    if (!menu.hidden && menu.getBoundingClientRect().left < 0) menu.classList.add("start");
  };
  const close = (focus = false) => {
    menu.hidden = true;
    button.setAttribute("aria-expanded", "false");
    if (focus) button.focus();
  };
  const open = () => {
    for (const other of installed) if (other.menu !== menu) other.close();
    menu.hidden = false;
    place();
    button.setAttribute("aria-expanded", "true");
    const first = items()[0];
    if (first) first.focus();
  };
  button.setAttribute("aria-haspopup", "menu");
  button.setAttribute("aria-expanded", "false");
  button.addEventListener("click", () => (menu.hidden ? open() : close()));
  menu.addEventListener("click", (e) => { if (e.target.closest("[role^=menuitem]")) close(); });
  root.addEventListener("keydown", (e) => {
    if (menu.hidden) return;
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); close(true); return; }
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    const all = items();
    const at = all.indexOf(document.activeElement);
    all[(at + (e.key === "ArrowDown" ? 1 : all.length - 1)) % all.length].focus();
  });
  document.addEventListener("click", (e) => { if (!root.contains(e.target)) close(); });
  window.addEventListener("resize", place);
  const handle = { menu, open, close };
  installed.push(handle);
  return handle;
}
