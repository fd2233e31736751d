"""LangGraph run requests as Sophos commands (entrypoints.lgapi.inputs), and the active
branch's checkpoint chain (entrypoints.lgapi.lineage): plain functions, plain values."""

from __future__ import annotations

from typing import Any

import pytest

from domain.approvals import ApprovalRequest, DecisionType
from domain.branches import Branch
from domain.commands import Edit, Regenerate, Resume, SendMessage
from domain.errors import DecisionRequired, InvalidInput, StaleDecision
from domain.model import AssistantMessage, CheckpointSummary, ToolCall, UserMessage
from domain.queue import Multitask
from entrypoints.lgapi.inputs import ThreadView, decisions_of, form_args, needs_thread, run_command
from entrypoints.lgapi.lineage import lineage

TID = "7d7f3f4e-1d2b-4c3a-9e8f-0a1b2c3d4e5f"


def ask(call_id: str, name: str = "ledger__charge") -> ApprovalRequest:
    return ApprovalRequest(TID, ToolCall(call_id, name, {"amount": 1}), "run", "ledger", "Charge")


def cp(cid: str, count: int, branch: int = 1, step: int = 0) -> CheckpointSummary:
    return CheckpointSummary(cid, "2026-01-01T00:00:00Z", step, "loop", (), count, None, None, branch)


MESSAGES = (UserMessage("q1", "m0"), AssistantMessage("a1", id="m1"), UserMessage("q2", "m2"), AssistantMessage("a2", id="m3"))
LOG = (cp("c0", 0), cp("c1", 1), cp("c2", 2), cp("c3", 4))


def view(waiting: tuple[ApprovalRequest, ...] = (), pending: int = 0) -> ThreadView:
    return ThreadView(TID, MESSAGES, waiting, pending, "c3", LOG)


def human(text: Any) -> dict[str, Any]:
    return {"messages": [{"type": "human", "content": text}]}


def test_a_human_message_is_a_new_message_and_needs_no_thread_read() -> None:
    body = {"assistant_id": "agent", "input": human("hello")}
    assert run_command(body, view()) == SendMessage("hello", TID)
    assert not needs_thread(body)
    parts = {"input": {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, "b"]}]}}
    assert run_command(parts, view()) == SendMessage("ab", TID)


@pytest.mark.parametrize(
    "body",
    [
        {"input": human(5)},
        {"input": {"messages": [{"type": "ai", "content": "x"}]}},
        {"input": {"messages": [{"type": "human", "content": "a"}, {"type": "human", "content": "b"}]}},
        {"input": {"messages": [], "extra": 1}},
        {"input": human("   ")},
        {"input": human([{"type": "image_url", "image_url": "x"}])},
        {"input": human("x"), "multitask_strategy": "later"},
        {"input": human("x"), "interrupt_before": ["tools"]},
        {"input": human("x"), "on_disconnect": "explode"},
        {"command": {"goto": "agent"}},
        {"command": {"resume": {"decisions": []}}, "input": human("x")},
        {"input": human("x"), "checkpoint": {"checkpoint_id": "unknown"}},
    ],
)
def test_what_cannot_be_mapped_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        run_command(body, view((ask("c1"),)))


@pytest.mark.parametrize("strategy", ["reject", "enqueue", "interrupt", "rollback"])
def test_a_multitask_strategy_is_the_message_s_multitask(strategy: str) -> None:
    body = {"input": human("x"), "multitask_strategy": strategy, "on_disconnect": "cancel"}
    assert run_command(body, view()) == SendMessage("x", TID, multitask=Multitask(strategy))


def test_a_resume_answers_the_waiting_calls_in_order_in_every_client_shape() -> None:
    waiting = (ask("call_a"), ask("call_b"))
    hitl = {
        "command": {
            "resume": {
                "decisions": [
                    {"type": "approve"},
                    {"type": "edit", "edited_action": {"name": "ledger__charge", "args": {"amount": 2}}},
                ]
            }
        }
    }
    command = run_command(hitl, view(waiting))
    assert run_command({**hitl, "input": {}}, view(waiting)) == command  # useStream's submit({}, {command})
    assert isinstance(command, Resume)
    assert command.decisions["call_a"].type is DecisionType.APPROVE
    assert (command.decisions["call_b"].type, command.decisions["call_b"].args) == (DecisionType.EDIT, {"amount": 2})
    inbox = {"command": {"resume": [{"type": "ignore"}, {"type": "response", "args": "not now"}]}}
    answered = run_command(inbox, view(waiting))
    assert isinstance(answered, Resume)
    assert [d.type for d in answered.decisions.values()] == [DecisionType.REJECT, DecisionType.REJECT]
    assert answered.decisions["call_b"].message == "not now"
    native = run_command({"command": {"resume": {"call_b": {"type": "reject", "message": "no"}}}}, view(waiting))
    assert isinstance(native, Resume) and list(native.decisions) == ["call_b"]


