"""The agent graph: START -> agent <-> tools -> END, one `tools` task per tool call.

Nodes talk to the outside only through ports (ModelPort, ToolPort, SystemPromptSource) and
report progress through LangGraph's custom stream as domain events.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt

from adapters.langchain.messages import ConversionCache, to_langchain
from adapters.langgraph.appending import append_messages
from adapters.langgraph.files import FilePrompts
from adapters.langgraph.keys import RunContext
from adapters.langgraph.knowledge import KnowledgePrompts
from adapters.langgraph.tracing import traced_model_call, traced_summary_call, traced_tool_call
from domain.approvals import Rejected, Wait, edited_note
from domain.context import ContextPolicy, PromptPlan, estimate_text, file_chars
from domain.errors import RunLost, StorageFailure, ToolOutcomeUnknown
from domain.events import (
    AnswerCut,
    ApprovalRequested,
    ContextPlanned,
    ContextSummarized,
    NodeStarted,
    PromptTruncated,
    ReasoningDelta,
    TokenDelta,
    ToolCallFinished,
    ToolCallRequested,
)
from domain.knowledge import Cited
from domain.lifecycle import idempotency_key, own_call_ids
from domain.model import (
    AssistantMessage,
    ContextView,
    Message,
    SummaryMessage,
    SystemMode,
    ToolCall,
    ToolResult,
    new_call_id,
    utc_now,
)
from domain.models import compose_system
from domain.traces import SpanEnd
from ports.attachments import AttachmentStore
from ports.journal import ToolJournal
from ports.metrics import NO_METRICS, UNKNOWN_TOOL, MetricsPort
from ports.model import ModelPort, ReasoningChunk, TextChunk, Usage
from ports.prompts import SystemPromptSource
from ports.tools import ToolPort, ToolSpec
from services.approvals import ApprovalGate
from services.prompting import ContextKeeper, Spent
from services.usage import UsageMeter, model_cost

if TYPE_CHECKING:
    from services.traces import RunTracer

log = logging.getLogger(__name__)


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], append_messages]


class ToolTask(TypedDict):
    """What one `tools` task receives: a single call of the last assistant turn."""

    call: dict[str, Any]


def _step(config: RunnableConfig) -> int:
    return int((config.get("metadata") or {}).get("langgraph_step", 0))


def _context(runtime: Runtime[RunContext]) -> RunContext:
    # None when the graph runs without one (a test's bare graph): the defaults
    context: RunContext | None = runtime.context
    return context if context is not None else NO_CONTEXT


NO_CONTEXT = RunContext()


@dataclass
class Timing:
    outcome: str = "ok"  # the block may set `error` for a failure that raised nothing


@contextmanager
def _timed(record: Callable[[str, float], None]) -> Iterator[Timing]:
    """Time the block and record its outcome: `ok`, `error` or `cancelled`."""
    began, timing = time.monotonic(), Timing()
    try:
        yield timing
    except BaseException as e:
        timing.outcome = "cancelled" if isinstance(e, asyncio.CancelledError) else "error"
        raise
    finally:
        record(timing.outcome, time.monotonic() - began)


def _planned(step: int, plan: PromptPlan, searched: tuple[str, ...]) -> ContextPlanned:
    fields = (plan.left_out, plan.summarized, plan.shortened, plan.sent_from, plan.tokens, plan.budget)
    return ContextPlanned(step, len(plan.messages), *fields, searched)


async def route_after_agent(state: AgentState) -> Sequence[Send] | str:
    # async: LangGraph runs a sync edge function on a worker thread, a hop per model call
    last = state["messages"][-1] if state["messages"] else None
    if isinstance(last, AIMessage) and last.tool_calls:
        return [Send("tools", ToolTask(call=dict(c))) for c in last.tool_calls]
    return END


YIELD_EVERY = 32  # tokens streamed between two turns given to the rest of the loop
SKIPPED = (
    "Skipped: this call was in flight when an earlier run stopped, so it may or may not have "
    "taken effect. The user chose not to run it again."
)


class Thinking:
    """The reasoning of one model call as it streams, and how long it took: from the call's
    start to its first token of answer (or its end)."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.parts: list[str] = []
        self.ended: float | None = None

    def add(self, text: str) -> None:
        self.parts.append(text)

    def answered(self) -> None:
        if self.parts and self.ended is None:
            self.ended = time.monotonic()

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def seconds(self) -> float | None:
        if not self.parts:
            return None
        return round((self.ended or time.monotonic()) - self.began, 1)


