"""Knowledge collections (issue 45 item 3): each user's named collections of documents
(text, Markdown, code, CSV, PDF text), split into passages (domain.passages) and indexed in
the user's KnowledgeStore; the passages that best answer a message that names a collection
(`#name`) within a share of the prompt (domain.knowledge.fit).

A file is known by its name in its collection: the same name put again with other bytes
replaces it (re-indexed, the old passages gone in the same transaction); the same bytes
again change nothing; the same bytes under another name of the collection are a duplicate,
not indexed twice. Every collection is its owner's: another user's answers as an unknown
one (CollectionNotFound, 404)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from domain.attachments import PDF_TYPE, Upload
from domain.errors import InvalidInput
from domain.knowledge import (
    CANDIDATES,
    MAX_COLLECTIONS,
    MAX_FILES,
    Candidate,
    Chunk,
    Collection,
    CollectionNotFound,
    KnowledgeFile,
    check_file_name,
    check_name,
    fit,
)
from domain.model import utc_now
from domain.passages import split_passages
from domain.principals import LOCAL, Principal
from ports.attachments import TextExtractor
from ports.knowledge import KnowledgeStore, Ranker, Retriever

log = logging.getLogger(__name__)
MAX_LINES = 200  # of a passage read back for a citation's link


class FullTextOrder(Ranker):
    """The full-text index's order (BM25 / ts_rank): the ranker until an embedding one is set."""

    async def rank(self, query: str, candidates: Sequence[Candidate]) -> Sequence[Candidate]:
        return candidates


@dataclass(frozen=True)
class Added:
    """What became of one file put into a collection: `added`, `replaced` (re-indexed),
    `unchanged` (the same bytes under the same name) or `duplicate` (the same bytes as
    `same_as`, another file of the collection: not indexed twice)."""

    name: str
    outcome: str
    passages: int
    same_as: str | None = None


class KnowledgeService(Retriever):
    def __init__(
        self,
        store: KnowledgeStore,
        extractor: TextExtractor,
        ranker: Ranker | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.extractor = extractor
        self.ranker: Ranker = ranker or FullTextOrder()
        self.clock = clock

    async def collections(self, *, by: Principal = LOCAL) -> Sequence[Collection]:
        return await self.store.collections(by.user_id)

    async def create(self, name: object, *, by: Principal = LOCAL) -> bool:
        """Create the collection (False: the user has it already)."""
        checked = check_name(name)
        if len(await self.store.collections(by.user_id)) >= MAX_COLLECTIONS:
            raise InvalidInput(f"A user has at most {MAX_COLLECTIONS} collections")
        return await self.store.create(by.user_id, checked, self.clock())

    async def drop(self, name: str, *, by: Principal = LOCAL) -> None:
        if not await self.store.drop(by.user_id, _known(name)):
            raise CollectionNotFound()
        log.info("collection %s of the user %s deleted", name, by.user_id)

    async def files(self, name: str, *, by: Principal = LOCAL) -> Sequence[KnowledgeFile]:
        found = await self.store.files(by.user_id, _known(name))
        if found is None:
            raise CollectionNotFound()
        return found

    async def add(self, name: object, uploads: Sequence[Upload], *, by: Principal = LOCAL) -> list[Added]:
        """Put the files into the collection (created when the user has none of that name),
        each indexed in a transaction of its own, in order."""
        checked = check_name(name)
        await self.create(checked, by=by)
        known = {f.name: f for f in await self.files(checked, by=by)}
        if len(known.keys() | {u.attachment.name for u in uploads}) > MAX_FILES:
            raise InvalidInput(f"A collection holds at most {MAX_FILES} files")
        out = []
        for upload in uploads:
            added = await self._add(by.user_id, checked, upload, known)
            out.append(added)
        return out

    async def _add(self, owner: str, name: str, upload: Upload, known: dict[str, KnowledgeFile]) -> Added:
        a = upload.attachment
        file_name = a.name.replace("[", "(").replace("]", ")")  # a citation is [file:lines]
        same = known.get(file_name)
        if same is not None and same.digest == a.digest:
            return Added(file_name, "unchanged", same.passages)
        twin = next((f for f in known.values() if f.digest == a.digest and f.name != file_name), None)
        if twin is not None:
            return Added(file_name, "duplicate", 0, twin.name)
        chunks = [Chunk(p.first, p.last, p.text) for p in split_passages(await self._text(upload))]
        file = KnowledgeFile(file_name, a.digest, a.size, a.media_type, len(chunks), self.clock())
        if not await self.store.put_file(owner, name, file, chunks):
            raise CollectionNotFound()  # deleted meanwhile
        known[file_name] = file
        log.info("file %s indexed in the collection %s of the user %s: %d passages", file_name, name, owner, len(chunks))
        return Added(file_name, "added" if same is None else "replaced", len(chunks))

    async def _text(self, upload: Upload) -> str:
        a = upload.attachment
        if a.kind == "image":
            raise InvalidInput(f"{a.name}: a collection holds text (text, Markdown, code, CSV, PDF), not images")
        if upload.text is not None:
            return upload.text
        if a.media_type == PDF_TYPE:
            return await self.extractor.pdf_text(a.name, upload.data)  # the bounded PDF workers
        raise InvalidInput(f"{a.name}: no text to index")

    async def delete_file(self, name: str, file: str, *, by: Principal = LOCAL) -> None:
        if not await self.store.delete_file(by.user_id, _known(name), check_file_name(file)):
            raise CollectionNotFound("No such file")

    async def passage(self, name: str, file: str, first: int, last: int, *, by: Principal = LOCAL) -> Sequence[Chunk]:
        """The file's passages that hold lines first..last (a citation's link), at most MAX_LINES lines' worth."""
        found = await self.store.chunks(by.user_id, _known(name), check_file_name(file))
        if found is None:
            raise CollectionNotFound("No such file")
        if first < 1 or last < first:
            raise InvalidInput("lines must be FIRST-LAST, 1 <= FIRST <= LAST")
        last = min(last, first + MAX_LINES - 1)
        return [c for c in found if c.last >= first and c.first <= last]

    async def retrieve(self, owner: str, names: Sequence[str], query: str, max_chars: int) -> tuple[Candidate, ...]:
        """The passages of the owner's collections `names` that best answer `query`, within
        `max_chars`: the full-text index's candidates, ordered by the ranker, then fitted."""
        candidates = await self.store.search(owner, names, query, CANDIDATES)
        ranked = list(await self.ranker.rank(query, candidates))[: len(candidates)]
        return fit(ranked, max_chars)

    async def existing(self, owner: str, names: Sequence[str]) -> list[str]:
        """Those of `names` the owner has as collections."""
        mine = {c.name for c in await self.store.collections(owner)}
        return [n for n in names if n in mine]

    async def drop_all(self, owner: str) -> int:
        return await self.store.drop_all(owner)


def _known(name: str) -> str:
    """A name from a path: one that cannot be a collection's is an unknown one (404)."""
    try:
        return check_name(name)
    except InvalidInput:
        raise CollectionNotFound() from None
