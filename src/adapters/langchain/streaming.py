"""Streaming a LangChain chat model into ModelPort outputs (shared by every chat backend)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk

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


async def stream_chat(
    chat: BaseChatModel, prompts: PromptCache, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> AsyncIterator[ModelOutput]:
    """Text chunks as they arrive, then the token counts, then the whole reply. Backend
    errors pass through for the adapter to translate."""
    model = chat.bind_tools([tool_schema(t) for t in tools]) if tools else chat
    full: AIMessageChunk | None = None
    async for chunk in model.astream(prompts.prompt(system, messages)):
        if not isinstance(chunk, AIMessageChunk):
            continue
        full = chunk if full is None else full + chunk
        text = flatten(chunk.content)
        if text:
            yield TextChunk(text)
    usage = full.usage_metadata if full is not None else None
    if usage and usage.get("input_tokens"):
        yield Usage(int(usage["input_tokens"]), int(usage.get("output_tokens") or 0))
    yield reply_from_chunk(full)
