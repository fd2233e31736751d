"""Session-wide fixtures: a private PostgreSQL server, started only when a test asks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import create_database, drop_database, postgres_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the session (TEST_DATABASE_URL, or one started here)."""
    with postgres_server() as url:
        yield url


@pytest.fixture
def pg_url(postgres_url: str) -> Iterator[str]:
    """A fresh, empty database for one test."""
    url = create_database(postgres_url)
    yield url
    drop_database(url)
