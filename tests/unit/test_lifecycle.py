"""The run lifecycle on in-memory fakes, no graph: the rules as plain functions, and the
service's guarantees (every run ends, fencing, cross-process cancel, adoption)."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from datetime import timedelta

import pytest

from adapters.memory.runs import InMemoryRunStore
from domain import lifecycle
from domain.commands import Cancel, start_command
from domain.errors import (
    DecisionRequired,
    InvalidTransition,
    ModelUnreachable,
    RunLost,
    RunNotResumable,
    StorageFailure,
)
from domain.events import StreamEvent
from domain.lifecycle import Adoption, StopReason
from domain.model import (
    PendingCall,
    Run,
    RunOwner,
    RunStatus,
    RunTrigger,
    ThreadHead,
    ToolCall,
    new_id,
    utc_now,
)
from services.conversations import ConversationService
from services.handles import RunStores
from services.hub import ActiveRun, RunHub
from services.runs import RunService
from services.supervisor import Supervisor
from tests.support.fake_engine import FakeEngine, Script
from tests.support.harness import FakeProcesses

ME = RunOwner("test-host", 1000, 1.0, "instance-1")
OTHER = RunOwner("test-host", 2000, 1.0, "instance-2")


def call(name: str = "t__x") -> ToolCall:
    return ToolCall(new_id(), name, {})


# --- rules --------------------------------------------------------------------------------


def test_only_a_running_run_finishes_and_only_an_interrupted_one_is_given_up() -> None:
    assert lifecycle.can_transition(RunStatus.RUNNING, RunStatus.CANCELLED)
    assert lifecycle.can_transition(RunStatus.INTERRUPTED, RunStatus.FAILED)
    assert not lifecycle.can_transition(RunStatus.COMPLETED, RunStatus.FAILED)
    assert not lifecycle.can_transition(RunStatus.CANCELLED, RunStatus.RUNNING)


def test_a_transition_is_built_only_from_the_table() -> None:
    done = lifecycle.transition(RunStatus.RUNNING, RunStatus.COMPLETED)
    assert (done.source, done.target) == (RunStatus.RUNNING, RunStatus.COMPLETED)
    assert lifecycle.GIVE_UP == lifecycle.Transition(RunStatus.INTERRUPTED, RunStatus.FAILED)
    for source, target in (
        (RunStatus.COMPLETED, RunStatus.FAILED),
        (RunStatus.RUNNING, RunStatus.RUNNING),
        (RunStatus.WAITING, RunStatus.COMPLETED),
    ):
        with pytest.raises(InvalidTransition):
            lifecycle.transition(source, target)
        with pytest.raises(InvalidTransition):
            lifecycle.Transition(source, target)


def test_outcomes_of_stops_and_failures() -> None:
    assert lifecycle.outcome_of(None, None).status is RunStatus.COMPLETED
    assert lifecycle.outcome_of(None, StopReason.CANCEL).status is RunStatus.CANCELLED
    assert lifecycle.outcome_of(None, StopReason.SHUTDOWN).status is RunStatus.INTERRUPTED
    lost = lifecycle.outcome_of(RunLost(), None)
    assert not lost.recorded and lost.error is not None and lost.error.code == "RUN_LOST"
    failed = lifecycle.outcome_of(StorageFailure(), None)
    assert failed.status is RunStatus.FAILED and failed.error is not None and failed.error.code == "STORAGE_FAILURE"


def test_a_cut_answer_fails_the_run_with_answer_too_long_unless_a_stop_or_a_failure_says_more() -> None:
    cut = lifecycle.outcome_of(None, None, cut=True)
    assert cut.status is RunStatus.FAILED and cut.error is not None and cut.error.code == "ANSWER_TOO_LONG"
    assert lifecycle.terminal_event("c", cut).data["code"] == "ANSWER_TOO_LONG"
    assert lifecycle.outcome_of(None, StopReason.CANCEL, cut=True).status is RunStatus.CANCELLED
    assert lifecycle.outcome_of(None, StopReason.SHUTDOWN, cut=True).status is RunStatus.INTERRUPTED
    assert not lifecycle.outcome_of(RunLost(), None, cut=True).recorded
    failed = lifecycle.outcome_of(ModelUnreachable(), None, cut=True)
    assert failed.error is not None and failed.error.code == "MODEL_UNREACHABLE"


def test_terminal_events_never_say_completed_for_a_lost_run() -> None:
    lost = lifecycle.outcome_of(RunLost(), None)
    assert lifecycle.terminal_event("c", lost).event == "chat-error"
    assert lifecycle.terminal_event("c", lifecycle.Outcome(RunStatus.CANCELLED)) == StreamEvent(
        "end", {"conversation": "c", "status": "cancelled"}
    )


def test_a_run_is_reclaimed_only_when_nobody_can_be_executing_it() -> None:
    run = Run("r", "c", RunStatus.RUNNING, utc_now(), owner=OTHER)
    assert not lifecycle.reclaimable(run, ME, executing_here=False, owner_alive=True)
    assert lifecycle.reclaimable(run, ME, executing_here=False, owner_alive=False)
    assert lifecycle.reclaimable(replace(run, lease_expired=True), ME, False, None)
    assert not lifecycle.reclaimable(replace(run, owner=ME), ME, executing_here=True, owner_alive=True)
    assert lifecycle.reclaimable(replace(run, owner=ME), ME, executing_here=False, owner_alive=True)


def test_recovery_reads_the_thread_head() -> None:
    run = Run("r", "c", RunStatus.RUNNING, utc_now())
    assert lifecycle.recovery_verdict(run, ThreadHead(False, run_id="r")).status is RunStatus.COMPLETED
    not_recorded = lifecycle.recovery_verdict(run, ThreadHead(False, run_id="earlier"))
    assert not_recorded.error == lifecycle.INPUT_NOT_RECORDED
    assert lifecycle.recovery_verdict(run, ThreadHead(True, run_id="r")) == lifecycle.Outcome(RunStatus.INTERRUPTED)


def test_a_resume_needs_work_left_and_a_decision_for_an_unsafe_started_call() -> None:
    unsafe = PendingCall(call(), started=True, unsafe=True)
    with pytest.raises(RunNotResumable):
        lifecycle.resume_plan(ThreadHead(False), (), None)
    with pytest.raises(DecisionRequired):
        lifecycle.resume_plan(ThreadHead(True, True), (unsafe,), None)
    assert lifecycle.resume_plan(ThreadHead(True, True), (unsafe,), "skip") == {unsafe.call.id}
    assert lifecycle.resume_plan(ThreadHead(True, True), (unsafe,), "retry") == frozenset()


def test_a_new_message_never_calls_a_sent_call_not_run() -> None:
    sent, unsent = PendingCall(call(), started=True), PendingCall(call())
    closings = lifecycle.settle_plan((sent, unsent))
    assert closings[0].content == lifecycle.OUTCOME_UNKNOWN and closings[1].content == lifecycle.NOT_RUN
    with pytest.raises(DecisionRequired):
        lifecycle.settle_plan((PendingCall(call(), started=True, unsafe=True),))


def test_adoption_gives_up_after_three_adopted_attempts() -> None:
    def run(trigger: RunTrigger) -> Run:
        return Run(new_id(), "c", RunStatus.INTERRUPTED, utc_now(), trigger=trigger)

    head = ThreadHead(True)
    assert lifecycle.adoption_verdict([run(RunTrigger.USER)], head, ()) is Adoption.ADOPT
    three = [run(RunTrigger.ADOPT)] * 3 + [run(RunTrigger.USER)]
    assert lifecycle.adoption_verdict(three, head, ()) is Adoption.GIVE_UP
    assert lifecycle.adoption_verdict([run(RunTrigger.USER)], ThreadHead(False), ()) is Adoption.LEAVE
    unsafe = PendingCall(call(), started=True, unsafe=True)
    assert lifecycle.adoption_verdict([run(RunTrigger.USER)], ThreadHead(True, True), (unsafe,)) is Adoption.LEAVE
    # a hosted graph's run whose input never reached its thread starts again, as often as a resume
    assert lifecycle.restart_verdict([run(RunTrigger.USER)]) is Adoption.ADOPT
    assert lifecycle.restart_verdict(three) is Adoption.GIVE_UP


# --- the service over fakes ------------------------------------------------------------------


class World:
    """Two processes (two services, two hubs) sharing one in-memory store."""

    def __init__(self, *scripts: Script, lease: float = 30.0) -> None:
        self.store = InMemoryRunStore()
        self.engine = FakeEngine(self.store, scripts)
        self.a = self.service(ME, lease)
        self.b = self.service(OTHER, lease)
        self.conversations = ConversationService(self.store, self.engine, self.a.is_active, self.store)

    def service(self, owner: RunOwner, lease: float) -> RunService:
        stores = RunStores(self.store, self.store, self.store, self.store, self.engine)
        processes = FakeProcesses(me=owner)
        return RunService(stores, self.engine, processes, RunHub(), lease_seconds=lease, cancel_wait=2.0, poll_seconds=0.01)

    async def wait_finished(self, service: RunService) -> None:
        await asyncio.gather(*(a.finished.wait() for a in service.hub.all()))


async def test_a_cancel_before_the_tasks_first_step_still_ends_the_run_and_saves_the_message() -> None:
    class StopAtOnce(RunHub):  # the cancel lands before the run's task even exists
        def add(self, run: ActiveRun) -> None:
            super().add(run)
            run.request_stop(StopReason.CANCEL)

    w = World(Script(tokens=["never"] * 50, pause=0.01))
    w.a.hub = StopAtOnce()
    started = await asyncio.wait_for(w.a.start(start_command("hello")), 5)
    await asyncio.wait_for(w.wait_finished(w.a), 5)
    run = await w.store.get_run(started.run_id)
    assert run is not None and run.status is RunStatus.CANCELLED
    assert [m.content for m in (await w.engine.get_thread(started.conversation_id)).messages] == ["hello"]
    events = [e for _, e in await w.store.read(started.run_id, 0)]
    assert events[-1].data == {"conversation": started.conversation_id, "status": "cancelled"}


async def test_start_and_cancel_pairs_in_any_interleaving_always_end() -> None:
    rng = random.Random(7)
    w = World(*[Script(tokens=["a", "b"], pause=0.001) for _ in range(200)])
    cid = (await w.a.start(start_command("first"))).conversation_id
    await w.wait_finished(w.a)
    for i in range(60):
        delay = rng.choice([0, 0, 0.0005, 0.002])

        async def cancel_soon(delay: float = delay) -> object:
            await asyncio.sleep(delay)
            try:
                return await w.a.cancel(Cancel(cid))
            except Exception as e:  # NoActiveRun when it lands before the run row
                return e

        post, _ = await asyncio.wait_for(asyncio.gather(w.a.start(start_command(f"m{i}", cid)), cancel_soon()), 5)
        await asyncio.wait_for(w.wait_finished(w.a), 5)
        run = await w.store.get_run(post.run_id)
        assert run is not None and run.status in (RunStatus.CANCELLED, RunStatus.COMPLETED)
    users = [m.content for m in (await w.conversations.get(cid)).messages if m.role == "user"]
    assert users == ["first", *(f"m{i}" for i in range(60))]  # every acknowledged message was saved
    assert await w.a.live_run(cid) is None


async def test_a_stop_that_lands_before_the_message_is_saved_waits_for_it() -> None:
    w = World(Script(tokens=["x"] * 100, pause=0.01))
    task = asyncio.ensure_future(w.a.start(start_command("keep me")))
    await asyncio.sleep(0)
    for active in w.a.hub.all():
        active.request_stop(StopReason.CANCEL)
    started = await task
    await w.wait_finished(w.a)
    run = await w.store.get_run(started.run_id)
    assert run is not None and run.status is RunStatus.CANCELLED
    assert [m.content for m in (await w.engine.get_thread(started.conversation_id)).messages] == ["keep me"]


async def test_a_cancel_from_another_process_stops_the_run_through_the_signal() -> None:
    w = World(Script(tokens=["t"] * 500, pause=0.01))
    started = await w.a.start(start_command("long"))
    sup = Supervisor(w.a, signal_seconds=0.01)
    await sup.start()
    try:
        result = await w.b.cancel(Cancel(started.conversation_id))
    finally:
        await sup.close()
    assert result.status is RunStatus.CANCELLED and result.run_id == started.run_id


async def test_a_cancel_of_a_dead_owners_run_is_finished_by_the_canceller() -> None:
    w = World(Script(tokens=["t"] * 500, pause=0.01))
    started = await w.a.start(start_command("long"))
    w.b.processes.dead.add(ME.pid)  # type: ignore[attr-defined]
    result = await w.b.cancel(Cancel(started.conversation_id))
    assert result.status is RunStatus.CANCELLED
    events = [e for _, e in await w.store.read(started.run_id, 0)]
    assert events[-1] == StreamEvent("end", {"conversation": started.conversation_id, "status": "cancelled"})
    w.a.stop_local(started.run_id, StopReason.LOST)
    await w.wait_finished(w.a)


async def test_a_run_whose_lease_was_taken_writes_nothing_more_and_says_it_lost() -> None:
    gate = asyncio.Event()
    w = World(Script(tokens=["late"], gate=gate), Script(tokens=["adopted"]), lease=0.05)
    started = await w.a.start(start_command("hello"))
    active = w.a.hub.by_run(started.run_id)
    assert active is not None
    await asyncio.sleep(0.1)  # the owner is "paused": its lease runs out
    w.store.clock = lambda: utc_now() + timedelta(seconds=1)  # type: ignore[method-assign]
    assert await Supervisor(w.b).recover() == 1
    adopted = await Supervisor(w.b, auto_resume=True).adopt()
    await w.wait_finished(w.b)
    gate.set()  # the paused owner continues
    await w.wait_finished(w.a)
    assert active.outcome is not None and not active.outcome.recorded
    assert active.events[-1][1].event == "chat-error" and active.events[-1][1].data["code"] == "RUN_LOST"
    assert w.engine.writes.count(started.run_id) == 1  # only its input, before the takeover
    assert [r.status for r in await w.store.recent_runs(started.conversation_id, 5)] == [
        RunStatus.COMPLETED,
        RunStatus.INTERRUPTED,
    ]
    assert len(adopted) == 1


async def test_an_outcome_the_store_refused_is_recorded_later_with_its_real_code() -> None:
    w = World(Script(tokens=["a"], fail=ModelUnreachable()))
    real_finish = w.store.finish_run
    calls = 0

    async def flaky(*args: object, **kwargs: object) -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise StorageFailure()
        return await real_finish(*args, **kwargs)  # type: ignore[arg-type]

    w.store.finish_run = flaky  # type: ignore[method-assign]
    started = await w.a.start(start_command("hi"))
    await w.wait_finished(w.a)
    assert (await w.store.get_run(started.run_id)).status is RunStatus.RUNNING  # type: ignore[union-attr]
    await Supervisor(w.a).retry_unrecorded()
    run = await w.store.get_run(started.run_id)
    assert run is not None and run.status is RunStatus.FAILED and run.error_code == "MODEL_UNREACHABLE"


async def test_a_follower_in_another_process_sees_the_same_events_as_the_owner() -> None:
    w = World(Script(tokens=[f"w{i} " for i in range(20)], pause=0.005))
    started = await w.a.start(start_command("hi"))
    sup = Supervisor(w.a, flush_seconds=0.01)
    await sup.start()
    try:
        local = await w.a.follow(started.conversation_id, 0)
        remote = await w.b.follow(started.conversation_id, 0)
        assert not isinstance(local, StreamEvent) and not isinstance(remote, StreamEvent)
        mine, theirs = await asyncio.gather(_collect(local), _collect(remote))
    finally:
        await sup.close()
    assert theirs == mine and mine[-1][1].event == "end"


async def _collect(events: object) -> list[tuple[int, StreamEvent]]:
    return [item async for item in events]  # type: ignore[attr-defined]
