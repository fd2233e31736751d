"""What a run starts from: a closed union the use cases build and the engine executes."""

from __future__ import annotations

from dataclasses import dataclass

from domain.attachments import Upload
from domain.model import ToolResult


@dataclass(frozen=True)
class NewMessage:
    """Append a user message. `closings` are the results that close the tool calls an
    abandoned step left pending (decided by domain.lifecycle.settle_plan), written with
    the message so the thread stays valid for the model. `new_thread`: the conversation
    was created by this request, so its thread is known to be empty (nothing to settle,
    nothing to read first). `files`: the files it carries, stored with it."""

    text: str
    closings: tuple[ToolResult, ...] = ()
    new_thread: bool = False
    files: tuple[Upload, ...] = ()


@dataclass(frozen=True)
class Resume:
    """Continue from the latest checkpoint. The pending tool calls named in `skip` are not
    run again: each gets a result saying its outcome is unknown."""

    skip: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Fork:
    """Start a new branch: the thread's messages before index `at`, then `text` as a user
    message (an edit) or nothing (a regenerate: `at` is just after the last user
    message), saved as the thread's new latest checkpoint; then run the agent from there.
    The branch left behind keeps its messages (adapters record it with the fork)."""

    at: int
    text: str | None = None


RunInput = NewMessage | Resume | Fork
