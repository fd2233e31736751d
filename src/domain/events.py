"""What a run tells its watchers: raw engine events, and their translation into the
contract's stream events (`token`, `trace`, `end`, `chat-error`), and `reasoning` (the
model's thinking, as tokens of its own: a client that does not know it ignores it).

Besides the contract's `enter`, `leave`, `call` and `result`, a `trace` may be `context`
(what a model call is sent), `summary` (a summary was stored), `truncated` (the model
server cut the prompt) or `cut` (the answer reached MODEL_MAX_TOKENS and was stopped)."""

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
        return (f"The model evaluated {event.evaluated} prompt tokens of about {event.sent} sent: the model "
                "server cut the prompt (raise MODEL_CONTEXT or the server's context length).")
    return (f"The model server reported far fewer prompt tokens ({event.evaluated}) than were sent (about "
            f"{event.sent}): it may have cut the prompt (is its context length below MODEL_CONTEXT "
            f"{event.window}?) or it counts them differently. Said once per conversation.")


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


def approval_call(request: ApprovalRequest) -> dict[str, Any]:
    """A waiting call as the `approval` event (stored in the run event log) lists it."""
    c = request.call
    return {"id": c.id, "name": c.name, "server": request.server, "args": c.args, "description": request.description}


def approval_event(conversation_id: str, run_id: str, requests: list[ApprovalRequest]) -> StreamEvent:
    """The `approval` event: the calls the run stopped before, each waiting for a decision."""
    calls = [approval_call(r) for r in requests]
    return StreamEvent("approval", {"conversation": conversation_id, "run": run_id, "calls": calls})


def trace(step: int, name: str, node: str, event: str, data: Any = None) -> StreamEvent:
    note: dict[str, Any] = {"step": step, "name": name, "node": node, "event": event}
    if data is not None:
        note["data"] = data
    return StreamEvent("trace", note)


class StreamTranslator:
    """Turns engine events into `token` and `trace` events.

    `enter` is sent when the step number grows, preceded by `leave` for the previous node
    when the node changes; a final `leave` closes the stream (seed-contract 4.5).
    """

    def __init__(self) -> None:
        self._step: int | None = None
        self._node: str | None = None
        self._name: str = ""

    def feed(self, event: AgentEvent) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        data: dict[str, Any]
        if isinstance(event, NodeStarted):
            if self._step is None or event.step > self._step:
                if self._node is not None and self._node != event.node:
                    out.append(trace(self._step or 0, self._name, self._node, "leave"))
                out.append(trace(event.step, event.name, event.node, "enter"))
                self._step, self._node, self._name = event.step, event.node, event.name
        elif isinstance(event, TokenDelta):
            if event.text:
                out.append(StreamEvent("token", event.text))
        elif isinstance(event, ReasoningDelta):
            if event.text:
                out.append(StreamEvent("reasoning", event.text))
        elif isinstance(event, ToolCallRequested):
            data = {"name": event.call.name, "arguments": event.call.args, "tool_call_id": event.call.id}
            out.append(trace(event.step, event.call.name, "tools", "call", data))
        elif isinstance(event, ToolCallFinished):
            r = event.result
            data = {"name": r.name, "tool_call_id": r.tool_call_id, "result": r.content}
            if r.duration_ms is not None:
                data["durationMs"] = r.duration_ms
            out.append(trace(event.step, r.name, "tools", "result", data))
        elif isinstance(event, ContextPlanned):
            data = {
                "sent": event.sent, "leftOut": event.left_out, "summarized": event.summarized,
                "shortened": event.shortened, "sentFrom": event.sent_from, "tokens": event.tokens,
                "budget": event.budget,
            }
            out.append(trace(event.step, self._name, "agent", "context", data))
        elif isinstance(event, ContextSummarized):
            data = {"covers": event.covers, "tokens": event.tokens}
            out.append(trace(event.step, self._name, "agent", "summary", data))
        elif isinstance(event, PromptTruncated):
            data = {"sent": event.sent, "evaluated": event.evaluated, "window": event.window,
                    "message": truncation_message(event)}
            out.append(trace(event.step, self._name, "agent", "truncated", data))
        elif isinstance(event, AnswerCut):
            data = {"message": "The answer reached the token limit (MODEL_MAX_TOKENS) and was stopped there."}
            out.append(trace(event.step, self._name, "agent", "cut", data))
        return out

    def close(self) -> list[StreamEvent]:
        if self._node is None:
            return []
        return [trace(self._step or 0, self._name, self._node, "leave")]
