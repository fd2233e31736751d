"""A conversation whole, as export writes it and import reads it back: every branch, every
message with what Sophos keeps of it, the approvals' decisions, the files; and the bounds
one import may hold. The file's format (`sophos.conversation`) is the edge's
(entrypoints/transfer_document.py).

A branch holds its own messages only (from its fork index on); the messages before are its
parent's, as in domain.branches. Ids are not part of what is imported: every import is a
new conversation with new message ids (tool call ids are kept: approvals name them).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from domain.approvals import Decision
from domain.attachments import Upload
from domain.branches import Branch, lineage
from domain.model import (
    Message,
    ToolCall,
    UserMessage,
)


@dataclass(frozen=True)
class Limits:
    """What one import may hold. The file's size is checked by the edge before parsing."""

    bytes: int = 64 * 1024 * 1024
    conversations: int = 2000
    messages: int = 20_000  # per conversation, over all its branches
    branches: int = 200  # per conversation: each costs a few synced writes
    text: int = 2_000_000  # characters of one message
    depth: int = 32  # nesting of a tool call's arguments


LIMITS = Limits()


@dataclass(frozen=True)
class BranchCopy:
    number: int
    parent: int | None
    fork: int
    messages: tuple[Message, ...]  # its own, from `fork` on


@dataclass(frozen=True)
class ApprovalCopy:
    """A tool call that asked for approval, and the decision given (None: none yet)."""

    call: ToolCall
    server: str
    description: str
    requested_at: datetime
    decision: Decision | None = None
    decided_at: datetime | None = None


@dataclass(frozen=True)
class ConversationCopy:
    title: str
    created_at: datetime
    updated_at: datetime
    branches: tuple[BranchCopy, ...]  # numbered 1..n in order
    active: int = 1
    approvals: tuple[ApprovalCopy, ...] = field(default=())
    files: tuple[Upload, ...] = field(default=())  # the files its user messages carry, each once

    def digests(self) -> list[str]:
        """The files its messages name, every branch's, each once in order."""
        named = (a.digest for b in self.branches for m in b.messages if isinstance(m, UserMessage) for a in m.attachments)
        return list(dict.fromkeys(named))

    def content(self, number: int) -> tuple[Message, ...]:
        """The whole message list of branch `number`: its lineage's prefixes, then its own."""
        out: tuple[Message, ...] = ()
        shapes = [Branch(x.number, x.parent, x.fork, 0, False) for x in self.branches]
        for b in lineage(shapes, number):
            out = out[: b.fork] + self.branches[b.number - 1].messages
        return out

    @property
    def message_count(self) -> int:
        """Of the active branch, as the conversation's summary counts it."""
        return len(self.content(self.active))


def file_name(title: str, created_at: datetime, extension: str) -> str:
    """`hello-sophos-2026-12-05.json`: the title as ASCII words, then the creation date."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = "-".join(re.findall(r"[a-z0-9]+", ascii_title.lower()))[:60].strip("-") or "conversation"
    return f"{slug}-{created_at.astimezone(UTC).date().isoformat()}.{extension}"


def check_branches(copy_branches: Sequence[BranchCopy], fail: Any) -> None:
    """Numbers 1..n in order; branch 1 the root; every other branch forks from an earlier
    one inside its messages, after the parent's own fork (the normal form of
    domain.branches), or from the start (parent None, fork 0)."""
    lengths: dict[int, int] = {}
    forks: dict[int, int] = {}
    for i, b in enumerate(copy_branches, start=1):
        if b.number != i:
            raise fail(f"branches must be numbered 1, 2, ... in order (found {b.number} at {i})")
        if i == 1 and (b.parent is not None or b.fork != 0):
            raise fail("branch 1 must have no parent and fork 0")
        if b.parent is None:
            if b.fork != 0:
                raise fail(f"branch {i} has no parent, so its fork must be 0")
            if i > 1 and lengths[1] == 0:
                raise fail(f"branch {i} forks from an empty conversation")
            lengths[i] = len(b.messages)
        else:
            if not 1 <= b.parent < i:
                raise fail(f"branch {i}'s parent must be an earlier branch")
            if not forks[b.parent] < b.fork < lengths[b.parent]:
                raise fail(f"branch {i} must fork inside its parent's own messages")
            lengths[i] = b.fork + len(b.messages)
        forks[i] = b.fork