@pytest.mark.parametrize(
    "resume",
    [
        {"decisions": [{"type": "approve"}]},  # one answer for two calls
        {"call_zzz": {"type": "approve"}},  # a call that does not wait
    ],
)
def test_a_stale_answer_is_refused(resume: Any) -> None:
    with pytest.raises(StaleDecision):
        run_command({"command": {"resume": resume}}, view((ask("call_a"), ask("call_b"))))
    with pytest.raises(StaleDecision):
        run_command({"command": {"resume": {"decisions": [{"type": "approve"}]}}}, view())


def test_a_made_up_tool_result_never_closes_an_open_call() -> None:
    tool = {"input": {"messages": [{"type": "tool", "content": "Successfully handled tool call", "tool_call_id": "x"}]}}
    assert needs_thread(tool)
    with pytest.raises(DecisionRequired):
        run_command(tool, view((ask("x"),), pending=1))
    with pytest.raises(InvalidInput):
        run_command(tool, view())


def test_no_input_resumes_and_an_older_checkpoint_edits_or_regenerates() -> None:
    assert run_command({}, view()) == Resume(TID)
    assert run_command({"input": human("x"), "checkpoint_id": "c3"}, view()) == SendMessage("x", TID)
    assert run_command({"input": human("q2 again"), "checkpoint": {"checkpoint_id": "c2"}}, view()) == Edit(TID, 2, "q2 again")
    assert run_command({"checkpoint": {"checkpoint_id": "c2"}}, view()) == Regenerate(TID)
    with pytest.raises(InvalidInput):  # the first answer is not the last: not regenerated
        run_command({"checkpoint": {"checkpoint_id": "c1"}}, view())
    with pytest.raises(InvalidInput):  # after c1 comes an answer, not a user message
        run_command({"input": human("x"), "checkpoint": {"checkpoint_id": "c1"}}, view())


def test_the_chain_runs_through_the_ancestors_up_to_each_fork() -> None:
    log = [
        cp("a0", 0),
        cp("a1", 1),
        cp("a2", 2),
        cp("a3", 4, step=3),  # branch 1: q1 a1 q2 a2
        cp("b1", 3, branch=2),
        cp("b2", 4, branch=2),  # 2: regenerates a2 (fork 3)
        cp("c1", 3, branch=3),
        cp("c2", 4, branch=3),
    ]  # 3: from branch 2 at 3 (an edit of its answer)
    branches = [Branch(1, None, 0, 4, False), Branch(2, 1, 3, 4, False), Branch(3, 2, 3, 4, True)]
    assert [c.checkpoint_id for c in lineage(log, branches)] == ["a0", "a1", "a2", "b1", "c1", "c2"]
    assert [c.checkpoint_id for c in lineage(log[:4], [])] == ["a0", "a1", "a2", "a3"]
    assert [c.checkpoint_id for c in lineage(log, branches, 2)] == ["a0", "a1", "a2", "b1", "b2"]
    assert [c.checkpoint_id for c in lineage(log, branches, 1)] == ["a0", "a1", "a2", "a3"]


SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "integer"},
        "rate": {"type": "number"},
        "urgent": {"type": "boolean"},
        "note": {"type": "string"},
        "either": {"type": ["integer", "null"]},
    },
}


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ({"amount": "120"}, {"amount": 120}),
        ({"amount": " -7 "}, {"amount": -7}),
        ({"rate": "2.5", "urgent": "true"}, {"rate": 2.5, "urgent": True}),
        ({"rate": "3"}, {"rate": 3}),
        ({"either": "4"}, {"either": 4}),
        ({"note": "120"}, {"note": "120"}),  # a string stays a string
        ({"amount": "12.5", "urgent": "yes"}, {"amount": "12.5", "urgent": "yes"}),  # left for the schema check
        ({"amount": 5, "other": "9"}, {"amount": 5, "other": "9"}),  # typed already; a field the schema does not name
    ],
)
def test_agent_inbox_form_text_becomes_the_type_the_schema_asks_for(given: dict[str, Any], taken: dict[str, Any]) -> None:
    assert form_args(SCHEMA, given) == taken


def test_only_the_inbox_form_edit_is_read_as_text() -> None:
    waiting = [ApprovalRequest("c", ToolCall("call_1", "ledger__charge", {"amount": 1}), "r", "ledger", "", SCHEMA)]
    inbox = decisions_of([{"type": "edit", "args": {"action": "ledger__charge", "args": {"amount": "120"}}}], waiting)
    assert inbox["call_1"].args == {"amount": 120}
    typed = decisions_of([{"type": "edit", "edited_action": {"name": "ledger__charge", "args": {"amount": "120"}}}], waiting)
    assert typed["call_1"].args == {"amount": "120"}  # LangChain's HITL shape is JSON: taken as sent
