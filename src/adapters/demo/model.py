"""An offline model for people without Ollama: it streams a reply word by word and makes
one round of tool calls, so streaming, a tool call and a resume can be watched."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from domain.model import AssistantMessage, Message, ToolCall, ToolResult, UserMessage, new_id
from domain.models import ModelInfo
from ports.model import ModelOutput, ModelPort, Readiness, TextChunk
from ports.tools import ToolSpec


class DemoModel(ModelPort):
    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay

    @property
    def name(self) -> str:
        return "demo"

    async def models(self) -> Sequence[ModelInfo]:
        # "vision": it takes images (it only counts them), so the page's attachments can be tried offline
        return [ModelInfo("demo", context=8192, capabilities=("completion", "tools", "vision"))]

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], model: str | None = None
    ) -> AsyncIterator[ModelOutput]:
        last = messages[-1] if messages else None
        names = {t.name for t in tools}
        if isinstance(last, UserMessage) and "demo__clock" in names:
            calls = [ToolCall(f"call_{new_id()[:8]}", "demo__clock", {})]
            if "demo__word_count" in names:
                calls.append(ToolCall(f"call_{new_id()[:8]}", "demo__word_count", {"text": last.content}))
            yield AssistantMessage("", tuple(calls), id=f"run-{new_id()}")
            return
        asked = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        question = asked.content if asked else ""
        results = [m for m in messages[-3:] if isinstance(m, ToolResult)]
        text = f'This is the offline demo model. You wrote: "{question}".'
        if asked and asked.images:
            text += f" You attached {len(asked.images)} image(s), which it cannot look at."
        for r in results:
            text += f" The tool {r.name} said: {r.content}."
        words = text.split(" ")
        for i, word in enumerate(words):
            await asyncio.sleep(self.delay)
            yield TextChunk(word if i == len(words) - 1 else word + " ")
        yield AssistantMessage(text, id=f"run-{new_id()}")

    async def check(self) -> Readiness:
        return Readiness(True, "ok")
