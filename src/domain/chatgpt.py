"""ChatGPT's export (`conversations.json`) read into conversations with branches.

Its documented shape: a list of conversations, each with `title`, `create_time` and
`update_time` (Unix seconds), `current_node` and `mapping`, an object of nodes
`{id, message, parent, children}`; a message has `author.role`, `content.content_type` and
`content.parts`, `create_time`, `recipient`, `metadata`. The nodes form a tree (one node per
edit or regeneration): its paths become Sophos branches, the path to `current_node` the
active one.

Kept: the text of user and assistant messages addressed to everyone. Left out: system
messages, hidden ones, the model's calls to its own tools and their outputs (they have no
Sophos tool call to answer), and non-text parts (images, files). A node left out passes
its children to its nearest kept ancestor.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from domain.branches import Branch, fork_parent
from domain.errors import InvalidImport, InvalidInput
from domain.model import TITLE_LIMIT, AssistantMessage, Message, UserMessage, clean_title
from domain.transfer import LIMITS, BranchCopy, ConversationCopy, Limits, check_branches

UNTITLED = "Imported from ChatGPT"


def looks_like_chatgpt(doc: object) -> bool:
    """Meant as one: a conversation with a `mapping` (any other item is then an error)."""
    items = doc if isinstance(doc, list) else [doc]
    return any(isinstance(c, dict) and isinstance(c.get("mapping"), dict) for c in items)


@dataclass
class _Node:
    message: Message | None  # None: left out
    created: float
    children: list[str]


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value < 1e11 else None


def _time(value: object, fallback: datetime) -> datetime:
    seconds = _seconds(value)
    return datetime.fromtimestamp(seconds, UTC) if seconds is not None else fallback


def _text(content: object, limits: Limits, fail: Any) -> str | None:
    if not isinstance(content, dict) or content.get("content_type") not in ("text", "multimodal_text"):
        return None
    parts = content.get("parts")
    if not isinstance(parts, list):
        return None
    text = "".join(p for p in parts if isinstance(p, str))
    if len(text) > limits.text:
        raise fail(f"a message is longer than {limits.text} characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise fail("a message is not valid Unicode") from None
    return text


def _message(raw: object, limits: Limits, fail: Any) -> Message | None:
    if not isinstance(raw, dict):
        return None
    author = raw.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    metadata = raw.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    if role not in ("user", "assistant") or raw.get("recipient", "all") != "all":
        return None
    if metadata.get("is_visually_hidden_from_conversation") is True:
        return None
    text = _text(raw.get("content"), limits, fail)
    if text is None or (role == "assistant" and not text.strip()):
        return None
    return UserMessage(text) if role == "user" else AssistantMessage(text)


def _nodes(mapping: Mapping[str, Any], limits: Limits, fail: Any) -> tuple[dict[str, _Node], list[str]]:
    """The kept nodes with their kept children, and the roots; walked from the roots by
    `children` with a visited set, so a cycle or a node listed twice costs nothing."""
    if len(mapping) > limits.messages:
        raise fail(f"more than {limits.messages} messages")
    raw: dict[str, Mapping[str, Any]] = {k: v for k, v in mapping.items() if isinstance(v, dict)}
    roots = [k for k, v in raw.items() if not isinstance(v.get("parent"), str) or v.get("parent") not in raw]
    kept: dict[str, _Node] = {}
    top: list[str] = []
    seen: set[str] = set()
    # (node id, id of the nearest kept ancestor or None)
    stack: list[tuple[str, str | None]] = [(r, None) for r in reversed(roots)]
    while stack:
        node_id, above = stack.pop()
        if node_id in seen or node_id not in raw:
            continue
        seen.add(node_id)
        node = raw[node_id]
        message = _message(node.get("message"), limits, fail)
        holder = above
        if message is not None:
            created = _seconds((node.get("message") or {}).get("create_time")) or 0.0
            kept[node_id] = _Node(message, created, [])
            (kept[above].children if above is not None else top).append(node_id)
            holder = node_id
        children = node.get("children")
        for child in reversed(children if isinstance(children, list) else []):
            if isinstance(child, str):
                stack.append((child, holder))
    return kept, top


def _branches(kept: dict[str, _Node], top: list[str], current: str | None) -> tuple[list[BranchCopy], int]:
    """Each path from a root to a leaf, first children first (by creation time), as a
    branch; a later child starts a branch at its index, numbered in the order met."""
    def order(ids: Sequence[str]) -> list[str]:
        return sorted(ids, key=lambda i: kept[i].created)  # stable: ties keep the file's order

    out: list[BranchCopy] = []
    shapes: list[Branch] = []
    active = 1
    # (first node of the branch, its index, the branch it forks from)
    queue: deque[tuple[str, int, int | None]] = deque((n, 0, None) for n in order(top)[:1])
    alternatives_at_root = order(top)[1:]
    while queue:
        first, at, start = queue.popleft()
        number = len(out) + 1
        parent = fork_parent(shapes, start, at) if start is not None else None
        own: list[Message] = []
        node_id: str | None = first
        index = at
        while node_id is not None:
            node = kept[node_id]
            own.append(node.message)  # type: ignore[arg-type]  # kept nodes hold a message
            if node_id == current:
                active = number
            children = order(node.children)
            index += 1
            queue.extend((c, index, number) for c in children[1:])
            node_id = children[0] if children else None
        out.append(BranchCopy(number, parent, at, tuple(own)))
        shapes.append(Branch(number, parent, at, at + len(own), False))
        if number == 1:
            queue.extend((n, 0, None) for n in alternatives_at_root)
    return out, active


def _nearest_kept(mapping: Mapping[str, Any], kept: dict[str, _Node], node_id: object) -> str | None:
    steps = 0
    while isinstance(node_id, str) and node_id not in kept and steps <= len(mapping):
        node = mapping.get(node_id)
        node_id = node.get("parent") if isinstance(node, dict) else None
        steps += 1
    return node_id if isinstance(node_id, str) and node_id in kept else None


def from_chatgpt(doc: object, now: datetime, limits: Limits | None = None) -> list[ConversationCopy]:
    """Every conversation of a ChatGPT export (a list, or one conversation), checked whole."""
    limits = limits or LIMITS  # read when called: tests narrow it
    items = doc if isinstance(doc, list) else [doc]
    if len(items) > limits.conversations:
        raise InvalidImport(f"the file holds more than {limits.conversations} conversations")
    out: list[ConversationCopy] = []
    for n, item in enumerate(items):
        def fail(what: str, n: int = n) -> InvalidImport:
            return InvalidImport(f"conversation {n + 1}: {what}")

        if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
            raise fail("not a ChatGPT conversation (no mapping)")
        kept, top = _nodes(item["mapping"], limits, fail)
        if not kept:
            continue  # nothing a person wrote or read: nothing to import
        current = _nearest_kept(item["mapping"], kept, item.get("current_node"))
        branches, active = _branches(kept, top, current)
        if len(branches) > limits.branches:
            raise fail(f"more than {limits.branches} branches")
        check_branches(branches, fail)
        raw_title = item.get("title")
        try:
            title = clean_title(raw_title[:TITLE_LIMIT] if isinstance(raw_title, str) else UNTITLED)
        except InvalidInput:  # blank, or only invisible characters
            title = UNTITLED
        created = _time(item.get("create_time"), now)
        out.append(ConversationCopy(title, created, _time(item.get("update_time"), created), tuple(branches), active))
    return out
