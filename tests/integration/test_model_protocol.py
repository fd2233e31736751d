"""Model servers that speak their protocol only in part (issue 35): what a real llama.cpp
server and Ollama-protocol proxies were seen sending, pinned with raw servers and the fakes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapters.ollama.model import OllamaModel
from adapters.openai.model import OpenAIModel
from adapters.openai.reasoning import ThinkSplitter
from domain.errors import ModelBadResponse
from domain.model import AssistantMessage, UserMessage
from entrypoints.settings import SettingsError, load_settings
from ports.model import ModelPort, TextChunk, Usage
from ports.tools import ToolSpec
from tests.support.fake_ollama import fake_ollama, prompt_tokens
from tests.support.fake_openai import fake_openai
from tests.support.raw_server import replying, server


def ndjson(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def sse(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def outputs(model: ModelPort) -> list[Any]:
    try:
        return await asyncio.wait_for(_read(model), 20)
    finally:
        await model.aclose()  # type: ignore[attr-defined]


async def _read(model: ModelPort) -> list[Any]:
    return [o async for o in model.stream("sys", [UserMessage("hi")], [])]


NO_MESSAGE = (
    b'{"model":"qwen3","message":{"role":"assistant","content":"ok"},"done":false}\n'
    b'{"model":"qwen3","done":true,"done_reason":"stop"}\n'
)


@pytest.mark.parametrize(
    ("backend", "wire", "says"),
    [
        # pocket-o-llama ends its stream with a chunk that has no message
        ("ollama", ndjson(NO_MESSAGE), "sent a line that is not in Ollama's format (message: Field required)"),
        ("ollama", ndjson(b""), "closed its answer's stream without sending any part of it"),
        ("openai", sse(b"data: [DONE]\n\n"), "closed its answer's stream without sending any part of it"),
        ("openai", sse(b""), "closed its answer's stream without sending any part of it"),
    ],
)
async def test_a_malformed_or_empty_reply_names_the_server_the_cause_and_whether_a_resume_helps(
    backend: str, wire: bytes, says: str
) -> None:
    async with server(replying(wire)) as s:
        model: ModelPort = OllamaModel(s.url, "qwen3") if backend == "ollama" else OpenAIModel(f"{s.url}/v1", "local-model")
        with pytest.raises(ModelBadResponse) as caught:
            await outputs(model)
    message = caught.value.message
    assert s.url in message and says in message, message
    assert "A resume asks it again" in message


# --- usage on the OpenAI-compatible backend (item 5) --------------------------------------


async def test_the_openai_backend_asks_for_token_counts_and_reads_them() -> None:
    with fake_openai([{"text": "four words right here"}]) as fake:
        out = await outputs(OpenAIModel(fake.url, "local-model"))
    assert fake.requests[0]["stream_options"] == {"include_usage": True}
    usage = [o for o in out if isinstance(o, Usage)]
    assert usage == [Usage(prompt_tokens(fake.requests[0]), 4)]
    assert isinstance(out[-1], AssistantMessage) and out[-1].content == "four words right here"


async def test_a_server_that_refuses_stream_options_is_asked_again_without_them_and_not_again() -> None:
    with fake_openai([{"text": "first"}, {"text": "second"}]) as fake:
        fake.refuse_stream_options = True
        model = OpenAIModel(fake.url, "local-model")
        first = [o async for o in model.stream("sys", [UserMessage("hi")], [])]
        second = await outputs(model)
    assert [r.get("stream_options") for r in fake.requests] == [{"include_usage": True}, None, None]
    assert isinstance(first[-1], AssistantMessage) and first[-1].content == "first"
    assert isinstance(second[-1], AssistantMessage) and second[-1].content == "second"
    assert not [o for o in first + second if isinstance(o, Usage)]


# --- reasoning on the OpenAI-compatible backend (item 8) ----------------------------------


async def test_reasoning_content_is_kept_as_reasoning_and_not_streamed_as_text() -> None:
    with fake_openai([{"reasoning": "the user greets me", "text": "Hello there."}]) as fake:
        out = await outputs(OpenAIModel(fake.url, "local-model"))
    text = "".join(o.text for o in out if isinstance(o, TextChunk))
    reply = out[-1]
    assert isinstance(reply, AssistantMessage)
    assert text == reply.content == "Hello there."
    assert reply.reasoning is not None and reply.reasoning.strip() == "the user greets me"


async def test_a_think_block_in_the_text_is_reasoning_and_the_stream_equals_the_stored_answer() -> None:
    with fake_openai([{"text": "<think>\nthe user greets me\n</think>\n\nHello there."}]) as fake:
        out = await outputs(OpenAIModel(fake.url, "local-model"))
    text = "".join(o.text for o in out if isinstance(o, TextChunk))
    reply = out[-1]
    assert isinstance(reply, AssistantMessage)
    assert text == reply.content == "Hello there."
    assert reply.reasoning is not None and reply.reasoning.strip() == "the user greets me"


@pytest.mark.parametrize(
    ("text", "visible", "reasoning"),
    [
        ("<think>a b</think>answer", "answer", "a b"),
        ("  \n<think>a</think>\n\nanswer <think>x</think>", "answer <think>x</think>", "a"),
        ("plain <think>not reasoning</think>", "plain <think>not reasoning</think>", ""),
        ("<thin", "<thin", ""),  # only looked like a tag
        ("<think>never closed", "", "never closed"),
        ("a < b </think>", "a < b </think>", ""),
    ],
)
def test_the_think_splitter_gives_the_same_split_in_any_pieces(text: str, visible: str, reasoning: str) -> None:
    for size in (1, 2, 3, 7, len(text)):
        splitter = ThinkSplitter()
        out = "".join(splitter.feed(text[i : i + size]) for i in range(0, len(text), size)) + splitter.finish()
        assert (out, splitter.reasoning) == (visible, reasoning), size


# --- tool_choice (item 7) -----------------------------------------------------------------

TOOL = ToolSpec("notes__save", "Save a note", {"type": "object", "properties": {"text": {"type": "string"}}})


@pytest.mark.parametrize("choice", [None, "auto", "required", "none"])
async def test_model_tool_choice_is_sent_to_an_openai_compatible_server_only_when_set(choice: str | None) -> None:
    with fake_openai([{"text": "ok"}]) as fake:
        model = OpenAIModel(fake.url, "local-model", tool_choice=choice)
        try:
            _ = [o async for o in model.stream("sys", [UserMessage("hi")], [TOOL])]
        finally:
            await model.aclose()
    request = fake.requests[0]
    assert request.get("tool_choice") == choice and request["tools"][0]["function"]["name"] == "notes__save"


async def test_on_ollama_tool_choice_none_sends_no_tools() -> None:
    with fake_ollama([{"text": "ok"}, {"text": "ok"}]) as fake:
        for choice in ("none", "auto"):
            model = OllamaModel(fake.url, "qwen3", tool_choice=choice)
            try:
                _ = [o async for o in model.stream("sys", [UserMessage("hi")], [TOOL])]
            finally:
                await model.aclose()
    assert not fake.requests[0].get("tools") and "tool_choice" not in fake.requests[0]
    assert fake.requests[1]["tools"][0]["function"]["name"] == "notes__save"


def test_model_tool_choice_is_checked(tmp_path: Any) -> None:
    assert load_settings({"CONFIG_DIR": str(tmp_path)}).MODEL_TOOL_CHOICE == ""
    assert load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_TOOL_CHOICE": "Required"}).MODEL_TOOL_CHOICE == "required"
    with pytest.raises(SettingsError, match="MODEL_TOOL_CHOICE must be auto, required or none"):
        load_settings({"CONFIG_DIR": str(tmp_path), "MODEL_TOOL_CHOICE": "always"})
