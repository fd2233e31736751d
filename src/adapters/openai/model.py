"""ModelPort on any OpenAI-compatible server (llama.cpp server, vLLM, LM Studio)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import httpx
import openai
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from adapters.langchain.messages import PromptCache
from adapters.langchain.streaming import ToolBinding, stream_chat
from adapters.langchain.transport import model_transport
from domain.errors import AgentFailure, ModelUnavailable, ModelUnreachable
from domain.model import Message
from ports.model import ModelOutput, ModelPort, Readiness
from ports.tools import ToolSpec

START_IT = "start the OpenAI-compatible server or set OPENAI_BASE_URL, or run `make demo`"


def choose_it(base_url: str) -> str:
    return f"set OPENAI_MODEL to a model the server serves (GET {base_url}/models lists them)"


class OpenAIModel(ModelPort):
    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or "not-needed"
        self.timeout = timeout
        self._prompts = PromptCache()
        self._tools = ToolBinding()
        # keep-alive connections on httptools for every call (adapters.langchain.transport)
        self._transport: httpx.AsyncBaseTransport = model_transport(self.base_url)
        self._chat = ChatOpenAI(
            model=model, base_url=self.base_url, api_key=SecretStr(self.api_key), timeout=timeout, max_retries=0,
            streaming=True, http_async_client=httpx.AsyncClient(transport=self._transport, timeout=timeout),
        )

    async def aclose(self) -> None:
        await self._transport.aclose()

    @property
    def name(self) -> str:
        return self.model

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[ModelOutput]:
        try:
            async for out in stream_chat(self._chat, self._prompts, system, messages, tools, self._tools):
                yield out
        except openai.NotFoundError as e:
            raise ModelUnavailable(
                f"The configured model {self.model!r} is not available at {self.base_url}: {choose_it(self.base_url)}"
            ) from e
        except openai.APITimeoutError as e:
            raise ModelUnreachable(
                f"{self.base_url} timed out after {self.timeout:g} s: check that it is not overloaded, or raise MODEL_TIMEOUT"
            ) from e
        except openai.APIConnectionError as e:
            raise ModelUnreachable(f"{self.base_url} is unreachable (refused or dropped the connection): {START_IT}") from e
        except openai.APIStatusError as e:
            raise AgentFailure(f"Model server error {e.status_code}: {e.message}") from e

    async def check(self) -> Readiness:
        url = f"{self.base_url}/models"
        try:
            async with httpx.AsyncClient(timeout=5.0) as client:
                response = await client.get(url, headers={"Authorization": f"Bearer {self.api_key}"})
        except Exception:
            return Readiness(False, f"Failed to connect to {self.base_url}", url, START_IT)
        down = Readiness(False, "Model server not available", url,
                         "check OPENAI_BASE_URL (and OPENAI_API_KEY if it wants one), or run `make demo`")
        if not response.is_success:
            return down
        try:
            ids = [str(m.get("id", "")) for m in response.json().get("data", [])]
        except (ValueError, AttributeError):
            return down
        if any(self.model in i for i in ids):
            return Readiness(True, "ok", url)
        return Readiness(False, f'Model "{self.model}" not available', url, choose_it(self.base_url))
