"""The contract's stream events (`token`, `trace`, `end`, `chat-error`), and `reasoning` (the
model's thinking, as tokens of its own: a client that does not know it ignores it), made
from the agent engine's events. The payloads are a stored format: the run event log keeps
them as they are sent (adapters/storage/event_rows.py) and replays them to a late follower,
so a field renamed here changes what old rows say; keep them as they are.

Besides the contract's `enter`, `leave`, `call` and `result`, a `trace` may be `context`
(what a model call is sent), `summary` (a summary was stored), `truncated` (the model
server cut the prompt) or `cut` (the answer reached MODEL_MAX_TOKENS and was stopped)."""

from __future__ import annotations

from typing import Any

from domain.approvals import ApprovalRequest
from domain.events import (
    AgentEvent,
    AnswerCut,
    ContextPlanned,
    ContextSummarized,
    NodeStarted,
    PromptTruncated,
    ReasoningDelta,
    StreamEvent,
    TokenDelta,
    ToolCallFinished,
    ToolCallRequested,
    truncation_message,
)


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
                "sent": event.sent,
                "leftOut": event.left_out,
                "summarized": event.summarized,
                "shortened": event.shortened,
                "sentFrom": event.sent_from,
                "tokens": event.tokens,
                "budget": event.budget,
            }
            if event.searched:
                data["searched"] = list(event.searched)
            out.append(trace(event.step, self._name, "agent", "context", data))
        elif isinstance(event, ContextSummarized):
            data = {"covers": event.covers, "tokens": event.tokens}
            out.append(trace(event.step, self._name, "agent", "summary", data))
        elif isinstance(event, PromptTruncated):
            data = {
                "sent": event.sent,
                "evaluated": event.evaluated,
                "window": event.window,
                "message": truncation_message(event),
            }
            out.append(trace(event.step, self._name, "agent", "truncated", data))
        elif isinstance(event, AnswerCut):
            data = {"message": "The answer reached the token limit (MODEL_MAX_TOKENS) and was stopped there."}
            out.append(trace(event.step, self._name, "agent", "cut", data))
        return out

    def close(self) -> list[StreamEvent]:
        if self._node is None:
            return []
        return [trace(self._step or 0, self._name, self._node, "leave")]
