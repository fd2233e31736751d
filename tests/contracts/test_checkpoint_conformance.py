"""LangGraph's own checkpointer suite (langgraph-checkpoint-conformance) against our savers,
the SQLite one and the PostgreSQL subclass of the official saver.

The suite is run the way it is meant to be run, through `validate()` with a registered
saver factory (a fresh SQLite file, or a fresh PostgreSQL database, per capability). Its per-case results are then replayed
as one pytest case each, so a conformance failure shows up under its own name with the
suite's traceback. The optional extended methods Sophos does not use (delete_for_runs,
copy_thread, prune) are not implemented: the suite's capability detection leaves them out,
and a test pins that list, so implementing one (or losing a base one) is noticed.

Retention is off (keep=0): with retention on, the `list` cases that write four checkpoints
to one thread and read them back fail, which is what retention is for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import pytest_asyncio
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability
from langgraph.checkpoint.conformance.report import CapabilityReport, ProgressCallbacks
from langgraph.checkpoint.conformance.spec.test_copy_thread import ALL_COPY_THREAD_TESTS
from langgraph.checkpoint.conformance.spec.test_delete_for_runs import ALL_DELETE_FOR_RUNS_TESTS
from langgraph.checkpoint.conformance.spec.test_delete_thread import ALL_DELETE_THREAD_TESTS
from langgraph.checkpoint.conformance.spec.test_get_tuple import ALL_GET_TUPLE_TESTS
from langgraph.checkpoint.conformance.spec.test_list import ALL_LIST_TESTS
from langgraph.checkpoint.conformance.spec.test_prune import ALL_PRUNE_TESTS
from langgraph.checkpoint.conformance.spec.test_put import ALL_PUT_TESTS
from langgraph.checkpoint.conformance.spec.test_put_writes import ALL_PUT_WRITES_TESTS

from adapters.postgres.database import PostgresDatabase
from adapters.postgres.saver import FencedPostgresSaver
from adapters.sqlite.saver import ThreadedSqliteSaver
from tests.support.postgres import create_database, drop_database

# The suite's cases by capability, read from the pinned package: only their names are used
# here, to give each case its own pytest id; `validate()` is what runs them.
CASES: dict[Capability, list[Callable[..., Any]]] = {
    Capability.PUT: ALL_PUT_TESTS,
    Capability.PUT_WRITES: ALL_PUT_WRITES_TESTS,
    Capability.GET_TUPLE: ALL_GET_TUPLE_TESTS,
    Capability.LIST: ALL_LIST_TESTS,
    Capability.DELETE_THREAD: ALL_DELETE_THREAD_TESTS,
}
# Optional extended capabilities our saver does not implement (Sophos does not call them).
NOT_IMPLEMENTED = {
    Capability.DELETE_FOR_RUNS: ALL_DELETE_FOR_RUNS_TESTS,
    Capability.COPY_THREAD: ALL_COPY_THREAD_TESTS,
    Capability.PRUNE: ALL_PRUNE_TESTS,
}
CASE_IDS = [(cap.value, case.__name__) for cap, cases in CASES.items() for case in cases]


# What the PostgreSQL subclass inherits from the official saver (and Sophos does not call).
INHERITED_BY_POSTGRES = {Capability.PRUNE}


@dataclass
class ConformanceRun:
    report: CapabilityReport
    errors: dict[tuple[str, str], str | None] = field(default_factory=dict)  # None: passed
    inherited: set[Capability] = field(default_factory=set)

    def inherited_cases(self) -> set[tuple[str, str]]:
        return {(cap.value, case.__name__) for cap in self.inherited for case in NOT_IMPLEMENTED[cap]}


SaverFactory = Callable[[], AsyncIterator[Any]]


def sqlite_savers(directory: Path, keep: int) -> SaverFactory:
    async def fresh_saver() -> AsyncIterator[ThreadedSqliteSaver]:
        saver = ThreadedSqliteSaver.open(str(directory / f"{uuid4()}.sqlite"), keep=keep)
        try:
            yield saver
        finally:
            saver.close()

    return fresh_saver


def postgres_savers(server_url: str, keep: int) -> SaverFactory:
    async def fresh_saver() -> AsyncIterator[FencedPostgresSaver]:
        url = create_database(server_url)
        db = PostgresDatabase(url)
        saver = FencedPostgresSaver(db, keep=keep)
        await db.pool()  # migrates, the official saver's setup included
        try:
            yield saver
        finally:
            await db.close()
            drop_database(url)

    return fresh_saver


async def run_suite(name: str, savers: SaverFactory, inherited: set[Capability]) -> ConformanceRun:
    errors: dict[tuple[str, str], str | None] = {}

    def record(capability: str, case: str, passed: bool, error: str | None) -> None:
        errors[(capability, case)] = None if passed else (error or "failed")

    registered = checkpointer_test(name=name)(savers)
    report = await validate(registered, progress=ProgressCallbacks(on_test_result=record))
    return ConformanceRun(report, errors, inherited)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def savers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, SaverFactory, set[Capability]]]:
    if request.param == "sqlite":
        yield "ThreadedSqliteSaver(keep=0)", sqlite_savers(tmp_path_factory.mktemp("conformance"), keep=0), set()
    else:
        url = request.getfixturevalue("postgres_url")
        yield "FencedPostgresSaver(keep=0)", postgres_savers(url, keep=0), INHERITED_BY_POSTGRES


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def conformance(savers: tuple[str, SaverFactory, set[Capability]]) -> ConformanceRun:
    return await run_suite(*savers)


@pytest.mark.parametrize(("capability", "case"), CASE_IDS, ids=[f"{c}::{n}" for c, n in CASE_IDS])
def test_the_saver_passes_the_conformance_case(conformance: ConformanceRun, capability: str, case: str) -> None:
    assert conformance.report.results[capability].detected, f"{capability} is no longer implemented"
    assert (capability, case) in conformance.errors, f"the suite did not run {capability}::{case}"
    error = conformance.errors[(capability, case)]
    if error is not None:
        pytest.fail(f"{capability}::{case}\n{error}", pytrace=False)


def test_the_suite_ran_only_the_cases_listed_here(conformance: ConformanceRun) -> None:
    assert set(conformance.errors) <= set(CASE_IDS) | conformance.inherited_cases()


def test_the_inherited_optional_capabilities_pass_too(conformance: ConformanceRun) -> None:
    inherited = conformance.inherited_cases()
    assert inherited <= set(conformance.errors)
    assert {case: conformance.errors[case] for case in inherited if conformance.errors[case]} == {}


def test_only_the_unused_optional_capabilities_are_left_out(conformance: ConformanceRun) -> None:
    missing = {name for name, result in conformance.report.results.items() if not result.detected}
    assert missing == {cap.value for cap in NOT_IMPLEMENTED if cap not in conformance.inherited}


def test_the_suite_reports_every_base_capability_passed(conformance: ConformanceRun) -> None:
    report = conformance.report
    # A base method left to BaseCheckpointSaver is "not detected", not failed: catch it here.
    failing = {name: [f.split(":", 1)[0] for f in r.failures] for name, r in report.results.items() if r.failures}
    assert report.passed_all_base() and report.passed_all(), f"{report.conformance_level()}: {failing}"
