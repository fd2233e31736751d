"""AgentEngine and CheckpointPort over a compiled LangGraph graph."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import Any, cast
from uuid import uuid4

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

from adapters.langchain.messages import FILES_KEY, from_fields, to_domain, to_domain_all, to_langchain
from adapters.langgraph.branching import restore_node, to_messages, with_op
from adapters.langgraph.files import referenced
from adapters.langgraph.keys import FIRST_NODE, INPUT_TASK, RUN_KEY, RunContext
from adapters.langgraph.saver import Saver
from domain.attachments import Upload
from domain.branches import Branch
from domain.errors import BranchNotFound, RecursionLimitReached
from domain.events import AgentEvent, InputRecorded
from domain.model import (
    CheckpointSummary,
    Message,
    PendingCall,
    ThreadHead,
    ThreadState,
    ToolCall,
    ToolResult,
    UserMessage,
)
from domain.models import ModelChoice
from ports.branches import BranchPort
from ports.checkpoints import CheckpointPort
from ports.engine import AgentEngine, Fork, NewMessage, RunInput
from ports.saver import SaverPort

log = logging.getLogger(__name__)

Graph = CompiledStateGraph[Any, Any, Any, Any]

UNPLANNED = "Outcome unknown: this call was left pending when a new message was sent."
LEFT = "Outcome unknown: this call was left pending when the conversation moved to another branch."


def _config(thread_id: str, run_id: str | None = None, limit: int | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if run_id:
        # copied into every checkpoint's metadata. Not "run_id": LangGraph reads a matching
        # run_id on the latest checkpoint as re-entry into that run and would drop new input
        configurable[RUN_KEY] = run_id
    config: RunnableConfig = {"configurable": configurable}
    if limit is not None:
        config["recursion_limit"] = limit
    return config


def _messages(snapshot: StateSnapshot) -> list[BaseMessage]:
    values = snapshot.values if isinstance(snapshot.values, dict) else {}
    return list(values.get("messages") or [])


def _unanswered(messages: Sequence[BaseMessage], done: set[str]) -> list[ToolCall]:
    """Tool calls of the last assistant turn with no ToolMessage (nor an id in `done`)."""
    answered = set(done)
    for m in reversed(messages):
        if isinstance(m, ToolMessage):
            answered.add(m.tool_call_id)
        elif isinstance(m, AIMessage):
            return [
                ToolCall(c.get("id") or "", c["name"], dict(c.get("args") or {}))
                for c in m.tool_calls
                if c.get("id") not in answered
            ]
        else:
            return []
    return []


def _finished_call_ids(snapshot: StateSnapshot) -> set[str]:
    done: set[str] = set()
    for task in snapshot.tasks:
        result = task.result if isinstance(task.result, dict) else None
        for m in (result or {}).get("messages") or []:
            if isinstance(m, ToolMessage):
                done.add(m.tool_call_id)
    return done


def input_writes(message: BaseMessage) -> list[tuple[str, Any]]:
    """A user message as the writes of a pending input: what LangGraph saves for
    `Command(update={"messages": [message]}, goto="agent")`, one message per write."""
    return [(f"branch:to:{FIRST_NODE}", START), ("messages", [message])]


def _head(
    next_nodes: Sequence[str], count: int, run_id: Any, checkpoint_id: str | None, writes: int = 0, pending: bool = False
) -> ThreadHead:
    """The lifecycle's view of a checkpoint: work left and whether it is tool calls.
    `pending`: a new message waits on it as pending input (its run stopped before the
    agent answered): the next step is the agent."""
    if pending and not next_nodes:
        next_nodes = (FIRST_NODE,)
    return ThreadHead(
        work_left=bool(next_nodes),
        awaiting_tools="tools" in next_nodes,
        message_count=count,
        run_id=str(run_id) if run_id else None,
        checkpoint_id=checkpoint_id,
        writes=writes,
    )


async def read_head(saver: SaverPort, thread_id: str) -> ThreadHead:
    stored = await saver.head(thread_id)
    if stored is None:
        return ThreadHead()
    pending = stored.pending_input
    return _head(stored.next, stored.message_count + pending, stored.run_id, stored.checkpoint_id, stored.writes, pending > 0)


async def unapplied_files(graph: Graph, config: RunnableConfig) -> set[str]:
    """The files of a new message the thread's head holds as input never applied (LangGraph's
    input checkpoint: the run stopped before its first step, so the message was never
    acknowledged). Settling the head drops that input."""
    saver = graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver):
        return set()
    saved = await saver.aget_tuple(config)
    start = saved.checkpoint["channel_values"].get(START) if saved is not None else None
    return referenced([start]) if start is not None else set()


async def release_dropped(saver: SaverPort, thread_id: str, unapplied: set[str], kept: Sequence[BaseMessage]) -> None:
    """The files only a dropped input carried leave the thread with it. (A crash between
    the settling checkpoint and this leaves them stored, unseen, until the conversation is
    deleted.)"""
    gone = unapplied - referenced(kept)
    if gone:
        await saver.release_files(thread_id, sorted(gone))


async def leave_branch(graph: Graph, saver: SaverPort, config: RunnableConfig) -> list[str]:
    """Settle the head of the branch being left, so the next checkpoint starts clean:
    pending tasks are cleared (finished tool calls keep their results) and tool calls
    left without a result are answered "outcome unknown". Returns what the head had left
    to run, to be saved with the branch: [] once its tool calls are closed."""
    thread_id = str(config["configurable"]["thread_id"])
    head = await read_head(saver, thread_id)
    if not head.work_left:
        return []
    unapplied = await unapplied_files(graph, config)
    await graph.aupdate_state(config, None, as_node=END)
    if unapplied:
        await release_dropped(saver, thread_id, unapplied, _messages(await graph.aget_state(config)))
    if not head.awaiting_tools:
        return ["agent"]
    snap = await graph.aget_state(config)
    closings = [ToolMessage(LEFT, tool_call_id=c.id, name=c.name, status="error") for c in _unanswered(_messages(snap), set())]
    if closings:
        await graph.aupdate_state(config, {"messages": closings}, as_node="agent")
    return []


def _raw_index(messages: Sequence[BaseMessage], index: int) -> int:
    """The position in the stored list of the domain message at `index` (messages with
    no domain form are not counted by the API's indexes)."""
    seen = 0
    for i, m in enumerate(messages):
        if to_domain(m) is None:
            continue
        if seen == index:
            return i
        seen += 1
    return len(messages)


class LangGraphThreads(CheckpointPort, BranchPort):
    def __init__(self, graph: Graph, saver: SaverPort, cache_size: int = 64) -> None:
        self.graph = graph  # compiled with `saver` as its checkpointer
        self.saver = saver
        self.cache_size = cache_size
        # thread id -> ((checkpoint id, pending writes), state): a checkpoint never changes,
        # so re-reading an unchanged thread (the UI does, after every run) costs one query
        self._cache: OrderedDict[str, tuple[tuple[str | None, int], ThreadState]] = OrderedDict()

    async def get_thread(self, thread_id: str) -> ThreadState:
        head = await read_head(self.saver, thread_id)
        key = (head.checkpoint_id, head.writes)
        hit = self._cache.get(thread_id)
        if hit is not None and hit[0] == key:
            self._cache.move_to_end(thread_id)
            return hit[1]
        state = await self._load(thread_id, head)
        if state.checkpoint_id == head.checkpoint_id:
            self._cache[thread_id] = (key, state)
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return state

    async def _load(self, thread_id: str, head: ThreadHead) -> ThreadState:
        fast = await self._load_finished(thread_id, head)
        if fast is not None:
            return fast
        snap = await self.graph.aget_state(_config(thread_id))
        checkpoint_id = (snap.config.get("configurable") or {}).get("checkpoint_id")
        if checkpoint_id is None:
            return ThreadState()
        messages = _messages(snap)
        pending: tuple[PendingCall, ...] = ()
        if "tools" in snap.next:
            calls = _unanswered(messages, _finished_call_ids(snap))
            pending = tuple(PendingCall(c) for c in calls)
        run_id = (snap.metadata or {}).get(RUN_KEY)
        return ThreadState(
            messages=to_domain_all(messages),
            # a pending input: its messages are in the snapshot, its next step is not
            work_left=bool(snap.next) or head.work_left,
            checkpoint_id=checkpoint_id,
            run_id=str(run_id) if run_id else None,
            pending_calls=pending,
        )

    async def _load_finished(self, thread_id: str, head: ThreadHead) -> ThreadState | None:
        """A thread with no step in progress (no pending writes, no tool tasks) is read
        straight from its checkpoint's fields; anything else goes through get_state."""
        if head.checkpoint_id is None or head.writes or head.awaiting_tools:
            return None
        fields = await self.saver.message_fields(thread_id, head.checkpoint_id)
        if fields is None:
            return None
        messages = tuple(m for m in (from_fields(dict(f)) for f in fields) if m is not None)
        return ThreadState(messages, head.work_left, head.checkpoint_id, head.run_id)

    async def head(self, thread_id: str) -> ThreadHead:
        return await read_head(self.saver, thread_id)

    async def count_written(self, thread_id: str, run_id: str) -> int:
        count = await self.saver.written_count(thread_id, run_id)
        return count if count is not None else (await read_head(self.saver, thread_id)).message_count

    async def list_checkpoints(self, thread_id: str) -> Sequence[CheckpointSummary]:
        return await self.saver.history(thread_id)

    async def branches(self, thread_id: str) -> Sequence[Branch]:
        return await self.saver.branches(thread_id)

    async def seed_thread(self, thread_id: str, messages: Sequence[Message], source: str | None = None) -> None:
        # written as the agent's output: its edge ends the thread after an answer (calls
        # come answered); after a user's message, written as the tools' so the agent is next
        node = "tools" if messages and isinstance(messages[-1], UserMessage) else "agent"
        update = {"messages": [to_langchain(m) for m in messages]}
        named = {a.digest: a for m in messages if isinstance(m, UserMessage) for a in m.attachments}
        if source is not None and named:
            stored = await self.saver.files(source, list(named))
            self.saver.stage_files(thread_id, [Upload(named[d], f.data, f.text) for d, f in stored.items()])
        try:
            await self.graph.aupdate_state(_config(thread_id), update, as_node=node)
        finally:
            if named:
                self.saver.unstage_files(thread_id)
        self._cache.pop(thread_id, None)

    async def branch_messages(self, thread_id: str, number: int) -> Sequence[Message] | None:
        found = await self.saver.branch_content(thread_id, number)
        if found is None:
            return None
        return tuple(m for m in (from_fields(dict(f)) for f in found.messages) if m is not None)

    async def switch_branch(self, thread_id: str, number: int) -> int:
        branches = await self.branches(thread_id)
        if not branches and number == 1:
            return (await read_head(self.saver, thread_id)).message_count
        if number not in {b.number for b in branches}:
            raise BranchNotFound(f"Branch {number} does not exist")
        if any(b.active and b.number == number for b in branches):
            return (await read_head(self.saver, thread_id)).message_count
        found = await self.saver.branch_content(thread_id, number)
        if found is None:
            raise BranchNotFound(f"Branch {number} does not exist")
        config = _config(thread_id)
        left = await leave_branch(self.graph, self.saver, config)
        op = {"op": "switch", "to": number, "next": left}
        fields = [dict(f) for f in found.messages]
        update = {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *to_messages(fields)]}
        await self.graph.aupdate_state(with_op(config, op), update, as_node=restore_node(list(found.next)))
        self._cache.pop(thread_id, None)
        return len(fields)

    async def delete_thread(self, thread_id: str) -> None:
        self._cache.pop(thread_id, None)
        await self.saver.adelete_thread(thread_id)


