"""Threads: Sophos conversations, with their state and checkpoint history."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response

from domain.errors import ConversationExists, ConversationNotFound, InvalidInput, NotSupported
from domain.model import CheckpointSummary, Conversation, RunStatus
from entrypoints.bundle import Services
from entrypoints.http.principal import principal_of
from entrypoints.http.routes import read_json
from entrypoints.lgapi import shapes
from entrypoints.lgapi.inputs import ThreadView
from entrypoints.lgapi.lineage import lineage
from services.conversations import ConversationDetail

MAX_LIMIT = 1000
SORTS = {"thread_id", "status", "created_at", "updated_at"}


# the JSON type of the body fields that langgraph-api's request schemas type the same way on
# every route: another type is 422 there, and here (null is taken as absent)
FIELD_TYPES: dict[str, tuple[type, str]] = {
    "metadata": (dict, "an object"),
    "limit": (int, "an integer"),
    "offset": (int, "an integer"),
    "ids": (list, "an array"),
    "select": (list, "an array"),
    "sort_by": (str, "a string"),
    "sort_order": (str, "a string"),
    "graph_id": (str, "a string"),
    "name": (str, "a string"),
    "status": (str, "a string"),
}


async def read_body(request: Request, allowed: set[str]) -> dict[str, Any]:
    """The JSON body as /api reads it (size, time, known top-level fields), valid Unicode all
    through: a nested lone surrogate could reach a store or an error message otherwise. A
    field of another type than langgraph-api's schema says (FIELD_TYPES) is 422, as there."""
    body = await read_json(request, allowed)
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("The body is not valid Unicode (a lone surrogate)") from None
    for name, value in body.items():
        kind, said = FIELD_TYPES.get(name, (object, ""))
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            raise HTTPException(422, f"{name} must be {said}")
    return body


def services(request: HTTPConnection) -> Services:
    found: Services = request.app.state.services
    return found


def thread_id(request: HTTPConnection) -> str:
    return str(request.path_params["thread_id"])


def bounded(value: object, name: str, default: int, low: int = 0, high: int = MAX_LIMIT) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{name} must be an integer between {low} and {high}")
    return value


def status_of(conversation: Conversation) -> str:
    """The thread's status from its latest run (cheap: no checkpoint read)."""
    status = conversation.status
    if status is RunStatus.RUNNING:
        return "busy"
    if status is RunStatus.WAITING:
        return "interrupted"
    if status in (RunStatus.FAILED, RunStatus.INTERRUPTED):
        return "error"
    return "idle"


async def view(request: Request, tid: object) -> tuple[ConversationDetail, ThreadView]:
    conversations = services(request).conversations()
    detail = await conversations.get(tid, by=principal_of(request))
    cid = detail.conversation.id
    head = await conversations.head(cid, by=principal_of(request))
    log = lineage(await conversations.checkpoint_log(cid, by=principal_of(request)), detail.branches)
    return detail, ThreadView(cid, detail.messages, detail.pending_approvals, len(detail.pending_calls), head.checkpoint_id, log)


def _interrupt(detail: ConversationDetail) -> dict[str, Any] | None:
    return shapes.interrupt_dict(detail.pending_approvals) if detail.pending_approvals else None


async def thread_body(request: Request, tid: object) -> dict[str, Any]:
    conversations = services(request).conversations()
    detail = await conversations.get(tid, by=principal_of(request))
    interrupt = _interrupt(detail)
    stored = (await conversations.metadata([detail.conversation.id])).get(detail.conversation.id)
    return shapes.thread_dict(
        detail.conversation,
        status_of(detail.conversation),
        stored,
        shapes.messages_value(detail.messages),
        {"": [interrupt]} if interrupt else {},
    )


async def create_thread(request: Request) -> Response:
    body = await read_body(request, {"thread_id", "metadata", "if_exists", "supersteps", "ttl", "graph_id"})
    if body.get("supersteps"):
        raise InvalidInput("supersteps are not supported: a thread's state is written by its runs")
    if body.get("if_exists") not in (None, "raise", "do_nothing"):
        raise InvalidInput('if_exists must be "raise" or "do_nothing"')
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be an object")
    conversations = services(request).conversations()
    conversation, made = await conversations.create(body.get("thread_id"), by=principal_of(request))
    if not made:  # the caller's own (another user's id is ConversationExists whatever if_exists says)
        if body.get("if_exists") != "do_nothing":
            raise ConversationExists()
        return JSONResponse(await thread_body(request, conversation.id))
    await conversations.merge_metadata(conversation.id, metadata, by=principal_of(request))
    # made now: nothing to read back (no message, no run, the metadata just given); a
    # client's first turn begins with this request
    return JSONResponse(shapes.thread_dict(conversation, status_of(conversation), metadata or None, shapes.messages_value(())))


