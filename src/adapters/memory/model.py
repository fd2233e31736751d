"""ModelPort doubles: a scripted model for tests (replies queued in advance)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from domain.model import AssistantMessage, Message, ToolCall, new_id
from domain.models import ModelInfo
from ports.model import ModelOutput, ModelPort, Readiness, ReasoningChunk, TextChunk
from ports.tools import ToolSpec


@dataclass
class Seen:
    system: str
    messages: tuple[Message, ...]
    tools: tuple[str, ...]
    model: str | None = None


@dataclass(frozen=True)
class Thought:
    """A scripted reply that thinks first."""

    reasoning: str
    text: str


@dataclass
class ScriptedModel(ModelPort):
    """Answers with the queued replies in order: a str (text), a Thought (reasoning, then
    text), a list of (name, args) tool calls, an exception to raise, or (text, exception):
    the text streamed, then the exception (a model server that fails mid-answer). Records
    what it was asked. `available`: the models it lists (its own name when empty)."""

    replies: list[str | Thought | list[tuple[str, dict[str, object]]] | BaseException | tuple[str, BaseException]] = field(
        default_factory=list
    )
    model_name: str = "scripted"
    delay: float = 0.0
    seen: list[Seen] = field(default_factory=list)
    available: list[ModelInfo] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.model_name

    async def models(self) -> Sequence[ModelInfo]:
        return list(self.available) or [ModelInfo(self.model_name)]

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], model: str | None = None
    ) -> AsyncIterator[ModelOutput]:
        self.seen.append(Seen(system, tuple(messages), tuple(t.name for t in tools), model))
        reply = self.replies.pop(0) if self.replies else "(no more replies)"
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Thought):
            for piece in reply.reasoning.split(" "):
                if self.delay:
                    await asyncio.sleep(self.delay)
                yield ReasoningChunk(piece + " ")
            yield TextChunk(reply.text)
            yield AssistantMessage(reply.text, id=f"run-{new_id()}", reasoning=reply.reasoning)
            return
        if isinstance(reply, (str, tuple)):
            text, failure = reply if isinstance(reply, tuple) else (reply, None)
            words = text.split(" ")
            for i, word in enumerate(words):
                if self.delay:
                    await asyncio.sleep(self.delay)
                yield TextChunk(word if i == len(words) - 1 else word + " ")
            if failure is not None:
                raise failure
            yield AssistantMessage(text, id=f"run-{new_id()}")
            return
        calls = tuple(ToolCall(f"call_{new_id()[:8]}", n, dict(a)) for n, a in reply)
        yield AssistantMessage("", calls, id=f"run-{new_id()}")

    async def check(self) -> Readiness:
        return Readiness(True, "ok")
