"""Streaming a LangChain chat model into ModelPort outputs (shared by every chat backend)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import Any, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.runnables import Runnable

from adapters.langchain.messages import PromptCache, flatten
from domain.model import AssistantMessage, Message, ToolCall
from ports.model import ModelOutput, ReasoningChunk, TextChunk, Usage
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

    def __init__(self, tool_choice: str | None = None) -> None:
        self._bound: dict[int, tuple[tuple[ToolSpec, ...], Bound]] = {}
        self.tool_choice = tool_choice  # MODEL_TOOL_CHOICE: None sends none

    def bind(self, chat: BaseChatModel, tools: Sequence[ToolSpec]) -> Bound:
        if not tools:
            return chat
        hit = self._bound.get(id(chat))  # a client lives as long as its model adapter
        if hit is not None and len(hit[0]) == len(tools) and all(a is b for a, b in zip(hit[0], tools, strict=True)):
            return hit[1]
        schemas = [tool_schema(t) for t in tools]
        bound = chat.bind_tools(schemas) if self.tool_choice is None else chat.bind_tools(schemas, tool_choice=self.tool_choice)
        self._bound[id(chat)] = (tuple(tools), bound)
        return bound


class EmptyStream(Exception):
    """The model server ended its answer's stream without one chunk (LangChain: "No
    generation chunks were returned")."""


EMPTY = "No generation chunks were returned"
RESUME_MAY_HELP = "A resume asks it again: that helps if it failed once (a crash, a restart), not if it always answers so."

MERGE_EVERY = 1024  # chunks held before they are merged: a chunk object costs ~1 KiB


def generated(chunk: AIMessageChunk) -> bool:
    """Whether the chunk carries a generated token: text, reasoning or a piece of a tool call
    (a thinking model in a loop streams reasoning only, which counts all the same)."""
    return bool(chunk.content or chunk.tool_call_chunks or chunk.additional_kwargs.get("reasoning_content"))


def stopped_for_length(full: AIMessageChunk | None) -> bool:
    """The server ended the answer at the token limit it was sent (Ollama's `done_reason`,
    the OpenAI API's `finish_reason`)."""
    meta = full.response_metadata if full is not None else {}
    return "length" in (meta.get("done_reason"), meta.get("finish_reason"))


async def stream_chat(
    chat: BaseChatModel,
    prompts: PromptCache,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    binding: ToolBinding | None = None,
    max_tokens: int | None = None,
    **call: Any,
) -> AsyncIterator[ModelOutput]:
    """Text chunks as they arrive, then the token counts, then the whole reply. Backend
    errors pass through for the adapter to translate.

    `max_tokens` is enforced here as well as sent: a server that ignores the limit (or a
    model in a repetition loop on one that has none) is read up to it, then the response is
    closed, which stops the generation; the reply so far comes back `cut`, without tool
    calls (a cut call's arguments are not whole). `call` goes with the request as the
    client's call options (the model's name, whether to think)."""
    model = (binding or ToolBinding()).bind(chat, tools)
    chunks: list[AIMessageChunk] = []
    count, cut = 0, False
    # closed on a cut (Runnable.astream is an async generator): the response goes with it
    answer = cast("AsyncGenerator[Any, None]", model.astream(prompts.prompt(system, messages), **call))
    async with aclosing(answer) as stream:
        async for chunk in _no_empty(stream):
            if not isinstance(chunk, AIMessageChunk):
                continue
            if generated(chunk):
                count += 1
                if max_tokens is not None and count > max_tokens:
                    cut = True
                    break
            chunks.append(chunk)
            if len(chunks) > MERGE_EVERY:
                chunks = [add_ai_message_chunks(chunks[0], *chunks[1:])]
            thought = chunk.additional_kwargs.get("reasoning_content")
            if isinstance(thought, str) and thought:
                yield ReasoningChunk(thought)
            text = flatten(chunk.content)
            if text:
                yield TextChunk(text)
    # merged in batches: `full + chunk` on each chunk built a new message every time
    full = add_ai_message_chunks(chunks[0], *chunks[1:]) if chunks else None
    usage = full.usage_metadata if full is not None else None
    if usage and usage.get("input_tokens"):
        yield Usage(int(usage["input_tokens"]), int(usage.get("output_tokens") or 0))
    reply = reply_from_chunk(full)
    if cut or stopped_for_length(full):
        reply = replace(reply, tool_calls=(), cut=True)
    yield reply


async def _no_empty(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The stream, with LangChain's error for a stream that sent nothing made our own (its
    ValueError says nothing of the server, and could be any bug)."""
    try:
        async for chunk in stream:
            yield chunk
    except ValueError as e:
        if str(e) == EMPTY:
            raise EmptyStream(EMPTY) from e
        raise
