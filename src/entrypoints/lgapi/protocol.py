"""LangGraph's thread protocol for hosted graphs (langgraph-api 0.16's; domain.thread_protocol):
`POST /threads/{id}/commands` (`run.start`, `input.respond`), `POST /threads/{id}/stream/events`
(the thread's events as SSE, filtered by the body's subscription) and the websocket on the same
path (entrypoints.lgapi.protocol_ws). A thin edge: every run is a Sophos run started through
services.hosted (one per thread, leases, fencing, the event log), and a stream is the thread's
runs replayed and followed from the event log (services.thread_feed)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response

from domain.errors import ConversationNotFound, InvalidInput, SophosError
from domain.thread_protocol import Event, Subscription, ThreadProjection
from entrypoints.http.principal import principal_of, recheck_of
from entrypoints.lgapi import hosted
from entrypoints.lgapi.stream import sse, stream_response
from entrypoints.lgapi.threads import read_body, services, thread_id
from services.handles import Batch, RunStream
from services.thread_feed import thread_feed

COMMAND_FIELDS = {"id", "method", "params"}
SUBSCRIBE_FIELDS = {"channels", "namespaces", "depth", "since"}
MAX_COMMAND_ID = 2**53 - 1
# protocol error codes for Sophos's errors (a websocket answers them in the protocol's envelope)
_CODES = {"NOT_FOUND": "no_such_run", "BAD_REQUEST": "invalid_argument", "NOT_SUPPORTED": "not_supported"}


class ProtocolError(InvalidInput):
    """Raised when a command is refused in the protocol's own words (`error`: its code)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


def command_parts(payload: object) -> tuple[int, str, Mapping[str, Any]]:
    """A command's id, method and params, checked (InvalidInput otherwise)."""
    if not isinstance(payload, Mapping):
        raise InvalidInput("A command must be an object")
    cid, method, params = payload.get("id"), payload.get("method"), payload.get("params") or {}
    if isinstance(cid, bool) or not isinstance(cid, int) or not 0 <= cid <= MAX_COMMAND_ID or not isinstance(method, str):
        raise InvalidInput("Protocol commands must include an integer id and string method.")
    if not isinstance(params, Mapping):
        raise InvalidInput("params must be an object")
    return cid, method, params


def success(command_id: int, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "success", "id": command_id, "result": dict(result)}


def failure(command_id: int | None, error: SophosError) -> dict[str, Any]:
    code = error.error if isinstance(error, ProtocolError) else _CODES.get(str(error.code), "invalid_argument")
    return {"type": "error", "id": command_id, "error": code, "message": str(error)}


