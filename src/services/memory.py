"""Memory of one's own (issue 45 item 2): what the agent remembers about a user, as items of
the user's namespace `("memories",)` in the store, each `{"text": ...}`.

The agent writes it through tools of Sophos's own (`memory__remember`, `memory__recall`,
`memory__forget`: MemoryTools), offered beside the MCP servers' tools in place of the
shipped Memory server (MEMORY_BACKEND=store). A tool call carries its idempotency key
(conversation and call), from which both the owner (the conversation's) and the memory's id
come: the same call run again after a crash (kill -9, resume) writes the same item, once.
People list, edit and forget their memories through `/api/memory` and `sophos memory`."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from domain.errors import InvalidInput, MemoryNotFound
from domain.lifecycle import conversation_of_key
from domain.model import utc_now
from domain.principals import LOCAL, Principal
from domain.store import PutItem, SearchItems, StoreItem
from ports.store import StorePort
from ports.tools import ToolOutcome, ToolPort, ToolServerStatus, ToolSpec

log = logging.getLogger(__name__)

NAMESPACE = ("memories",)
SETTINGS = ("sophos", "settings")  # the user's own settings item `memory`: {"enabled": bool}
MAX_TEXT = 2000  # characters of one memory
RECALL_LIMIT = 10
LIST_LIMIT = 1000
SERVER = "memory"


def memory_id(idempotency_key: str) -> str:
    """The id of the memory a `remember` call writes: the same for the same call, always."""
    return "m_" + hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()[:20]


def check_text(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("A memory's text must be a non-empty string")
    if len(text) > MAX_TEXT:
        raise InvalidInput(f"A memory's text has at most {MAX_TEXT} characters")
    return text.strip()


class MemoryService:
    def __init__(self, store: StorePort, clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self.clock = clock

    async def remember(self, owner: str, text: object, key: str) -> str:
        """Store `text` as the memory `key` of the user (durable before it returns)."""
        await self.store.put(owner, PutItem(NAMESPACE, key, {"text": check_text(text)}), self.clock())
        return key

    async def recall(self, owner: str, query: str | None, limit: int = RECALL_LIMIT) -> Sequence[StoreItem]:
        """The user's memories matching `query`'s words, best first (all, newest first, without one)."""
        words = query.strip() if isinstance(query, str) and query.strip() else None
        return await self.store.search(owner, SearchItems(NAMESPACE, words, limit=limit), self.clock())

    async def list(self, *, by: Principal = LOCAL) -> Sequence[StoreItem]:
        return await self.store.search(by.user_id, SearchItems(NAMESPACE, limit=LIST_LIMIT), self.clock())

    async def edit(self, memory: str, text: object, *, by: Principal = LOCAL) -> StoreItem:
        known = await self.store.get(by.user_id, NAMESPACE, memory, self.clock())
        if known is None:
            raise MemoryNotFound()
        await self.store.put(by.user_id, PutItem(NAMESPACE, memory, {**known.value, "text": check_text(text)}), self.clock())
        edited = await self.store.get(by.user_id, NAMESPACE, memory, self.clock())
        if edited is None:  # forgotten meanwhile
            raise MemoryNotFound()
        return edited

    async def enabled(self, owner: str) -> bool:
        """Whether the user lets the agent remember (on until they turn it off)."""
        found = await self.store.get(owner, SETTINGS, "memory", self.clock())
        return found is None or found.value.get("enabled") is not False

    async def set_enabled(self, enabled: object, *, by: Principal = LOCAL) -> bool:
        """Turn the user's memory on or off: off, the agent is offered no memory tool in
        their conversations (and a call of one is refused); their memories are kept."""
        if not isinstance(enabled, bool):
            raise InvalidInput("enabled must be true or false")
        await self.store.put(by.user_id, PutItem(SETTINGS, "memory", {"enabled": enabled}, index=False), self.clock())
        log.info("memory turned %s by the user %s", "on" if enabled else "off", by.user_id)
        return enabled

    async def withheld(self, owner: str) -> frozenset[str]:
        """The tool servers not offered in the user's conversations: `memory` when it is off
        (Sophos's own memory tools, or the shared file's Memory server with MEMORY_BACKEND=mcp-file)."""
        return frozenset() if await self.enabled(owner) else frozenset({SERVER})

    async def forget(self, memory: str, *, by: Principal = LOCAL) -> None:
        await self.forget_of(by.user_id, memory)

    async def forget_of(self, owner: str, memory: str) -> None:
        if not await self.store.delete(owner, NAMESPACE, memory):
            raise MemoryNotFound()


REMEMBER = ToolSpec(
    f"{SERVER}__remember",
    "Remember a fact about the user for later conversations (their preferences, projects, "
    "people they mention). One short fact per call.",
    {"type": "object", "properties": {"text": {"type": "string", "description": "the fact"}}, "required": ["text"]},
    read_only=False,
    destructive=False,
    idempotent=True,  # the same call writes the same memory (its id comes from the call)
)
RECALL = ToolSpec(
    f"{SERVER}__recall",
    "Recall what you remember about the user: the memories matching the words of `query` "
    "(every memory, newest first, without one). Each line starts with the memory's id.",
    {"type": "object", "properties": {"query": {"type": "string"}}},
    read_only=True,
    destructive=False,
    idempotent=True,
)
FORGET = ToolSpec(
    f"{SERVER}__forget",
    "Forget one memory, by the id `recall` shows.",
    {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    read_only=False,
    destructive=True,
    idempotent=True,
    approve=("forget",),  # as the shipped Memory server's delete tools: text in a fetched page could ask for it
)


class MemoryTools(ToolPort):
    """The tools of `inner` and the memory tools, written to the user who owns the
    conversation a call belongs to (`owner_of`, from the call's idempotency key)."""

    def __init__(self, inner: ToolPort, memory: MemoryService, owner_of: Callable[[str], Awaitable[str | None]]) -> None:
        self.inner = inner
        self.memory = memory
        self.owner_of = owner_of
        self._tools: Mapping[str, Callable[[str, Mapping[str, Any], str], Awaitable[str]]] = {
            REMEMBER.name: self._remember,
            RECALL.name: self._recall,
            FORGET.name: self._forget,
        }

    async def warm_up(self) -> None:
        await self.inner.warm_up()

    async def list_tools(self) -> Sequence[ToolSpec]:
        return [REMEMBER, RECALL, FORGET, *await self.inner.list_tools()]

    async def call(self, name: str, args: Mapping[str, Any], idempotency_key: str) -> ToolOutcome:
        tool = self._tools.get(name)
        if tool is None:
            return await self.inner.call(name, args, idempotency_key)
        conversation = conversation_of_key(idempotency_key)
        owner = await self.owner_of(conversation)
        if owner is None:
            return ToolOutcome("Error: the conversation is gone", is_error=True)
        if not await self.memory.enabled(owner):
            return ToolOutcome("Error: the user has turned memory off", is_error=True)
        try:
            return ToolOutcome(await tool(owner, args, idempotency_key))
        except (InvalidInput, MemoryNotFound) as e:
            return ToolOutcome(f"Error: {e.message}", is_error=True)

    async def _remember(self, owner: str, args: Mapping[str, Any], key: str) -> str:
        memory = await self.memory.remember(owner, args.get("text"), memory_id(key))
        log.info("memory %s written for the user %s (call %s)", memory, owner, key)
        return f"Remembered (id {memory})."

    async def _recall(self, owner: str, args: Mapping[str, Any], key: str) -> str:
        query = args.get("query")
        found = await self.memory.recall(owner, query if isinstance(query, str) else None)
        if not found:
            return "Nothing remembered" + (" matches that." if query else " yet.")
        return "\n".join(f"- [{m.key}] {m.value.get('text', '')}" for m in found)

    async def _forget(self, owner: str, args: Mapping[str, Any], key: str) -> str:
        memory = args.get("id")
        if not isinstance(memory, str) or not memory:
            raise InvalidInput("id must be a memory's id, as recall shows it")
        await self.memory.forget_of(owner, memory)
        return f"Forgot {memory}."

    async def status(self) -> Sequence[ToolServerStatus]:
        return [ToolServerStatus(SERVER, True, len(self._tools), extra={"backend": "store"}), *await self.inner.status()]

    async def aclose(self) -> None:
        await self.inner.aclose()
