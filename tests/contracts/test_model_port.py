"""The ModelPort contract against every backend: text chunks, at most one Usage, then
exactly one reply whose tool calls have unique ids; errors mapped to the same codes."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from adapters.demo.model import DemoModel
from adapters.memory.model import ScriptedModel
from adapters.ollama.model import OllamaModel
from adapters.openai.model import OpenAIModel
from domain.errors import ModelUnavailable, ModelUnreachable
from domain.model import AssistantMessage, UserMessage
from ports.model import ModelPort, TextChunk, Usage
from ports.tools import ToolSpec
from tests.support.fake_ollama import fake_ollama
from tests.support.fake_openai import fake_openai

TOOL = ToolSpec("t__echo", "echo", {"type": "object", "properties": {"x": {"type": "string"}}})
Make = Callable[[list[dict[str, Any]]], ModelPort]


async def run(model: ModelPort) -> list[Any]:
    try:
        return [o async for o in model.stream("sys", [UserMessage("hi")], [TOOL])]
    finally:
        if isinstance(model, (OllamaModel, OpenAIModel)):
            await model.aclose()  # its connection pool


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


class ModelPortContract:
    @pytest.fixture
    def make(self) -> Iterator[Make]:
        raise NotImplementedError

    async def test_text_streams_in_chunks_then_one_reply(self, make: Make) -> None:
        out = await run(make([{"text": "one two three"}]))
        if isinstance(out[-2], Usage):
            out.pop(-2)
        assert [type(o) for o in out[:-1]] == [TextChunk] * (len(out) - 1) and len(out) > 2
        assert isinstance(out[-1], AssistantMessage)
        assert "".join(o.text for o in out[:-1]) == out[-1].content == "one two three"

    async def test_tool_calls_come_in_the_reply_with_unique_ids(self, make: Make) -> None:
        out = await run(make([{"tool_calls": [("t__echo", {"x": "1"}), ("t__echo", {"x": "2"})]}]))
        reply = out[-1]
        assert isinstance(reply, AssistantMessage)
        assert [(c.name, c.args) for c in reply.tool_calls] == [("t__echo", {"x": "1"}), ("t__echo", {"x": "2"})]
        assert len({c.id for c in reply.tool_calls}) == 2


class TestScriptedModel(ModelPortContract):
    @pytest.fixture
    def make(self) -> Iterator[Make]:
        def build(replies: list[dict[str, Any]]) -> ModelPort:
            r = replies[0]
            return ScriptedModel([r["text"] if "text" in r else list(r["tool_calls"])])

        yield build


class TestOllamaModel(ModelPortContract):
    @pytest.fixture
    def make(self) -> Iterator[Make]:
        with fake_ollama() as fake:

            def build(replies: list[dict[str, Any]]) -> ModelPort:
                fake.add(*replies)
                return OllamaModel(fake.url, "qwen3")

            yield build


class TestOpenAIModel(ModelPortContract):
    @pytest.fixture
    def make(self) -> Iterator[Make]:
        with fake_openai() as fake:

            def build(replies: list[dict[str, Any]]) -> ModelPort:
                fake.replies.extend(replies)
                return OpenAIModel(fake.url, "local-model")

            yield build


async def test_ollama_is_sent_the_context_size_and_reports_the_prompt_tokens() -> None:
    with fake_ollama([{"text": "ok"}]) as fake:
        out = await run(OllamaModel(fake.url, "qwen3", context=3000))
        assert fake.requests[0]["options"]["num_ctx"] == 3000
    usage = [o for o in out if isinstance(o, Usage)]
    assert len(usage) == 1 and usage[0].prompt_tokens > 10 and out[-2] is usage[0]


async def test_the_demo_model_calls_its_tools_then_answers() -> None:
    demo = DemoModel(delay=0)
    clock = ToolSpec("demo__clock", "", {})
    first = [o async for o in demo.stream("s", [UserMessage("hi")], [clock])]
    assert isinstance(first[-1], AssistantMessage) and first[-1].tool_calls[0].name == "demo__clock"
    second = [o async for o in demo.stream("s", [UserMessage("hi"), first[-1]], [clock])]
    assert isinstance(second[-1], AssistantMessage) and "hi" in second[-1].content and not second[-1].tool_calls


async def test_openai_errors_map_to_the_same_codes() -> None:
    with fake_openai() as fake:
        with pytest.raises(ModelUnavailable):
            await run(OpenAIModel(fake.url, "missing"))
        fake.replies.append({"stall": 3, "text": "late"})
        with pytest.raises(ModelUnreachable, match="timed out"):
            await run(OpenAIModel(fake.url, "local-model", timeout=0.5))
        assert (await OpenAIModel(fake.url, "local-model").check()).ok
    with pytest.raises(ModelUnreachable, match="unreachable"):
        await run(OpenAIModel(dead_url() + "/v1", "local-model"))
