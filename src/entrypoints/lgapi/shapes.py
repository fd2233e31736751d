"""The JSON of LangGraph's API for Sophos's values: assistants, threads, runs, states and
LangChain's message dicts. Pure functions; the routes call them at the edge."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from domain.approvals import ApprovalRequest
from domain.model import (
    AssistantMessage,
    Conversation,
    Message,
    Run,
    RunStatus,
    SummaryMessage,
    ToolResult,
    UserMessage,
    iso,
)
from domain.queue import QueuedMessage
from entrypoints.dto import context_dto

GRAPH_ID = "agent"
# LangGraph names a graph's default assistant uuid5(its graph namespace, graph id); the
# same id here lets clients that stored it (or compute it) find ours
ASSISTANT_ID = str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430cd"), GRAPH_ID))
EPOCH = "1970-01-01T00:00:00.000Z"

# what LangGraph calls a run's status, for each of ours. `waiting` ended well, before calls
# that wait for a person: the thread, not the run, is `interrupted`. A crash-interrupted
# run is `interrupted` too; its own status stays in the run's metadata (`sophos_status`)
RUN_STATUS = {
    RunStatus.RUNNING: "running",
    RunStatus.COMPLETED: "success",
    RunStatus.WAITING: "success",
    RunStatus.FAILED: "error",
    RunStatus.CANCELLED: "interrupted",
    RunStatus.INTERRUPTED: "interrupted",
}


def is_assistant(value: object) -> bool:
    return value in (GRAPH_ID, ASSISTANT_ID)


def assistant() -> dict[str, Any]:
    return {
        "assistant_id": ASSISTANT_ID,
        "graph_id": GRAPH_ID,
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "name": GRAPH_ID,
        "description": "Sophos: a local model with MCP tools; every run durable",
        "version": 1,
        "created_at": EPOCH,
        "updated_at": EPOCH,
    }


def message_dict(message: Message, index: int) -> dict[str, Any]:
    """A message as LangChain serialises it (`type`: human, ai, tool, system). A summary is
    a system message (clients do not render those) marked `sophos_summary`."""
    mid = message.id or f"sophos-{index}"
    base: dict[str, Any] = {"id": mid, "content": message.content, "additional_kwargs": {}, "response_metadata": {}, "name": None}
    if isinstance(message, UserMessage):
        return {**base, "type": "human", "example": False}
    if isinstance(message, AssistantMessage):
        calls = [{"id": c.id, "name": c.name, "args": c.args, "type": "tool_call"} for c in message.tool_calls]
        extra: dict[str, Any] = {}
        if message.reasoning:
            extra["reasoning_content"] = message.reasoning
        response: dict[str, Any] = {"finish_reason": "length"} if message.cut else {}
        if message.context is not None:  # what the model saw when it wrote this reply
            response["sophos_context"] = context_dto(message.context)
        base["response_metadata"] = response
        return {
            **base,
            "type": "ai",
            "example": False,
            "tool_calls": calls,
            "invalid_tool_calls": [],
            "usage_metadata": None,
            "additional_kwargs": extra,
        }
    if isinstance(message, ToolResult):
        return {
            **base,
            "type": "tool",
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "status": message.status,
            "artifact": None,
        }
    assert isinstance(message, SummaryMessage)
    return {**base, "type": "system", "additional_kwargs": {"sophos_summary": {"covers": message.covers}}}


def messages_value(messages: Sequence[Message]) -> dict[str, Any]:
    return {"messages": [message_dict(m, i) for i, m in enumerate(messages)]}


def interrupt_dict(requests: Sequence[ApprovalRequest]) -> dict[str, Any]:
    """The calls waiting for a person as one interrupt (hitl_interrupt)."""
    return hitl_interrupt(
        [{"id": r.call.id, "name": r.call.name, "args": r.call.args, "description": r.description} for r in requests]
    )


# the older Agent Inbox's choices, all of which Sophos's decisions cover (inputs._decision)
INBOX_CONFIG = {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": True}


def hitl_interrupt(calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Calls waiting for a person (each with id, name, args, description) as one
    interrupt, in the shape of LangChain's human-in-the-loop middleware (`action_requests`
    / `review_configs`), which Agent Chat UI's inbox renders. Its id is the first call's,
    so it stays the same until answered. A single call also carries the older Agent Inbox
    keys (`action_request`, `config`, `description`): UIs of that generation (Agent Chat UI
    as create-agent-chat-app ships it) then render their inbox instead of raw JSON."""
    value: dict[str, Any] = {
        "action_requests": [
            {"name": c["name"], "args": c["args"], "description": c.get("description") or f"Run {c['name']}", "id": c["id"]}
            for c in calls
        ],
        "review_configs": [{"action_name": c["name"], "allowed_decisions": ["approve", "edit", "reject"]} for c in calls],
    }
    if len(calls) == 1:
        only = value["action_requests"][0]
        value.update(
            action_request={"action": only["name"], "args": only["args"]},
            config=dict(INBOX_CONFIG),
            description=only["description"],
        )
    return {"value": value, "id": calls[0]["id"]}


