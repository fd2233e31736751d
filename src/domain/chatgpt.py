"""ChatGPT's export (`conversations.json`) read into conversations with branches.

Its documented shape: a list of conversations, each with `title`, `create_time` and
`update_time` (Unix seconds), `current_node` and `mapping`, an object of nodes
`{id, message, parent, children}`; a message has `author.role`, `content.content_type` and
`content.parts`, `create_time`, `recipient`, `metadata`. The nodes form a tree (one node per
edit or regeneration): its paths become Sophos branches, the path to `current_node` the
active one.

Checked whole, as a Sophos export is: every node an object, its `parent` null or a node of
the mapping, its `children` a list of nodes whose parent it is, each once, and every node
reachable from a root (no parent cycle); each field of a message of the type the shape
says. Anything else is InvalidImport naming the place (`conversation 1:
mapping["u2"].message.content.parts must be a list`).

Kept: the text of user and assistant messages addressed to everyone, an image part as the
marker IMAGE. Left out: system messages, hidden ones, the model's calls to its own tools and
their outputs (they have no Sophos tool call to answer), and other non-text parts (files,
audio). A node left out passes its children to its nearest kept ancestor.

Linear in the file: each node is checked and walked once, and the branches are built
until one more than the limit (a tree of ten thousand regenerations is refused as soon as
its 201st branch is met).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from domain.branches import Branch, fork_parent
from domain.errors import InvalidImport, InvalidInput
from domain.model import TITLE_LIMIT, AssistantMessage, Message, UserMessage, clean_title
from domain.transfer import LIMITS, BranchCopy, ConversationCopy, Limits, check_branches

UNTITLED = "Imported from ChatGPT"
IMAGE = "[image not imported]"

Fail = Callable[[str], InvalidImport]


def looks_like_chatgpt(doc: object) -> bool:
    """Meant as one: a conversation with a `mapping` (any other item is then an error)."""
    items = doc if isinstance(doc, list) else [doc]
    return any(isinstance(c, dict) and isinstance(c.get("mapping"), dict) for c in items)


@dataclass
class _Node:
    message: Message | None  # None: left out
    created: float
    children: list[str]


def _place(node_id: str) -> str:
    """`mapping["u2"]`: one line, whatever the id holds."""
    shown = node_id if len(node_id) <= 40 else node_id[:40] + "..."
    return f"mapping[{json.dumps(shown)}]"


def _seconds(value: object, what: str, fail: Fail) -> float | None:
    """Unix seconds, or None (null, or out of any export's range)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(f"{what} must be a number of seconds or null")
    return float(value) if 0 <= value < 1e11 else None


def _time(value: object, what: str, fail: Fail, fallback: datetime) -> datetime:
    seconds = _seconds(value, what, fail)
    return datetime.fromtimestamp(seconds, UTC) if seconds is not None else fallback


def _field(doc: Mapping[str, Any], key: str, kind: type, what: str, fail: Fail) -> Any:
    """doc[key] when it is of `kind` or null (or absent); else the refusal."""
    value = doc.get(key)
    if value is not None and not isinstance(value, kind):
        raise fail(f"{f'{what}.' if what else ''}{key} must be {_KINDS[kind]} or null")
    return value


_KINDS: dict[type, str] = {str: "a string", dict: "an object", list: "a list"}


def _text(content: Mapping[str, Any], what: str, limits: Limits, fail: Fail) -> str | None:
    """The text of a text part list (None: not text), an image part as IMAGE."""
    kind = _field(content, "content_type", str, what, fail)
    parts = _field(content, "parts", list, what, fail)
    if kind not in ("text", "multimodal_text") or parts is None:
        return None
    pieces: list[str] = []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict):
            if part.get("content_type") == "image_asset_pointer":
                pieces.append(IMAGE)
        else:
            raise fail(f"{what}.parts[{i}] must be text or an object")
    text = "\n".join(p for p in pieces if p) if IMAGE in pieces else "".join(pieces)
    if len(text) > limits.text:
        raise fail(f"{what} is longer than {limits.text} characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise fail(f"{what} is not valid Unicode") from None
    return text


def _message(raw: object, what: str, limits: Limits, fail: Fail) -> Message | None:
    """The message of a node, checked; None when it is left out."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise fail(f"{what} must be an object or null")
    author = _field(raw, "author", dict, what, fail) or {}
    role = _field(author, "role", str, f"{what}.author", fail)
    metadata = _field(raw, "metadata", dict, what, fail) or {}
    recipient = _field(raw, "recipient", str, what, fail) or "all"
    _seconds(raw.get("create_time"), f"{what}.create_time", fail)
    content = _field(raw, "content", dict, what, fail)
    text = _text(content, f"{what}.content", limits, fail) if content is not None else None
    if role not in ("user", "assistant") or recipient != "all" or text is None:
        return None
    if metadata.get("is_visually_hidden_from_conversation") is True:
        return None
    if role == "assistant" and not text.strip():
        return None
    return UserMessage(text) if role == "user" else AssistantMessage(text)


def _checked(mapping: Mapping[str, Any], fail: Fail) -> list[str]:
    """The mapping as a tree, or the refusal naming the first node that breaks it; its roots."""
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            raise fail(f"{_place(node_id)} must be an object")
    roots: list[str] = []
    for node_id, node in mapping.items():
        parent = node.get("parent")
        if parent is None:
            roots.append(node_id)
        elif not isinstance(parent, str) or parent not in mapping:
            raise fail(f"{_place(node_id)}.parent must be null or the id of a node of the mapping")
    for node_id, node in mapping.items():
        where = _place(node_id)
        children = _field(node, "children", list, where, fail) or []
        listed: set[str] = set()
        for i, child in enumerate(children):
            if not isinstance(child, str) or child not in mapping:
                raise fail(f"{where}.children[{i}] must be the id of a node of the mapping")
            if mapping[child].get("parent") != node_id:
                raise fail(f"{where}.children[{i}] is {_place(child)}, whose parent is another node")
            if child in listed:
                raise fail(f"{where}.children lists {_place(child)} twice")
            listed.add(child)
    return roots


def _unreachable(mapping: Mapping[str, Any], reached: set[str], fail: Fail) -> InvalidImport:
    """Why a node is not reached from a root: its parent does not list it, or its parents
    go round in a cycle."""
    node_id = next(n for n in mapping if n not in reached)
    seen: set[str] = set()
    while node_id not in seen:
        seen.add(node_id)
        parent = mapping[node_id]["parent"]  # never None: a root is reached
        if node_id not in (mapping[parent].get("children") or []):
            return fail(f"{_place(node_id)} is not among the children of its parent {_place(parent)}")
        node_id = parent
    return fail(f"{_place(node_id)}.parent: its parents go round in a cycle")


def _nodes(mapping: Mapping[str, Any], limits: Limits, fail: Fail) -> tuple[dict[str, _Node], list[str]]:
    """The kept nodes with their kept children, and the kept tops; each node checked and
    walked once, from the roots by `children`."""
    if len(mapping) > limits.messages:
        raise fail(f"more than {limits.messages} messages")
    roots = _checked(mapping, fail)
    kept: dict[str, _Node] = {}
    top: list[str] = []
    reached: set[str] = set()
    # (node id, id of the nearest kept ancestor or None)
    stack: list[tuple[str, str | None]] = [(r, None) for r in reversed(roots)]
    while stack:
        node_id, above = stack.pop()
        reached.add(node_id)
        node = mapping[node_id]
        where = f"{_place(node_id)}.message"
        message = _message(node.get("message"), where, limits, fail)
        holder = above
        if message is not None:
            created = _seconds(node["message"].get("create_time"), f"{where}.create_time", fail) or 0.0
            kept[node_id] = _Node(message, created, [])
            (kept[above].children if above is not None else top).append(node_id)
            holder = node_id
        stack.extend((child, holder) for child in reversed(node.get("children") or []))
    if len(reached) < len(mapping):
        raise _unreachable(mapping, reached, fail)
    return kept, top


def _branches(
    kept: dict[str, _Node], top: list[str], current: str | None, limits: Limits, fail: Fail
) -> tuple[list[BranchCopy], int]:
    """Each path from a root to a leaf, first children first (by creation time), as a
    branch; a later child starts a branch at its index, numbered in the order met. Refused
    as soon as there is one more than the limit."""

    def order(ids: Sequence[str]) -> list[str]:
        return sorted(ids, key=lambda i: kept[i].created)  # stable: ties keep the file's order

    out: list[BranchCopy] = []
    shapes: dict[int, Branch] = {}
    active = 1
    # (first node of the branch, its index, the branch it forks from)
    queue: deque[tuple[str, int, int | None]] = deque((n, 0, None) for n in order(top)[:1])
    alternatives_at_root = order(top)[1:]
    while queue:
        first, at, start = queue.popleft()
        number = len(out) + 1
        if number > limits.branches:
            raise fail(f"more than {limits.branches} branches")
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
        shapes[number] = Branch(number, parent, at, at + len(own), False)
        if number == 1:
            queue.extend((n, 0, None) for n in alternatives_at_root)
    return out, active


def _nearest_kept(mapping: Mapping[str, Any], kept: dict[str, _Node], node_id: str | None) -> str | None:
    """`current_node` or its nearest kept ancestor (the mapping is a tree by now)."""
    while node_id is not None and node_id not in kept:
        node_id = mapping[node_id].get("parent")
    return node_id


def _conversation(item: object, now: datetime, limits: Limits, fail: Fail) -> ConversationCopy | None:
    """One conversation of the export, checked whole; None when it holds nothing to keep."""
    if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
        raise fail("not a ChatGPT conversation (no mapping)")
    mapping = item["mapping"]
    current = _field(item, "current_node", str, "", fail)
    if current is not None and current not in mapping:
        raise fail("current_node must be the id of a node of the mapping")
    raw_title = _field(item, "title", str, "", fail)
    created = _time(item.get("create_time"), "create_time", fail, now)
    updated = _time(item.get("update_time"), "update_time", fail, created)
    kept, top = _nodes(mapping, limits, fail)
    if not kept:
        return None  # nothing a person wrote or read
    branches, active = _branches(kept, top, _nearest_kept(mapping, kept, current), limits, fail)
    check_branches(branches, fail)
    try:
        title = clean_title(raw_title[:TITLE_LIMIT] if raw_title is not None else UNTITLED)
    except InvalidInput:  # blank, or only invisible characters
        title = UNTITLED
    return ConversationCopy(title, created, updated, tuple(branches), active)


def from_chatgpt(doc: object, now: datetime, limits: Limits | None = None) -> list[ConversationCopy]:
    """Every conversation of a ChatGPT export (a list, or one conversation) that holds a
    message to keep, each checked whole."""
    limits = limits or LIMITS  # read when called: tests narrow it
    items = doc if isinstance(doc, list) else [doc]
    if len(items) > limits.conversations:
        raise InvalidImport(f"the file holds more than {limits.conversations} conversations")
    out: list[ConversationCopy] = []
    for n, item in enumerate(items):

        def fail(what: str, n: int = n) -> InvalidImport:
            return InvalidImport(f"conversation {n + 1}: {what}")

        copy = _conversation(item, now, limits, fail)
        if copy is not None:
            out.append(copy)
    return out
