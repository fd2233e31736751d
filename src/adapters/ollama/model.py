"""ModelPort on Ollama through langchain-ollama's ChatOllama."""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import AsyncIterator, Sequence

import httpx
import ollama
import pydantic

from adapters.langchain.bounds import ResponseRefused, read_capped, refusal
from adapters.langchain.client import model_transport, tls_context
from adapters.langchain.messages import PromptCache
from adapters.langchain.streaming import RESUME_MAY_HELP, EmptyStream, ToolBinding, stream_chat
from adapters.ollama.wire import ReusingChatOllama, WireCache
from domain.errors import AgentFailure, ModelBadResponse, ModelUnavailable, ModelUnreachable
from domain.model import Message
from ports.model import ModelOutput, ModelPort, Readiness
from ports.tools import ToolSpec

log = logging.getLogger(__name__)

START_IT = "start Ollama (`ollama serve`) or set OLLAMA_HOST, or run `make demo`"


def start_and_pull(model: str) -> str:
    return f"start Ollama (`ollama serve`, and `ollama pull {model}` once) or set OLLAMA_HOST, or run `make demo`"


def pull_it(model: str) -> str:
    return f"pull it first (`ollama pull {model}`) or set OLLAMA_MODEL to one `ollama list` shows"


class OllamaModel(ModelPort):
    def __init__(
        self,
        base_url: str,
        model: str,
        think: bool = False,
        timeout: float = 120.0,
        context: int | None = None,
        transport: str = "auto",
        max_tokens: int | None = None,
        tool_choice: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.max_tokens = max_tokens
        # Ollama's API has no tool_choice: `none` is had by sending no tools, `required` not at all
        self.send_tools = tool_choice != "none"
        if tool_choice == "required":
            log.warning("MODEL_TOOL_CHOICE=required: Ollama's API has no tool_choice; the model chooses (auto)")
        self._prompts = PromptCache()
        self._tools = ToolBinding()
        # each prompt message's request form, built once (adapters.ollama.wire)
        self._wire = WireCache()
        # one bounded transport, TLS context and (if the environment names one) proxy for the
        # calls and the readiness probe (adapters.langchain.client)
        self._tls = tls_context(self.base_url)
        self._transport = model_transport(self.base_url, transport, self._tls)
        self._probe = httpx.AsyncClient(transport=self._transport, timeout=5.0)
        self._chat = self._client(think, timeout, context)

    def _client(self, think: bool, timeout: float, context: int | None) -> ReusingChatOllama:
        # ChatOllama has no timeout by default: a stalled server would hang a run forever.
        # Without num_ctx Ollama uses its server default and silently cuts a longer prompt
        return ReusingChatOllama(
            model=self.model,
            base_url=self.base_url,
            reasoning=think,
            client_kwargs={"timeout": timeout},
            # the sync client ChatOllama builds too is never used: https shares the transport's
            # TLS context, http gets one that trusts nothing (loading the CA bundle costs ~1 MB)
            sync_client_kwargs={"verify": self._tls or ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)},
            async_client_kwargs={"transport": self._transport},
            num_ctx=context,
            # Ollama's default is no limit: a model in a repetition loop never stops
            num_predict=self.max_tokens,
            wire_cache=self._wire,
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
            offered = tools if self.send_tools else ()
            async for out in stream_chat(self._chat, self._prompts, system, messages, offered, self._tools, self.max_tokens):
                yield out
        except ollama.ResponseError as e:
            if e.status_code == 404:
                raise ModelUnavailable(
                    f"The configured Ollama model {self.model!r} is not available at {self.base_url}: {pull_it(self.model)}"
                ) from e
            raise AgentFailure(f"Ollama error: {e.error}") from e
        except ResponseRefused as e:
            raise ModelBadResponse(f"Ollama at {self.base_url} sent {e.reason}: Sophos stopped reading it") from e
        except EmptyStream as e:
            raise ModelBadResponse(
                f"Ollama at {self.base_url} closed its answer's stream without sending any part of it. {RESUME_MAY_HELP}"
            ) from e
        except pydantic.ValidationError as e:  # ollama's client reads each line into its ChatResponse
            raise ModelBadResponse(
                f"Ollama at {self.base_url} sent a line that is not in Ollama's format ({_first_problem(e)}): is it "
                f"Ollama, or a proxy that speaks its protocol in part? {RESUME_MAY_HELP}"
            ) from e
        except json.JSONDecodeError as e:  # ollama's client parses each streamed line as JSON
            raise ModelBadResponse(f"Ollama at {self.base_url} sent a line that is not JSON: is it Ollama?") from e
        except httpx.TimeoutException as e:
            raise ModelUnreachable(
                f"Ollama at {self.base_url} timed out after {self.timeout:g} s: check that it is not "
                "overloaded, or raise MODEL_TIMEOUT"
            ) from e
        except (httpx.TransportError, ConnectionError) as e:
            raise ModelUnreachable(f"Ollama at {self.base_url} is unreachable (refused or dropped the connection): {START_IT}") from e

    async def check(self) -> Readiness:
        """The reference's readyz rule: /api/tags answers and a model name contains ours."""
        url = f"{self.base_url}/api/tags"
        down = Readiness(False, "Ollama service not available", url, f"is {self.base_url} Ollama? {START_IT}")
        try:
            async with self._probe.stream("GET", url) as response:
                if not response.is_success:
                    return down
                body = await read_capped(response)
        except Exception as e:
            if refusal(e) is not None:
                return down
            return Readiness(False, "Failed to connect to Ollama", url, start_and_pull(self.model))
        try:
            names = [str(m.get("name", "")) for m in json.loads(body).get("models", [])]
        except (ValueError, AttributeError):
            return down
        if any(self.model in n for n in names):
            return Readiness(True, "ok", url)
        return Readiness(False, f'Ollama model "{self.model}" not available', url, pull_it(self.model))


def _first_problem(e: pydantic.ValidationError) -> str:
    """The first field pydantic found wrong, as `message: Field required`: the line itself may be
    long or hostile, so it is not quoted."""
    errors = e.errors(include_url=False, include_input=False)
    if not errors:
        return "a malformed line"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "the line"
    return f"{where[:80]}: {str(first.get('msg', 'invalid'))[:80]}"