class LangGraphEngine(AgentEngine):
    def __init__(self, graph: Graph, saver: Saver) -> None:
        self.graph = graph  # compiled with `saver` as its checkpointer
        self.saver = saver

    async def _append(self, thread_id: str, run_id: str, checkpoint_id: str, message: BaseMessage) -> None:
        """A new message on a thread whose last run finished, saved as pending input on its
        latest checkpoint, as LangGraph saves a Command's update; the run then resumes
        from that checkpoint, and its first step is the agent. Through `graph.astream`
        with the message as input, LangGraph would first write an input checkpoint and a
        checkpoint of the input applied, and run a step to get from one to the other: two
        checkpoints and a step less a turn. The write is fenced by the run, like every
        other (RunLost), and synced: it is the message POST acknowledges."""
        config = _config(thread_id, run_id)
        config["configurable"].update(checkpoint_ns="", checkpoint_id=checkpoint_id)
        await self.saver.aput_writes(config, input_writes(message), INPUT_TASK)

    async def _settle(self, config: RunnableConfig, head: ThreadHead, closings: Sequence[ToolResult]) -> list[BaseMessage]:
        """Close the abandoned step, if any: keep the results of tool calls that finished,
        drop the tasks still pending, and answer the calls left without a result with the
        closings the lifecycle decided (any other with an "outcome unknown" result).
        A pending input (a new message whose run stopped before the agent answered) stays
        in the thread."""
        if not head.work_left:
            return []  # the last run finished: nothing is left dangling
        unapplied = await unapplied_files(self.graph, config)
        await self.graph.aupdate_state(config, None, as_node=END)
        snap = await self.graph.aget_state(config)
        await release_dropped(self.saver, str(config["configurable"]["thread_id"]), unapplied, _messages(snap))
        planned = {c.tool_call_id: c for c in closings}
        out: list[BaseMessage] = []
        for call in _unanswered(_messages(snap), set()):
            closing = planned.get(call.id)
            content = closing.content if closing else UNPLANNED
            out.append(ToolMessage(content, tool_call_id=call.id, name=call.name, status="error"))
        return out

    async def _fork(self, config: RunnableConfig, fork: Fork) -> None:
        """Write the new branch's first checkpoint: the messages before `fork.at`, then
        the edited message (if any); its next step is the agent."""
        snap = await self.graph.aget_state(config)
        at = _raw_index(_messages(snap), fork.at)  # branches count stored messages
        messages = _messages(snap)[:at]
        if fork.text is not None:
            # the edited message keeps its files (the conversation holds them already)
            edited = _messages(snap)[at] if at < len(_messages(snap)) else None
            files = edited.additional_kwargs.get(FILES_KEY) if isinstance(edited, HumanMessage) else None
            messages.append(HumanMessage(fork.text, additional_kwargs={FILES_KEY: files} if files else {}))
        left = await leave_branch(self.graph, self.saver, config)
        op = {"op": "fork", "at": at, "next": left}
        update = {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}
        await self.graph.aupdate_state(with_op(config, op), update, as_node="tools")

    async def keep_stopped_text(self, thread_id: str, run_id: str, text: str) -> None:
        # written as the tools step's output: the checkpoint's next step stays `agent`,
        # so the conversation remains resumable after the kept text. A message still
        # pending (the stop came before the agent's first checkpoint) is applied first:
        # an update as a node would leave it out
        config = _config(thread_id, run_id)
        head = await self.saver.head(thread_id)
        if head is not None and head.pending_input:
            await self.graph.aupdate_state(config, None, as_node=END)
        await self.graph.aupdate_state(config, {"messages": [AIMessage(text)]}, as_node="tools")

    async def run(
        self, thread_id: str, run_id: str, run_input: RunInput, recursion_limit: int, choice: ModelChoice | None = None
    ) -> AsyncGenerator[AgentEvent, None]:
        config = _config(thread_id, run_id, recursion_limit)
        # a resume continues the turn of the run before it: its spans join that run's trace
        resumed = not isinstance(run_input, (NewMessage, Fork))
        context = RunContext(run_id, choice or ModelChoice(), resumed=resumed)
        if isinstance(run_input, NewMessage) and run_input.files:
            # written by the saver in the transaction of the message's first write
            self.saver.stage_files(thread_id, run_input.files)
        try:
            async with aclosing(self._run(thread_id, run_id, run_input, config, context)) as events:
                async for event in events:
                    yield event
        finally:
            if isinstance(run_input, NewMessage) and run_input.files:
                self.saver.unstage_files(thread_id)

    async def _run(
        self, thread_id: str, run_id: str, run_input: RunInput, config: RunnableConfig, context: RunContext
    ) -> AsyncGenerator[AgentEvent, None]:
        update: dict[str, Any] | None = None
        if isinstance(run_input, NewMessage):
            head = None if run_input.new_thread else await read_head(self.saver, thread_id)
            files = tuple(f.attachment for f in run_input.files)
            if head and head.checkpoint_id and not (head.work_left or head.writes):
                message = to_langchain(UserMessage(run_input.text, id=str(uuid4()), attachments=files))
                await self._append(thread_id, run_id, head.checkpoint_id, message)
                yield InputRecorded()  # committed (synced): the run resumes from it below
            else:
                closing = [] if head is None else await self._settle(_config(thread_id, run_id), head, run_input.closings)
                update = {"messages": [*closing, to_langchain(UserMessage(run_input.text, attachments=files))]}
        elif isinstance(run_input, Fork):
            await self._fork(_config(thread_id, run_id), run_input)
            yield InputRecorded()  # the branch's first checkpoint is committed (synced)
        elif run_input.skip:
            context = replace(context, skip=frozenset(run_input.skip))
        recorded = update is None  # a pending input too: with no update, LangGraph resumes from it
        try:
            async for event in self.graph.astream(update, config, context=context, stream_mode="custom", durability="sync"):
                if not recorded:
                    # with durability="sync", a node runs only after the checkpoints before
                    # it are committed: the message is durable once the agent node speaks
                    recorded = True
                    yield InputRecorded()
                yield cast(AgentEvent, event)  # the nodes write only domain events
        except GraphRecursionError as e:
            raise RecursionLimitReached() from e
        if not recorded:
            yield InputRecorded()
