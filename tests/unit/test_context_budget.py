"""The context budget as pure rules: what of a thread fits, never a broken tool-call pair,
the latest user message always sent, huge tool results shortened, calibration, summaries."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from adapters.memory.model import ScriptedModel
from domain.context import ContextPolicy, estimate_message, fixed_cost, plan_prompt, shorten
from domain.errors import ModelUnreachable
from domain.model import AssistantMessage, Message, SummaryMessage, ToolCall, ToolResult, UserMessage
from entrypoints.notices import ContextNotices
from entrypoints.settings import SettingsError, load_settings
from ports.tools import ToolSpec
from services.prompting import Calibration, ContextKeeper
from tests.support.harness import make_harness

TOOLS = [ToolSpec("notes__save", "Save a note", {"type": "object", "properties": {"text": {"type": "string"}}})]
SMALL = ContextPolicy(window=2048, reserve=512)
WORDS = "lorem ipsum dolor sit amet " * 8


def turns(n: int, tools: bool = True) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out.append(UserMessage(f"{i} {WORDS}", id=f"u{i}"))
        if tools:
            out.append(AssistantMessage("", (ToolCall(f"c{i}", "notes__save", {"text": str(i)}),), id=f"a{i}"))
            out.append(ToolResult(f"saved {i}", f"c{i}", "notes__save", id=f"t{i}"))
        out.append(AssistantMessage(f"{i} {WORDS}", id=f"r{i}"))
    return out


def assert_pairs_whole(sent: Sequence[Message]) -> None:
    """Every call sent has its result right after it, and every result its call."""
    calls: set[str] = set()
    for i, m in enumerate(sent):
        if isinstance(m, AssistantMessage) and m.tool_calls:
            results = {r.tool_call_id for r in sent[i + 1 : i + 1 + len(m.tool_calls)] if isinstance(r, ToolResult)}
            assert results == {c.id for c in m.tool_calls}, f"call {i} sent without all its results"
            calls |= results
        if isinstance(m, ToolResult):
            assert m.tool_call_id in calls, f"result {i} sent without its call"


def test_a_short_thread_is_sent_whole() -> None:
    thread = turns(3)
    plan = plan_prompt(thread, "You are a test.", TOOLS, SMALL)
    assert plan.messages == tuple(thread) and plan.sent_from == 0 and plan.left_out == 0
    assert plan.system == "You are a test." and plan.tokens <= plan.budget == 1536


def test_a_long_thread_sends_the_latest_messages_that_fit_with_pairs_whole() -> None:
    thread = [*turns(200), UserMessage("the question", id="last")]
    plan = plan_prompt(thread, "You are a test.", TOOLS, SMALL)
    assert plan.tokens <= plan.budget
    assert plan.messages == tuple(thread[plan.sent_from :])  # a suffix, unchanged
    assert plan.messages[-1] == UserMessage("the question", id="last")
    assert plan.left_out == plan.sent_from > 700
    assert_pairs_whole(plan.messages)
    assert not isinstance(plan.messages[0], ToolResult)


def test_the_cut_never_falls_between_a_call_and_its_results() -> None:
    big = "x" * 2000
    thread: list[Message] = [
        UserMessage("old"),
        AssistantMessage("", (ToolCall("c1", "notes__save", {}), ToolCall("c2", "notes__save", {}))),
        ToolResult(big, "c1", "notes__save"),
        ToolResult(big, "c2", "notes__save"),
        AssistantMessage("done"),
        UserMessage("new"),
    ]
    policy = ContextPolicy(window=1536, reserve=512, tool_share=1.0)
    plan = plan_prompt(thread, "sys", [], policy)  # both results do not fit, one would
    assert [m.content for m in plan.messages] == ["done", "new"]
    assert plan.sent_from == 4 and plan.left_out == 4


def test_a_call_without_its_result_or_a_result_without_its_call_is_never_sent() -> None:
    thread: list[Message] = [
        ToolResult("orphan", "gone", "notes__save"),
        AssistantMessage("", (ToolCall("c1", "notes__save", {}),)),
        UserMessage("new"),
    ]
    plan = plan_prompt(thread, "sys", [], SMALL)
    assert plan.messages == (UserMessage("new"),)


def test_the_latest_user_message_is_sent_even_when_its_turn_does_not_fit() -> None:
    thread: list[Message] = [*turns(5), UserMessage("do the long task", id="ask")]
    for i in range(30):  # a long tool loop within the current turn
        thread.append(AssistantMessage("", (ToolCall(f"k{i}", "notes__save", {}),)))
        thread.append(ToolResult("y" * 400, f"k{i}", "notes__save"))
    plan = plan_prompt(thread, "sys", TOOLS, SMALL)
    assert UserMessage("do the long task", id="ask") in plan.messages
    assert plan.messages[0].id == "ask" and plan.tokens <= plan.budget
    assert_pairs_whole(plan.messages)
    assert plan.messages[-1] == thread[-1]


def test_the_system_prompt_and_tools_are_never_cut_even_over_budget() -> None:
    system = "rules " * 2000
    plan = plan_prompt([*turns(3), UserMessage("hi")], system, TOOLS, SMALL)
    assert plan.system == system and plan.messages == (UserMessage("hi"),)
    assert plan.tokens > plan.budget  # reported honestly


def test_no_summary_is_asked_for_when_the_system_prompt_and_tools_leave_no_room_for_one() -> None:
    # issue 35 item 2: with MODEL_CONTEXT=1024 and the shipped tools over the budget, every
    # turn made an extra summary call that could not make room
    policy = ContextPolicy(window=1024, reserve=256, summaries=True)
    many = [
        ToolSpec(f"t{i}__do", "Does a thing " * 20, {"type": "object", "properties": {"x": {"type": "string"}}})
        for i in range(20)
    ]
    thread = [*turns(10), UserMessage("q", id="q")]
    assert plan_prompt(thread, "sys", many, policy).summarize is None
    assert plan_prompt(thread, "sys", TOOLS, policy).summarize is not None  # room: a summary helps


def test_the_fixed_part_of_every_prompt_is_warned_of_when_it_crowds_the_budget() -> None:
    policy = ContextPolicy(window=1024, reserve=256)
    many = [
        ToolSpec(f"t{i}__do", "Does a thing " * 20, {"type": "object", "properties": {"x": {"type": "string"}}})
        for i in range(20)
    ]
    cost = fixed_cost("You are helpful.", many, policy)
    assert cost.over and cost.tools > 768
    warning = cost.warning()
    assert warning is not None and f"the tool definitions alone take ~{cost.tools:,} of 768 tokens" in warning
    assert "every model call exceeds the budget" in warning
    assert fixed_cost("You are helpful.", TOOLS, policy).warning() is None
    half = fixed_cost("rules " * 400, TOOLS, policy)  # ~600 tokens of 768: crowded, not over
    assert not half.over and "little room is left" in (half.warning() or "")


def test_a_huge_tool_result_is_sent_shortened_head_and_tail_with_a_marker() -> None:
    body = "HEAD" + "m" * 40_000 + "TAIL"
    thread: list[Message] = [
        UserMessage("fetch it"),
        AssistantMessage("", (ToolCall("c1", "fetch", {}),)),
        ToolResult(body, "c1", "fetch"),
    ]
    plan = plan_prompt(thread, "sys", [], SMALL)
    sent = plan.messages[2]
    assert isinstance(sent, ToolResult) and plan.shortened == 1
    assert sent.content.startswith("HEAD") and sent.content.endswith("TAIL")
    assert "characters left out" in sent.content and len(sent.content) < 2000
    assert estimate_message(sent) <= SMALL.budget * SMALL.tool_share + 30
    assert thread[2].content == body  # the thread keeps it whole
    assert shorten("short", 100) == "short"


def test_calibration_corrects_the_estimate_per_conversation_and_spots_a_cut_prompt() -> None:
    cal = Calibration()
    assert cal.observe("a", 1000, None, 4096) is None and cal.ratio("a") == 1.0
    seen = cal.observe("a", 1000, 1300, 4096)
    assert seen is not None and not seen.truncated and cal.ratio("a") == 1.3
    assert cal.ratio("b") == 1.0
    cut = cal.observe("a", 2000, 1000, 4096)  # 2600 expected, 1000 evaluated
    assert cut is not None and cut.truncated and cut.sent == 2600 and cal.ratio("a") == 1.3
    full = cal.observe("b", 1000, 2048, 2048)  # the report fills the window: cut, and underestimated
    assert full is not None and full.truncated and cal.ratio("b") >= 2.0


def test_a_calibrated_ratio_shrinks_what_is_sent() -> None:
    thread = [*turns(100), UserMessage("q")]
    plain = plan_prompt(thread, "sys", TOOLS, SMALL)
    calibrated = plan_prompt(thread, "sys", TOOLS, SMALL, ratio=2.0)
    assert len(calibrated.messages) < len(plain.messages) and calibrated.tokens <= calibrated.budget


def test_with_summaries_a_cut_asks_for_a_summary_of_a_range_before_the_latest_message() -> None:
    policy = ContextPolicy(window=2048, reserve=512, summaries=True)
    thread = [*turns(60), UserMessage("q", id="q")]
    plan = plan_prompt(thread, "sys", TOOLS, policy)
    assert plan.summarize is not None
    start, end = plan.summarize
    assert start == 0 and 0 < end < len(thread) - 1
    assert not isinstance(thread[end], ToolResult)  # a unit boundary
    stored = [*thread, SummaryMessage("what happened", end, id="s1")]
    again = plan_prompt([*stored, UserMessage("next")], "sys", TOOLS, policy)
    assert again.summarize is None and again.summary is not None
    assert again.system.endswith("what happened") and again.summarized == end
    assert again.sent_from >= end and again.tokens <= again.budget
    assert not any(isinstance(m, SummaryMessage) for m in again.messages)
    off = plan_prompt(stored, "sys", TOOLS, ContextPolicy(window=2048, reserve=512))
    assert off.summary is None and off.summarize is None  # summaries off: older messages are left out


async def test_the_keeper_asks_the_model_for_a_summary_without_tools() -> None:
    model = ScriptedModel(["They talked about notes."])
    keeper = ContextKeeper(model, ContextPolicy(window=2048, reserve=512, summaries=True))
    thread = [*turns(60), UserMessage("q")]
    plan = keeper.plan("conv", thread, "sys", TOOLS)
    summary = await keeper.summarize(thread, plan)
    assert plan.summarize is not None and summary.covers == plan.summarize[1]
    assert summary.content == "They talked about notes." and model.seen[0].tools == ()
    assert "User: 0 lorem" in model.seen[0].messages[0].content


async def test_a_summary_is_saved_before_the_answer_and_reused_by_the_resume() -> None:
    policy = ContextPolicy(window=1024, reserve=256, summaries=True)
    long = "word " * 300  # ~380 tokens a message: two turns no longer fit
    h = make_harness(["first answer", "A SUMMARY.", ModelUnreachable("down")], context=policy)
    started, _ = await h.send(f"one {long}")
    cid = started.conversation_id
    _, events = await h.send(f"two {long}", cid)  # summary written, then the model is down
    assert events[-1].event == "chat-error" and events[-1].data["code"] == "MODEL_UNREACHABLE"
    detail = await h.conversations.get(cid)
    summaries = [m for m in detail.messages if isinstance(m, SummaryMessage)]
    assert [s.content for s in summaries] == ["A SUMMARY."] and detail.resumable
    h.model.replies.append("second answer")
    asked = len(h.model.seen)
    events = await h.resume(cid)
    assert events[-1].data["status"] == "completed"
    assert len(h.model.seen) == asked + 1  # the answer only: the summary was not asked for again
    assert h.model.seen[-1].system.endswith("A SUMMARY.") and h.model.seen[-1].tools == ()
    detail = await h.conversations.get(cid)
    assert detail.context is not None and detail.context.sent_from >= summaries[0].covers


def test_the_cli_tells_once_per_run_that_the_model_does_not_see_everything() -> None:
    notices = ContextNotices()
    whole = {"sent": 4, "leftOut": 0, "summarized": 0, "shortened": 0, "tokens": 90, "budget": 1536}
    assert notices.line("context", whole) is None
    cut = {**whole, "sent": 6, "leftOut": 40, "tokens": 1400}
    assert notices.line("context", cut) == "\ncontext: the model sees the last 6 messages (~1400 of 1536 tokens); 40 left out"
    assert notices.line("context", {**cut, "leftOut": 42}) is None  # said once a run
    warning = notices.line("truncated", {"message": "the model server cut the prompt"})
    assert warning == "\nwarning: the model server cut the prompt"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MODEL_CONTEXT": "256"}, "MODEL_CONTEXT must be at least 512 tokens, got 256"),
        ({"MODEL_CONTEXT": "lots"}, "MODEL_CONTEXT must be a whole number, got 'lots'"),
        (
            {"MODEL_CONTEXT": "2048", "MODEL_RESERVE": "1500"},
            "MODEL_RESERVE must be between 0 and half of MODEL_CONTEXT (1024), got 1500",
        ),
        ({"CONTEXT_TOOL_SHARE": "2"}, "CONTEXT_TOOL_SHARE must be between 0.05 and 1, got 2.0"),
    ],
)
def test_context_settings_that_cannot_work_are_a_clear_error(env: dict[str, str], message: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as e:
        load_settings({"CONFIG_DIR": str(tmp_path), **env})
    assert str(e.value) == message


def test_a_small_window_alone_starts_with_the_reserve_halved(tmp_path: Path) -> None:
    # issue 35 item 3: MODEL_CONTEXT=1024 alone refused to start (the default reserve is 1024)
    s = load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_CONTEXT": "1024"})
    assert (s.MODEL_CONTEXT, s.MODEL_RESERVE) == (1024, 512)
    assert load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_CONTEXT": "4096"}).MODEL_RESERVE == 1024


def test_context_settings_default_to_a_window_that_suits_the_default_model(tmp_path: Path) -> None:
    s = load_settings({"CONFIG_DIR": str(tmp_path), "CONTEXT_SUMMARY": "TRUE"})
    assert (s.MODEL_CONTEXT, s.MODEL_RESERVE, s.CONTEXT_TOOL_SHARE, s.CONTEXT_SUMMARY) == (8192, 1024, 0.25, True)
