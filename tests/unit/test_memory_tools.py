"""The agent's memory tools (issue 45 item 2) over the in-memory store: each call writes to
the user who owns the conversation it belongs to, the same call run again writes the same
memory, and one user's memory is out of another's reach."""

from __future__ import annotations

import json
from pathlib import Path

from adapters.mcp.toolbox import McpToolbox
from adapters.memory.store import InMemoryStore
from adapters.memory.toolbox import StaticToolbox
from domain.approvals import ApprovalMode, needs_approval
from domain.lifecycle import idempotency_key
from domain.principals import Principal, Role
from entrypoints import factories
from services.memory import FORGET, RECALL, REMEMBER, MemoryService, MemoryTools
from tests.support.app import ROOT, config_dir

OWNERS = {"c-ann": "ann", "c-bob": "bob"}


async def owner_of(conversation: str) -> str | None:
    return OWNERS.get(conversation)


def tools() -> tuple[MemoryTools, MemoryService]:
    memory = MemoryService(InMemoryStore())
    return MemoryTools(StaticToolbox(), memory, owner_of), memory


def as_user(name: str) -> Principal:
    return Principal(name, name, Role.USER)


async def test_a_remember_call_writes_to_the_conversation_owner_once_however_often_it_runs() -> None:
    box, memory = tools()
    key = idempotency_key("c-ann", "call-1")
    first = await box.call(REMEMBER.name, {"text": "likes green tea"}, key)
    again = await box.call(REMEMBER.name, {"text": "likes green tea"}, key)  # the resume after a crash
    assert not first.is_error and first.content == again.content
    assert [m.value["text"] for m in await memory.list(by=as_user("ann"))] == ["likes green tea"]
    assert list(await memory.list(by=as_user("bob"))) == []


async def test_recall_finds_the_owners_memories_only_and_forget_reaches_only_their_own() -> None:
    box, memory = tools()
    await box.call(REMEMBER.name, {"text": "ann's cat is Miso"}, idempotency_key("c-ann", "1"))
    recalled = await box.call(RECALL.name, {"query": "cat"}, idempotency_key("c-ann", "2"))
    assert "ann's cat is Miso" in recalled.content
    (mine,) = await memory.list(by=as_user("ann"))
    assert f"[{mine.key}]" in recalled.content
    bobs = await box.call(RECALL.name, {}, idempotency_key("c-bob", "3"))
    assert bobs.content == "Nothing remembered yet." and "Miso" not in bobs.content
    refused = await box.call(FORGET.name, {"id": mine.key}, idempotency_key("c-bob", "4"))
    assert refused.is_error and refused.content == "Error: No such memory"
    assert len(await memory.list(by=as_user("ann"))) == 1
    done = await box.call(FORGET.name, {"id": mine.key}, idempotency_key("c-ann", "5"))
    assert not done.is_error and list(await memory.list(by=as_user("ann"))) == []


async def test_bad_arguments_and_a_gone_conversation_are_the_models_errors() -> None:
    box, _ = tools()
    assert (await box.call(REMEMBER.name, {"text": ""}, idempotency_key("c-ann", "1"))).is_error
    assert (await box.call(REMEMBER.name, {"text": "x" * 5000}, idempotency_key("c-ann", "2"))).is_error
    assert (await box.call(FORGET.name, {}, idempotency_key("c-ann", "3"))).is_error
    gone = await box.call(REMEMBER.name, {"text": "hi"}, idempotency_key("c-gone", "4"))
    assert gone.is_error and "gone" in gone.content


def test_remembering_runs_again_safely_and_forgetting_asks_a_person_first() -> None:
    assert not REMEMBER.unsafe_to_repeat and not FORGET.unsafe_to_repeat and RECALL.read_only
    assert not needs_approval(ApprovalMode.UNSAFE, REMEMBER, ())
    assert needs_approval(ApprovalMode.UNSAFE, FORGET, ())  # text in a fetched page could ask for it


async def test_the_store_serves_mcp_jsons_memory_entry_and_the_memory_server_is_not_started(tmp_path: Path) -> None:
    shipped = json.loads((ROOT / "config" / "mcp.json").read_text())["memory"]
    cfg = config_dir(tmp_path, {"memory": shipped})
    memory = MemoryService(InMemoryStore())
    own = next(factories.mcp(str(cfg), str(tmp_path / "m.jsonl"), 5, 5, "store", lambda: memory, lambda: None))  # type: ignore[arg-type,return-value]
    assert isinstance(own, MemoryTools) and isinstance(own.inner, McpToolbox) and own.inner.leave_out == {"memory"}
    assert [t.name for t in await own.list_tools()] == [REMEMBER.name, RECALL.name, FORGET.name]
    assert [s.name for s in await own.status()] == ["memory"]
    await own.aclose()
    shared = next(factories.mcp(str(cfg), str(tmp_path / "m.jsonl"), 5, 5, "mcp-file", lambda: memory, lambda: None))  # type: ignore[arg-type,return-value]
    assert isinstance(shared, McpToolbox) and not shared.leave_out
    await shared.aclose()
    without = next(
        factories.mcp(str(config_dir(tmp_path, {})), str(tmp_path / "m.jsonl"), 5, 5, "store", lambda: memory, lambda: None)
    )  # type: ignore[arg-type,return-value]
    assert isinstance(without, McpToolbox)  # no memory entry: no memory tools
    await without.aclose()


async def test_memory_turned_off_withholds_the_memory_server_and_refuses_its_calls_for_that_user_only() -> None:
    box, memory = tools()
    assert await memory.withheld("ann") == frozenset()
    await memory.set_enabled(False, by=as_user("ann"))
    assert await memory.withheld("ann") == frozenset({"memory"}) and await memory.withheld("bob") == frozenset()
    refused = await box.call(REMEMBER.name, {"text": "likes tea"}, idempotency_key("c-ann", "1"))
    assert refused.is_error and "turned memory off" in refused.content
    assert list(await memory.list(by=as_user("ann"))) == []
    assert not (await box.call(REMEMBER.name, {"text": "likes coffee"}, idempotency_key("c-bob", "2"))).is_error
    await memory.set_enabled(True, by=as_user("ann"))
    assert not (await box.call(REMEMBER.name, {"text": "likes tea"}, idempotency_key("c-ann", "3"))).is_error
    assert [m.value["text"] for m in await memory.list(by=as_user("ann"))] == ["likes tea"]
