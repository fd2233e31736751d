"""The PostgreSQL backend: one database shared by many processes, on one pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from domain.errors import SophosError
from domain.model import RunOwner
from ports.backend import Backend, Health
from ports.checkpoints import CheckpointPort

if TYPE_CHECKING:
    from adapters.postgres.assistants import PostgresAssistantStore
    from adapters.postgres.database import PostgresDatabase
    from adapters.postgres.knowledge import PostgresKnowledge
    from adapters.postgres.maintenance import PostgresMaintenance
    from adapters.postgres.presets import PostgresPresetStore
    from adapters.postgres.runs import PostgresRunStore
    from adapters.postgres.saver import FencedPostgresSaver
    from adapters.postgres.search import PostgresSearchIndex
    from adapters.postgres.sessions import PostgresSessionStore
    from adapters.postgres.store import PostgresStore
    from adapters.postgres.traces import PostgresSpanStore
    from adapters.postgres.usage import PostgresAuditLog, PostgresUsageStore
    from adapters.postgres.users import PostgresUserStore

FIX = "check that the PostgreSQL server is up and DATABASE_URL is right"


def redacted(url: str) -> str:
    """The URL without its password, for people and logs."""
    scheme, _, rest = url.partition("://")
    credentials, at, where = rest.rpartition("@")
    user = credentials.partition(":")[0]
    return f"{scheme}://{user}{at}{where}"


class PostgresBackend(Backend):
    """The pool opens (and the schema migrates) on first use, inside the event loop that
    uses it. `owner` is this process, whose presence the run store holds."""

    name = "postgres"

    def __init__(
        self, url: str, pool_size: int = 10, wait_timeout: float = 5.0, keep: int = 3, owner: RunOwner | None = None
    ) -> None:
        self.url = url
        self.pool_size = pool_size
        self.wait_timeout = wait_timeout
        self.keep = keep
        self.owner = owner
        self.where = redacted(url)
        self._db: PostgresDatabase | None = None
        self._runs: PostgresRunStore | None = None
        self._saver: FencedPostgresSaver | None = None
        self._search: PostgresSearchIndex | None = None
        self._maintenance: PostgresMaintenance | None = None

    def database(self) -> PostgresDatabase:
        if self._db is None:
            from adapters.postgres.database import PostgresDatabase

            self._db = PostgresDatabase(self.url, pool_size=self.pool_size, wait_timeout=self.wait_timeout)
        return self._db

    def runs(self) -> PostgresRunStore:
        if self._runs is None:
            from adapters.postgres.runs import PostgresRunStore

            # the saver first, so that its tables are part of the migration the store's
            # first use runs (PostgresDatabase.also_migrate)
            self.saver()
            self._runs = PostgresRunStore(self.database(), owner=self.owner)
        return self._runs

    def saver(self) -> FencedPostgresSaver:
        if self._saver is None:
            from adapters.postgres.saver import FencedPostgresSaver

            self._saver = FencedPostgresSaver(self.database(), keep=self.keep)
        return self._saver

    def maintenance(self) -> PostgresMaintenance:
        if self._maintenance is None:
            from adapters.postgres.maintenance import PostgresMaintenance

            self._maintenance = PostgresMaintenance(self.url)
        return self._maintenance

    def sessions(self) -> PostgresSessionStore:
        from adapters.postgres.sessions import PostgresSessionStore

        return PostgresSessionStore(self.database())

    def users(self) -> PostgresUserStore:
        from adapters.postgres.users import PostgresUserStore

        return PostgresUserStore(self.database())

    def presets(self) -> PostgresPresetStore:
        from adapters.postgres.presets import PostgresPresetStore

        self.runs()  # the schema is migrated by the run store's first use
        return PostgresPresetStore(self.database())

    def usage(self) -> PostgresUsageStore:
        from adapters.postgres.usage import PostgresUsageStore

        self.runs()  # the schema is migrated by the run store's first use
        return PostgresUsageStore(self.database())

    def traces(self) -> PostgresSpanStore:
        from adapters.postgres.traces import PostgresSpanStore

        self.runs()  # migrates
        return PostgresSpanStore(self.database())

    def audit(self) -> PostgresAuditLog:
        from adapters.postgres.usage import PostgresAuditLog

        self.runs()
        return PostgresAuditLog(self.database())

    def assistants(self) -> PostgresAssistantStore:
        from adapters.postgres.assistants import PostgresAssistantStore

        self.runs()  # migrates
        return PostgresAssistantStore(self.database())

    def store(self) -> PostgresStore:
        from adapters.postgres.store import PostgresStore

        self.runs()  # the schema is migrated by the run store's first use
        return PostgresStore(self.database())

    def knowledge(self) -> PostgresKnowledge:
        from adapters.postgres.knowledge import PostgresKnowledge

        self.runs()  # the schema is migrated by the run store's first use
        return PostgresKnowledge(self.database())

    def search(self, threads: Callable[[], CheckpointPort]) -> PostgresSearchIndex:
        if self._search is None:
            from adapters.postgres.search import PostgresSearchIndex

            # the saver decodes threads (LangGraph): used only to rebuild or catch up
            self._search = PostgresSearchIndex(
                self.database(), lambda: self.saver().reindex(), lambda: self.saver().index_missing()
            )
        return self._search

    async def health(self, integrity: bool = False) -> Health:
        # PostgreSQL checks its own pages: `integrity` adds nothing here
        try:
            store = self.runs()
            await store.ready()
            if not await store.ping():
                return Health(self.where, reachable=False, writable=False, problem="not reachable", fix=FIX)
        except SophosError as e:
            return Health(self.where, reachable=False, writable=False, problem=e.message, fix=FIX)
        return Health(self.where, reachable=True, writable=True, schema_version=store.schema_version)

    async def aclose(self) -> None:
        runs, search = self._runs, self._search
        self._runs = self._search = None
        if search is not None:
            await search.aclose()
        if runs is not None:
            await runs.aclose()
        elif self._db is not None:
            await self._db.close()
