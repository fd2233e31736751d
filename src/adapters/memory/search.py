"""SearchIndex over the conversations and threads themselves, read at query time: it
cannot drift, and it scans everything (for tests and small stores)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from adapters.search_entries import FILE_SEARCH_CHARS
from adapters.search_text import WORD, matches_all, snippet
from domain.model import Message, UserMessage, searchable_text
from ports.attachments import AttachmentStore
from ports.checkpoints import CheckpointPort
from ports.runs import RunRepository
from ports.search import INDEXED_ROLES, MARK_OPEN, SearchHit, SearchIndex, SearchQuery, Unsearched


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
            out += [
                (conv.id, conv.title, i, m.role, await self._text(conv.id, m))
                for i, m in enumerate(messages)
                if m.role in INDEXED_ROLES
            ]
        return out

    async def search(self, query: SearchQuery, limit: int, offset: int, owner: str | None = None) -> Sequence[SearchHit]:
        scored = []
        for order, (cid, title, index, role, text) in enumerate(await self._entries(owner)):
            if matches_all(text, query):  # more marked words in fewer words ranks first
                shown = snippet(text, query)
                density = shown.count(MARK_OPEN) / max(len(WORD.findall(text)), 1)
                scored.append((-density, order, SearchHit(cid, title, index, role, shown)))
        scored.sort(key=lambda s: (s[0], s[1]))
        return [hit for _, _, hit in scored[offset : offset + limit]]

    async def unsearched(self, owner: str | None = None) -> Unsearched:
        return Unsearched()  # the in-memory stores keep no branches

    async def rebuild(self) -> int:
        return sum(1 for e in await self._entries() if e[4].strip())
