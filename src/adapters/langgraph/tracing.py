"""The agent graph's trace spans (services.traces.RunTracer) around its model and tool calls:
each span is recorded before the call is sent and ended when its answer is back. A call cut
by a crash or a stop is left unended here; the shipper ends it as interrupted once its run
is no longer running. Without a tracer (no OTLP endpoint) every helper only makes the call."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from adapters.langgraph.keys import RunContext
from domain.context import PromptPlan
from domain.model import AssistantMessage, Message, SummaryMessage, ToolCall, ToolResult, UserMessage
from domain.traces import SpanEnd
from ports.model import Usage

if TYPE_CHECKING:
    from services.traces import RunTracer

log = logging.getLogger(__name__)

ROLES = {UserMessage: "user", AssistantMessage: "assistant", ToolResult: "tool", SummaryMessage: "system"}


def finish_reason(reply: AssistantMessage) -> str:
    if reply.cut:
        return "length"
    return "tool_calls" if reply.tool_calls else "stop"


def prompt_content(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The prompt as the GenAI conventions' input messages (role and text parts)."""
    sent = [{"role": "system", "parts": [{"type": "text", "content": system}]}] if system else []
    return sent + [{"role": ROLES.get(type(m), "user"), "parts": [{"type": "text", "content": m.content}]} for m in messages]


def reply_content(reply: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": reply.content}] if reply.content else []
    parts += [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.args} for c in reply.tool_calls]
    return [{"role": "assistant", "parts": parts, "finish_reason": finish_reason(reply)}]


Answer = tuple[AssistantMessage, Usage | None]


async def traced_model_call(
    tracer: RunTracer | None,
    run: RunContext,
    thread_id: str,
    step: int,
    model: str,
    plan: PromptPlan,
    call: Callable[[], Awaitable[Answer]],
) -> tuple[Answer, SpanEnd | None]:
    """The answer, and the call's span's end for the caller to write with the call's usage
    row (None: no span). A failed call's span is ended here."""
    if tracer is None or run.run_id is None:
        return await call(), None
    run_span = await tracer.run_span(run.run_id, thread_id, run.resumed)
    sent = prompt_content(plan.system, plan.messages) if tracer.capture else None
    span = await tracer.model_call_started(run_span, step, 0, model, sent)
    try:
        reply, usage = await call()
    except Exception as e:
        await _quietly(tracer.model_call_ended(span, None, "error", error=type(e).__name__))
        raise
    tokens = (usage.prompt_tokens, usage.completion_tokens) if usage is not None else None
    output = reply_content(reply) if tracer.capture else None
    return (reply, usage), tracer.model_call_ending(span, tokens, finish_reason(reply), output)


async def traced_summary_call(
    tracer: RunTracer | None,
    run: RunContext,
    step: int,
    thread_id: str,
    model: str,
    call: Callable[[], Awaitable[tuple[SummaryMessage, Usage | None]]],
) -> tuple[SummaryMessage, SpanEnd | None]:
    """The summary, and its call's span's end for the caller to write with its usage row."""
    if tracer is None or run.run_id is None:
        return (await call())[0], None
    run_span = await tracer.run_span(run.run_id, thread_id, run.resumed)
    span = await tracer.model_call_started(run_span, step, 0, model, purpose="summary")
    try:
        summary, usage = await call()
    except Exception as e:
        await _quietly(tracer.model_call_ended(span, None, "error", error=type(e).__name__))
        raise
    tokens = (usage.prompt_tokens, usage.completion_tokens) if usage is not None else None
    return summary, tracer.model_call_ending(span, tokens, "stop")


async def traced_tool_call(
    tracer: RunTracer | None, run: RunContext, thread_id: str, call: ToolCall, send: Callable[[], Awaitable[tuple[str, bool]]]
) -> tuple[str, bool]:
    """`send` journals the call (call_started) and makes it: the span is recorded before."""
    if tracer is None or run.run_id is None:
        return await send()
    run_span = await tracer.run_span(run.run_id, thread_id, run.resumed)
    span = await tracer.tool_call_started(run_span, call.id, call.name, call.args if tracer.capture else None)
    try:
        content, failed = await send()
    except Exception as e:
        await _quietly(tracer.tool_call_ended(span, None, error=type(e).__name__))
        raise
    await tracer.tool_call_ended(span, content, error="tool_error" if failed else None)
    return content, failed


async def _quietly(ending: Awaitable[None]) -> None:
    # the call's own failure is what the run reports: a span that cannot be ended now is
    # ended as interrupted by the shipper
    try:
        await ending
    except Exception:
        log.warning("could not end a trace span", exc_info=True)
