"""A run whose outcome the store refuses (a full disk) never reads as `running` until space
is back: its own process shows the outcome at once, another process shows its reclaim's
verdict once the lease is out; both marked unsaved, and both written when the store takes
writes again."""

from __future__ import annotations

from typing import Any

from adapters.memory.runs import InMemoryRunStore
from domain.errors import StorageFailure
from domain.model import Run, RunOwner, RunStatus, new_id, utc_now
from tests.support.harness import FakeProcesses, make_harness

DEAD = RunOwner("test-host", 4242, 7.0, "dead-instance")


class FullDisk(InMemoryRunStore):
    """A run store whose outcome writes fail while `full`."""

    full = False

    async def finish_run(self, *args: Any, **kwargs: Any) -> Any:
        if self.full:
            raise StorageFailure("The database could not be written (disk full, read-only or I/O error)")
        return await super().finish_run(*args, **kwargs)


async def test_a_run_whose_outcome_cannot_be_written_reads_as_ended_in_its_process() -> None:
    store = FullDisk()
    h = make_harness(["answer"], repo=store)
    store.full = True
    started, events = await h.send("hi")
    assert events[-1].event == "end"  # its followers got the outcome
    assert (await store.get_run(started.run_id)).status is RunStatus.RUNNING  # type: ignore[union-attr]
    for conv in (
        (await h.conversations.get(started.conversation_id)).conversation,
        (await h.conversations.list())[0],
        (await h.conversations.page()).conversations[0],
    ):
        assert conv.status is RunStatus.COMPLETED, conv
        assert conv.error is not None and conv.error.code == "STORAGE_FAILURE" and "not saved yet" in conv.error.message
    store.full = False
    await h.supervisor.maintain_once()  # the retry
    conv = (await h.conversations.get(started.conversation_id)).conversation
    assert conv.status is RunStatus.COMPLETED and conv.error is None
    assert (await store.get_run(started.run_id)).status is RunStatus.COMPLETED  # type: ignore[union-attr]


async def test_a_failed_run_shows_its_own_code_while_unsaved() -> None:
    store = FullDisk()
    h = make_harness([RuntimeError("boom")], repo=store)
    store.full = True
    started, _ = await h.send("hi")
    conv = await h.conversations.summary(started.conversation_id)
    assert conv.status is RunStatus.FAILED and conv.error is not None and conv.error.code == "AGENT_FAILURE"
    assert "not saved yet" in conv.error.message


async def test_another_process_shows_its_verdict_once_the_reclaim_is_refused() -> None:
    store = FullDisk()
    h = make_harness([], repo=store, processes=FakeProcesses(dead={DEAD.pid}))
    cid = new_id()
    await store.create_conversation(cid, "t", utc_now())
    run = Run(new_id(), cid, RunStatus.RUNNING, utc_now(), owner=DEAD)
    await store.start_run(run, utc_now())
    store.full = True
    try:
        await h.supervisor.recover()
    except StorageFailure:
        pass  # the supervisor's loop logs it and tries again
    else:
        raise AssertionError("the reclaim was written on a full disk")
    conv = await h.conversations.summary(cid)  # its message never reached the thread: the verdict says so
    assert conv.status is RunStatus.INTERRUPTED and conv.error is not None and conv.error.code == "INPUT_NOT_RECORDED"
    assert "not saved yet" in conv.error.message
    store.full = False
    assert await h.supervisor.recover() == 1
    conv = await h.conversations.summary(cid)
    assert conv.status is RunStatus.INTERRUPTED and conv.error is not None and "not saved" not in conv.error.message


async def test_a_held_outcome_never_covers_a_later_run() -> None:
    store = FullDisk()
    h = make_harness(["one", "two"], repo=store)
    store.full = True
    started, _ = await h.send("hi")
    store.full = False
    await h.supervisor.maintain_once()
    h.runs.unsaved.keep(started.conversation_id, started.run_id, RunStatus.FAILED, None)  # a stale entry
    again, events = await h.send("again", started.conversation_id)
    assert events[-1].event == "end"
    conv = await h.conversations.summary(started.conversation_id)
    assert conv.status is RunStatus.COMPLETED and conv.error is None
