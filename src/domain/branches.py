"""Branches of a conversation: the rules, as plain functions of plain values.

A conversation is one thread whose latest checkpoint is always the head of its active
branch. An edit or a regenerate starts a new branch at a message index (`fork`): its
messages before `fork` are its parent's, its own start there. The original branch is
number 1; a conversation never forked has no branch rows at all (branch 1, implicitly).

Parents are normalised when a branch is made: a branch forked at `fork` hangs from the
nearest ancestor whose own messages start before `fork` (None: forked at message 0). So
every branch forked at index i from the same prefix has the same parent, and the
alternatives at a message are one parent's own continuation plus its children forked
there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from domain.errors import InvalidEdit, InvalidInput, NothingToRegenerate
from domain.model import AssistantMessage, Message, ToolResult, UserMessage


@dataclass(frozen=True)
class Branch:
    number: int
    parent: int | None  # None: a root (the original, or an edit of the first message)
    fork: int  # index of its first own message; the ones before are its parent's
    message_count: int  # of its head (for the active branch: when it was last left)
    active: bool
    created_at: str = ""
    updated_at: str = ""


@dataclass(frozen=True)
class BranchMarker:
    """The alternatives at one message of the active branch: `numbers` are the branches
    to switch to, in creation order; the active branch's is at `index` (1-based)."""

    index: int
    count: int
    numbers: tuple[int, ...]


def fork_parent(branches: Sequence[Branch] | Mapping[int, Branch], start: int | None, fork: int) -> int | None:
    """The parent of a branch forked at `fork` from branch `start` (normalised, see the
    module docstring). `branches` by number, for a caller that asks many times."""
    by_number = branches if isinstance(branches, Mapping) else {b.number: b for b in branches}
    parent = start
    while parent is not None and parent in by_number and fork <= by_number[parent].fork:
        parent = by_number[parent].parent
    return parent


def lineage(branches: Sequence[Branch], number: int) -> list[Branch]:
    """The branch and its ancestors, the root first."""
    by_number = {b.number: b for b in branches}
    out: list[Branch] = []
    current: int | None = number
    while current is not None and current in by_number and len(out) <= len(by_number):
        out.append(by_number[current])
        current = by_number[current].parent
    out.reverse()
    return out


def markers(branches: Sequence[Branch], message_count: int) -> dict[int, BranchMarker]:
    """For each message index of the active branch that has alternatives, its marker.
    `message_count`: the active branch's messages now."""
    active = next((b for b in branches if b.active), None)
    if active is None:
        return {}
    chain = lineage(branches, active.number)
    counts = {b.number: (message_count if b.active else b.message_count) for b in branches}
    out: dict[int, BranchMarker] = {}
    positions = {b.fork for b in branches} | {0}
    for i in sorted(p for p in positions if p < message_count):
        owner = next(b for b in reversed(chain) if b.fork <= i) if chain else active
        base = owner.parent if owner.fork == i else owner.number
        members = [b.number for b in branches if b.parent == base and b.fork == i and b.number != base]
        if base is not None and counts.get(base, 0) > i:
            members.append(base)
        members = sorted(set(members))
        if len(members) > 1 and owner.number in members:
            out[i] = BranchMarker(members.index(owner.number) + 1, len(members), tuple(members))
    return out


def edit_fork(messages: Sequence[Message], edit_of: int) -> int:
    """Where an edit of message `edit_of` forks: that index, once it names a user message."""
    if isinstance(edit_of, bool) or not isinstance(edit_of, int):
        raise InvalidEdit("editOf must be a message index (an integer)")
    if not 0 <= edit_of < len(messages):
        raise InvalidEdit(f"editOf {edit_of} is out of range: the conversation has {len(messages)} messages")
    if not isinstance(messages[edit_of], UserMessage):
        raise InvalidEdit(f"editOf {edit_of} is not a user message")
    return edit_of


def regenerate_fork(messages: Sequence[Message]) -> int:
    """Where a regenerate forks: just after the last user message."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], UserMessage):
            return i + 1
    raise NothingToRegenerate()


NOT_RUN = "Not run: the conversation was forked before this call had a result."
MAX_TITLE = 200


def fork_messages(messages: Sequence[Message], index: object) -> tuple[Message, ...]:
    """The messages a conversation forked at message `index` starts with: those up to and
    including it, then the results of its tool calls when it made any; a call still without
    a result is answered "not run", so a fork never runs a call of its source again unseen.
    Raises InvalidInput for an index that is not a message of the thread."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(messages):
        raise InvalidInput(f"messageIndex must be the index of a message (0 to {len(messages) - 1})")
    kept = list(messages[: index + 1])
    at = messages[index]
    if isinstance(at, AssistantMessage) and at.tool_calls:
        results = {}
        for m in messages[index + 1 :]:
            if not isinstance(m, ToolResult):
                break
            results[m.tool_call_id] = m
        kept += [results.get(c.id) or ToolResult(NOT_RUN, c.id, c.name, "error") for c in at.tool_calls]
    return tuple(kept)


def fork_title(title: str) -> str:
    """A fork's title: its source's, marked, within the title limit."""
    suffix = " (fork)"
    return title[: MAX_TITLE - len(suffix)] + suffix
