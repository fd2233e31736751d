// Organising many chats on the sidebar: pinned conversations first, the archive as a view of
// its own, a temporary chat (not kept: never listed nor searched, deleted once the page
// leaves it), turn counts, and the title the model writes after the first answer, picked up
// when it arrives (it comes after the run's end, off its critical path).
import { api } from "/static/js/api.js";
import { $, icon } from "/static/js/dom.js";
import { state } from "/static/js/state.js";

const hooks = { reload: async () => {}, fail: () => {}, newTemporary: () => {}, autoTitles: () => false };
export function onOrganise(given) { Object.assign(hooks, given); }

// the query of the list on screen: the main list or the archive, with the organising fields
export function listParams() {
  const params = new URLSearchParams({ limit: "50", fields: "all" });
  if (state.archiveView) params.set("archived", "true");
  return params;
}

// the pinned conversations, shown first (not in the archive view, nor while filtering)
export async function loadPinned() {
  if (state.archiveView || state.query) { state.pinned = []; return; }
  state.pinned = (await api("/api/conversations?pinned=true&fields=all&limit=100")).conversations;
}

async function patch(c, change) {
  try { await api(`/api/conversations/${c.id}`, { method: "PATCH", body: change }); } catch (e) { hooks.fail(e, `row:${c.id}`); }
  await hooks.reload();
}
export const setPinned = (c, pinned) => patch(c, { pinned });
export const setArchived = (c, archived) => patch(c, { archived });

// the open conversation's turns are the page's own count (the list's comes after the run)
export function turnsOf(c) {
  if (c.id === state.current && state.detail) return state.messages.filter((m) => m.role === "user").length;
  return c.turns;
}

// a temporary chat is deleted once the page leaves it: another conversation, a new chat, the
// tab closed; a run still going is left to end first (the server answers 202)
export function leaving(id) {
  if (!id || id !== state.temporaryId) return;
  state.temporaryId = null;
  api(`/api/conversations/${id}`, { method: "DELETE", keepalive: true }).catch(() => {});
}

// the model's title, once written: the list is read again a few times after a first answer
export async function titleLater(id) {
  if (!hooks.autoTitles()) return;
  for (const wait of [800, 1500, 3000, 6000]) {
    const c = [...state.pinned, ...state.conversations].find((x) => x.id === id);
    if (!c || c.titleBy !== "message") return;
    await new Promise((r) => setTimeout(r, wait));
    await hooks.reload();
  }
}

export function installOrganise() {
  $("temporary-chat").append(icon("hourglass"));
  $("temporary-chat").addEventListener("click", () => hooks.newTemporary());
  $("archive-view").prepend(icon("archive"));
  $("archive-view").addEventListener("click", async () => {
    state.archiveView = !state.archiveView;
    $("archive-view").setAttribute("aria-pressed", String(state.archiveView));
    $("archive-view").replaceChildren(icon("archive"), state.archiveView ? "Back to conversations" : "Archived");
    $("sidebar").classList.toggle("archive", state.archiveView);
    await hooks.reload();
  });
  window.addEventListener("pagehide", () => leaving(state.current));
}
