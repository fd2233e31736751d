"""The RunRepository contract, run against every adapter."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import ConversationNotFound, SessionInProgress, UserLimitReached
from domain.events import StreamEvent
from domain.model import Run, RunError, RunOwner, RunStatus, RunTrigger, new_id
from domain.models import ChatSettings
from ports.runs import LoadCap, RunFinish
from tests.contracts.run_stores import (
    OWNER,
    InMemoryStores,
    PostgresStores,
    RunStore,
    SqliteStores,
    StoreClock,
    StoreContract,
    TransitionContract,
    a_conversation,
    a_running_run,
    other_owner,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def run_on(cid: str, started: datetime, owner: RunOwner | None = None) -> Run:
    return Run(new_id(), cid, RunStatus.RUNNING, started, owner=owner)


def done(status: RunStatus, now: datetime, count: int | None = None, error: RunError | None = None) -> RunFinish:
    return RunFinish(status, now, error=error, message_count=count)


class RunRepositoryContract(StoreContract):
    # --- conversations -------------------------------------------------------------------

    async def test_a_new_conversation_has_no_runs_and_no_messages(self, store: RunStore) -> None:
        cid = new_id()
        created = await store.create_conversation(cid, "Hello", at(0))
        conv = await store.get_conversation(cid)
        assert conv is not None and conv == created
        assert (conv.title, conv.message_count, conv.status, conv.error) == ("Hello", 0, None, None)
        assert conv.created_at == conv.updated_at == at(0)

    async def test_a_forked_conversation_starts_with_its_message_count(self, store: RunStore) -> None:
        cid = new_id()
        created = await store.create_conversation(cid, "Fork", at(0), ChatSettings("m", "sys"), message_count=5)
        assert (created.message_count, created.model, created.system) == (5, "m", "sys")
        assert await store.get_conversation(cid) == created

    async def test_thread_metadata_is_merged_key_by_key_and_goes_with_its_conversation(self, store: RunStore) -> None:
        cid, other = new_id(), new_id()
        await store.create_conversation(cid, "Hello", at(0))
        await store.create_conversation(other, "Other", at(0))
        assert await store.thread_metadata([cid, other]) == {}
        assert await store.merge_thread_metadata(cid, {"graph_id": "agent", "label": "a", "n": {"deep": [1, "é"]}})
        assert await store.merge_thread_metadata(cid, {"label": "b", "extra": None})
        assert await store.thread_metadata([cid, other, new_id()]) == {
            cid: {"graph_id": "agent", "label": "b", "n": {"deep": [1, "é"]}, "extra": None}
        }
        assert await store.merge_thread_metadata(new_id(), {"x": 1}) is False
        assert await store.delete_conversation(cid)
        await store.create_conversation(cid, "Again", at(1))  # the id reused: nothing left of the old one
        assert await store.thread_metadata([cid]) == {}

    async def test_run_kwargs_are_kept_per_run_replaced_whole_and_go_with_their_conversation(self, store: RunStore) -> None:
        cid, rid, later = new_id(), new_id(), new_id()
        await store.create_conversation(cid, "Hello", at(0))
        assert await store.run_kwargs(cid, rid) is None
        assert await store.set_run_kwargs(cid, rid, {"stream_mode": ["values", "messages-tuple"], "n": {"é": [1]}})
        assert await store.set_run_kwargs(cid, later, {"stream_mode": ["updates"]})  # not a run yet: a queued one's id
        assert await store.run_kwargs(cid, rid) == {"stream_mode": ["values", "messages-tuple"], "n": {"é": [1]}}
        assert await store.run_kwargs(new_id(), rid) is None  # another conversation's run
        assert await store.run_kwargs(cid, rid, "admin") is not None  # its owner's (the default, the bootstrap admin)
        assert await store.run_kwargs(cid, rid, "u_0000000000000001") is None  # another user's: nothing
        assert await store.set_run_kwargs(cid, rid, {"x": 1}, "u_0000000000000001") is False
        assert await store.set_run_kwargs(cid, rid, {"stream_mode": ["custom"]})
        assert await store.run_kwargs(cid, rid) == {"stream_mode": ["custom"]}
        assert await store.set_run_kwargs(new_id(), new_id(), {"x": 1}) is False
        assert await store.delete_conversation(cid)
        assert await store.run_kwargs(cid, rid) is None and await store.run_kwargs(cid, later) is None

    async def test_an_unknown_conversation_is_none(self, store: RunStore) -> None:
        assert await store.get_conversation(new_id()) is None
        assert await store.latest_run(new_id()) is None
        assert await store.get_run(new_id()) is None
        assert await store.recent_runs(new_id(), 5) == []

    async def test_find_by_id_prefix_gives_only_ids_that_start_with_it(self, store: RunStore) -> None:
        ids = [
            "c959f4c6-0000-4000-8000-000000000001",
            "c959f4c6-1111-4000-8000-000000000002",
            "c959f4d0-0000-4000-8000-000000000003",
            "c95a0000-0000-4000-8000-000000000004",
            "c958ffff-0000-4000-8000-000000000005",
        ]
        for i, cid in enumerate(ids):
            await store.create_conversation(cid, f"t{i}", at(i))
        assert [c.id for c in await store.find_conversations("c959f4c6", 10)] == [ids[1], ids[0]]  # newest first
        assert [c.id for c in await store.find_conversations("c959f4c6-1", 10)] == [ids[1]]
        assert {c.id for c in await store.find_conversations("c959", 10)} == set(ids[:3])
        assert len(await store.find_conversations("c959", 2)) == 2
        assert await store.find_conversations("c959f4c7", 10) == []
        assert [c.id for c in await store.find_conversations(ids[3], 10)] == [ids[3]]  # a whole id is its own prefix

    async def test_restore_sets_the_count_and_last_update_of_an_imported_conversation(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "Imported", at(0))
        assert await store.restore_conversation(cid, 7, at(90)) is True
        conv = await store.get_conversation(cid)
        assert conv is not None and (conv.message_count, conv.created_at, conv.updated_at) == (7, at(0), at(90))
        assert await store.restore_conversation(new_id(), 1, at(1)) is False

    async def test_list_is_most_recently_updated_first(self, store: RunStore) -> None:
        ids = [new_id() for _ in range(3)]
        for i, cid in enumerate(ids):
            await store.create_conversation(cid, f"c{i}", at(i))
        await store.start_run(run_on(ids[0], at(10)), at(10))
        listed = [c.id for c in await store.list_conversations() if c.id in ids]
        assert listed == [ids[0], ids[2], ids[1]]

    async def test_paging_walks_the_whole_list_once(self, store: RunStore) -> None:
        ids = [new_id() for _ in range(7)]
        for i, cid in enumerate(ids):
            await store.create_conversation(cid, f"c{i}", at(i % 3))  # ties on updated_at
        seen: list[str] = []
        cursor = None
        while True:
            page = await store.list_conversations(limit=3, before=cursor)
            if not page:
                break
            seen += [c.id for c in page]
            cursor = (page[-1].updated_at, page[-1].id)
        assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
        assert seen == [c.id for c in await store.list_conversations()]

    async def test_a_query_keeps_the_titles_containing_it_case_folded_and_pages(self, store: RunStore) -> None:
        tag = new_id()[:8]
        titles = [f"Trip to Köln {tag}", f"köln {tag} budget", f"Paris {tag}", f"TRIP {tag}", "unrelated"]
        ids = [new_id() for _ in titles]
        for i, (cid, title) in enumerate(zip(ids, titles, strict=True)):
            await store.create_conversation(cid, title, at(i))
        assert [c.id for c in await store.list_conversations(query=f"KÖLN {tag}")] == [ids[1], ids[0]]
        assert [c.id for c in await store.list_conversations(query=f"trip {tag}")] == [ids[3]]
        assert [c.id for c in await store.list_conversations(query="trip")] == [ids[3], ids[0]]
        first = await store.list_conversations(limit=1, query=tag)
        rest = await store.list_conversations(before=(first[0].updated_at, first[0].id), query=tag)
        assert [c.id for c in [*first, *rest]] == [ids[3], ids[2], ids[1], ids[0]]
        assert await store.list_conversations(query="100%_") == []

    async def test_rename_changes_the_title_and_bumps_updated_at(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "old", at(0))
        assert await store.rename_conversation(cid, "new", at(1))
        conv = await store.get_conversation(cid)
        assert conv is not None and (conv.title, conv.updated_at) == ("new", at(1))
        assert not await store.rename_conversation(new_id(), "x", at(1))

    async def test_a_conversation_keeps_its_model_and_system_prompt_null_being_the_default(self, store: RunStore) -> None:
        cid, plain = new_id(), new_id()
        created = await store.create_conversation(cid, "chosen", at(0), ChatSettings("llama3.2", "Be brief.\nÉté ✓"))
        await store.create_conversation(plain, "plain", at(0))
        conv = await store.get_conversation(cid)
        assert conv == created and (conv.model, conv.system) == ("llama3.2", "Be brief.\nÉté ✓")
        default = await store.get_conversation(plain)
        assert default is not None and (default.model, default.system) == (None, None)
        listed = {c.id: c for c in await store.list_conversations()}
        assert (listed[cid].model, listed[cid].system) == ("llama3.2", "Be brief.\nÉté ✓")
        found, _ = await store.conversation_and_latest_run(cid)
        assert found is not None and found.model == "llama3.2"

    async def test_chat_settings_change_both_fields_and_leave_updated_at(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "c", at(0), ChatSettings("a", "sys"))
        assert await store.set_chat_settings(cid, ChatSettings("b", None))
        conv = await store.get_conversation(cid)
        assert conv is not None and (conv.model, conv.system, conv.updated_at) == ("b", None, at(0))
        assert not await store.set_chat_settings(new_id(), ChatSettings("b", None))

    async def test_delete_removes_the_conversation_its_runs_events_and_journal(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        await store.append({run.id: [(1, StreamEvent("token", "a"))]})
        await store.call_started("k1", cid, run.id, "t", False, at(1))
        with pytest.raises(SessionInProgress):
            await store.delete_conversation(cid)
        await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, at(2), event=StreamEvent("end", {})))
        assert await store.delete_conversation(cid)
        assert await store.get_conversation(cid) is None and await store.get_run(run.id) is None
        assert await store.read(run.id, 0) == () and await store.entries(["k1"]) == {}
        assert not await store.delete_conversation(cid)

    # --- starting ------------------------------------------------------------------------

    async def test_starting_a_run_marks_it_running_and_bumps_updated_at(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        run = Run(new_id(), cid, RunStatus.RUNNING, at(5), owner=OWNER, base_count=3, trigger=RunTrigger.ADOPT)
        await store.start_run(run, at(5))
        conv = await store.get_conversation(cid)
        assert conv is not None and conv.status is RunStatus.RUNNING and conv.updated_at == at(5)
        stored = await store.get_run(run.id)
        assert stored is not None and stored.status is RunStatus.RUNNING and stored.heartbeat_at is not None
        assert (stored.owner, stored.base_count, stored.trigger, stored.started_at) == (
            OWNER,
            3,
            RunTrigger.ADOPT,
            at(5),
        )
        assert not stored.lease_expired and stored.finished_at is None

    async def test_a_run_without_owner_reads_back_without_one(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        run = run_on(cid, at(1))
        await store.start_run(run, at(1))
        stored = await store.get_run(run.id)
        assert stored is not None and stored.owner is None and stored.trigger is RunTrigger.USER

    async def test_a_second_running_run_on_one_conversation_is_refused(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        first = run_on(cid, at(1))
        await store.start_run(first, at(1))
        with pytest.raises(SessionInProgress):
            await store.start_run(run_on(cid, at(2)), at(2))
        assert [r.id for r in await store.running_runs()] == [first.id]

    async def test_a_run_whose_input_flushes_it_is_started_and_refused_the_same_way(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        first = run_on(cid, at(1))
        await store.start_run(first, at(1), flushed_by_input=True)
        with pytest.raises(SessionInProgress):
            await store.start_run(run_on(cid, at(2)), at(2), flushed_by_input=True)
        with pytest.raises(ConversationNotFound):
            await store.start_run(run_on(new_id(), at(3)), at(3), flushed_by_input=True)
        stored = await store.get_run(first.id)
        assert stored is not None and stored.status is RunStatus.RUNNING
        assert [r.id for r in await store.running_runs()] == [first.id]

    async def test_a_run_on_an_unknown_conversation_is_refused(self, store: RunStore) -> None:
        with pytest.raises(ConversationNotFound):
            await store.start_run(run_on(new_id(), at(1)), at(1))

    async def test_other_conversations_may_run_at_the_same_time(self, store: RunStore) -> None:
        a, b = new_id(), new_id()
        await store.create_conversation(a, "a", at(0))
        await store.create_conversation(b, "b", at(0))
        first, second = run_on(a, at(1)), run_on(b, at(2))
        await store.start_run(second, at(2))
        await store.start_run(first, at(1))
        assert [r.id for r in await store.running_runs()] == [first.id, second.id]  # oldest first

    async def test_a_capped_start_is_refused_at_the_users_load(self, store: RunStore) -> None:
        """USER_MAX_ACTIVE_RUNS in the insert: running runs and queued messages count."""
        ann, bob = new_id(), new_id()
        cids = [new_id() for _ in range(3)]
        for cid in cids:
            await store.create_conversation(cid, "t", at(0), owner=ann)
        theirs = new_id()
        await store.create_conversation(theirs, "t", at(0), owner=bob)
        first = run_on(cids[0], at(1))
        await store.start_run(first, at(1), cap=LoadCap(ann, 2))
        await store.start_run(run_on(cids[1], at(2)), at(2), cap=LoadCap(ann, 2))
        with pytest.raises(UserLimitReached):
            await store.start_run(run_on(cids[2], at(3)), at(3), cap=LoadCap(ann, 2))
        assert await store.latest_run(cids[2]) is None and await store.owner_load(ann) == 2
        await store.start_run(run_on(theirs, at(3)), at(3), cap=LoadCap(bob, 1))  # another user's load is theirs
        await store.finish_run(first.id, done(RunStatus.COMPLETED, at(4), 2))
        await store.start_run(run_on(cids[2], at(5)), at(5), cap=LoadCap(ann, 2))  # room again
        assert await store.owner_load(ann) == 2

    async def test_a_burst_of_capped_starts_never_passes_the_limit(self, store: RunStore) -> None:
        owner, cids = new_id(), [new_id() for _ in range(20)]
        for cid in cids:
            await store.create_conversation(cid, "t", at(0), owner=owner)

        async def start(cid: str) -> bool:
            try:
                await store.start_run(run_on(cid, at(1)), at(1), cap=LoadCap(owner, 3))
            except UserLimitReached:
                return False
            return True

        started = await asyncio.gather(*(start(cid) for cid in cids))
        assert sum(started) == 3 and await store.owner_load(owner) == 3

    # --- finishing -----------------------------------------------------------------------

    async def test_finishing_records_outcome_and_count_together(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        run = run_on(cid, at(1))
        await store.start_run(run, at(1))
        error = RunError("RECURSION_LIMIT", "too deep")
        assert await store.finish_run(run.id, done(RunStatus.FAILED, at(9), 3, error))
        conv = await store.get_conversation(cid)
        assert conv is not None
        assert (conv.status, conv.message_count, conv.updated_at, conv.error) == (
            RunStatus.FAILED,
            3,
            at(9),
            error,
        )
        stored = await store.get_run(run.id)
        assert stored is not None and stored.finished_at == at(9) and stored.error == error
        assert await store.running_runs() == []

    async def test_a_finished_run_cannot_be_finished_again(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        run = run_on(cid, at(1))
        await store.start_run(run, at(1))
        assert await store.finish_run(run.id, done(RunStatus.COMPLETED, at(2), 2))
        assert not await store.finish_run(run.id, done(RunStatus.INTERRUPTED, at(3), 0))
        assert not await store.finish_run(new_id(), done(RunStatus.INTERRUPTED, at(3), 0))
        conv = await store.get_conversation(cid)
        assert conv is not None and conv.status is RunStatus.COMPLETED and conv.message_count == 2

    async def test_a_running_run_counts_its_own_message_in_the_list(self, store: RunStore) -> None:
        # issue 35 item 9: messageCount was 0 in the list while a new conversation's first
        # run was going, although its message was committed
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        await store.start_run(Run(new_id(), cid, RunStatus.RUNNING, at(1), base_count=1), at(1))
        listed = next(c for c in await store.list_conversations() if c.id == cid)
        assert listed.message_count == 1 and listed.status is RunStatus.RUNNING

    async def test_finishing_without_a_count_keeps_the_old_count(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        first, second = run_on(cid, at(1)), run_on(cid, at(3))
        await store.start_run(first, at(1))
        await store.finish_run(first.id, done(RunStatus.COMPLETED, at(2), 4))
        await store.start_run(second, at(3))
        await store.finish_run(second.id, done(RunStatus.FAILED, at(4), None, RunError("AGENT_FAILURE", "x")))
        conv = await store.get_conversation(cid)
        assert conv is not None and conv.message_count == 4 and conv.updated_at == at(4)

    async def test_only_the_owner_may_finish_its_run(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        assert not await store.finish_run(run.id, done(RunStatus.COMPLETED, at(2)), owner=other_owner())
        assert (await store.get_run(run.id)).status is RunStatus.RUNNING  # type: ignore[union-attr]
        assert await store.finish_run(run.id, done(RunStatus.COMPLETED, at(2)), owner=OWNER)

    async def test_a_reclaim_fails_when_the_owner_renewed_after_it_was_read(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        seen = await store.get_run(run.id)
        assert seen is not None and seen.heartbeat_at is not None
        await clock.advance(0.01)
        assert await store.renew(OWNER, [run.id]) == {run.id}
        reclaim = done(RunStatus.INTERRUPTED, at(3), error=RunError("RUN_LOST", "owner gone"))
        assert not await store.finish_run(run.id, reclaim, heartbeat=seen.heartbeat_at)
        fresh = await store.get_run(run.id)
        assert fresh is not None and fresh.status is RunStatus.RUNNING and fresh.heartbeat_at != seen.heartbeat_at
        assert await store.finish_run(run.id, reclaim, heartbeat=fresh.heartbeat_at)
        assert (await store.get_run(run.id)).status is RunStatus.INTERRUPTED  # type: ignore[union-attr]

    async def test_the_terminal_event_is_written_with_the_outcome(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        end = StreamEvent("end", {"status": "completed"})
        assert await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, at(2), event=end))
        assert await store.read(run.id, 0) == ((1, end),)

    async def test_the_terminal_event_id_is_the_given_one_or_the_next(self, store: RunStore, clock: StoreClock) -> None:
        cases = [(None, 4), (10, 10), (3, 4), (2, 4)]  # (event_id, stored id) after events 1..3
        for event_id, expected in cases:
            run = await a_running_run(store, clock)
            await store.append({run.id: [(i, StreamEvent("token", str(i))) for i in (1, 2, 3)]})
            end = StreamEvent("chat-error", {"code": "AGENT_FAILURE", "message": "x"})
            assert await store.finish_run(run.id, RunFinish(RunStatus.FAILED, at(2), event=end, event_id=event_id))
            events = await store.read(run.id, 0)
            assert [seq for seq, _ in events] == [1, 2, 3, expected] and events[-1][1] == end

    async def test_a_refused_finish_writes_no_event(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        end = StreamEvent("end", {})
        assert not await store.finish_run(run.id, RunFinish(RunStatus.COMPLETED, at(2), event=end), owner=other_owner())
        assert await store.read(run.id, 0) == ()

    async def test_give_up_turns_only_an_interrupted_run_into_failed(self, store: RunStore, clock: StoreClock) -> None:
        error = RunError("ADOPTION_FAILED", "gave up after 3 attempts")
        run = await a_running_run(store, clock)
        assert not await store.give_up(run.id, error, at(2))
        await store.finish_run(run.id, done(RunStatus.INTERRUPTED, at(2), error=RunError("RUN_LOST", "x")))
        assert await store.give_up(run.id, error, at(3))
        stored = await store.get_run(run.id)
        assert stored is not None and stored.status is RunStatus.FAILED and stored.error == error
        assert not await store.give_up(run.id, error, at(4))
        completed = await a_running_run(store, clock)
        await store.finish_run(completed.id, done(RunStatus.COMPLETED, at(2)))
        assert not await store.give_up(completed.id, error, at(3))
        assert not await store.give_up(new_id(), error, at(3))

    # --- reading runs --------------------------------------------------------------------

    async def test_the_latest_run_is_the_last_started(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        first, second = run_on(cid, at(1)), run_on(cid, at(2))
        await store.start_run(first, at(1))
        await store.finish_run(first.id, done(RunStatus.FAILED, at(1.5), 1, RunError("AGENT_FAILURE", "boom")))
        await store.start_run(second, at(2))
        await store.finish_run(second.id, done(RunStatus.COMPLETED, at(3), 2))
        latest = await store.latest_run(cid)
        assert latest is not None and latest.id == second.id
        conv = await store.get_conversation(cid)
        assert conv is not None and conv.status is RunStatus.COMPLETED and conv.error is None

    async def test_the_conversation_and_its_latest_run_come_together_as_from_their_own_reads(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        assert await store.conversation_and_latest_run(cid) == (await store.get_conversation(cid), None)
        first, second = run_on(cid, at(1)), run_on(cid, at(2))
        await store.start_run(first, at(1))
        await store.finish_run(first.id, done(RunStatus.COMPLETED, at(1.5), 1))
        await store.start_run(second, at(2))
        conv, latest = await store.conversation_and_latest_run(cid, 30.0)
        assert conv == await store.get_conversation(cid) and conv is not None and conv.status is RunStatus.RUNNING
        assert latest == await store.latest_run(cid, 30.0) and latest is not None and latest.id == second.id
        assert await store.conversation_and_latest_run(new_id()) == (None, None)

    async def test_ties_on_start_time_go_to_the_later_insert(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        first, second = run_on(cid, at(1)), run_on(cid, at(1))
        await store.start_run(first, at(1))
        await store.finish_run(first.id, done(RunStatus.COMPLETED, at(1), 1))
        await store.start_run(second, at(1))
        latest = await store.latest_run(cid)
        assert latest is not None and latest.id == second.id
        assert [r.id for r in await store.recent_runs(cid, 5)] == [second.id, first.id]

    async def test_recent_runs_are_newest_first_and_limited(self, store: RunStore) -> None:
        cid = new_id()
        await store.create_conversation(cid, "t", at(0))
        runs = [run_on(cid, at(i)) for i in range(1, 5)]
        for i, run in enumerate(runs, start=1):
            await store.start_run(run, at(i))
            await store.finish_run(run.id, done(RunStatus.COMPLETED, at(i + 0.5)))
        assert [r.id for r in await store.recent_runs(cid, 3)] == [runs[3].id, runs[2].id, runs[1].id]

    async def test_interrupted_conversations_lists_only_latest_runs_that_are_interrupted(
        self, store: RunStore, clock: StoreClock
    ) -> None:
        lost = RunError("RUN_LOST", "owner died")

        async def runs_of(statuses: list[RunStatus]) -> list[str]:
            cid = await a_conversation(store, clock)
            ids = []
            for i, status in enumerate(statuses):
                run = run_on(cid, at(i))
                await store.start_run(run, at(i))
                await store.finish_run(run.id, done(status, at(i + 0.5), error=lost))
                ids.append(run.id)
            return ids

        resumed = await runs_of([RunStatus.INTERRUPTED, RunStatus.COMPLETED])
        pending = await runs_of([RunStatus.COMPLETED, RunStatus.INTERRUPTED])
        alone = await runs_of([RunStatus.INTERRUPTED])
        found = [r.id for r in await store.interrupted_conversations()]
        assert sorted(found) == sorted([pending[-1], alone[0]]) and resumed[0] not in found

    # --- leases --------------------------------------------------------------------------

    async def test_renew_returns_only_the_owners_running_runs(self, store: RunStore, clock: StoreClock) -> None:
        mine = await a_running_run(store, clock)
        finished = await a_running_run(store, clock)
        await store.finish_run(finished.id, done(RunStatus.COMPLETED, at(2)))
        theirs = await a_running_run(store, clock, owner=other_owner())
        await clock.advance(0.01)
        renewed = await store.renew(OWNER, [mine.id, finished.id, theirs.id, new_id()])
        assert renewed == {mine.id}
        after = {r.id: r.heartbeat_at for r in await store.running_runs()}
        renewed_at, before = after[mine.id], mine.heartbeat_at
        assert renewed_at is not None and before is not None and renewed_at > before
        assert after[theirs.id] == theirs.heartbeat_at
        assert await store.renew(OWNER, []) == set()

    async def test_a_lease_expires_by_the_store_clock_and_renewal_refreshes_it(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        cid = run.conversation_id
        assert not (await store.latest_run(cid, lease_seconds=30)).lease_expired  # type: ignore[union-attr]
        await clock.advance(0.3)
        assert (await store.latest_run(cid, lease_seconds=0.1)).lease_expired  # type: ignore[union-attr]
        assert [r.lease_expired for r in await store.running_runs(lease_seconds=0.1)] == [True]
        assert not (await store.latest_run(cid)).lease_expired  # type: ignore[union-attr]  # no lease given
        await store.renew(OWNER, [run.id])
        assert not (await store.latest_run(cid, lease_seconds=30)).lease_expired  # type: ignore[union-attr]

    async def test_a_finished_run_never_has_an_expired_lease(self, store: RunStore, clock: StoreClock) -> None:
        run = await a_running_run(store, clock)
        await store.finish_run(run.id, done(RunStatus.COMPLETED, at(2)))
        await clock.advance(0.2)
        assert not (await store.latest_run(run.conversation_id, lease_seconds=0.05)).lease_expired  # type: ignore[union-attr]


class TestInMemoryRunRepository(InMemoryStores, RunRepositoryContract):
    pass


class TestSqliteRunRepository(SqliteStores, RunRepositoryContract):
    pass


class TestPostgresRunRepository(PostgresStores, RunRepositoryContract):
    pass


class TestInMemoryTransitions(InMemoryStores, TransitionContract):
    pass


class TestSqliteTransitions(SqliteStores, TransitionContract):
    pass


class TestPostgresTransitions(PostgresStores, TransitionContract):
    pass
