"""SearchIndex over the conversations and threads themselves, read at query time: it
cannot drift, and it scans everything (for tests and small stores)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from adapters.search_entries import FILE_SEARCH_CHARS
from domain.model import Message, UserMessage, searchable_text
from domain.search import words
from ports.attachments import AttachmentStore
from ports.checkpoints import CheckpointPort
from ports.runs import RunRepository
from ports.search import INDEXED_ROLES, MARK_CLOSE, MARK_OPEN, SearchHit, SearchIndex, SearchQuery, Term

SNIPPET_WORDS = 16


def _matches(tokens: Sequence[str], term: Term) -> list[int]:
    """Start positions where the term's words appear in a row."""
    n = len(term.words)
    out = []
    for i in range(len(tokens) - n + 1):
        window = tokens[i : i + n]
        if list(window[:-1]) == list(term.words[:-1]) and (
            window[-1].startswith(term.words[-1]) if term.prefix else window[-1] == term.words[-1]
        ):
            out.append(i)
    return out


def _snippet(text: str, query: SearchQuery) -> str | None:
    """The text's words around the first match, matches marked; None if a term is missing."""
    tokens = words(text)
    marked: set[int] = set()
    first = len(tokens)
    for term in query.terms:
        starts = _matches(tokens, term)
        if not starts:
            return None
        first = min(first, starts[0])
        for s in starts:
            marked.update(range(s, s + len(term.words)))
    lo = max(0, min(first, len(tokens) - SNIPPET_WORDS))
    shown = [f"{MARK_OPEN}{w}{MARK_CLOSE}" if i in marked else w for i, w in enumerate(tokens)][lo : lo + SNIPPET_WORDS]
    return ("…" if lo else "") + " ".join(shown) + ("…" if lo + SNIPPET_WORDS < len(tokens) else "")


class InMemorySearchIndex(SearchIndex):
    def __init__(self, runs: RunRepository, threads: CheckpointPort, files: AttachmentStore | None = None) -> None:
        self.runs = runs
        self.threads = threads
        self.files = files  # a user message is found by its files' text too

    async def _text(self, cid: str, m: Message) -> str:
        if self.files is None or not isinstance(m, UserMessage) or not m.attachments:
            return searchable_text(m)
        stored = await self.files.files(cid, [a.digest for a in m.attachments])
        extra = [f.text[:FILE_SEARCH_CHARS] for f in stored.values() if f.text]
        return searchable_text(replace(m, content="\n".join([m.content, *extra])))

    async def _entries(self, owner: str | None = None) -> list[tuple[str, str, int | None, str, str]]:
        out: list[tuple[str, str, int | None, str, str]] = []
        for conv in sorted(await self.runs.list_conversations(owner=owner), key=lambda c: (c.created_at, c.id)):
            out.append((conv.id, conv.title, None, "title", conv.title))
            messages = (await self.threads.get_thread(conv.id)).messages
            out += [(conv.id, conv.title, i, m.role, await self._text(conv.id, m)) for i, m in enumerate(messages)
                    if m.role in INDEXED_ROLES]
        return out

    async def search(self, query: SearchQuery, limit: int, offset: int, owner: str | None = None) -> Sequence[SearchHit]:
        scored = []
        for order, (cid, title, index, role, text) in enumerate(await self._entries(owner)):
            snippet = _snippet(text, query)
            if snippet is not None:  # more marked words in fewer words ranks first
                density = snippet.count(MARK_OPEN) / max(len(words(text)), 1)
                scored.append((-density, order, SearchHit(cid, title, index, role, snippet)))
        scored.sort(key=lambda s: (s[0], s[1]))
        return [hit for _, _, hit in scored[offset : offset + limit]]

    async def rebuild(self) -> int:
        return sum(1 for e in await self._entries() if e[4].strip())
