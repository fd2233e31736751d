"""KnowledgeStore in memory: dicts behind a lock, ranked by BM25 (adapters.files.passages,
over the passages' stems), gone when the process exits."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from adapters.files.passages import Bm25Passages
from adapters.storage.knowledge_text import passage_stems, search_stems
from domain.knowledge import Candidate, Chunk, Collection, KnowledgeFile
from ports.knowledge import KnowledgeStore


@dataclass
class _Collection:
    created_at: datetime
    files: dict[str, tuple[KnowledgeFile, tuple[Chunk, ...], tuple[str, ...]]] = field(default_factory=dict)


class InMemoryKnowledge(KnowledgeStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owners: dict[str, dict[str, _Collection]] = {}

    async def create(self, owner: str, name: str, now: datetime) -> bool:
        with self._lock:
            mine = self._owners.setdefault(owner, {})
            if name in mine:
                return False
            mine[name] = _Collection(now)
            return True

    async def collections(self, owner: str) -> Sequence[Collection]:
        with self._lock:
            mine = self._owners.get(owner, {})
            return [
                Collection(n, len(c.files), sum(len(f[1]) for f in c.files.values()), c.created_at)
                for n, c in sorted(mine.items())
            ]

    async def drop(self, owner: str, name: str) -> bool:
        with self._lock:
            return self._owners.get(owner, {}).pop(name, None) is not None

    async def files(self, owner: str, name: str) -> Sequence[KnowledgeFile] | None:
        with self._lock:
            c = self._owners.get(owner, {}).get(name)
            return None if c is None else [f[0] for _, f in sorted(c.files.items())]

    async def put_file(self, owner: str, name: str, file: KnowledgeFile, chunks: Sequence[Chunk]) -> bool:
        indexed = tuple(passage_stems(c.text) for c in chunks)
        with self._lock:
            c = self._owners.get(owner, {}).get(name)
            if c is None:
                return False
            c.files[file.name] = (file, tuple(chunks), indexed)
            return True

    async def delete_file(self, owner: str, name: str, file: str) -> bool:
        with self._lock:
            c = self._owners.get(owner, {}).get(name)
            return c is not None and c.files.pop(file, None) is not None

    async def chunks(self, owner: str, name: str, file: str) -> Sequence[Chunk] | None:
        with self._lock:
            c = self._owners.get(owner, {}).get(name)
            found = c.files.get(file) if c is not None else None
            return None if found is None else found[1]

    async def search(self, owner: str, names: Sequence[str], query: str, limit: int) -> Sequence[Candidate]:
        words = search_stems(query)
        if not words:
            return []
        with self._lock:
            mine = self._owners.get(owner, {})
            rows = [
                (n, f.name, chunk, stems)
                for n in dict.fromkeys(names)
                if n in mine
                for f, chunks, indexed in mine[n].files.values()
                for chunk, stems in zip(chunks, indexed, strict=True)
            ]
        scores = Bm25Passages().rank(" ".join(words), [r[3] for r in rows])
        found = [Candidate(n, f, c.first, c.last, c.text, s) for (n, f, c, _), s in zip(rows, scores, strict=True) if s > 0]
        return sorted(found, key=lambda c: -c.score)[:limit]

    async def drop_all(self, owner: str) -> int:
        with self._lock:
            return len(self._owners.pop(owner, {}))