async def get_thread(request: Request) -> Response:
    return JSONResponse(await thread_body(request, thread_id(request)))


async def patch_thread(request: Request) -> Response:
    """Merge metadata into the thread's; a `title` renames the conversation."""
    body = await read_body(request, {"metadata", "ttl"})
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be an object")
    conversations = services(request).conversations()
    tid = thread_id(request)
    await conversations.summary(tid, by=principal_of(request))
    if "title" in metadata:
        await conversations.rename(tid, metadata.pop("title"), by=principal_of(request))
    await conversations.merge_metadata(tid, metadata, by=principal_of(request))
    return JSONResponse(await thread_body(request, tid))


async def copy_thread(request: Request) -> Response:
    """A new thread with this one's messages (its active branch, as a fork of its last
    message: a call left without a result is answered "not run") and its metadata."""
    conversations = services(request).conversations()
    tid, by = thread_id(request), principal_of(request)
    source = await conversations.get(tid, by=by)
    if source.messages:
        copy = (await conversations.fork(tid, len(source.messages) - 1, by=by)).id
    else:
        copy = (await conversations.create(None, by=by))[0].id
    stored = (await conversations.metadata([tid])).get(tid)  # the source is the caller's: read above
    if stored:
        await conversations.merge_metadata(copy, dict(stored), by=by)
    return JSONResponse(await thread_body(request, copy))


async def delete_thread(request: Request) -> Response:
    await services(request).conversations().delete(thread_id(request), by=principal_of(request))
    return Response(status_code=204)


def _matches(
    conversation: Conversation, stored: Mapping[str, Any] | None, metadata: dict[str, Any], status: object, ids: set[str] | None
) -> bool:
    mine = shapes.full_metadata(conversation, stored)
    if any(k not in mine or mine[k] != v for k, v in metadata.items()):
        return False
    if status is not None and status_of(conversation) != status:
        return False
    return ids is None or conversation.id in ids


async def _search(request: Request, body: dict[str, Any]) -> list[Conversation]:
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be an object")
    if body.get("values"):
        raise InvalidInput("A filter on values is not supported")
    status = body.get("status")
    if status not in (None, "idle", "busy", "interrupted", "error"):
        raise InvalidInput('status must be "idle", "busy", "interrupted" or "error"')
    raw_ids = body.get("ids")
    if raw_ids is not None and (not isinstance(raw_ids, list) or not all(isinstance(i, str) for i in raw_ids)):
        raise InvalidInput("ids must be a list of thread ids")
    ids = {i.lower() for i in raw_ids} if raw_ids is not None else None
    conversations = services(request).conversations()
    every = await conversations.list(by=principal_of(request))
    stored = await conversations.metadata([c.id for c in every]) if metadata else {}
    found = [c for c in every if _matches(c, stored.get(c.id), metadata, status, ids)]
    sort_by = body.get("sort_by") or "updated_at"
    order = body.get("sort_order") or "desc"
    if not isinstance(sort_by, str) or sort_by not in SORTS or order not in ("asc", "desc"):
        raise InvalidInput(f"sort_by must be one of {', '.join(sorted(SORTS))}; sort_order asc or desc")
    key = {
        "thread_id": lambda c: c.id,
        "status": status_of,
        "created_at": lambda c: c.created_at,
        "updated_at": lambda c: c.updated_at,
    }[sort_by]
    found.sort(key=key, reverse=order == "desc")
    return found


async def search_threads(request: Request) -> Response:
    body = await read_body(
        request, {"metadata", "values", "ids", "status", "limit", "offset", "sort_by", "sort_order", "select", "extract"}
    )
    limit = bounded(body.get("limit"), "limit", 10, 1)
    offset = bounded(body.get("offset"), "offset", 0, 0, 1_000_000)
    page = (await _search(request, body))[offset : offset + limit]
    select = body.get("select")
    with_values = select is None or (isinstance(select, list) and "values" in select)
    out = []
    for c in page:
        if with_values:
            try:
                out.append(await thread_body(request, c.id))
                continue
            except ConversationNotFound:  # deleted meanwhile
                continue
        out.append(shapes.thread_dict(c, status_of(c), (await services(request).conversations().metadata([c.id])).get(c.id)))
    return JSONResponse(out)


async def count_threads(request: Request) -> Response:
    body = await read_body(request, {"metadata", "values", "status"})
    return JSONResponse(len(await _search(request, body)))


