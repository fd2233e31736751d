// Search across every conversation from the sidebar filter: one row per conversation with
// its best snippet and "+N more" (which unfolds the other matches), in place of the list of
// titles while the query is active; a click opens the conversation scrolled to the message.
// Snippets come escaped with the matches in <mark>: only <mark> becomes markup here, the
// rest is decoded to text (never innerHTML).

const DELAY_MS = 250;

function decode(html) {
  return new DOMParser().parseFromString(`<body>${html}`, "text/html").body.textContent;
}

export function snippetNodes(snippet) {
  const out = [];
  let marked = false;
  for (const part of snippet.split(/(<\/?mark>)/)) {
    if (part === "<mark>") marked = true;
    else if (part === "</mark>") marked = false;
    else if (part) {
      const text = document.createTextNode(decode(part));
      if (marked) { const m = document.createElement("mark"); m.append(text); out.push(m); } else out.push(text);
    }
  }
  return out;
}

function hit(result, open) {
  const div = document.createElement("div");
  div.className = "search-hit";
  div.dataset.testid = "search-hit";
  div.tabIndex = 0;
  const where = document.createElement("span");
  where.className = "where";
  where.textContent = result.messageIndex === null ? "title" : result.role;
  const snippet = document.createElement("span");
  snippet.className = "snippet";
  snippet.append(...snippetNodes(result.snippet));
  div.append(where, snippet);
  const go = (e) => { e.stopPropagation(); open(result); };
  div.addEventListener("click", go);
  div.addEventListener("keydown", (e) => { if (e.key === "Enter") go(e); });
  return div;
}

// the results as one group per conversation, best first; a conversation's best snippet is
// its best message match (a title match only says the title again)
export function byConversation(results) {
  const groups = new Map();
  for (const r of results) {
    if (!groups.has(r.conversation)) groups.set(r.conversation, []);
    groups.get(r.conversation).push(r);
  }
  return [...groups.values()].map((hits) => {
    const best = hits.find((h) => h.messageIndex !== null) || hits[0];
    return { best, others: hits.filter((h) => h !== best) };
  });
}

function item({ best, others }, open) {
  const li = document.createElement("li");
  li.className = "search-result";
  li.dataset.testid = "search-result";
  const title = document.createElement("span");
  title.className = "title";
  title.textContent = best.title;
  li.append(title, hit(best, open));
  li.addEventListener("click", () => open(best));
  if (others.length) {
    const list = document.createElement("div");
    list.className = "search-others";
    list.hidden = true;
    list.append(...others.map((r) => hit(r, open)));
    const more = document.createElement("button");
    more.type = "button";
    more.className = "link search-more";
    more.dataset.testid = "search-more";
    more.textContent = `+${others.length} more`;
    more.setAttribute("aria-expanded", "false");
    more.addEventListener("click", (e) => {
      e.stopPropagation();
      list.hidden = !list.hidden;
      more.setAttribute("aria-expanded", String(!list.hidden));
      more.textContent = list.hidden ? `+${others.length} more` : "fewer";
    });
    li.append(more, list);
  }
  return li;
}

// the inactive branches, which the index does not hold: said under the results
function unsearchedNote(unsearched) {
  const branches = (unsearched && unsearched.branches) || 0;
  if (!branches) return null;
  const conversations = unsearched.conversations;
  const p = document.createElement("p");
  p.className = "search-note";
  p.dataset.testid = "search-unsearched";
  p.textContent = `Not searched: ${branches} inactive branch${branches === 1 ? "" : "es"} of ${conversations} ` +
    `conversation${conversations === 1 ? "" : "s"} (only the branch each shows is searched).`;
  return p;
}

// `openConversation(id)` loads and renders a conversation; its messages carry data-index.
export function installSearch(input, openConversation) {
  const box = document.createElement("section");
  box.className = "search-results";
  box.dataset.testid = "search-results";
  box.setAttribute("aria-label", "Matches in all conversations");
  box.hidden = true;
  input.after(box);
  let timer = null;
  let latest = 0;

  async function open(result) {
    await openConversation(result.conversation);
    if (result.messageIndex === null) return;
    const target = document.querySelector(`#messages [data-index="${result.messageIndex}"]`);
    if (!target) return;
    target.scrollIntoView({ block: "center" });
    target.classList.add("found");
    setTimeout(() => target.classList.remove("found"), 2000);
  }

  async function run(q) {
    const ticket = ++latest;
    let body;
    try {
      const r = await fetch(`/api/search?${new URLSearchParams({ q, limit: "50" })}`);
      body = await r.json();
      if (!r.ok) throw new Error((body.error && body.error.message) || `HTTP ${r.status}`);
    } catch (e) {
      body = { error: e.message };
    }
    if (ticket !== latest) return;  // a newer query was typed meanwhile
    const head = document.createElement("p");
    head.className = "search-head";
    const groups = byConversation(body.results || []);
    if (body.error) head.textContent = body.error;
    else head.textContent = groups.length ? `Matches in ${groups.length} conversation${groups.length === 1 ? "" : "s"}` : "No matches";
    const list = document.createElement("ul");
    list.className = "search-list";
    list.append(...groups.map((g) => item(g, open)));
    box.replaceChildren(head, list);
    const note = unsearchedNote(body.unsearched);
    if (note) box.append(note);
    box.hidden = false;
  }

  // while a query is active its results replace the list of titles
  const searching = (on) => input.closest(".sidebar").classList.toggle("searching", on);
  input.addEventListener("input", () => {
    clearTimeout(timer);
    const q = input.value.trim();
    searching(!!q);
    if (!q) { latest++; box.hidden = true; box.replaceChildren(); return; }
    timer = setTimeout(() => run(q), DELAY_MS);
  });
}
