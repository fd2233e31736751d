"""Reasoning on OpenAI-compatible servers, kept apart from the answer as Ollama's is.

ChatOpenAI drops a delta's `reasoning_content` (llama-server's default reasoning format,
vLLM's and DeepSeek's), and a server told `--reasoning-format none` sends a thinking model's
`<think>…</think>` block as answer text. ReasoningChatOpenAI keeps the former in the chunk's
`additional_kwargs["reasoning_content"]` (where the shared streaming code and ChatOllama put
it); ThinkSplitter takes the latter out of the streamed text."""

from __future__ import annotations

from typing import Any

from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI

OPEN, CLOSE = "<think>", "</think>"


class ReasoningChatOpenAI(ChatOpenAI):
    def _convert_chunk_to_generation_chunk(
        self, chunk: dict[str, Any], default_chunk_class: type, base_generation_info: dict[str, Any] | None
    ) -> ChatGenerationChunk | None:
        out = super()._convert_chunk_to_generation_chunk(chunk, default_chunk_class, base_generation_info)
        choices = chunk.get("choices") or []
        delta = (choices[0].get("delta") or {}) if choices and isinstance(choices[0], dict) else {}
        # `reasoning` is what some servers (vLLM's newer releases, OpenRouter) name it
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if out is not None and isinstance(reasoning, str) and reasoning:
            out.message.additional_kwargs["reasoning_content"] = reasoning
        return out


class ThinkSplitter:
    """Streamed answer text in, visible text out: a `<think>` block that opens the answer
    (after blank space) is reasoning, held back and kept in `reasoning`. A `<think>` further in
    is text like any other. Tags split across chunks are held until they can be told."""

    def __init__(self) -> None:
        self.reasoning = ""
        self._state = "start"  # start | thinking | after (the block) | answer
        self._held = ""

    def feed(self, text: str) -> str:
        if self._state == "answer":
            return text
        if self._state == "after":  # the blank lines after the block belong to neither
            text = text.lstrip()
            if text:
                self._state = "answer"
            return text
        self._held += text
        if self._state == "start":
            lead = self._held.lstrip()
            if OPEN.startswith(lead):  # still could be the tag (or only blank so far)
                return ""
            if not lead.startswith(OPEN):
                self._state = "answer"
                out, self._held = self._held, ""
                return out
            self._state = "thinking"
            self._held = lead[len(OPEN) :]
        end = self._held.find(CLOSE)
        if end < 0:
            keep = _partial_suffix(self._held, CLOSE)
            self.reasoning += self._held[: len(self._held) - keep]
            self._held = self._held[len(self._held) - keep :]
            return ""
        self.reasoning += self._held[:end]
        rest = self._held[end + len(CLOSE) :]
        self._state, self._held = "after", ""
        return self.feed(rest)

    def finish(self) -> str:
        """What is still held when the stream ends: text that only looked like a tag's start,
        or (an unclosed block) reasoning."""
        held, self._held = self._held, ""
        if self._state == "thinking":
            self.reasoning += held
            return ""
        return held

    def split(self, content: str) -> str:
        """The visible part of a whole answer (the same as feeding it in pieces)."""
        visible = self.feed(content)
        return visible + self.finish()


def _partial_suffix(text: str, tag: str) -> int:
    """The length of the longest end of `text` that begins `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0
