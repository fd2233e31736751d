"""The search use case: a page of matches for a query, and a full reindex."""

from __future__ import annotations

from collections.abc import Sequence

from domain.principals import LOCAL, Principal, owner_filter
from domain.search import SearchHit, SearchPage, SearchResult, _limit, _offset, parse_query
from ports.runs import RunRepository
from ports.search import SearchIndex


class SearchService:
    def __init__(self, index: SearchIndex, runs: RunRepository | None = None) -> None:
        self.index = index
        self.runs = runs  # to leave temporary conversations out (None: nothing left out)

    async def search(self, q: object, limit: object = None, before: object = None, *, by: Principal = LOCAL) -> SearchPage:
        """A page of the best matches for `q` in the conversations `by` may reach, after the
        cursor `before` (from the previous page's next_cursor), best first, and the
        inactive branches of those conversations, which the index does not hold."""
        query, size, offset = parse_query(q), _limit(limit), _offset(before)
        # the index keeps only `by`'s conversations' matches before ranking and cutting the
        # page: another user's words never reach it nor shift its cursor
        hits: Sequence[SearchHit] = await self.index.search(query, size + 1, offset, owner_filter(by))
        # a temporary conversation is never searched (domain.organise): its hits are left out
        hidden = await self.runs.temporary_among([h.conversation_id for h in hits]) if self.runs and hits else set()
        results = [
            SearchResult(h.conversation_id, h.title, h.message_index, h.role, h.snippet)
            for h in hits[:size]
            if h.conversation_id not in hidden
        ]
        unsearched = await self.index.unsearched(owner_filter(by))
        return SearchPage(results, str(offset + size) if len(hits) > size else None, unsearched)

    async def reindex(self) -> int:
        """Rebuild the whole index from the conversations and their threads; returns the
        number of entries written."""
        return await self.index.rebuild()
