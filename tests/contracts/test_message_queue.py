"""The MessageQueue contract (with finish_run's queue half), run against every adapter."""

from __future__ import annotations

import pytest

from domain.errors import ConversationNotFound, QueueFull, SessionInProgress
from domain.model import Run, RunError, RunStatus, RunTrigger, new_id
from domain.queue import QueuedMessage, QueueState
from ports.runs import RunFinish
from tests.contracts.run_stores import (
    OWNER,
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    StoreContract,
    a_conversation,
    a_running_run,
    other_owner,
)


def a_message(cid: str, clock: StoreClock, text: str = "next") -> QueuedMessage:
    return QueuedMessage(new_id(), cid, 0, text, clock.now())


def next_run(cid: str, clock: StoreClock) -> Run:
    return Run(new_id(), cid, RunStatus.RUNNING, clock.now(), owner=OWNER, base_count=3, trigger=RunTrigger.QUEUE)


async def queue_of(store: RunStore, cid: str) -> list[str]:
    return [q.text for q in await store.queued(cid)]


class MessageQueueContract(StoreContract):
    async def test_a_message_waits_only_behind_an_active_run(self, store: RunStore, clock: StoreClock) -> None:
        cid = await a_conversation(store, clock)
        assert await store.enqueue(a_message(cid, clock), 20) is None  # nothing would drain it
        run = await a_running_run(store, clock, cid)
        stored = await store.enqueue(a_message(cid, clock, "one"), 20)
        assert stored is not None and stored.state is QueueState.WAITING and stored.text == "one"
        await store.finish_run(run.id, RunFinish(RunStatus.FAILED, clock.now()))
        assert await store.enqueue(a_message(cid, clock, "two"), 20) is None
        assert await queue_of(store, cid) == ["one"]  # held after a failure, shown

    async def test_messages_keep_their_order_and_count_in_the_summary(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        for text in ("a", "b", "c"):
            await store.enqueue(a_message(cid, clock, text), 20)
        assert await queue_of(store, cid) == ["a", "b", "c"]
        conv = await store.get_conversation(cid)
        assert conv is not None and conv.queued == 3
        listed = [c for c in await store.list_conversations() if c.id == cid]
        assert listed[0].queued == 3

    async def test_a_waiting_run_accepts_messages(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.finish_run(run.id, RunFinish(RunStatus.WAITING, clock.now()))
        assert await store.enqueue(a_message(run.conversation_id, clock), 20) is not None

    async def test_the_limit_is_refused_with_queue_full(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        for _ in range(2):
            await store.enqueue(a_message(run.conversation_id, clock), 2)
        with pytest.raises(QueueFull):
            await store.enqueue(a_message(run.conversation_id, clock), 2)
        assert len(await store.queued(run.conversation_id)) == 2

    async def test_an_unknown_conversation_is_not_found(self, store: RunStore, clock: StoreClock) -> None:
        with pytest.raises(ConversationNotFound):
            await store.enqueue(a_message(new_id(), clock), 20)

    async def test_a_completed_run_starts_the_next_message_in_its_own_transaction(
        self, store: RunStore, clock: StoreClock
    ) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        first = await store.enqueue(a_message(cid, clock, "first"), 20)
        await store.enqueue(a_message(cid, clock, "second"), 20)
        then = next_run(cid, clock)
        taken = await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now(), then=then), owner=OWNER)
        assert first is not None and isinstance(taken, QueuedMessage) and taken.id == first.id  # no second read needed
        # the run takes the message's id: a client given that id when it queued finds the run
        assert taken.run_id == first.id
        assert await store.get_run(then.id) is None
        started = await store.get_run(first.id)
        assert started is not None and started.status is RunStatus.RUNNING
        assert started.trigger is RunTrigger.QUEUE and started.base_count == 3 and started.owner == OWNER
        claimed = await store.claimed(first.id)
        assert claimed is not None and claimed.id == first.id and claimed.text == "first"
        assert await queue_of(store, cid) == ["second"]
        latest = await store.latest_run(cid)
        assert latest is not None and latest.id == first.id
        # its outcome, with its input recorded, takes the message off and starts the next
        taken2 = await store.finish_run(first.id, RunFinish(RunStatus.COMPLETED, clock.now(), then=next_run(cid, clock)))
        assert isinstance(taken2, QueuedMessage) and taken2.run_id == taken2.id
        assert await store.claimed(first.id) is None
        claimed2 = await store.claimed(taken2.id)
        assert claimed2 is not None and claimed2.text == "second"
        assert await store.finish_run(taken2.id, RunFinish(RunStatus.COMPLETED, clock.now(), then=next_run(cid, clock))) is True
        latest = await store.latest_run(cid)
        assert latest is not None and latest.id == taken2.id  # nothing left: no run started

    async def test_a_refused_outcome_starts_nothing(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        await store.enqueue(a_message(cid, clock), 20)
        then = next_run(cid, clock)
        fenced = RunFinish(RunStatus.COMPLETED, clock.now(), then=then)
        assert not await store.finish_run(run.id, fenced, owner=other_owner())
        assert await store.get_run(then.id) is None and await queue_of(store, cid) == ["next"]

    @pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.WAITING, RunStatus.INTERRUPTED])
    async def test_other_outcomes_hold_the_queue(self, store: RunStore, clock: StoreClock, status: RunStatus) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        await store.enqueue(a_message(cid, clock), 20)
        then = next_run(cid, clock)
        assert await store.finish_run(run.id, RunFinish(status, clock.now(), then=then))
        assert await store.get_run(then.id) is None
        assert await queue_of(store, cid) == ["next"]

    async def test_a_run_whose_message_never_reached_the_thread_puts_it_back_first(
        self, store: RunStore, clock: StoreClock
    ) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        for text in ("first", "second"):
            await store.enqueue(a_message(cid, clock, text), 20)
        then = next_run(cid, clock)
        taken = await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now(), then=then))
        assert isinstance(taken, QueuedMessage)
        assert await store.queued_conversations() == []  # one of its messages has started
        lost = RunError("INPUT_NOT_RECORDED", "x")
        await store.finish_run(taken.id, RunFinish(RunStatus.INTERRUPTED, clock.now(), lost, input_recorded=False))
        assert await queue_of(store, cid) == ["first", "second"]
        assert await store.claimed(taken.id) is None
        assert cid in await store.queued_conversations()
        # started again, its run cannot take the message's id a second time: it keeps its own
        again = next_run(cid, clock)
        retaken = await store.start_queued(again, clock.now(), taken.id)
        assert retaken is not None and retaken.id == taken.id and retaken.run_id == again.id
        assert (await store.latest_run(cid)).id == again.id  # type: ignore[union-attr]

    async def test_start_queued_is_a_compare_and_set_on_the_latest_run(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        message = await store.enqueue(a_message(cid, clock), 20)
        assert await store.start_queued(next_run(cid, clock), clock.now(), run.id) is None  # still running
        await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now()))
        assert await store.start_queued(next_run(cid, clock), clock.now(), new_id()) is None  # stale view
        claimed = await store.start_queued(next_run(cid, clock), clock.now(), run.id)
        assert message is not None and claimed is not None and claimed.state is QueueState.STARTED
        assert claimed.run_id == message.id
        assert await store.start_queued(next_run(cid, clock), clock.now(), message.id) is None

    async def test_a_start_refused_by_a_running_run_changes_nothing(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        await store.enqueue(a_message(cid, clock), 20)
        await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now()))
        other = await a_running_run(store, clock, cid)
        with pytest.raises(SessionInProgress):
            await store.start_run(Run(new_id(), cid, RunStatus.RUNNING, clock.now()), clock.now())
        assert await store.start_queued(next_run(cid, clock), clock.now(), other.id) is None
        assert await queue_of(store, cid) == ["next"]

    async def test_a_waiting_message_can_be_edited_or_dropped_until_it_starts(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        one = await store.enqueue(a_message(cid, clock, "one"), 20)
        two = await store.enqueue(a_message(cid, clock, "two"), 20)
        assert one is not None and two is not None
        edited = await store.edit_queued(cid, two.id, "deux")
        assert edited is not None and edited.text == "deux" and edited.position == two.position
        assert await store.edit_queued(new_id(), two.id, "x") is None  # another conversation's id
        then = next_run(cid, clock)
        await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now(), then=then))
        assert await store.edit_queued(cid, one.id, "started") is None
        assert not await store.drop_queued(cid, one.id)
        assert await store.drop_queued(cid, two.id)
        assert not await store.drop_queued(cid, two.id)
        assert await queue_of(store, cid) == []

    async def test_a_steer_goes_first_and_is_seen_until_it_starts(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid, other = run.conversation_id, await a_conversation(store, clock)
        await store.enqueue(a_message(cid, clock, "queued"), 20)
        assert await store.steered([cid, other]) == set()
        steer = QueuedMessage(new_id(), cid, 0, "steer", clock.now(), steer=True)
        stored = await store.enqueue(steer, 20)
        assert stored is not None and stored.steer
        assert await queue_of(store, cid) == ["steer", "queued"]
        assert await store.steered([cid, other]) == {cid}
        assert await store.steered([]) == set()
        then = next_run(cid, clock)
        await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, clock.now(), then=then))
        claimed = await store.claimed(stored.id)
        assert claimed is not None and claimed.text == "steer" and claimed.steer
        assert await store.steered([cid]) == set()

    async def test_deleting_the_conversation_deletes_its_queue(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        queued = await store.enqueue(a_message(cid, clock), 20)
        await store.finish_run(run.id, RunFinish(RunStatus.FAILED, clock.now()))
        assert await store.delete_conversation(cid)
        assert await store.queued(cid) == []
        assert cid not in await store.queued_conversations()
        assert queued is not None and not await store.drop_queued(cid, queued.id)


class TestInMemoryMessageQueue(InMemoryStores, MessageQueueContract):
    pass


class TestSqliteMessageQueue(SqliteStores, MessageQueueContract):
    pass


class TestPostgresMessageQueue(PostgresStores, MessageQueueContract):
    pass
