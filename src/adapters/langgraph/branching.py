"""Branches on one LangGraph thread, shared by the SQLite and PostgreSQL savers.

The thread's latest checkpoint is always the active branch's head, so runs, resume,
cancel, recovery and the savers' caches see one linear thread. A branch left behind is
kept as a delta: its own messages (from its fork index on, as plain msgpack fields) and
the nodes its head had left to run. Storage stays linear: every message is stored in
one branch's delta or in the active head, never once per branch.

The engine asks for a branch operation by putting BRANCH_KEY (a JSON object) in the
`configurable` of the one checkpoint that makes it (`aupdate_state`); the saver applies
it in that checkpoint's transaction:
  {"op": "fork", "at": i, "next": [...]}  a new branch from index i (an edit, a regenerate)
  {"op": "switch", "to": n, "next": [...]} branch n becomes the active one
`next` is what the branch being left had left to run (saved with its delta).

An import writes the same rows at once instead (`imported`): every branch but the active one
as a delta with nothing left to run, as a switch away from it after a settled fork leaves
it, then the active one's head as the thread's first checkpoint. Each message is encoded
once, however many branches share it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import ormsgpack
from langchain_core.messages import BaseMessage, messages_from_dict
from langchain_core.runnables import RunnableConfig

from adapters.langgraph.rows import decode_plain
from domain.branches import Branch, lineage
from domain.model import iso

IMPORT_COLUMNS = "conversation_id, number, parent, fork_index, active, message_count, messages, created_at, updated_at"

BRANCH_KEY = "sophos_branch"


def op_of(config: RunnableConfig) -> dict[str, Any] | None:
    raw = config["configurable"].get(BRANCH_KEY)
    return json.loads(raw) if isinstance(raw, str) else None


def with_op(config: RunnableConfig, op: dict[str, Any]) -> RunnableConfig:
    configurable = dict(config["configurable"])
    configurable[BRANCH_KEY] = json.dumps(op)
    return {**config, "configurable": configurable}


def pack(fields: Sequence[dict[str, Any]]) -> bytes:
    return ormsgpack.packb(list(fields), option=ormsgpack.OPT_NON_STR_KEYS)


def unpack(blob: bytes | None) -> list[dict[str, Any]]:
    if not blob:
        return []
    items = ormsgpack.unpackb(blob, option=ormsgpack.OPT_NON_STR_KEYS)
    return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []


def to_messages(fields: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """LangChain messages from their plain fields (as decoded from a checkpoint)."""
    return messages_from_dict([{"type": f.get("type"), "data": f} for f in fields])


def branch_content(
    branches: Sequence[Branch], deltas: dict[int, bytes | None], number: int, latest: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The messages of branch `number`, rebuilt from its lineage: each ancestor's prefix
    up to the child's fork, then the child's own messages; the active branch's are the
    thread's latest checkpoint (`latest`)."""
    content: list[dict[str, Any]] = []
    for b in lineage(branches, number):
        content = list(latest) if b.active else content[: b.fork] + unpack(deltas.get(b.number))
    return content


def restore_node(next_nodes: Sequence[str]) -> str:
    """The node a restored head is written as, so its next step is what it was: pending
    tool calls are made again from the last assistant turn (`agent`'s edge), an agent
    step left to run stays so (`tools` leads to `agent`), a finished head stays finished
    (`agent`'s edge ends after a reply)."""
    if "tools" in next_nodes:
        return "agent"
    return "tools" if next_nodes else "agent"


def stamp(ts: str) -> str:
    """A checkpoint's timestamp in the format of the conversations table."""
    return iso(datetime.fromisoformat(ts))


def imported(
    branches: Sequence[Branch],
    own: Mapping[int, Sequence[BaseMessage]],
    encode: Callable[[Any], tuple[str, bytes]],
    thread_id: str,
    at: str,
) -> list[tuple[Any, ...]]:
    """The branches rows (IMPORT_COLUMNS) of an imported thread: each left branch with its
    own messages as plain fields (`encode`: the saver's serializer), the active one without
    (the thread's head holds it); `at` their creation time."""
    rows = []
    for b in branches:
        delta = None if b.active else pack(decode_plain(encode(list(own[b.number]))[1]))
        rows.append((thread_id, b.number, b.parent, b.fork, b.active, b.message_count, delta, at, at))
    return rows
