"""What a run tells its watchers: the raw events the agent engine produces while a run
executes, and `StreamEvent`, one event of the public stream (its name and JSON payload).
The translation of the one into the other, in the stream's own words, is
services/stream.py's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from domain.approvals import ApprovalRequest
from domain.model import ToolCall, ToolResult

# --- raw events, produced by the agent engine while a run executes ----------------------


@dataclass(frozen=True)
class NodeStarted:
    step: int
    node: Literal["agent", "tools"]
    name: str  # the model name for `agent`, the tool name for `tools`


@dataclass(frozen=True)
class TokenDelta:
    step: int
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's thinking (never part of the answer's text)."""

    step: int
    text: str


@dataclass(frozen=True)
class ToolCallRequested:
    step: int
    call: ToolCall


@dataclass(frozen=True)
class ToolCallFinished:
    step: int
    result: ToolResult


@dataclass(frozen=True)
class ContextPlanned:
    """What a model call is about to be sent (domain.context.PromptPlan, in brief)."""

    step: int
    sent: int  # messages sent
    left_out: int  # messages neither sent nor summarized
    summarized: int  # messages the summary in use covers
    shortened: int  # tool results sent shortened
    sent_from: int  # thread index of the first message sent
    tokens: int  # estimated tokens of the prompt
    budget: int
    searched: tuple[str, ...] = ()  # files searched, not sent whole (domain.passages)


@dataclass(frozen=True)
class ContextSummarized:
    """A summary of the thread's messages before `covers` was stored."""

    step: int
    covers: int
    tokens: int


@dataclass(frozen=True)
class PromptTruncated:
    """The model server evaluated fewer prompt tokens than were sent: it cut the prompt."""

    step: int
    sent: int
    evaluated: int
    window: int
    filled: bool = True  # the count reached the window; else it is only far below what was sent


def truncation_message(event: PromptTruncated) -> str:
    """What a person is told: a count that filled the window is a cut prompt; one merely far
    below what was sent is said as seen (a server with a smaller window than MODEL_CONTEXT
    and a proxy that reports words instead of tokens look alike from here)."""
    if event.filled:
        return (
            f"The model evaluated {event.evaluated} prompt tokens of about {event.sent} sent: the model "
            "server cut the prompt (raise MODEL_CONTEXT or the server's context length)."
        )
    return (
        f"The model server reported far fewer prompt tokens ({event.evaluated}) than were sent (about "
        f"{event.sent}): it may have cut the prompt (is its context length below MODEL_CONTEXT "
        f"{event.window}?) or it counts them differently. Said once per conversation."
    )


@dataclass(frozen=True)
class AnswerCut:
    """The model's answer reached the token limit (MODEL_MAX_TOKENS) and was stopped there:
    the text so far is the step's stored reply."""

    step: int


@dataclass(frozen=True)
class ApprovalRequested:
    """A tool call of the step waits for a person's approval: it was not started."""

    step: int
    request: ApprovalRequest


@dataclass(frozen=True)
class InputRecorded:
    """The run's new message is in a committed checkpoint: it may be acknowledged."""


AgentEvent = (
    InputRecorded
    | NodeStarted
    | TokenDelta
    | ReasoningDelta
    | ToolCallRequested
    | ToolCallFinished
    | ContextPlanned
    | ContextSummarized
    | PromptTruncated
    | AnswerCut
    | ApprovalRequested
)


# --- events of the public stream -------------------------------------------------------


@dataclass(frozen=True)
class StreamEvent:
    """One SSE event: `event` is its name, `data` is JSON-encodable."""

    event: str
    data: Any