def thread_metadata() -> dict[str, Any]:
    """What every thread carries: the graph and assistant, so clients' filters find it."""
    return {"graph_id": GRAPH_ID, "assistant_id": ASSISTANT_ID}


def full_metadata(conversation: Conversation, stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a thread's metadata reads as: the stamped graph and assistant, the title, then
    what clients stored (which wins)."""
    return {**thread_metadata(), "title": conversation.title, **(stored or {})}


def thread_dict(
    conversation: Conversation,
    status: str,
    stored: Mapping[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    interrupts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "thread_id": conversation.id,
        "created_at": iso(conversation.created_at),
        "updated_at": iso(conversation.updated_at),
        "metadata": full_metadata(conversation, stored),
        "status": status,
        "values": values if values is not None else {},
        "interrupts": interrupts or {},
        "config": {},
    }


def run_dict(run: Run, scheduled_for: datetime | None = None) -> dict[str, Any]:
    """`scheduled_for`: the time of the schedule's firing that started it (issue 46)."""
    when = run.finished_at or run.started_at
    return {
        "run_id": run.id,
        "thread_id": run.conversation_id,
        "assistant_id": ASSISTANT_ID,
        "created_at": iso(run.started_at),
        "updated_at": iso(when),
        "status": RUN_STATUS[run.status],
        "metadata": {
            "sophos_status": run.status.value,
            "trigger": run.trigger.value,
            **({"scheduled_for": iso(scheduled_for)} if scheduled_for is not None else {}),
            **({"error": {"code": run.error_code, "message": run.error_message}} if run.error_code else {}),
        },
        "kwargs": {},
        "multitask_strategy": "reject",
    }


def queued_run_dict(message: QueuedMessage, strategy: str = "enqueue") -> dict[str, Any]:
    """A message waiting in Sophos's queue as the run it becomes: its run takes the
    message's id when it starts (ports.queue.start_queued), so the id is the run's."""
    return {
        "run_id": message.id,
        "thread_id": message.conversation_id,
        "assistant_id": ASSISTANT_ID,
        "created_at": iso(message.created_at),
        "updated_at": iso(message.created_at),
        "status": "pending",
        "metadata": {"sophos_status": "queued", "trigger": "queue", "position": message.position},
        "kwargs": {},
        "multitask_strategy": strategy,
    }


def checkpoint_ref(thread_id: str, checkpoint_id: str | None) -> dict[str, Any] | None:
    if checkpoint_id is None:
        return None
    return {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id, "checkpoint_map": None}


def state_dict(
    thread_id: str,
    values: dict[str, Any],
    checkpoint_id: str | None,
    parent_id: str | None,
    next_nodes: Sequence[str],
    interrupt: dict[str, Any] | None = None,
    created_at: datetime | str | None = None,
    step: int = -1,
) -> dict[str, Any]:
    interrupts = [interrupt] if interrupt else []
    tasks = (
        [
            {
                "id": interrupt["id"],
                "name": "tools",
                "path": ["__pregel_pull", "tools"],
                "error": None,
                "interrupts": interrupts,
                "checkpoint": None,
                "state": None,
                "result": None,
            }
        ]
        if interrupt
        else []
    )
    return {
        "values": values,
        "next": list(next_nodes),
        "tasks": tasks,
        "interrupts": interrupts,
        "checkpoint": checkpoint_ref(thread_id, checkpoint_id),
        "parent_checkpoint": checkpoint_ref(thread_id, parent_id),
        "metadata": {**thread_metadata(), "step": step, "source": "loop", "thread_id": thread_id},
        "created_at": iso(created_at) if isinstance(created_at, datetime) else created_at,
        "checkpoint_id": checkpoint_id,
        "parent_checkpoint_id": parent_id,
    }
