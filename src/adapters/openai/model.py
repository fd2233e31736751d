"""ModelPort on any OpenAI-compatible server (llama.cpp server, vLLM, LM Studio)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

import httpx
import openai
from pydantic import SecretStr

from adapters.langchain.bounds import ResponseRefused, read_capped, refusal
from adapters.langchain.client import model_transport, tls_context
from adapters.langchain.messages import PromptCache
from adapters.langchain.streaming import RESUME_MAY_HELP, EmptyStream, ToolBinding, stream_chat
from adapters.openai.reasoning import ReasoningChatOpenAI, ThinkSplitter
from domain.errors import AgentFailure, ModelBadResponse, ModelUnavailable, ModelUnreachable
from domain.model import AssistantMessage, Message
from domain.models import ModelInfo
from ports.model import ModelOutput, ModelPort, Readiness, TextChunk
from ports.tools import ToolSpec

log = logging.getLogger(__name__)

START_IT = "start the OpenAI-compatible server or set OPENAI_BASE_URL, or run `make demo`"

LIST_TIMEOUT = 5.0  # seconds for GET /models: a picker waits for it
# where OpenAI-compatible servers put a model's context size: vLLM, LM Studio and
# OpenRouter, llama.cpp's server (its training length, under `meta`)
CONTEXT_FIELDS = ("max_model_len", "context_length", "max_context_length")


def listed_model(entry: dict[str, Any]) -> ModelInfo:
    meta = entry.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    sizes = [entry.get(k) for k in CONTEXT_FIELDS] + [meta.get("n_ctx_train")]
    context = next((v for v in sizes if isinstance(v, int) and not isinstance(v, bool) and v > 0), None)
    size = meta.get("size")
    return ModelInfo(str(entry["id"]), size if isinstance(size, int) and size >= 0 else None, context)


def choose_it(base_url: str) -> str:
    return f"set OPENAI_MODEL to a model the server serves (GET {base_url}/models lists them)"


class OpenAIModel(ModelPort):
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 120.0,
        transport: str = "auto",
        max_tokens: int | None = None,
        tool_choice: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or "not-needed"
        self.timeout = timeout
        self.max_tokens = max_tokens
        self._prompts = PromptCache()
        self._tools = ToolBinding(tool_choice)
        # one bounded transport, TLS context and (if the environment names one) proxy for the
        # calls and the readiness probe (adapters.langchain.client)
        self._transport = model_transport(self.base_url, transport, tls_context(self.base_url))
        self._probe = httpx.AsyncClient(transport=self._transport, timeout=5.0)
        # token counts are asked for (stream_options.include_usage: ChatOpenAI asks only the
        # OpenAI API itself), so the context budget calibrates and a cut prompt shows; a server
        # that ignores the option sends none, and one that refuses it gets the plain client
        self._chat = self._client(timeout, usage=True)
        self._plain = self._client(timeout, usage=False)
        self._usage = True

    def _client(self, timeout: float, usage: bool) -> ReasoningChatOpenAI:
        return ReasoningChatOpenAI(
            model=self.model,
            base_url=self.base_url,
            api_key=SecretStr(self.api_key),
            timeout=timeout,
            max_retries=0,
            streaming=True,
            stream_usage=usage,
            http_async_client=httpx.AsyncClient(transport=self._transport, timeout=timeout),
            # `max_tokens`, which llama.cpp, vLLM and LM Studio all read; ChatOpenAI's own field
            # would be sent as `max_completion_tokens`, which not every local server knows
            extra_body={"max_tokens": self.max_tokens} if self.max_tokens is not None else None,
        )

    async def aclose(self) -> None:
        await self._transport.aclose()

    @property
    def name(self) -> str:
        return self.model

    @property
    def pull_hint(self) -> str:
        return f"pick one of the models GET {self.base_url}/models lists (`sophos models`)"

    async def models(self) -> Sequence[ModelInfo]:
        url = f"{self.base_url}/models"
        headers = {"Authorization": f"Bearer {self.api_key}"}
        try:
            async with self._probe.stream("GET", url, headers=headers, timeout=LIST_TIMEOUT) as response:
                if not response.is_success:
                    raise ModelBadResponse(f"{url} answered {response.status_code}: check OPENAI_BASE_URL and OPENAI_API_KEY")
                body = json.loads(await read_capped(response))
            listed = [listed_model(m) for m in body.get("data", []) if isinstance(m, dict) and isinstance(m.get("id"), str)]
        except ModelBadResponse:
            raise
        except (ValueError, AttributeError) as e:
            raise ModelBadResponse(f"{url} sent a model list that is not the OpenAI API's") from e
        except Exception as e:
            refused = refusal(e)
            if refused is not None:
                raise self._refused(refused) from e
            raise ModelUnreachable(f"{self.base_url} did not list its models: {START_IT}") from e
        window = await self._slot_window()
        if window is None:
            return listed
        return [replace(m, context=min(m.context or window, window)) for m in listed]

    async def _slot_window(self) -> int | None:
        """llama.cpp's server: the context a request really gets (`/props`,
        `default_generation_settings.n_ctx`: the window of one slot), where /models gives the
        training length. None from any other server (no such route) or on any doubt."""
        origin = self.base_url.removesuffix("/v1")
        try:
            headers = {"Authorization": f"Bearer {self.api_key}"}
            async with self._probe.stream("GET", f"{origin}/props", headers=headers, timeout=LIST_TIMEOUT) as response:
                if not response.is_success:
                    return None
                props = json.loads(await read_capped(response))
            n_ctx = props["default_generation_settings"]["n_ctx"]
        except Exception:  # not llama.cpp, or not this shape: /models stands
            return None
        return n_ctx if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0 else None

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], model: str | None = None
    ) -> AsyncIterator[ModelOutput]:
        name = model or self.model
        try:
            async for out in self._answer(system, messages, tools, name):
                yield out
        except ResponseRefused as e:
            raise self._refused(e) from e
        except EmptyStream as e:
            raise ModelBadResponse(
                f"The model server at {self.base_url} closed its answer's stream without sending any part of it. {RESUME_MAY_HELP}"
            ) from e
        except openai.NotFoundError as e:
            which = "configured model" if model is None else "model"
            raise ModelUnavailable(f"The {which} {name!r} is not available at {self.base_url}: {choose_it(self.base_url)}") from e
        except openai.APITimeoutError as e:
            raise ModelUnreachable(
                f"{self.base_url} timed out after {self.timeout:g} s: check that it is not overloaded, or raise MODEL_TIMEOUT"
            ) from e
        except openai.APIConnectionError as e:
            refused = refusal(e)
            if refused is not None:
                raise self._refused(refused) from e
            raise ModelUnreachable(f"{self.base_url} is unreachable (refused or dropped the connection): {START_IT}") from e
        except httpx.TimeoutException as e:  # while streaming, the client raises httpx's errors as they are
            raise ModelUnreachable(
                f"{self.base_url} timed out after {self.timeout:g} s: check that it is not overloaded, or raise MODEL_TIMEOUT"
            ) from e
        except httpx.TransportError as e:
            raise ModelUnreachable(f"{self.base_url} dropped the connection mid-answer: {START_IT}") from e
        except openai.APIStatusError as e:
            raise AgentFailure(f"Model server error {e.status_code}: {e.message}") from e

    async def _answer(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], model: str
    ) -> AsyncIterator[ModelOutput]:
        """stream_chat's outputs with a leading `<think>` block taken out of the text into the
        reply's reasoning; once without the usage option if the server refuses it."""
        think = ThinkSplitter()
        sent = False
        try:
            async for out in stream_chat(
                self._chat if self._usage else self._plain,
                self._prompts,
                system,
                messages,
                tools,
                self._tools,
                self.max_tokens,
                model=model,
            ):
                sent = True
                if isinstance(out, TextChunk):
                    visible = think.feed(out.text)
                    if visible:
                        yield TextChunk(visible)
                elif isinstance(out, AssistantMessage):
                    tail = think.finish()
                    if tail:
                        yield TextChunk(tail)
                    yield _without_think(out)
                else:
                    yield out
        except openai.BadRequestError as e:
            if sent or not self._usage or "stream_options" not in str(e):
                raise
            log.info("%s refuses stream_options: its token counts are not read", self.base_url)
            self._usage = False
            async for out in self._answer(system, messages, tools, model):
                yield out

    def _refused(self, e: ResponseRefused) -> ModelBadResponse:
        return ModelBadResponse(f"The model server at {self.base_url} sent {e.reason}: Sophos stopped reading it")

    async def check(self) -> Readiness:
        url = f"{self.base_url}/models"
        down = Readiness(
            False,
            "Model server not available",
            url,
            "check OPENAI_BASE_URL (and OPENAI_API_KEY if it wants one), or run `make demo`",
        )
        try:
            async with self._probe.stream("GET", url, headers={"Authorization": f"Bearer {self.api_key}"}) as response:
                if not response.is_success:
                    return down
                body = await read_capped(response)
        except Exception as e:
            if refusal(e) is not None:
                return down
            return Readiness(False, f"Failed to connect to {self.base_url}", url, START_IT)
        try:
            ids = [str(m.get("id", "")) for m in json.loads(body).get("data", [])]
        except (ValueError, AttributeError):
            return down
        if any(self.model in i for i in ids):
            return Readiness(True, "ok", url)
        return Readiness(False, f'Model "{self.model}" not available', url, choose_it(self.base_url))


def _without_think(reply: AssistantMessage) -> AssistantMessage:
    """The reply as streamed: a leading `<think>` block moved from its text to its reasoning."""
    splitter = ThinkSplitter()
    content = splitter.split(reply.content)
    if not splitter.reasoning:
        return reply
    reasoning = "\n".join(r for r in (reply.reasoning, splitter.reasoning) if r)
    return replace(reply, content=content, reasoning=reasoning)
