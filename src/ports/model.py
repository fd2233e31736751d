"""ModelPort: a chat model that streams text and asks for tool calls."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from domain.model import AssistantMessage, Message
from domain.models import ModelInfo
from ports.tools import ToolSpec


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    """A piece of the model's thinking, streamed before (or between) its answer's text."""

    text: str


@dataclass(frozen=True)
class Usage:
    """Tokens the server reports for one call: the prompt it evaluated, the answer."""

    prompt_tokens: int
    completion_tokens: int = 0


ModelOutput = TextChunk | ReasoningChunk | Usage | AssistantMessage


@dataclass(frozen=True)
class Readiness:
    """A readiness check's answer, for a probe and for a person."""

    ok: bool
    reason: str  # "ok", or why not, in the contract's readyz words
    url: str = ""  # what was tried, empty for an offline model
    fix: str = ""  # what a person can do about it, when not ok


class ModelPort(Protocol):
    """One model backend (Ollama, an OpenAI-compatible server, a scripted double)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The default model's name, used when a call names none (e.g. `qwen3`)."""

    @property
    def pull_hint(self) -> str:
        """How a person gets a model this backend lacks, `{name}` standing for its name."""
        return "choose one of the models the server lists"

    @abstractmethod
    def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], model: str | None = None
    ) -> AsyncIterator[ModelOutput]:
        """Answer the conversation with `model` (None: the default, `name`): yield
        ReasoningChunks and TextChunks as they arrive, then (if the server reports token
        counts) one Usage, then exactly one AssistantMessage (the whole reply, with its
        tool calls, each with a unique id, and its reasoning if any). `messages` are sent
        as given: the caller keeps them within the model's context. One adapter serves
        every model of its server: the name is per call, the client is shared.

        An adapter given an answer limit (MODEL_MAX_TOKENS) sends it and streams no more
        than that many tokens whatever the server does: the reply is then what came, with
        `cut` True and no tool calls.

        Raises ModelUnavailable when the server lacks the model and ModelUnreachable when
        it does not answer or times out. Cancelling the iteration stops the request.
        """

    @abstractmethod
    async def models(self) -> Sequence[ModelInfo]:
        """The models the server serves, from its own list (with size, context and
        capabilities where it reports them). Raises ModelUnreachable when it does not
        answer in a few seconds, ModelBadResponse when the answer is not a list."""

    @abstractmethod
    async def check(self) -> Readiness:
        """Readiness: ok with reason "ok" if the server answers and has the model; otherwise
        why not, the URL tried and the fix (start the server, pull the model...). Never raises."""