class AgentNodes:
    def __init__(
        self,
        model: ModelPort,
        tools: ToolPort,
        prompt: SystemPromptSource,
        journal: ToolJournal | None = None,
        clock: Callable[[], datetime] = utc_now,
        metrics: MetricsPort = NO_METRICS,
        context: ContextPolicy | None = None,
        gate: ApprovalGate | None = None,
        files: AttachmentStore | None = None,
        usage: UsageMeter | None = None,
        tracer: RunTracer | None = None,
        knowledge: KnowledgePrompts | None = None,
        withheld: Callable[[str], Awaitable[frozenset[str]]] | None = None,
    ) -> None:
        self.withheld = withheld  # a conversation's tool servers not offered (memory turned off); None: none
        self.knowledge = knowledge  # None: `#name` attaches nothing
        self.tracer = tracer  # None: no trace spans (no OTLP endpoint)
        self.usage = usage  # None: calls are neither counted nor held to a quota
        self.files = FilePrompts(files) if files is not None else None  # None: files are left out
        self.gate = gate  # None: no call ever waits for approval
        self.model = model
        self.context = ContextKeeper(model, context or ContextPolicy())
        self.tools = tools
        self.prompt = prompt
        self.journal = journal
        self.clock = clock
        self.metrics = metrics
        self.cache = ConversionCache()

    async def agent(
        self, state: AgentState, config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | Command[str]:
        step, write = _step(config), runtime.stream_writer
        run = _context(runtime)
        choice = run.choice
        name = choice.model or self.model.name
        write(NodeStarted(step, "agent", name))
        thread_id = str(config["configurable"]["thread_id"])
        if self.usage is not None:
            # before any model call of the step (its summary's too): QuotaExceeded fails the
            # run with nothing of the step saved, resumable once the quota resets
            await self.usage.before_model_call(thread_id)
        specs = await self._offered(thread_id)
        thread = self.cache.convert_thread(thread_id, state["messages"])
        searched: tuple[str, ...] = ()
        if self.files is not None:
            thread, searched = await self.files.expand(thread_id, thread, file_chars(self.context.policy_for(choice)))
        cited: tuple[Cited, ...] = ()
        if self.knowledge is not None:
            thread, cited = await self.knowledge.expand(thread_id, thread, file_chars(self.context.policy_for(choice)))
        replaced = choice.system is not None and choice.system_mode is SystemMode.REPLACE
        system = compose_system("" if replaced else self.prompt.read(), choice.system, choice.system_mode)
        plan = self.context.plan(thread_id, thread, system, specs, choice)
        if plan.summarize is not None:
            # stored in a checkpoint of its own before the answer is asked for: a resume
            # after a crash finds it, and no later call pays for it again
            summary = await self._summarize(thread_id, name, thread, plan, choice.model, (run, step))
            write(ContextSummarized(step, summary.covers, estimate_text(summary.content)))
            return Command(update={"messages": [to_langchain(summary)]}, goto="agent")
        write(_planned(step, plan, searched))
        thinking, began = Thinking(), time.monotonic()
        with _timed(lambda outcome, seconds: self.metrics.model_call(name, outcome, seconds)):
            answer = partial(self._answer, plan, specs, choice.model, step, thinking, write)
            (reply, usage), ending = await traced_model_call(self.tracer, run, thread_id, step, name, plan, answer)
        spent = reply.content + (reply.reasoning or "")
        await self._count(thread_id, name, plan.tokens, spent, usage, time.monotonic() - began, ending)
        self._check_evaluation(config, step, plan, usage, run)
        if reply.cut:
            # stored as the step's reply (it has no tool calls: the graph ends after it);
            # the run service turns the event into the run's ANSWER_TOO_LONG
            write(AnswerCut(step))
        reply = replace(reply, tool_calls=own_call_ids(reply.tool_calls, new_call_id))
        for call in reply.tool_calls:
            write(ToolCallRequested(step, call))
        reply = replace(
            reply,
            context=ContextView(plan.sent_from, plan.tokens, plan.budget, searched, cited),
            model=name,
            reasoning=reply.reasoning or thinking.text or None,
            reasoning_seconds=thinking.seconds(),
        )
        return {"messages": [to_langchain(reply)]}

    async def _offered(self, thread_id: str) -> Sequence[ToolSpec]:
        specs = await self.tools.list_tools()
        if self.withheld is None:
            return specs
        withheld = await self.withheld(thread_id)
        return [s for s in specs if s.name.split("__", 1)[0] not in withheld] if withheld else specs

    async def _summarize(
        self,
        thread_id: str,
        name: str,
        thread: Sequence[Message],
        plan: PromptPlan,
        model: str | None,
        at: tuple[RunContext, int],
    ) -> SummaryMessage:
        """The summary the plan asks for, its call counted in the owner's usage and traced
        (a chat span of purpose "summary", ended with its usage row)."""
        spent: list[Spent] = []
        began = time.monotonic()

        async def call() -> tuple[SummaryMessage, Usage | None]:
            summary = await self.context.summarize(thread, plan, model, spent)
            return summary, spent[-1].usage if spent else None

        summary, ending = await traced_summary_call(self.tracer, *at, thread_id, name, call)
        for cost in spent:
            await self._count(thread_id, name, cost.sent, cost.answer, cost.usage, time.monotonic() - began, ending)
            ending = None
        if ending is not None and self.tracer is not None:
            await self.tracer.end(ending)
        return summary

    async def _answer(
        self,
        plan: PromptPlan,
        specs: Sequence[ToolSpec],
        model: str | None,
        step: int,
        thinking: Thinking,
        write: Callable[[Any], None],
    ) -> tuple[AssistantMessage, Usage | None]:
        """The model's reply to the planned prompt, its tokens and thinking written as they come."""
        reply: AssistantMessage | None = None
        usage: Usage | None = None
        chunks = 0
        async for out in self.model.stream(plan.system, plan.messages, specs, model):
            if isinstance(out, TextChunk):
                thinking.answered()
                write(TokenDelta(step, out.text))
            elif isinstance(out, ReasoningChunk):
                thinking.add(out.text)
                write(ReasoningDelta(step, out.text))
            elif isinstance(out, Usage):
                usage = out
                continue
            else:
                reply = out
                continue
            chunks += 1
            if chunks % YIELD_EVERY == 0:
                # a fast server's tokens are all ready: reading them never suspends, and the
                # loop's other work (the event flusher, SSE writers, lease renewals) would wait
                # for the whole answer
                await asyncio.sleep(0)
        if reply is None:
            raise RuntimeError("the model ended its stream without a reply")
        return reply, usage

    async def _count(
        self, thread_id: str, model: str, sent: int, answer: str, usage: Usage | None, seconds: float, span: SpanEnd | None = None
    ) -> None:
        """The call's tokens and seconds in its owner's usage (services.usage): the server's
        counts, else the prompt's estimate (`sent`) and the answer's, marked estimated. The
        call's trace span (`span`) ends in the same write."""
        if self.usage is None:
            if span is not None and self.tracer is not None:
                await self.tracer.end(span)
            return
        reported = (usage.prompt_tokens, usage.completion_tokens) if usage is not None else None
        cost = model_cost(reported, lambda: (sent, estimate_text(answer)), seconds)
        await self.usage.model_call(thread_id, model, cost, span)

    def _check_evaluation(
        self, config: RunnableConfig, step: int, plan: PromptPlan, usage: Usage | None, run: RunContext
    ) -> None:
        thread_id = str(config["configurable"]["thread_id"])
        seen = self.context.observe(thread_id, plan, usage, run.choice)
        if seen is None or not seen.truncated or not self.context.first_warning(thread_id):
            return
        window = self.context.policy_for(run.choice).window
        extra = {"conversation_id": thread_id, "run_id": run.run_id}
        if seen.filled:
            log.warning(
                "the model server evaluated %d prompt tokens of about %d sent (MODEL_CONTEXT %d): it cut the prompt",
                seen.evaluated,
                seen.sent,
                window,
                extra=extra,
            )
        else:
            log.warning(
                "the model server reported far fewer prompt tokens (%d) than were sent (about %d; "
                "MODEL_CONTEXT %d): it may have cut the prompt, or it counts differently",
                seen.evaluated,
                seen.sent,
                window,
                extra=extra,
            )
        get_stream_writer()(PromptTruncated(step, seen.sent, seen.evaluated, window, seen.filled))

    async def tool(self, task: ToolTask, config: RunnableConfig, runtime: Runtime[RunContext]) -> dict[str, Any]:
        step, write, run = _step(config), runtime.stream_writer, _context(runtime)
        raw = task["call"]
        call = ToolCall(raw.get("id") or "", raw["name"], dict(raw.get("args") or {}))
        write(NodeStarted(step, "tools", call.name))
        skipped = call.id in run.skip
        ms: int | None = None
        if skipped:
            content, failed = SKIPPED, True
        else:
            started, thread_id = time.monotonic(), str(config["configurable"]["thread_id"])
            content, failed = await self._decided_call(call, step, thread_id, run)
            ms = round((time.monotonic() - started) * 1000)
            if self.usage is not None:
                await self.usage.tool_call(thread_id, run.choice.model or self.model.name, time.monotonic() - started)
        result = ToolResult(content, call.id, call.name, "error" if failed else "success", duration_ms=ms, skipped=skipped)
        write(ToolCallFinished(step, result))
        return {"messages": [to_langchain(result)]}

    async def _decided_call(self, call: ToolCall, step: int, thread_id: str, run: RunContext) -> tuple[str, bool]:
        """The call as the approval policy decides: run (with edited args, if a person
        edited them), rejected, or not started at all. A call that waits ends this task
        with a LangGraph interrupt: the step's other calls finish, their results are saved,
        and this one stays pending in the checkpoint until a resume runs the task again."""
        try:
            spec = next((t for t in await self.tools.list_tools() if t.name == call.name), None)
        except Exception:  # listing failed: the call itself will say why
            log.warning("could not list the tools before calling %s", call.name, exc_info=True)
            spec = None
        if self.gate is None:
            return await self._call(call, spec, thread_id, run)
        verdict = await self.gate.check(thread_id, run.run_id, call, spec)
        if isinstance(verdict, Wait):
            get_stream_writer()(ApprovalRequested(step, verdict.request))
            interrupt({"approval": call.id})  # raises: nothing below runs, nothing is journaled
        if isinstance(verdict, Rejected):
            return verdict.content, True
        assert not isinstance(verdict, Wait)
        content, failed = await self._call(replace(call, args=verdict.args), spec, thread_id, run)
        return (edited_note(verdict.args, content) if verdict.edited else content), failed

    async def _call(self, call: ToolCall, spec: ToolSpec | None, thread_id: str, run: RunContext) -> tuple[str, bool]:
        # its span recorded before the journal's "about to call", ended with its outcome
        return await traced_tool_call(self.tracer, run, thread_id, call, lambda: self._send(call, spec, thread_id, run.run_id))

    async def _send(self, call: ToolCall, spec: ToolSpec | None, thread_id: str, run_id: str | None) -> tuple[str, bool]:
        key = idempotency_key(thread_id, call.id)
        try:
            if self.journal is not None:
                unsafe = spec.unsafe_to_repeat if spec else False
                # durably "about to call": after a crash, this call's outcome is known to be unknown
                await self.journal.call_started(key, thread_id, run_id, call.name, unsafe, self.clock())
            label = call.name if spec else UNKNOWN_TOOL  # the model may name any tool: keep labels bounded
            with _timed(lambda result, seconds: self.metrics.tool_call(label, result, seconds)) as timing:
                outcome = await self.tools.call(call.name, call.args, key)
                timing.outcome = "error" if outcome.is_error else "ok"
            return outcome.content, outcome.is_error
        except (RunLost, StorageFailure, ToolOutcomeUnknown):
            # the run lost its owner or its store: the call must not be sent; or the call's
            # outcome is unknown: the run fails, the call stays pending for a decision
            raise
        except Exception as e:  # a tool's failure is data for the model, not a failed run
            return f"Error: {type(e).__name__}: {e}", True


def build_graph(nodes: AgentNodes | None, checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the graph. With `nodes` None the graph can only read state (no model, no
    tools), which is all the read paths need."""

    async def unavailable(*_: Any) -> dict[str, Any]:
        raise RuntimeError("this graph is read-only")

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(AgentState, context_schema=RunContext)
    agent: Any = nodes.agent if nodes else unavailable
    tool: Any = nodes.tool if nodes else unavailable
    builder.add_node("agent", agent, destinations=("agent", "tools", END))
    builder.add_node("tools", tool, input_schema=ToolTask)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route_after_agent, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)
