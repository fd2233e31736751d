"""The approval rules as plain functions: which calls are gated, what decisions mean, and
what a resume's decisions come to."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.memory.runs import InMemoryRunStore
from domain import lifecycle
from domain.approvals import (
    ApprovalMode,
    ApprovalRequest,
    Decision,
    DecisionType,
    Rejected,
    RunCall,
    Wait,
    decided,
    decision_from_dict,
    decision_to_dict,
    needs_approval,
    parse_decisions,
    parse_mode,
    plan_decisions,
)
from domain.errors import DecisionRequired, InvalidInput, StaleDecision
from domain.lifecycle import StopReason
from domain.model import PendingCall, RunStatus, ToolCall, utc_now
from ports.tools import ToolSpec
from services.approvals import ApprovalGate

CHARGE = ToolSpec("bank__charge", "Charge a card.", {"type": "object"})  # MCP defaults: destructive
READ = ToolSpec("bank__balance", "Read the balance.", {}, read_only=True, destructive=False)
APPEND = ToolSpec("bank__append", "Append a line.", {}, destructive=False, idempotent=True)
IDEMPOTENT_WRITE = ToolSpec("bank__set_limit", "Set the limit.", {}, destructive=True, idempotent=True)


def test_unsafe_mode_asks_only_for_destructive_non_idempotent_writes() -> None:
    assert needs_approval(ApprovalMode.UNSAFE, CHARGE, ())
    assert not any(needs_approval(ApprovalMode.UNSAFE, s, ()) for s in (READ, APPEND, IDEMPOTENT_WRITE))


def test_all_mode_asks_for_every_tool_and_off_for_none() -> None:
    assert all(needs_approval(ApprovalMode.ALL, s, ()) for s in (CHARGE, READ, APPEND))
    assert not any(needs_approval(ApprovalMode.OFF, s, ()) for s in (CHARGE, READ, None))


def test_config_globs_and_remembered_rules_override_the_mode() -> None:
    auto = ToolSpec("bank__charge", "", {}, auto_approve=("*",))
    assert not needs_approval(ApprovalMode.UNSAFE, auto, ())
    forced = ToolSpec("bank__balance", "", {}, read_only=True, approve=("bal*",))
    assert needs_approval(ApprovalMode.UNSAFE, forced, ())
    both = ToolSpec("bank__delete_all", "", {}, approve=("delete_*",), auto_approve=("*",))
    assert needs_approval(ApprovalMode.UNSAFE, both, ())  # an explicit `approve` wins
    assert not needs_approval(ApprovalMode.ALL, CHARGE, {"bank__charge"})  # always allowed
    assert needs_approval(ApprovalMode.UNSAFE, CHARGE, {"other__charge"})


def test_a_tool_not_listed_yet_is_presumed_unsafe() -> None:
    assert needs_approval(ApprovalMode.UNSAFE, None, ())


def test_the_mode_is_parsed_case_insensitively_and_anything_else_is_refused() -> None:
    assert parse_mode(" ALL ") is ApprovalMode.ALL
    with pytest.raises(InvalidInput, match="TOOL_APPROVAL"):
        parse_mode("sometimes")


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {},
        "x",
        {"c": "approve"},
        {"c": {"type": "maybe"}},
        {"c": {"type": "edit"}},
        {"c": {"type": "edit", "args": [1]}},
        {"c": {"type": "approve", "args": {}}},
        {"c": {"type": "reject", "message": 5}},
        {"c": {"type": "reject", "always": True}},
        {"c": {"type": "approve", "always": "yes"}},
        {"c": {"type": "approve", "extra": 1}},
        {"": {"type": "approve"}},
        {"c": {"type": "reject", "message": "\ud800"}},
        {"c": {"type": "edit", "args": {"a": "\udfff"}}},
    ],
)
def test_malformed_decisions_are_invalid_input(bad: object) -> None:
    with pytest.raises(InvalidInput):
        parse_decisions(bad)


def test_well_formed_decisions_parse_and_round_trip_through_storage() -> None:
    parsed = parse_decisions(
        {
            "a": {"type": "approve", "always": True},
            "b": {"type": "edit", "args": {"amount": 1}},
            "c": {"type": "reject", "message": "  no  "},
            "d": {"type": "skip"},
        }
    )
    assert parsed["a"] == Decision(DecisionType.APPROVE, always=True)
    assert parsed["c"].message == "no" and parsed["b"].args == {"amount": 1}
    assert all(decision_from_dict(decision_to_dict(d)) == d for d in parsed.values())
    assert parse_decisions(None) == {}


def request(call_id: str, decision: Decision | None = None, schema: dict[str, Any] | None = None) -> ApprovalRequest:
    return ApprovalRequest(
        "conv", ToolCall(call_id, "bank__charge", {"amount": 5}), "run", "bank", "Charge.", schema or {}, decision=decision
    )


def pending(*ids: str, unknown: tuple[str, ...] = ()) -> tuple[PendingCall, ...]:
    return tuple(PendingCall(ToolCall(i, "bank__charge", {}), started=i in unknown, unsafe=i in unknown) for i in ids)


def no_schema_problem(schema: Any, args: Any) -> str | None:
    return None


def test_a_decision_for_a_call_not_waiting_is_stale() -> None:
    answered = request("b", Decision(DecisionType.APPROVE))
    for decisions in (
        {"zzz": Decision(DecisionType.APPROVE)},
        {"b": Decision(DecisionType.REJECT)},
        {"a": Decision(DecisionType.RETRY)},
    ):
        with pytest.raises(StaleDecision):
            plan_decisions(decisions, None, pending("a", "b"), [request("a"), answered], no_schema_problem)
    gone = request("c")  # its call is no longer pending in the thread
    with pytest.raises(StaleDecision):
        plan_decisions({"c": Decision(DecisionType.APPROVE)}, None, pending("a"), [gone], no_schema_problem)


def test_a_resume_without_decisions_while_calls_wait_needs_one() -> None:
    with pytest.raises(DecisionRequired, match="approval"):
        plan_decisions({}, None, pending("a"), [request("a")], no_schema_problem)
    with pytest.raises(DecisionRequired):  # the old `decision` field answers unknown outcomes only
        plan_decisions({}, "retry", pending("a"), [request("a")], no_schema_problem)
    plan = plan_decisions({}, None, pending("a"), [request("a", Decision(DecisionType.APPROVE))], no_schema_problem)
    assert plan.approvals == {} and plan.skip == frozenset()  # decided earlier (then a crash): just resume


def test_edited_args_are_checked_against_the_schema() -> None:
    def checker(schema: Any, args: Any) -> str | None:
        return None if isinstance(args.get("amount"), int) else "amount: not an integer"

    edit = {"a": Decision(DecisionType.EDIT, {"amount": "x"})}
    with pytest.raises(InvalidInput, match="amount: not an integer"):
        plan_decisions(edit, None, pending("a"), [request("a")], checker)
    ok = plan_decisions({"a": Decision(DecisionType.EDIT, {"amount": 9})}, None, pending("a"), [request("a")], checker)
    assert ok.approvals["a"].args == {"amount": 9}


def test_some_decisions_leave_the_other_calls_waiting_and_retry_skip_answer_unknown_outcomes() -> None:
    plan = plan_decisions(
        {"a": Decision(DecisionType.APPROVE), "u": Decision(DecisionType.SKIP)},
        None,
        pending("a", "b", "u", unknown=("u",)),
        [request("a"), request("b")],
        no_schema_problem,
    )
    assert list(plan.approvals) == ["a"] and plan.skip == {"u"} and plan.unknown_answered
    legacy = plan_decisions({}, "skip", pending("u", "v", unknown=("u", "v")), [], no_schema_problem)
    assert legacy.skip == {"u", "v"} and legacy.unknown_answered


def test_a_decided_call_runs_as_asked_as_edited_or_not_at_all() -> None:
    assert decided(request("a", Decision(DecisionType.APPROVE))) == RunCall({"amount": 5})
    assert decided(request("a", Decision(DecisionType.EDIT, {"amount": 1}))) == RunCall({"amount": 1}, edited=True)
    rejected = decided(request("a", Decision(DecisionType.REJECT, message="too much")))
    assert isinstance(rejected, Rejected) and "too much" in rejected.content
    assert isinstance(decided(request("a")), Wait)


async def test_the_gate_stores_a_request_once_and_applies_its_decision() -> None:
    store = InMemoryRunStore()
    await store.create_conversation("conv", "t", utc_now())  # a rule is its owner's (the bootstrap admin)
    gate = ApprovalGate(store, ApprovalMode.UNSAFE)
    call = ToolCall("c1", "bank__charge", {"amount": 5})
    first = await gate.check("conv", "run", call, CHARGE)
    assert isinstance(first, Wait) and first.request.server == "bank" and first.request.description == "Charge a card."
    again = await gate.check("conv", "run2", call, CHARGE)  # a resume without a decision
    assert isinstance(again, Wait) and again.request.run_id == "run"
    assert await store.decide("conv", {"c1": Decision(DecisionType.APPROVE)}, first.request.requested_at)
    assert await gate.check("conv", "run3", call, CHARGE) == RunCall({"amount": 5})
    assert await gate.check("conv", "run", ToolCall("c2", "bank__balance", {}), READ) == RunCall({})
    await store.allow_always("bank__charge", first.request.requested_at)
    assert await gate.check("conv", "run", ToolCall("c3", "bank__charge", {}), CHARGE) == RunCall({})


def test_a_run_that_stops_before_gated_calls_ends_waiting_and_says_so() -> None:
    outcome = lifecycle.outcome_of(None, None, waiting=True)
    assert outcome.status is RunStatus.WAITING and outcome.recorded
    assert lifecycle.terminal_event("c", outcome).data == {"conversation": "c", "status": "waiting"}
    assert lifecycle.can_transition(RunStatus.RUNNING, RunStatus.WAITING)
    assert RunStatus.WAITING.finished and not lifecycle.TRANSITIONS[RunStatus.WAITING]
    assert lifecycle.outcome_of(None, StopReason.CANCEL, waiting=True).status is RunStatus.CANCELLED
