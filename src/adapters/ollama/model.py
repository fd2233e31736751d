"""ModelPort on Ollama through langchain-ollama's ChatOllama."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

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
from domain.models import ModelInfo
from ports.model import ModelOutput, ModelPort, Readiness
from ports.tools import ToolSpec

log = logging.getLogger(__name__)

START_IT = "start Ollama (`ollama serve`) or set OLLAMA_HOST, or run `make demo`"


def start_and_pull(model: str) -> str:
    return f"start Ollama (`ollama serve`, and `ollama pull {model}` once) or set OLLAMA_HOST, or run `make demo`"


def pull_it(model: str) -> str:
    return f"pull it first (`ollama pull {model}`) or set OLLAMA_MODEL to one `ollama list` shows"


LIST_TIMEOUT = 5.0  # seconds for /api/tags and /api/show: a picker waits for them
SHOWN_MAX = 64  # models described (/api/show) per listing: a registry mirror may list thousands
SHOW_AT_ONCE = 4
SHOWN_FOR = 300.0  # seconds a model's description is reused (a re-pull may change it)
THINK_MODES = ("auto", "true", "false")


def context_length(info: Any) -> int | None:
    """`<architecture>.context_length` of /api/show's model_info, when it is a count."""
    if not isinstance(info, dict):
        return None
    for key, value in info.items():
        if isinstance(key, str) and key.endswith(".context_length") and isinstance(value, int) and value > 0:
            return value
    return None


def described(name: str, listed: dict[str, Any], shown: dict[str, Any] | None) -> ModelInfo:
    """A model as /api/tags lists it, completed by what /api/show says of it (if anything)."""
    size = listed.get("size")
    details = listed.get("details")
    details = details if isinstance(details, dict) else {}
    family = details.get("family") if isinstance(details.get("family"), str) else None
    caps: tuple[str, ...] = ()
    context = None
    if shown is not None:
        raw = shown.get("capabilities")
        caps = tuple(str(c) for c in raw[:16]) if isinstance(raw, list) else ()
        context = context_length(shown.get("model_info"))
    return ModelInfo(name, size if isinstance(size, int) and size >= 0 else None, context, caps, family)


class OllamaModel(ModelPort):
    def __init__(
        self,
        base_url: str,
        model: str,
        think: bool | str = False,
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
        mode = str(think).lower()
        if mode not in THINK_MODES:
            raise ValueError(f"OLLAMA_THINK must be one of {', '.join(THINK_MODES)}, got {think!r}")
        self.think = mode
        # what /api/show said of each model, and when: capabilities and context size
        self._shown: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._chat = self._client({"true": True, "false": False}.get(mode), timeout, context)

    def _client(self, think: bool | None, timeout: float, context: int | None) -> ReusingChatOllama:
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

    @property
    def pull_hint(self) -> str:
        return "pull it first (`ollama pull {name}`), or pick one `ollama list` shows"

    async def _thinks(self, model: str) -> bool | None:
        """Whether to ask `model` to think: OLLAMA_THINK true or false, or (auto) where
        /api/show lists the `thinking` capability. Unknown (an Ollama too old to list
        capabilities, or no answer): None, nothing is asked and the server decides."""
        if self.think != "auto":
            return self.think == "true"
        shown = await self._show(model)
        caps = shown.get("capabilities") if shown is not None else None
        if not isinstance(caps, list):
            return None
        return "thinking" in caps

    async def _show(self, model: str) -> dict[str, Any] | None:
        hit = self._shown.get(model)
        if hit is not None and time.monotonic() - hit[0] < SHOWN_FOR:
            return hit[1]
        shown: dict[str, Any] | None = None
        try:
            async with self._probe.stream(
                "POST", f"{self.base_url}/api/show", json={"model": model}, timeout=LIST_TIMEOUT
            ) as response:
                if response.is_success:
                    body = json.loads(await read_capped(response))
                    shown = body if isinstance(body, dict) else None
        except Exception:  # a description is a nicety: the chat call reports a server's faults
            return None
        if len(self._shown) > 4 * SHOWN_MAX:
            self._shown.clear()
        self._shown[model] = (time.monotonic(), shown)
        return shown

    async def models(self) -> Sequence[ModelInfo]:
        url = f"{self.base_url}/api/tags"
        try:
            async with self._probe.stream("GET", url, timeout=LIST_TIMEOUT) as response:
                if not response.is_success:
                    raise ModelBadResponse(
                        f"Ollama at {self.base_url} answered {response.status_code} to /api/tags: is it Ollama?"
                    )
                body = json.loads(await read_capped(response))
            listed = [m for m in body.get("models", []) if isinstance(m, dict) and isinstance(m.get("name"), str)]
        except ModelBadResponse:
            raise
        except (ValueError, AttributeError) as e:
            raise ModelBadResponse(f"Ollama at {self.base_url} sent a model list that is not JSON: is it Ollama?") from e
        except Exception as e:
            refused = refusal(e)
            if refused is not None:
                raise ModelBadResponse(f"Ollama at {self.base_url} sent {refused.reason}") from e
            raise ModelUnreachable(f"Ollama at {self.base_url} did not list its models: {START_IT}") from e
        gate = asyncio.Semaphore(SHOW_AT_ONCE)

        async def one(entry: dict[str, Any]) -> ModelInfo:
            async with gate:
                return described(entry["name"], entry, await self._show(entry["name"]))

        shown = await asyncio.gather(*(one(m) for m in listed[:SHOWN_MAX]))
        return [*shown, *(described(m["name"], m, None) for m in listed[SHOWN_MAX:])]

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], model: str | None = None
    ) -> AsyncIterator[ModelOutput]:
        name = model or self.model
        call: dict[str, Any] = {"model": name}
        thinks = await self._thinks(name)
        if thinks is not None:
            call["reasoning"] = thinks
        offered = tools if self.send_tools else ()
        try:
            async for out in stream_chat(
                self._chat, self._prompts, system, messages, offered, self._tools, self.max_tokens, **call
            ):
                yield out
        except ollama.ResponseError as e:
            if e.status_code == 404:
                which = "configured Ollama model" if model is None else "Ollama model"
                raise ModelUnavailable(f"The {which} {name!r} is not available at {self.base_url}: {pull_it(name)}") from e
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
            raise ModelUnreachable(
                f"Ollama at {self.base_url} is unreachable (refused or dropped the connection): {START_IT}"
            ) from e

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
