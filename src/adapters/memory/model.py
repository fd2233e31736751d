"""ModelPort doubles: a scripted model for tests (replies queued in advance)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from domain.model import AssistantMessage, Message, ToolCall, new_id
from ports.model import ModelOutput, ModelPort, Readiness, TextChunk
from ports.tools import ToolSpec


@dataclass
class Seen:
    system: str
    messages: tuple[Message, ...]
    tools: tuple[str, ...]


@dataclass
class ScriptedModel(ModelPort):
    """Answers with the queued replies in order: a str (text), a list of (name, args)
    tool calls, an exception to raise, or (text, exception): the text streamed, then the
    exception (a model server that fails mid-answer). Records what it was asked."""

    replies: list[str | list[tuple[str, dict[str, object]]] | BaseException | tuple[str, BaseException]] = field(
        default_factory=list
    )
    model_name: str = "scripted"
    delay: float = 0.0
    seen: list[Seen] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.model_name

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[ModelOutput]:
        self.seen.append(Seen(system, tuple(messages), tuple(t.name for t in tools)))
        reply = self.replies.pop(0) if self.replies else "(no more replies)"
        if isinstance(reply, BaseException):
            raise reply
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
