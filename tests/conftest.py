"""Session-wide fixtures: a private PostgreSQL server, started only when a test asks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.saver import FencedPostgresSaver
from tests.support.postgres import create_database, drop_database, postgres_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the session (TEST_DATABASE_URL, or one started here)."""
    with postgres_server() as url:
        yield url


async def _migrate(url: str) -> None:
    db = PostgresDatabase(url)
    FencedPostgresSaver(db)  # its tables are part of the migration
    await db.pool()
    await db.close()


@pytest.fixture(scope="session")
def postgres_template(postgres_url: str) -> Iterator[str]:
    """A migrated database that fresh ones are copied from (a copy is much faster than migrating)."""
    url = create_database(postgres_url)
    asyncio.run(_migrate(url))
    yield url.rpartition("/")[2]
    drop_database(url)


@pytest.fixture
def pg_url(postgres_url: str, postgres_template: str) -> Iterator[str]:
    """A fresh database with the schema, for one test."""
    url = create_database(postgres_url, template=postgres_template)
    yield url
    drop_database(url)


@pytest.fixture
def pg_empty_url(postgres_url: str) -> Iterator[str]:
    """A fresh, empty database (no schema), for one test."""
    url = create_database(postgres_url)
    yield url
    drop_database(url)
