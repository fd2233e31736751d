"""The queue's rules (domain.queue) and the lifecycle's part in them, as plain functions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from domain import lifecycle
from domain.commands import SendMessage, start_command
from domain.errors import InvalidInput
from domain.events import StreamEvent
from domain.lifecycle import StopReason
from domain.model import AssistantMessage, Run, RunStatus, RunTrigger, ThreadHead, UserMessage
from domain.queue import (
    Multitask,
    accepts_queue,
    model_writing,
    parse_multitask,
    queue_due,
    queue_held,
    rollback_point,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def run(status: RunStatus, trigger: RunTrigger = RunTrigger.USER, code: str | None = None) -> Run:
    return Run("r", "c", status, NOW, trigger=trigger, error_code=code)


def test_a_message_waits_only_behind_a_running_or_waiting_run() -> None:
    assert accepts_queue(run(RunStatus.RUNNING)) and accepts_queue(run(RunStatus.WAITING))
    for status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED):
        assert not accepts_queue(run(status))
    assert not accepts_queue(None)


def test_a_queue_drains_after_completed_and_after_a_queued_run_that_lost_its_message() -> None:
    assert queue_due(None) and queue_due(run(RunStatus.COMPLETED))
    assert queue_due(run(RunStatus.INTERRUPTED, RunTrigger.QUEUE, "INPUT_NOT_RECORDED"))
    assert not queue_due(run(RunStatus.INTERRUPTED, RunTrigger.USER, "INPUT_NOT_RECORDED"))
    assert not queue_due(run(RunStatus.INTERRUPTED, RunTrigger.QUEUE))  # a resume continues it
    for status in (RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.WAITING, RunStatus.RUNNING):
        assert not queue_due(run(status, RunTrigger.QUEUE))


def test_a_queue_is_held_after_a_failed_or_cancelled_run_only() -> None:
    assert queue_held(run(RunStatus.FAILED)) and queue_held(run(RunStatus.CANCELLED))
    for status in (RunStatus.RUNNING, RunStatus.WAITING, RunStatus.COMPLETED, RunStatus.INTERRUPTED):
        assert not queue_held(run(status))
    assert not queue_held(None)


def test_a_steered_run_completes_unless_it_failed() -> None:
    assert lifecycle.outcome_of(None, StopReason.STEER).status is RunStatus.COMPLETED
    assert lifecycle.outcome_of(RuntimeError("x"), StopReason.STEER).status is RunStatus.FAILED


def test_a_reclaimed_run_saved_its_input_unless_recovery_says_it_never_did() -> None:
    mine = Run("r", "c", RunStatus.RUNNING, NOW)
    assert not lifecycle.input_saved(mine, ThreadHead(work_left=False, run_id="before"))
    assert lifecycle.input_saved(mine, ThreadHead(work_left=True, run_id="before"))  # pending input
    assert lifecycle.input_saved(mine, ThreadHead(work_left=False, run_id="r"))


def test_rollback_replaces_the_last_user_message_before_the_run_output() -> None:
    messages = [UserMessage("a"), AssistantMessage("b"), UserMessage("c"), AssistantMessage("partial")]
    assert rollback_point(messages, 3) == 2
    assert rollback_point(messages, 4) == 2
    assert rollback_point(messages, 1) == 0
    assert rollback_point([AssistantMessage("x")], 1) is None
    assert rollback_point(messages, 99) == 2
    assert rollback_point([], 0) is None


def test_multitask_is_parsed_and_applies_to_new_messages_only() -> None:
    assert parse_multitask(None) is Multitask.REJECT and parse_multitask("enqueue") is Multitask.ENQUEUE
    for bad in ("later", 3, True, ""):
        with pytest.raises(InvalidInput):
            parse_multitask(bad)
    cid = "11111111-1111-4111-8111-111111111111"
    command = start_command("hi", cid, multitask="interrupt")
    assert isinstance(command, SendMessage) and command.multitask is Multitask.INTERRUPT
    assert start_command("hi", None, multitask="enqueue") == SendMessage("hi", None, multitask=Multitask.ENQUEUE)
    with pytest.raises(InvalidInput):
        start_command(None, cid, resume=True, multitask="enqueue")
    assert start_command(None, cid, resume=True, multitask="reject")


def test_a_steer_cuts_only_a_model_writing_an_answer_that_asked_no_tool_call() -> None:
    def trace(kind: str, node: str) -> StreamEvent:
        return StreamEvent("trace", {"step": 1, "name": node, "node": node, "event": kind})

    writing = False
    seen = []
    for event in (
        trace("enter", "agent"),
        StreamEvent("token", "Hel"),
        trace("context", "agent"),
        trace("call", "tools"),
        trace("leave", "agent"),
        trace("enter", "tools"),
        trace("result", "tools"),
        trace("enter", "agent"),
        StreamEvent("token", "lo"),
        trace("leave", "agent"),
    ):
        writing = model_writing(writing, event)
        seen.append(writing)
    assert seen == [True, True, True, False, False, False, False, True, True, False]
    assert model_writing(True, StreamEvent("trace", "not a dict")) is True  # a foreign shape changes nothing
