"""What the page's tool-call cards read (issue 33 item 8): a stored tool result keeps its
duration and whether it was skipped, the prompt never carries them, and a detail lists
the decisions given on its own calls."""

from __future__ import annotations

from datetime import UTC, datetime

from langchain_core.messages import messages_to_dict

from adapters.langchain.messages import from_fields, to_domain, to_langchain
from domain.approvals import ApprovalRequest, Decision, DecisionType, decided_on
from domain.events import ToolCallFinished
from domain.model import AssistantMessage, Conversation, ToolCall, ToolResult, UserMessage
from entrypoints.dto import detail_dto, message_to_dto
from services.conversations import ConversationDetail
from services.stream import StreamTranslator

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def test_a_stored_tool_result_keeps_its_duration_and_skip_and_the_prompt_does_not() -> None:
    ran = ToolResult("42", "c1", "calc__add", duration_ms=137)
    skipped = ToolResult("Skipped: …", "c2", "bank__charge", "error", skipped=True)
    for result in (ran, skipped):
        stored = to_langchain(result)
        assert to_domain(stored) == result
        assert from_fields(messages_to_dict([stored])[0]["data"]) == result
        assert to_langchain(result, stored=False).additional_kwargs == {}  # the model never sees them
    assert message_to_dto(ran)["durationMs"] == 137 and "skipped" not in message_to_dto(ran)
    assert message_to_dto(skipped)["skipped"] is True and "durationMs" not in message_to_dto(skipped)


def test_a_result_stored_before_durations_reads_as_unknown() -> None:
    old = to_domain(to_langchain(ToolResult("ok", "c1", "t")))
    assert old is not None and "durationMs" not in message_to_dto(old)


def test_the_result_trace_carries_the_duration() -> None:
    events = StreamTranslator().feed(ToolCallFinished(2, ToolResult("ok", "c1", "t", duration_ms=5)))
    assert events[0].data["data"]["durationMs"] == 5


def request(call: ToolCall, decision: Decision | None) -> ApprovalRequest:
    return ApprovalRequest("conv", call, None, "bank", "", decision=decision, decided_at=NOW if decision else None)


def test_the_detail_lists_the_decisions_on_its_own_calls_only() -> None:
    edited, rejected, other, open_ = (ToolCall(f"c{i}", "bank__charge", {"amount": i}) for i in range(4))
    messages = (UserMessage("pay"), AssistantMessage("", (edited, rejected, open_)))
    requests = [
        request(edited, Decision(DecisionType.EDIT, args={"amount": 9})),
        request(rejected, Decision(DecisionType.REJECT, message="not today")),
        request(other, Decision(DecisionType.APPROVE, always=True)),  # a call of another branch
        request(open_, None),  # still waiting
    ]
    shown = decided_on(requests, messages)
    assert [r.call.id for r in shown] == ["c0", "c1"]
    conv = Conversation("conv", "pay", NOW, NOW)
    body = detail_dto(ConversationDetail(conv, messages, False, decided=shown))
    assert body["toolDecisions"] == {
        "c0": {"type": "edit", "always": False, "args": {"amount": 9}, "decidedAt": "2026-12-05T00:00:00.000Z"},
        "c1": {"type": "reject", "always": False, "message": "not today", "decidedAt": "2026-12-05T00:00:00.000Z"},
    }
    assert "toolDecisions" not in detail_dto(ConversationDetail(conv, messages, False))
