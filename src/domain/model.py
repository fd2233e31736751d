"""Entities and value objects of the run lifecycle.

A conversation's id is also its LangGraph thread id (1:1, no lookup table). A run is one
execution attempt on that thread; a resume is a new run on the same thread.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from domain.attachments import Attachment, PromptImage
from domain.errors import InvalidInput
from domain.knowledge import Cited

NEW_CONVERSATION_TITLE = "New Conversation"
TITLE_MAX = 50
TITLE_LIMIT = 200

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.IGNORECASE)


def parse_conversation_id(value: object) -> str:
    """Return the lower-cased id, or raise InvalidInput("Invalid Conversation ID")."""
    if not isinstance(value, str) or not _UUID_RE.fullmatch(value):
        raise InvalidInput("Invalid Conversation ID")
    return value.lower()


def new_id() -> str:
    return str(uuid.uuid4())


def new_call_id() -> str:
    """A tool call id of ours: `call_` and 96 random bits (OpenAI's shape and length)."""
    return "call_" + uuid.uuid4().hex[:24]


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(ts: datetime) -> str:
    """ISO-8601 with milliseconds (truncated) and Z, as JavaScript's Date.toISOString()
    (isoformat: a quarter cheaper than strftime, and a turn formats about eight)."""
    return ts.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def check_text(value: str, what: str) -> str:
    """`value` unchanged, or InvalidInput when it holds a lone surrogate (JSON lets a
    client send "\\ud800"; no UTF-8 store or stream can carry it)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode (a lone surrogate)") from None
    return value


def _visible(text: str) -> str:
    # bidi overrides (U+202E makes "gnp.exe" read "exe.png"), zero-width and other format
    # characters (category Cf) and control characters would make a title lie about itself
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Cc") or ch in "\n\t")


def title_from_message(message: str) -> str:
    """First line of the trimmed message, without invisible controls, cut to 50
    characters plus '...'."""
    first = _visible(message).strip().split("\n", 1)[0].strip()
    if not first:
        return NEW_CONVERSATION_TITLE
    return first[:TITLE_MAX] + "..." if len(first) > TITLE_MAX else first


class SystemMode(StrEnum):
    """What a conversation's own instructions do to the server's prompt (config/system.md)."""

    ADD = "add"  # appended after it: the tool guidance stays
    REPLACE = "replace"  # sent instead of it


class TitleSource(StrEnum):
    """Who gave a conversation its title. Only a MESSAGE title (the first message's line, or
    the placeholder) may be replaced by one the model writes (domain.organise); a person's
    (a rename, an import) never is."""

    MESSAGE = "message"  # the first line of the first message, or NEW_CONVERSATION_TITLE
    MODEL = "model"  # written by the model after the first answer (AUTO_TITLE)
    USER = "user"  # set by a person: a rename, a thread's metadata title, an import


def clean_title(title: object) -> str:
    """Validate a title given by a user (rename): a non-empty string of valid Unicode,
    without invisible controls, trimmed, bounded."""
    if not isinstance(title, str) or not _visible(check_text(title, "Title")).strip():
        raise InvalidInput("Title must be a non-empty string")
    text = " ".join(_visible(title).split())
    if len(text) > TITLE_LIMIT:
        raise InvalidInput(f"Title is longer than {TITLE_LIMIT} characters")
    return text


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    WAITING = "waiting"  # stopped before tool calls that wait for a person's approval

    @property
    def finished(self) -> bool:
        return self is not RunStatus.RUNNING


@dataclass(frozen=True)
class RunOwner:
    """The process that executes a run.

    `instance` is unique per process start: it is the fencing identity (a run is written
    only by the instance that owns it). `host`, `pid`, `started` and `namespace` (the pid
    namespace) let a process on the same host and namespace tell at once that an owner is
    dead; anywhere else, only the lease tells."""

    host: str
    pid: int
    started: float  # the process's start time, so a recycled pid is not taken for its owner
    instance: str = ""
    namespace: int = 0


class RunTrigger(StrEnum):
    USER = "user"  # a message or a resume asked for by a person
    ADOPT = "adopt"  # a resume started by a live process for an orphaned run (AUTO_RESUME)
    QUEUE = "queue"  # a queued message, started when the run before it completed
    SCHEDULE = "schedule"  # a schedule's firing (domain.schedules)

    @property
    def limited(self) -> bool:
        """Whether such a run counts against USER_MAX_ACTIVE_RUNS when it starts (a person's
        and a schedule's, on their owner's behalf; a queued message was counted when queued,
        an adoption resumes what was counted)."""
        return self in (RunTrigger.USER, RunTrigger.SCHEDULE)


@dataclass(frozen=True)
class Run:
    id: str
    conversation_id: str
    status: RunStatus
    started_at: datetime
    finished_at: datetime | None = None
    error_code: str | None = None
    error_message: str | None = None
    owner: RunOwner | None = None
    heartbeat_at: datetime | None = None
    base_count: int = 0  # thread messages before the run's output (its own message included)
    trigger: RunTrigger = RunTrigger.USER
    lease_expired: bool = False  # as the store's clock saw it when the row was read

    @property
    def error(self) -> RunError | None:
        return RunError(self.error_code, self.error_message or "") if self.error_code else None


@dataclass(frozen=True)
class RunError:
    code: str
    message: str


@dataclass(frozen=True)
class Conversation:
    """What the sidebar shows: the conversation's metadata plus its latest run's outcome."""

    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    message_count: int = 0
    status: RunStatus | None = None
    error: RunError | None = None
    model: str | None = None  # the model it asked for; None: the server's default
    system: str | None = None  # its own instructions; None: config/system.md alone
    system_mode: SystemMode = SystemMode.ADD  # what its instructions do to config/system.md
    queued: int = 0  # messages waiting in its queue (domain.queue)
    owner: str = "admin"  # the user id it belongs to (domain.principals; "admin": the bootstrap admin)
    # organising many chats (domain.organise)
    pinned: bool = False
    archived: bool = False  # hidden from the main list, shown in the archive
    temporary: bool = False  # never listed nor searched; deleted once its page leaves it
    title_by: TitleSource = TitleSource.MESSAGE
    turns: int | None = None  # user messages on its active branch; None: not counted yet

    @property
    def thread_id(self) -> str:
        return self.id


# --- messages of a thread ---------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One call a model asked for. `id` is ours, unique in the conversation (see
    lifecycle.own_call_ids); `model_id` is the id the model server gave it, if another."""

    id: str
    name: str
    args: dict[str, Any]
    model_id: str | None = None


@dataclass(frozen=True)
class UserMessage:
    """`attachments`: the files it carries (stored apart, by digest); `images`: only in a
    prompt, the images a model call sends with it (its text files are then in `content`)."""

    content: str
    id: str | None = None
    role: Literal["user"] = "user"
    attachments: tuple[Attachment, ...] = ()
    images: tuple[PromptImage, ...] = ()


@dataclass(frozen=True)
class ContextView:
    """What the model saw when it wrote a reply: the thread's messages from index
    `sent_from` on (those before were left out or summarized), about `tokens` of its
    `budget` (MODEL_CONTEXT - MODEL_RESERVE)."""

    sent_from: int
    tokens: int
    budget: int
    searched: tuple[str, ...] = ()  # files too long to send whole: their best passages were sent
    cited: tuple[Cited, ...] = ()  # passages of knowledge collections sent (the answer's citations link to them)


@dataclass(frozen=True)
class AssistantMessage:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    id: str | None = None
    reasoning: str | None = None
    context: ContextView | None = None  # set on replies the agent stored
    cut: bool = False  # the answer reached MODEL_MAX_TOKENS and was stopped there
    model: str | None = None  # the model that wrote it (set on replies the agent stored)
    reasoning_seconds: float | None = None  # how long it thought before answering
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class ToolResult:
    content: str
    tool_call_id: str
    name: str
    status: Literal["success", "error"] = "success"
    id: str | None = None
    role: Literal["tool"] = "tool"
    duration_ms: int | None = None  # how long the call took, when it ran (stored since issue 33)
    skipped: bool = False  # never sent again: its outcome was unknown and the user chose Skip


@dataclass(frozen=True)
class SummaryMessage:
    """A summary the model wrote of the thread's messages before index `covers`, when
    they no longer fit its context (CONTEXT_SUMMARY). Stored once, sent in their place."""

    content: str
    covers: int
    id: str | None = None
    role: Literal["summary"] = "summary"


Message = UserMessage | AssistantMessage | ToolResult | SummaryMessage


def searchable_text(message: Message) -> str:
    """What a search finds a message by: its text, and the names of the files it carries."""
    if isinstance(message, UserMessage) and message.attachments:
        return "\n".join([message.content, *(a.name for a in message.attachments)])
    return message.content


# --- thread state as the checkpointer sees it --------------------------------------------


@dataclass(frozen=True)
class PendingCall:
    """A tool call of the latest assistant turn whose result is not saved yet.

    `started`: the journal shows it was sent, so it may have taken effect; `unsafe`: the
    tool is destructive and not idempotent. Both together call for a user's decision."""

    call: ToolCall
    started: bool = False
    unsafe: bool = False

    @property
    def needs_decision(self) -> bool:
        return self.started and self.unsafe


@dataclass(frozen=True)
class ThreadState:
    """The latest checkpoint of a thread: its messages and whether work is left.

    `work_left`: the run that wrote it stopped before the agent finished (a resume has
    something to do). `pending_calls`: the tool calls of the last assistant turn whose
    results are not saved yet (empty unless the agent is waiting on tools)."""

    messages: tuple[Message, ...] = ()
    work_left: bool = False
    checkpoint_id: str | None = None
    run_id: str | None = None  # the run that wrote the latest checkpoint, when known
    pending_calls: tuple[PendingCall, ...] = field(default=())

    @property
    def exists(self) -> bool:
        return self.checkpoint_id is not None


@dataclass(frozen=True)
class ThreadHead:
    """What a thread's latest checkpoint says without loading its messages."""

    work_left: bool = False
    awaiting_tools: bool = False  # the work left is tool calls of the last assistant turn
    message_count: int = 0
    run_id: str | None = None
    checkpoint_id: str | None = None
    writes: int = 0  # pending writes saved on it (finished tasks of an unfinished step)


@dataclass(frozen=True)
class CheckpointSummary:
    """One line of the checkpoint JSONL export."""

    checkpoint_id: str
    created_at: str
    step: int
    source: str
    next: tuple[str, ...]
    message_count: int
    last_message: Message | None
    run_id: str | None = None
    branch: int = 1  # the branch the checkpoint belongs to (1: the original)