async def get_state(request: Request) -> Response:
    detail, v = await view(request, thread_id(request))
    return JSONResponse(_head_state(detail, v))


def _next(detail: ConversationDetail) -> list[str]:
    if detail.pending_calls:
        return ["tools"]
    return ["agent"] if detail.resumable else []


def _head_state(detail: ConversationDetail, v: ThreadView) -> dict[str, Any]:
    parent = v.log[-2].checkpoint_id if len(v.log) > 1 else None
    created = v.log[-1].created_at if v.log else None
    step = v.log[-1].step if v.log else -1
    return shapes.state_dict(
        v.thread_id,
        shapes.messages_value(detail.messages),
        v.head_checkpoint,
        parent,
        _next(detail),
        _interrupt(detail),
        created,
        step,
    )


def _entry_state(detail: ConversationDetail, v: ThreadView, i: int) -> dict[str, Any]:
    """The state at checkpoint `i` of the active branch's log, rebuilt from the head's
    messages (a checkpoint of the branch holds a prefix of them)."""
    entry: CheckpointSummary = v.log[i]
    if entry.checkpoint_id == v.head_checkpoint:
        return _head_state(detail, v)
    parent = v.log[i - 1].checkpoint_id if i > 0 else None
    values = shapes.messages_value(detail.messages[: entry.message_count])
    return shapes.state_dict(v.thread_id, values, entry.checkpoint_id, parent, entry.next, None, entry.created_at, entry.step)


async def get_state_at(request: Request) -> Response:
    detail, v = await view(request, thread_id(request))
    wanted = request.path_params["checkpoint_id"]
    for i, entry in enumerate(v.log):
        if entry.checkpoint_id == wanted:
            return JSONResponse(_entry_state(detail, v, i))
    raise ConversationNotFound("Checkpoint Not Found")


async def update_state(request: Request) -> Response:
    raise NotSupported("A thread's state is written by its runs only (send a message, or run from a checkpoint)")


async def history(request: Request) -> Response:
    """Newest first, each with its parent, so clients' branch switchers can walk it: the
    active branch's chain, and every other branch's own checkpoints with that branch's
    messages (a fork is two states with one parent)."""
    body = await read_body(request, {"limit", "before", "metadata", "checkpoint", "select"})
    limit = bounded(body.get("limit"), "limit", 10, 1)
    detail, v = await view(request, thread_id(request))
    states = {c.checkpoint_id: _entry_state(detail, v, i) for i, c in enumerate(v.log)}
    if len(detail.branches) > 1:
        states.update(await _other_branches(request, detail, states))
    order = {
        c.checkpoint_id: i
        for i, c in enumerate(await services(request).conversations().checkpoint_log(v.thread_id, by=principal_of(request)))
    }
    newest = sorted(states, key=lambda cid: order.get(cid, -1), reverse=True)
    before = body.get("before")
    if isinstance(before, dict):
        config = before.get("configurable") or before
        wanted = config.get("checkpoint_id") if isinstance(config, dict) else None
        newest = newest[newest.index(wanted) + 1 :] if wanted in newest else []
    elif before is not None:
        raise InvalidInput("before must be a checkpoint config")
    return JSONResponse([states[cid] for cid in newest[:limit]])


async def _other_branches(
    request: Request, detail: ConversationDetail, seen: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    conversations = services(request).conversations()
    cid = detail.conversation.id
    log = await conversations.checkpoint_log(cid, by=principal_of(request))
    out: dict[str, dict[str, Any]] = {}
    for branch in detail.branches:
        if branch.active:
            continue
        chain = lineage(log, detail.branches, branch.number)
        messages = await conversations.branch_messages(cid, branch.number, by=principal_of(request))
        for i, entry in enumerate(chain):
            if entry.checkpoint_id in seen or entry.checkpoint_id in out:
                continue
            parent = chain[i - 1].checkpoint_id if i > 0 else None
            out[entry.checkpoint_id] = shapes.state_dict(
                cid,
                shapes.messages_value(messages[: entry.message_count]),
                entry.checkpoint_id,
                parent,
                entry.next,
                None,
                entry.created_at,
                entry.step,
            )
    return out


async def branch_of(request: Request, detail: ConversationDetail, checkpoint: str) -> int | None:
    """The branch (not the active one) whose own checkpoints hold `checkpoint`, if any."""
    log = await services(request).conversations().checkpoint_log(detail.conversation.id, by=principal_of(request))
    entry = next((c for c in log if c.checkpoint_id == checkpoint), None)
    numbers = {b.number for b in detail.branches if not b.active}
    return entry.branch if entry is not None and entry.branch in numbers else None
