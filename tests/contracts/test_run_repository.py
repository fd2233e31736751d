"""The RunRepository contract, run against every adapter."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.memory.runs import InMemoryRunRepository
from adapters.sqlite.runs import SqliteRunRepository
from domain.errors import SessionInProgress
from domain.model import Run, RunError, RunOwner, RunStatus, new_id
from ports.runs import RunRepository

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def run_on(cid: str, started: datetime, owner: RunOwner | None = None) -> Run:
    return Run(new_id(), cid, RunStatus.RUNNING, started, owner=owner)


class RunRepositoryContract:
    @pytest.fixture
    def repo(self) -> Iterator[RunRepository]:
        raise NotImplementedError

    def test_a_new_conversation_has_no_runs_and_no_messages(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "Hello", at(0))
        conv = repo.get_conversation(cid)
        assert conv is not None
        assert (conv.title, conv.message_count, conv.status, conv.error) == ("Hello", 0, None, None)
        assert conv.created_at == conv.updated_at == at(0)

    def test_an_unknown_conversation_is_none(self, repo: RunRepository) -> None:
        assert repo.get_conversation(new_id()) is None
        assert repo.latest_run(new_id()) is None

    def test_starting_a_run_marks_it_running_and_bumps_updated_at(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        run = run_on(cid, at(5))
        repo.start_run(run, at(5))
        conv = repo.get_conversation(cid)
        assert conv is not None and conv.status is RunStatus.RUNNING and conv.updated_at == at(5)
        stored = repo.get_run(run.id)
        assert stored is not None and stored.status is RunStatus.RUNNING

    def test_a_second_running_run_on_one_conversation_is_refused(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        repo.start_run(run_on(cid, at(1)), at(1))
        with pytest.raises(SessionInProgress):
            repo.start_run(run_on(cid, at(2)), at(2))

    def test_other_conversations_may_run_at_the_same_time(self, repo: RunRepository) -> None:
        a, b = new_id(), new_id()
        repo.create_conversation(a, "a", at(0))
        repo.create_conversation(b, "b", at(0))
        repo.start_run(run_on(a, at(1)), at(1))
        repo.start_run(run_on(b, at(1)), at(1))
        assert len(repo.running_runs()) == 2

    def test_finishing_records_outcome_and_count_together(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        run = run_on(cid, at(1))
        repo.start_run(run, at(1))
        assert repo.finish_run(run.id, RunStatus.FAILED, 3, RunError("RECURSION_LIMIT", "too deep"), at(9))
        conv = repo.get_conversation(cid)
        assert conv is not None
        assert (conv.status, conv.message_count, conv.updated_at) == (RunStatus.FAILED, 3, at(9))
        assert conv.error == RunError("RECURSION_LIMIT", "too deep")
        stored = repo.get_run(run.id)
        assert stored is not None and stored.finished_at == at(9)

    def test_a_finished_run_cannot_be_finished_again(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        run = run_on(cid, at(1))
        repo.start_run(run, at(1))
        assert repo.finish_run(run.id, RunStatus.COMPLETED, 2, None, at(2))
        assert not repo.finish_run(run.id, RunStatus.INTERRUPTED, 0, None, at(3))
        conv = repo.get_conversation(cid)
        assert conv is not None and conv.status is RunStatus.COMPLETED and conv.message_count == 2

    def test_finishing_without_a_count_keeps_the_old_count(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        first, second = run_on(cid, at(1)), run_on(cid, at(3))
        repo.start_run(first, at(1))
        repo.finish_run(first.id, RunStatus.COMPLETED, 4, None, at(2))
        repo.start_run(second, at(3))
        repo.finish_run(second.id, RunStatus.FAILED, None, RunError("AGENT_FAILURE", "x"), at(4))
        conv = repo.get_conversation(cid)
        assert conv is not None and conv.message_count == 4

    def test_the_latest_run_is_the_last_started(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        first, second = run_on(cid, at(1)), run_on(cid, at(2))
        repo.start_run(first, at(1))
        repo.finish_run(first.id, RunStatus.FAILED, 1, RunError("AGENT_FAILURE", "boom"), at(1.5))
        repo.start_run(second, at(2))
        repo.finish_run(second.id, RunStatus.COMPLETED, 2, None, at(3))
        latest = repo.latest_run(cid)
        assert latest is not None and latest.id == second.id
        conv = repo.get_conversation(cid)
        assert conv is not None and conv.status is RunStatus.COMPLETED and conv.error is None

    def test_ties_on_start_time_go_to_the_later_insert(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        first, second = run_on(cid, at(1)), run_on(cid, at(1))
        repo.start_run(first, at(1))
        repo.finish_run(first.id, RunStatus.COMPLETED, 1, None, at(1))
        repo.start_run(second, at(1))
        latest = repo.latest_run(cid)
        assert latest is not None and latest.id == second.id

    def test_list_is_most_recently_updated_first(self, repo: RunRepository) -> None:
        ids = [new_id() for _ in range(3)]
        for i, cid in enumerate(ids):
            repo.create_conversation(cid, f"c{i}", at(i))
        repo.start_run(run_on(ids[0], at(10)), at(10))
        listed = [c.id for c in repo.list_conversations() if c.id in ids]
        assert listed == [ids[0], ids[2], ids[1]]

    def test_paging_walks_the_whole_list_once(self, repo: RunRepository) -> None:
        ids = [new_id() for _ in range(7)]
        for i, cid in enumerate(ids):
            repo.create_conversation(cid, f"c{i}", at(i % 3))  # ties on updated_at
        seen: list[str] = []
        cursor = None
        while True:
            page = repo.list_conversations(limit=3, before=cursor)
            if not page:
                break
            seen += [c.id for c in page]
            cursor = (page[-1].updated_at, page[-1].id)
        assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
        assert seen == [c.id for c in repo.list_conversations()]

    def test_rename_changes_the_title(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "old", at(0))
        assert repo.rename_conversation(cid, "new", at(1))
        conv = repo.get_conversation(cid)
        assert conv is not None and conv.title == "new"
        assert not repo.rename_conversation(new_id(), "x", at(1))

    def test_delete_removes_conversation_and_runs(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        run = run_on(cid, at(1))
        repo.start_run(run, at(1))
        with pytest.raises(SessionInProgress):
            repo.delete_conversation(cid)
        repo.finish_run(run.id, RunStatus.COMPLETED, 2, None, at(2))
        assert repo.delete_conversation(cid)
        assert repo.get_conversation(cid) is None and repo.get_run(run.id) is None
        assert not repo.delete_conversation(cid)

    def test_heartbeat_touches_only_running_runs(self, repo: RunRepository) -> None:
        cid = new_id()
        repo.create_conversation(cid, "t", at(0))
        owner = RunOwner("host", 42, 1.0)
        run = run_on(cid, at(1), owner)
        repo.start_run(run, at(1))
        repo.heartbeat([run.id], at(7))
        stored = repo.get_run(run.id)
        assert stored is not None and stored.heartbeat_at == at(7) and stored.owner == owner
        repo.finish_run(run.id, RunStatus.COMPLETED, 0, None, at(8))
        repo.heartbeat([run.id], at(9))
        stored = repo.get_run(run.id)
        assert stored is not None and stored.heartbeat_at == at(7)


class TestInMemoryRunRepository(RunRepositoryContract):
    @pytest.fixture
    def repo(self) -> Iterator[RunRepository]:
        yield InMemoryRunRepository()


class TestSqliteRunRepository(RunRepositoryContract):
    @pytest.fixture
    def repo(self, tmp_path: Path) -> Iterator[RunRepository]:
        repo = SqliteRunRepository(str(tmp_path / "db" / "sophos.db"))
        yield repo
        repo.close()
