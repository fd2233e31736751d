"""Session-wide fixtures (a private PostgreSQL server, started only when a test asks) and the
markers every test gets from what it uses, so that a new test is marked without thought:

- `postgres`: it uses a PostgreSQL fixture, or its module starts a server of its own;
- `processes`: its module starts other processes (`sophos serve`, MCP servers, the CLI);
- `browser`: it is under tests/browser (Chromium; those start `sophos serve` too);
- `slow` is set by hand on the longest tests.

`make test-fast` deselects all three. A module whose tests mark `processes` or `postgres`
themselves is trusted for that marker and not inferred (tests/contracts/test_tool_port.py
runs its in-memory toolbox fast and its MCP servers as processes).

Under pytest-xdist, `make test` hands out whole modules (classes for class-based suites:
`--dist loadscope`), so that a module-scoped fixture (one server for a module, one conformance
run) is built once; `--dist loadgroup` would be finer but cannot group on pytest 9, whose node
ids xdist 3.8 can no longer suffix. The modules of `slow` tests are handed out first, then
those of other processes, then PostgreSQL's, and the many short ones last, where they fill
what the workers have left (`--no-loadscope-reorder` keeps this order)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Collection, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from adapters.mcp.toolbox import McpToolbox
from adapters.postgres.database import PostgresDatabase
from adapters.postgres.saver import FencedPostgresSaver
from tests.support import sdk_suite, server, terminal, torture
from tests.support.app import SOPHOS, ledger_server_entry
from tests.support.postgres import PostgresServer, create_database, drop_database, postgres_server

TESTS = Path(__file__).parent
POSTGRES_FIXTURES = {"postgres_url", "postgres_template", "pg_url", "pg_empty_url"}
# what a module holds when it starts a PostgreSQL server or another process itself
POSTGRES_STARTERS: tuple[object, ...] = (PostgresServer, postgres_server)
PROCESS_STARTERS: tuple[object, ...] = (subprocess, server, terminal, torture, sdk_suite, McpToolbox, ledger_server_entry)
PROCESS_MODULES = {m.__name__ for m in (subprocess, server, terminal, torture, sdk_suite)}


def _holds(module: ModuleType, starters: tuple[object, ...], modules: Collection[str] = ()) -> bool:
    for value in vars(module).values():
        if any(value is s for s in starters) or getattr(value, "__module__", None) in modules:
            return True
        if isinstance(value, str) and value == SOPHOS:  # the `sophos` command, run as a process
            return True
    return False


@pytest.hookimpl(wrapper=True)  # marks before `-m` selects, order after pytest's own
def pytest_collection_modifyitems(items: list[pytest.Item]) -> Iterator[None]:
    explicit: dict[str, set[str]] = {}
    for item in items:
        for name in ("postgres", "processes"):
            if item.get_closest_marker(name):
                explicit.setdefault(item.nodeid.split("::")[0], set()).add(name)
    inferred: dict[tuple[str, str], bool] = {}
    for item in items:
        path = Path(str(item.path))
        file = item.nodeid.split("::")[0]
        module = getattr(item, "module", None)
        given = explicit.get(file, set())
        if TESTS / "browser" in path.parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.processes)
        if POSTGRES_FIXTURES & set(item.fixturenames) or (
            "postgres" not in given
            and module is not None
            and inferred.setdefault((file, "postgres"), _holds(module, POSTGRES_STARTERS))
        ):
            item.add_marker(pytest.mark.postgres)
        if "processes" not in given and module is not None:
            if inferred.setdefault((file, "processes"), _holds(module, PROCESS_STARTERS, PROCESS_MODULES)):
                item.add_marker(pytest.mark.processes)
    yield
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # the longest first, so that the run does not end on one of them: the modules of `slow`
        # tests, then those that start processes, then PostgreSQL's, then the many short ones,
        # which fill what the workers have left at the end
        rank: dict[str, int] = {}
        for item in items:
            file = item.nodeid.split("::")[0]
            weight = next((i for i, name in enumerate(("slow", "processes", "postgres")) if item.get_closest_marker(name)), 3)
            rank[file] = min(rank.get(file, 3), weight)
        items.sort(key=lambda item: rank[item.nodeid.split("::")[0]])


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the session (TEST_DATABASE_URL, or one started here); under
    pytest-xdist each worker is a session, so each gets a server, port and directory of its own."""
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
