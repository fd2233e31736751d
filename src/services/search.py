"""The search use case: a page of matches for a query, and a full reindex."""

from __future__ import annotations

from collections.abc import Sequence

from domain.principals import LOCAL, Principal
from domain.search import SearchHit, SearchPage, SearchResult, _limit, _offset, parse_query
from ports.runs import RunRepository
from ports.search import SearchIndex

# the matches a user's search ranks among: as many as the indexes rank for any query
# (ports.search), so a user sees what a single-user server would show them
SCAN = 2000


class SearchService:
    def __init__(self, index: SearchIndex, runs: RunRepository | None = None) -> None:
        self.index = index
        self.runs = runs

    async def _hits(self, query: object, size: int, offset: int, by: Principal) -> Sequence[SearchHit]:
        parsed = parse_query(query)
        if by.sees_all or self.runs is None:
            return await self.index.search(parsed, size + 1, offset)
        # the index is shared: only matches in `by`'s own conversations are kept, before the
        # page is cut, so another user's words never reach the page nor shift its cursor
        mine = {c.id for c in await self.runs.list_conversations(owner=by.user_id)}
        if not mine:
            return []
        hits = [h for h in await self.index.search(parsed, SCAN, 0) if h.conversation_id in mine]
        return hits[offset : offset + size + 1]

    async def search(self, q: object, limit: object = None, before: object = None, *,
                     by: Principal = LOCAL) -> SearchPage:
        """A page of the best matches for `q` in the conversations `by` may reach, after the
        cursor `before` (from the previous page's next_cursor), best first."""
        size, offset = _limit(limit), _offset(before)
        hits = await self._hits(q, size, offset, by)
        results = [
            SearchResult(h.conversation_id, h.title, h.message_index, h.role, h.snippet)
            for h in hits[:size]
        ]
        return SearchPage(results, str(offset + size) if len(hits) > size else None)

    async def reindex(self) -> int:
        """Rebuild the whole index from the conversations and their threads; returns the
        number of entries written."""
        return await self.index.rebuild()
