"""Recovery of runs left `running`: only dead owners' runs, reconciled with the thread."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from adapters.memory.runs import InMemoryRunStore
from domain.commands import start_command
from domain.lifecycle import INPUT_NOT_RECORDED
from domain.model import Run, RunOwner, RunStatus, new_id, utc_now
from ports.engine import NewMessage
from tests.support.harness import FakeProcesses, make_harness

DEAD = RunOwner("test-host", 4242, 7.0, "dead-instance")


async def leftover(h, cid: str, owner: RunOwner | None = DEAD, beat_age: float = 0.0) -> Run:  # type: ignore[no-untyped-def]
    """A running row left by another process, its heartbeat `beat_age` seconds old."""
    now = utc_now()
    run = Run(new_id(), cid, RunStatus.RUNNING, now, owner=owner, base_count=1)
    h.repo.clock = lambda: now - timedelta(seconds=beat_age)
    await h.repo.start_run(run, now)
    h.repo.clock = utc_now
    return run


async def test_a_run_whose_final_checkpoint_was_written_is_recovered_completed() -> None:
    h = make_harness(["answer"], processes=FakeProcesses(dead={DEAD.pid}))
    cid = new_id()
    await h.repo.create_conversation(cid, "t", utc_now())
    run = await leftover(h, cid)
    # the crash window: the engine saved the final checkpoint, the outcome was never recorded
    async for _ in h.runs.engine.run(cid, run.id, NewMessage("hi"), 25):
        pass
    assert await h.supervisor.recover() == 1
    conv = await h.conversations.get(cid)
    assert conv.conversation.status is RunStatus.COMPLETED and not conv.resumable
    assert conv.conversation.message_count == 2


async def test_a_run_that_never_recorded_its_input_is_interrupted_with_a_clear_error() -> None:
    h = make_harness(["first"], processes=FakeProcesses(dead={DEAD.pid}))
    started, _ = await h.send("hi")
    cid = started.conversation_id
    run = await leftover(h, cid)  # a second run that died before its message was saved
    assert await h.supervisor.recover() == 1
    stored = await h.repo.get_run(run.id)
    assert stored is not None and stored.status is RunStatus.INTERRUPTED
    assert stored.error_code == INPUT_NOT_RECORDED.code
    detail = await h.conversations.get(cid)
    assert not detail.resumable and detail.conversation.error is not None


async def test_a_run_with_pending_work_is_interrupted_and_resumable() -> None:
    from domain.errors import ModelUnreachable

    h = make_harness([ModelUnreachable(), "after resume"], processes=FakeProcesses(dead={DEAD.pid}))
    started, events = await h.send("hi")
    cid = started.conversation_id
    assert events[-1].data["code"] == "MODEL_UNREACHABLE"
    run = await leftover(h, cid)
    await h.supervisor.recover()
    detail = await h.conversations.get(cid)
    assert (await h.repo.get_run(run.id)).status is RunStatus.INTERRUPTED  # type: ignore[union-attr]
    assert detail.resumable and detail.conversation.status is RunStatus.INTERRUPTED
    events = await h.resume(cid)
    assert events[-1].data["status"] == "completed"


async def test_a_live_owners_run_with_a_fresh_heartbeat_is_left_alone() -> None:
    h = make_harness()
    cid = new_id()
    await h.repo.create_conversation(cid, "t", utc_now())
    alive = RunOwner("test-host", 777, 1.0)
    run = await leftover(h, cid, owner=alive)
    assert await h.supervisor.recover() == 0
    assert (await h.repo.get_run(run.id)).status is RunStatus.RUNNING  # type: ignore[union-attr]


async def test_another_hosts_run_is_reclaimed_only_after_its_lease() -> None:
    h = make_harness()
    cid, other = new_id(), new_id()
    for c in (cid, other):
        await h.repo.create_conversation(c, "t", utc_now())
    fresh = await leftover(h, cid, owner=RunOwner("elsewhere", 1, 1.0), beat_age=1)
    stale = await leftover(h, other, owner=RunOwner("elsewhere", 2, 1.0), beat_age=120)
    assert await h.supervisor.recover() == 1
    assert (await h.repo.get_run(fresh.id)).status is RunStatus.RUNNING  # type: ignore[union-attr]
    assert (await h.repo.get_run(stale.id)).status is RunStatus.INTERRUPTED  # type: ignore[union-attr]


async def test_rows_from_before_owners_existed_are_recovered() -> None:
    h = make_harness()
    cid = new_id()
    await h.repo.create_conversation(cid, "t", utc_now())
    run = await leftover(h, cid, owner=None)
    assert await h.supervisor.recover() == 1
    assert (await h.repo.get_run(run.id)).status is RunStatus.INTERRUPTED  # type: ignore[union-attr]


async def test_a_dead_owners_row_does_not_block_a_new_message() -> None:
    h = make_harness(["first", "second"], processes=FakeProcesses(dead={DEAD.pid}))
    started, _ = await h.send("hi")
    await leftover(h, started.conversation_id)
    _, events = await h.send("again", started.conversation_id)
    assert events[-1].data["status"] == "completed"


async def test_renewal_refreshes_this_processs_runs_by_the_store_clock() -> None:
    h = make_harness(["a " * 50], delay=0.01)
    started = await h.runs.start(start_command("hi"))
    before = (await h.repo.get_run(started.run_id)).heartbeat_at  # type: ignore[union-attr]
    h.repo.clock = lambda: utc_now() + timedelta(seconds=60)
    await h.supervisor.renew()
    after = (await h.repo.get_run(started.run_id)).heartbeat_at  # type: ignore[union-attr]
    assert before is not None and after is not None and after > before
    await h.follow(started.conversation_id)


async def test_recovery_that_reads_a_run_before_its_task_is_registered_leaves_it_alone() -> None:
    """The store has the row, the hub not yet the run: recovery reading in that gap must not
    take the run for one this process stopped executing (it used to record it interrupted,
    and the run then failed with RUN_LOST under load)."""
    reclaimed: list[bool] = []

    class Racing(InMemoryRunStore):
        async def start_run(
            self, run: Any, now: Any, flushed_by_input: bool = False, cap: Any = None, firing: Any = None
        ) -> None:
            await super().start_run(run, now, flushed_by_input, cap, firing)
            reclaimed.append(await h.runs.reclaim(run))  # what Supervisor.recover does if its read lands here

    h = make_harness(["fine"], repo=Racing())
    started, events = await h.send("hi")
    assert reclaimed == [False]
    assert events[-1].event == "end" and events[-1].data["status"] == "completed"