async def run_start(conn: HTTPConnection, tid: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """`run.start`: a run of the assistant's graph on the thread (made when missing, as the
    SDK mints a thread id), streamed as the protocol's events; on a thread waiting on
    interrupts, their resume with the input."""
    assistant = await hosted.assistant_of(conn, params.get("assistant_id"))
    if assistant is None:
        raise ProtocolError("invalid_argument", "run.start requires the assistant_id of a served graph")
    graph = assistant.graph_id
    given = params.get("input")
    waiting = await _waiting(conn, tid, graph)
    body = {
        "input": None if waiting else given,
        "command": {"resume": given} if waiting else None,
        "config": params.get("config"),
        "metadata": params.get("metadata"),
        "if_not_exists": "create",
        "multitask_strategy": params.get("multitaskStrategy") or "reject",
    }
    _, _, begun = await hosted.start(conn, tid, body, assistant, protocol=True)
    return {"run_id": begun.run_id}


async def _waiting(conn: HTTPConnection, tid: str, graph: str) -> bool:
    """Whether the thread waits on interrupts of `graph`: a run.start there resumes them with
    its input, as langgraph-api decides (RemoteGraph sends `Command(resume=x)` as input x)."""
    runner = hosted.hosted(conn)
    if runner is None or await hosted.thread_graph(conn, tid) != graph:
        return False
    try:
        await services(conn).runs().visible(tid, principal_of(conn))
    except ConversationNotFound:
        return False  # a new thread (the SDK mints its id): run.start makes it
    return bool((await runner.state(graph, tid)).interrupts)


async def input_respond(conn: HTTPConnection, tid: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """`input.respond`: answer one waiting interrupt of the thread (`no_such_interrupt` for
    any other): a run resuming the graph with LangGraph's `Command(resume={id: response})`."""
    interrupt_id = params.get("interrupt_id")
    if not isinstance(interrupt_id, str):
        raise InvalidInput("input.respond requires an interrupt_id")
    graph = await hosted.thread_graph(conn, tid)
    runner = hosted.hosted(conn)
    if graph is None or runner is None:
        raise ConversationNotFound("Thread runs no served graph")
    await services(conn).runs().visible(tid, principal_of(conn))
    state = await runner.state(graph, tid)
    if interrupt_id not in {i.get("id") for i in state.interrupts}:
        raise ProtocolError("no_such_interrupt", f"No interrupt {interrupt_id[:64]!r} waits on the thread")
    body = {"command": {"resume": {interrupt_id: params.get("response")}}}
    assistant = await hosted.thread_assistant(conn, tid, graph)
    _, _, begun = await hosted.start(conn, tid, body, assistant, protocol=True)
    return {"run_id": begun.run_id}


async def handle(conn: HTTPConnection, tid: str, command_id: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A command's result (SophosError for a refused one)."""
    if method == "run.start":
        return success(command_id, await run_start(conn, tid, params))
    if method == "input.respond":
        return success(command_id, await input_respond(conn, tid, params))
    raise ProtocolError("unknown_command", f"Unknown or unsupported command: {method[:64]!r}")


async def command(request: Request) -> Response:
    """POST /threads/{id}/commands: one command, its answer. A command the protocol refuses
    (unknown, an interrupt that no longer waits) is its error envelope, as langgraph-api
    answers it (200); a body that is no command, and what Sophos refuses (a busy thread, a
    thread one may not see), are the main API's errors, as every route here answers them."""
    command_id, method, params = command_parts(await read_body(request, COMMAND_FIELDS))
    try:
        return JSONResponse(await handle(request, thread_id(request), command_id, method, params))
    except ProtocolError as e:
        return JSONResponse(failure(command_id, e))


def _wanted(projection: ThreadProjection, subscription: Subscription, batch: Batch) -> list[Event]:
    """A batch of the feed as protocol events (numbered whatever the filter), those asked."""
    now = int(time.time() * 1000)
    return [e for _, stored in batch for e in projection.feed(stored, now) if subscription.matches(e)]


async def events_of(feed: AsyncGenerator[Batch, None], subscription: Subscription) -> AsyncIterator[list[Event]]:
    """The feed's events as the protocol's, those the subscription asks for, in batches."""
    projection = ThreadProjection()
    async for batch in feed:
        if wanted := _wanted(projection, subscription, batch):
            yield wanted


class _Encoder:
    """stream_response's Projecting for protocol events (the feed's batches are not one run's)."""

    def __init__(self, subscription: Subscription) -> None:
        self.run_id = ""
        self._subscription = subscription
        self._projection = ThreadProjection()

    async def begin(self) -> list[tuple[str, Any]]:
        return []

    async def encode(self, batch: Batch, tag: str) -> bytes:
        return b"".join(sse(e["method"], e, str(e["seq"])) for e in _wanted(self._projection, self._subscription, batch))


async def stream_events(request: Request) -> Response:
    """POST /threads/{id}/stream/events: the thread's events after `since` (none: from its
    latest run) in the channels and namespaces asked, until the client leaves; 404 for an
    unknown thread (the SDK opens it again once its run.start made the thread)."""
    subscription = Subscription.parse(await read_body(request, SUBSCRIBE_FIELDS))
    tid = thread_id(request)
    await services(request).runs().visible(tid, principal_of(request))
    kernel = services(request).runs().kernel
    feed = RunStream(tid, thread_feed(kernel, tid, subscription.first_run))
    state = request.app.state

    async def one() -> AsyncIterator[RunStream]:
        yield feed

    return stream_response(
        _Encoder(subscription), one(), state.ping_seconds, state.closing, {}, begin=False, allowed=recheck_of(request)
    )
