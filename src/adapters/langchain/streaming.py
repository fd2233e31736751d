"""Streaming a LangChain chat model into ModelPort outputs (shared by every chat backend)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.runnables import Runnable

from adapters.langchain.messages import PromptCache, flatten
from domain.model import AssistantMessage, Message, ToolCall
from ports.model import ModelOutput, TextChunk, Usage
from ports.tools import ToolSpec


def tool_schema(spec: ToolSpec) -> dict[str, Any]:
    """The OpenAI function format that ChatOllama and ChatOpenAI both accept."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters) or {"type": "object", "properties": {}},
        },
    }


def reply_from_chunk(full: AIMessageChunk | None) -> AssistantMessage:
    if full is None:
        return AssistantMessage("")
    calls = tuple(ToolCall(c.get("id") or "", c["name"], dict(c.get("args") or {})) for c in full.tool_calls)
    reasoning = full.additional_kwargs.get("reasoning_content")
    return AssistantMessage(flatten(full.content), calls, id=full.id, reasoning=reasoning)


Bound = Runnable[LanguageModelInput, Any]


class ToolBinding:
    """Each client bound to the tool list once, while the list holds the same specs (a
    toolbox lists the same objects until its servers change): the request then carries the
    same schema objects from call to call, whose encoding a client may keep."""

    def __init__(self) -> None:
        self._bound: dict[int, tuple[tuple[ToolSpec, ...], Bound]] = {}

    def bind(self, chat: BaseChatModel, tools: Sequence[ToolSpec]) -> Bound:
        if not tools:
            return chat
        hit = self._bound.get(id(chat))  # a client lives as long as its model adapter
        if hit is not None and len(hit[0]) == len(tools) and all(a is b for a, b in zip(hit[0], tools, strict=True)):
            return hit[1]
        bound = chat.bind_tools([tool_schema(t) for t in tools])
        self._bound[id(chat)] = (tuple(tools), bound)
        return bound


async def stream_chat(
    chat: BaseChatModel,
    prompts: PromptCache,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    binding: ToolBinding | None = None,
) -> AsyncIterator[ModelOutput]:
    """Text chunks as they arrive, then the token counts, then the whole reply. Backend
    errors pass through for the adapter to translate."""
    model = (binding or ToolBinding()).bind(chat, tools)
    chunks: list[AIMessageChunk] = []
    async for chunk in model.astream(prompts.prompt(system, messages)):
        if not isinstance(chunk, AIMessageChunk):
            continue
        chunks.append(chunk)
        text = flatten(chunk.content)
        if text:
            yield TextChunk(text)
    # merged once at the end: `full + chunk` on each chunk built a new message every time
    full = add_ai_message_chunks(chunks[0], *chunks[1:]) if chunks else None
    usage = full.usage_metadata if full is not None else None
    if usage and usage.get("input_tokens"):
        yield Usage(int(usage["input_tokens"]), int(usage.get("output_tokens") or 0))
    yield reply_from_chunk(full)
