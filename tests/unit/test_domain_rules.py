"""Pure rules: ids, titles, the stream translation, the export formats, settings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from domain.errors import InvalidInput
from domain.events import NodeStarted, TokenDelta, ToolCallFinished, ToolCallRequested
from domain.lifecycle import StopReason, keeps_stopped_text
from domain.model import (
    AssistantMessage,
    CheckpointSummary,
    Conversation,
    ThreadHead,
    ToolCall,
    ToolResult,
    UserMessage,
    clean_title,
    iso,
    parse_conversation_id,
    title_from_message,
)
from entrypoints.export import checkpoint_jsonl, markdown_transcript
from entrypoints.settings import SettingsError, load_settings
from services.stream import StreamTranslator


@pytest.mark.parametrize(
    "bad",
    [
        "../../etc/passwd",
        "not-a-uuid",
        "",
        "11111111-1111-6111-8111-111111111111",
        "11111111-1111-4111-7111-111111111111",
        None,
        3,
        "11111111-1111-4111-8111-1111111111111",
    ],
)
def test_ids_that_are_not_uuid_shaped_are_refused(bad: object) -> None:
    with pytest.raises(InvalidInput, match="Invalid Conversation ID"):
        parse_conversation_id(bad)


def test_ids_are_lower_cased() -> None:
    assert parse_conversation_id("AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE") == "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("  hello  ", "hello"),
        ("first line\nsecond", "first line"),
        ("x" * 50, "x" * 50),
        ("x" * 51, "x" * 50 + "..."),
        ("   \n  ", "New Conversation"),
    ],
)
def test_titles_come_from_the_first_line(message: str, title: str) -> None:
    assert title_from_message(message) == title


def test_a_rename_is_trimmed_and_bounded() -> None:
    assert clean_title("  new   name ") == "new name"
    assert clean_title("  a \u202e b ") == "a b"  # a bidi override would make it lie about itself
    for bad in ("", "   ", None, 5, "x" * 201):
        with pytest.raises(InvalidInput):
            clean_title(bad)


def test_iso_has_milliseconds_and_z() -> None:
    assert iso(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)) == "2026-01-02T03:04:05.678Z"
    assert iso(datetime(2026, 1, 2, 3, 4, 5, 999999, tzinfo=UTC)) == "2026-01-02T03:04:05.999Z"  # truncated
    assert iso(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05.000Z"
    assert iso(datetime(2026, 1, 2, 1, 4, 5, 1000, tzinfo=timezone(timedelta(hours=-3)))) == "2026-01-02T04:04:05.001Z"


def test_the_translator_emits_enter_leave_call_result_as_the_contract() -> None:
    t = StreamTranslator()
    call = ToolCall("c1", "fetch__fetch", {"url": "u"})
    out = []
    for ev in [
        NodeStarted(1, "agent", "qwen3"),
        TokenDelta(1, "Hi"),
        TokenDelta(1, ""),
        ToolCallRequested(1, call),
        NodeStarted(2, "tools", "fetch__fetch"),
        NodeStarted(2, "tools", "fetch__fetch"),
        ToolCallFinished(2, ToolResult("body", "c1", "fetch__fetch")),
        NodeStarted(3, "agent", "qwen3"),
    ]:
        out += t.feed(ev)
    out += t.close()
    summary = [
        (e.event, e.data["event"], e.data["node"], e.data["step"]) if e.event == "trace" else (e.event, e.data) for e in out
    ]
    assert summary == [
        ("trace", "enter", "agent", 1),
        ("token", "Hi"),
        ("trace", "call", "tools", 1),
        ("trace", "leave", "agent", 1),
        ("trace", "enter", "tools", 2),
        ("trace", "result", "tools", 2),
        ("trace", "leave", "tools", 2),
        ("trace", "enter", "agent", 3),
        ("trace", "leave", "agent", 3),
    ]
    assert out[2].data["data"] == {"name": "fetch__fetch", "arguments": {"url": "u"}, "tool_call_id": "c1"}
    assert out[5].data["data"] == {"name": "fetch__fetch", "tool_call_id": "c1", "result": "body"}


def test_the_markdown_transcript_has_the_reference_layout() -> None:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    conv = Conversation("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "Title", t, t)
    md = markdown_transcript(
        conv,
        [
            UserMessage("hi"),
            AssistantMessage("", (ToolCall("c1", "fetch__fetch", {"url": "x"}),)),
            ToolResult("page", "c1", "fetch__fetch", "error"),
            AssistantMessage("done"),
        ],
    )
    assert md.split("\n") == [
        "# Title",
        "",
        "- Conversation / thread_id: `aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee`",
        "- Created: 2026-01-01T00:00:00.000Z",
        "- Updated: 2026-01-01T00:00:00.000Z",
        "",
        "## User",
        "",
        "hi",
        "",
        "## Assistant",
        "",
        "> **Tool call** `fetch__fetch` (c1)",
        ">",
        "> ```json",
        "> {",
        '>   "url": "x"',
        "> }",
        "> ```",
        "",
        "### Tool result: `fetch__fetch` (error)",
        "",
        "```",
        "page",
        "```",
        "",
        "## Assistant",
        "",
        "done",
        "",
    ]


def test_the_markdown_transcript_keeps_the_contracts_headings_and_names_the_models_in_its_head() -> None:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    conv = Conversation("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "Title", t, t, model="llava:7b")
    md = markdown_transcript(
        conv,
        [
            UserMessage("hi"),
            AssistantMessage("one", model="qwen3"),
            UserMessage("again"),
            AssistantMessage("two", model="llava:7b"),
            AssistantMessage("three", model="qwen3"),
        ],
    )
    lines = md.split("\n")
    assert [line for line in lines if line.startswith("#")] == [
        "# Title",
        "## User",
        "## Assistant",
        "## User",
        "## Assistant",
        "## Assistant",
    ]
    head = lines[: lines.index("## User")]
    assert head[2:5] == [
        "- Conversation / thread_id: `aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee`",
        "- Created: 2026-01-01T00:00:00.000Z",
        "- Updated: 2026-01-01T00:00:00.000Z",
    ]
    assert "- Answered by: `qwen3`, `llava:7b`" in head and "- Model: `llava:7b`" in head
    assert lines[lines.index("## Assistant") :][:4] == ["## Assistant", "", "one", ""]


def test_the_jsonl_export_is_one_line_per_checkpoint_and_newline_when_empty() -> None:
    assert checkpoint_jsonl([]) == "\n"
    line = CheckpointSummary("c", "2026", -1, "input", ("__start__",), 0, None, "r1")
    text = checkpoint_jsonl([line, line])
    assert text.endswith("\n") and len(text.strip().split("\n")) == 2
    assert json.loads(text.split("\n")[0]) == {
        "checkpoint_id": "c",
        "created_at": "2026",
        "step": -1,
        "source": "input",
        "next": ["__start__"],
        "message_count": 0,
        "last_message": None,
        "run_id": "r1",
        "branch": 1,
    }


def test_empty_environment_variables_count_as_unset(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = load_settings({"CONFIG_DIR": str(tmp_path), "OLLAMA_MODEL": "", "PORT": "9001", "OLLAMA_THINK": "TRUE"})
    assert s.OLLAMA_MODEL == "qwen3" and s.PORT == 9001 and s.OLLAMA_THINK == "true"


@pytest.mark.parametrize("value", ["0", "-3", "abc"])
def test_a_bad_recursion_limit_falls_back_to_25(value: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert load_settings({"CONFIG_DIR": str(tmp_path), "AGENT_RECURSION_LIMIT": value}).AGENT_RECURSION_LIMIT == 25


def test_an_unknown_backend_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SettingsError, match="MODEL_BACKEND"):
        load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_BACKEND": "gpt"})


def test_only_a_person_s_stop_of_an_unsaved_step_keeps_its_streamed_text() -> None:
    mid_step = ThreadHead(work_left=True, awaiting_tools=False, message_count=1)
    assert keeps_stopped_text(StopReason.CANCEL, "Hello", mid_step)
    assert keeps_stopped_text(StopReason.STEER, "Hello", mid_step)  # a steer cut a text answer: it stays its answer
    assert not keeps_stopped_text(StopReason.SHUTDOWN, "Hello", mid_step)  # the step reruns on resume
    assert not keeps_stopped_text(StopReason.CANCEL, "", mid_step)
    saved_answer = ThreadHead(work_left=False, awaiting_tools=False, message_count=2)
    saved_calls = ThreadHead(work_left=True, awaiting_tools=True, message_count=2)
    assert not keeps_stopped_text(StopReason.CANCEL, "Hello", saved_answer)  # already in the thread
    assert not keeps_stopped_text(StopReason.CANCEL, "Hello", saved_calls)
    from domain.errors import ModelUnreachable, RunLost, StorageFailure

    assert keeps_stopped_text(None, "Hello", mid_step, ModelUnreachable())  # the model failed mid-answer
    assert not keeps_stopped_text(None, "Hello", mid_step, StorageFailure("disk full"))  # nothing can be written
    assert not keeps_stopped_text(None, "Hello", mid_step, RunLost())
    assert not keeps_stopped_text(None, "Hello", mid_step)  # finished: the answer is saved by the agent


def test_each_call_of_a_reply_gets_an_id_of_its_own_and_keeps_the_models() -> None:
    from itertools import count

    from domain.lifecycle import own_call_ids
    from domain.model import ToolCall

    numbers = count()
    calls = [ToolCall("call_0", "a", {}), ToolCall("call_0", "b", {}), ToolCall("", "c", {})]
    owned = own_call_ids(calls, lambda: f"ours_{next(numbers)}")
    assert [c.id for c in owned] == ["ours_0", "ours_1", "ours_2"]
    assert [c.model_id for c in owned] == ["call_0", "call_0", None]
    assert [(c.name, c.args) for c in owned] == [(c.name, c.args) for c in calls]


def test_a_stored_reply_keeps_the_model_call_ids_beside_ours() -> None:
    from adapters.langchain.messages import to_domain, to_langchain
    from domain.model import AssistantMessage, ToolCall

    reply = AssistantMessage("", (ToolCall("call_x", "a", {"k": 1}, model_id="call_0"),), id="m1")
    assert to_domain(to_langchain(reply)) == reply
    prompt = to_langchain(reply, stored=False)  # the model sees one id per call, ours
    assert "call_0" not in str(prompt.additional_kwargs)
