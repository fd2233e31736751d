// Search across every conversation from the sidebar filter: results with their snippets
// below the filter; a click opens the conversation scrolled to the message.
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

function item(result, open) {
  const li = document.createElement("li");
  li.className = "search-result";
  li.dataset.testid = "search-result";
  li.tabIndex = 0;
  const title = document.createElement("span");
  title.className = "title";
  title.textContent = result.title;
  const where = document.createElement("span");
  where.className = "where";
  where.textContent = result.messageIndex === null ? "title" : result.role;
  const snippet = document.createElement("span");
  snippet.className = "snippet";
  snippet.append(...snippetNodes(result.snippet));
  li.append(title, where, snippet);
  const go = () => open(result);
  li.addEventListener("click", go);
  li.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
  return li;
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
      const r = await fetch(`/api/search?${new URLSearchParams({ q, limit: "20" })}`);
      body = await r.json();
      if (!r.ok) throw new Error((body.error && body.error.message) || `HTTP ${r.status}`);
    } catch (e) {
      body = { error: e.message };
    }
    if (ticket !== latest) return;  // a newer query was typed meanwhile
    const head = document.createElement("p");
    head.className = "search-head";
    if (body.error) head.textContent = body.error;
    else head.textContent = body.results.length ? "In all conversations" : "No message matches";
    box.replaceChildren(head, ...(body.results || []).map((r) => item(r, open)));
    box.hidden = false;
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    const q = input.value.trim();
    if (!q) { latest++; box.hidden = true; box.replaceChildren(); return; }
    timer = setTimeout(() => run(q), DELAY_MS);
  });
}
