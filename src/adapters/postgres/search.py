"""Search on PostgreSQL: not built yet (SQLite's FTS5 index only). Every call is a clear
501 `NOT_SUPPORTED` rather than a search of the wrong database."""

from __future__ import annotations

from collections.abc import Sequence

from domain.errors import NotSupported
from ports.search import SearchHit, SearchIndex, SearchQuery

MESSAGE = "Full-text search is not available on PostgreSQL yet (DATABASE_URL); it works on the SQLite backend"


class PostgresSearchUnavailable(SearchIndex):
    async def search(self, query: SearchQuery, limit: int, offset: int) -> Sequence[SearchHit]:
        raise NotSupported(MESSAGE)

    async def rebuild(self) -> int:
        raise NotSupported(MESSAGE)
