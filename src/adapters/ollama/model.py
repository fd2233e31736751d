"""ModelPort on Ollama through langchain-ollama's ChatOllama."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import httpx
import ollama
from langchain_ollama import ChatOllama

from adapters.langchain.streaming import stream_chat
from domain.errors import AgentFailure, ModelUnavailable, ModelUnreachable
from domain.model import Message
from ports.model import ModelOutput, ModelPort
from ports.tools import ToolSpec


class OllamaModel(ModelPort):
    def __init__(self, base_url: str, model: str, think: bool = False, timeout: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        # ChatOllama has no timeout by default: a stalled server would hang a run forever
        self._chat = ChatOllama(
            model=model, base_url=self.base_url, reasoning=think, client_kwargs={"timeout": timeout}
        )

    @property
    def name(self) -> str:
        return self.model

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[ModelOutput]:
        try:
            async for out in stream_chat(self._chat, system, messages, tools):
                yield out
        except ollama.ResponseError as e:
            if e.status_code == 404:
                raise ModelUnavailable(f"The configured Ollama model {self.model!r} is not available.") from e
            raise AgentFailure(f"Ollama error: {e.error}") from e
        except httpx.TimeoutException as e:
            raise ModelUnreachable(f"Ollama at {self.base_url} timed out after {self.timeout:g} s") from e
        except (httpx.TransportError, ConnectionError) as e:
            raise ModelUnreachable(f"Ollama at {self.base_url} is unreachable (refused or dropped the connection)") from e

    async def check(self) -> tuple[bool, str]:
        """The reference's readyz rule: /api/tags answers and a model name contains ours."""
        try:
            async with httpx.AsyncClient(timeout=5.0) as client:
                response = await client.get(f"{self.base_url}/api/tags")
        except Exception:
            return False, "Failed to connect to Ollama"
        if not response.is_success:
            return False, "Ollama service not available"
        try:
            names = [str(m.get("name", "")) for m in response.json().get("models", [])]
        except (ValueError, AttributeError):
            return False, "Ollama service not available"
        if any(self.model in n for n in names):
            return True, "ok"
        return False, f'Ollama model "{self.model}" not available'
