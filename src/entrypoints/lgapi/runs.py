"""Runs: Sophos runs started, streamed, joined and cancelled in LangGraph's words."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.commands import Cancel, SendMessage, with_webhook
from domain.errors import ConversationNotFound, InvalidInput, NotSupported, QueuedNotFound
from domain.model import CheckpointSummary, Message, Run, RunStatus, new_id
from domain.queue import Multitask, QueuedMessage
from entrypoints.http.principal import principal_of, recheck_of
from entrypoints.lgapi import hosted, shapes
from entrypoints.lgapi.inputs import RUN_FIELDS, ThreadView, checkpoint_id, needs_thread, run_command
from entrypoints.lgapi.stream import DEFAULT_MODES, Projector, ReadThread, parse_modes, stream_response
from entrypoints.lgapi.threads import bounded, branch_of, read_body, services, thread_body, thread_id, view
from services.handles import RunStream, StartedRun

_LAST_ID = re.compile(r"([0-9]{1,15})@([0-9a-f]{8})")


def _modes(raw: object) -> tuple[str, ...]:
    modes = parse_modes(raw)
    if modes is None:
        raise InvalidInput("stream_mode must be values, updates, messages-tuple, custom (or a list of them)")
    return modes


def _headers(tid: str, rid: str, stateless: bool = False) -> dict[str, str]:
    """Where the run is, and where its stream is re-joined (bare, as langgraph-api says it:
    a join that names no stream mode streams the run's own, kept with the run)."""
    where = f"/runs/{rid}" if stateless else f"/threads/{tid}/runs/{rid}"
    return {"Content-Location": where, "Location": f"/threads/{tid}/runs/{rid}/stream"}


async def _keep_modes(request: Request, cid: str, rid: str, modes: tuple[str, ...]) -> None:
    """The run's stream modes, kept in the database (every process, after a restart) for a
    join that names none; the default needs no row."""
    if modes != DEFAULT_MODES:
        await services(request).conversations().keep_run_kwargs(cid, rid, {"stream_mode": list(modes)}, by=principal_of(request))


async def _run_modes(request: Request, cid: str, rid: str) -> tuple[str, ...]:
    """The stream modes a run was started with (the default when it named none)."""
    kept = (await services(request).conversations().run_kwargs(cid, rid, by=principal_of(request))).get("stream_mode")
    return parse_modes(kept) or DEFAULT_MODES


async def _start(
    request: Request, tid: str | None, body: dict[str, Any]
) -> tuple[dict[str, Any], str, StartedRun | QueuedMessage]:
    """Start a run request's run (`body`) on Sophos's agent: (body, thread id, started run, or the
    message queued behind the thread's active run: `multitask_strategy` enqueue or
    interrupt). A thread the run makes (stateless, `if_not_exists: create`) is made once
    the request is known good."""
    if not shapes.is_assistant(body.get("assistant_id")):
        raise ConversationNotFound(f"Assistant {str(body.get('assistant_id'))[:64]!r} not found")
    modes = _modes(body.get("stream_mode"))
    if body.get("if_not_exists") not in (None, "create", "reject"):
        raise InvalidInput('if_not_exists must be "create" or "reject"')
    conversations = services(request).conversations()
    hook = await _webhook(request, body)
    fresh = tid is None
    if tid is not None and body.get("if_not_exists") == "create":
        try:
            await conversations.summary(tid, by=principal_of(request))
        except ConversationNotFound:
            fresh = True
    cid = tid or new_id()
    if fresh:
        command = run_command(body, ThreadView(cid, (), (), 0, None, ()))
        await conversations.create(cid, by=principal_of(request))
    else:
        await hosted.refuse_graph_thread(request, cid)  # Sophos's agent never runs on a graph's state
        v = await _thread_for(request, cid, body) if needs_thread(body) else ThreadView(cid, (), (), 0, None, ())
        command = run_command(body, v)
    if hook is not None:
        command = with_webhook(command, hook)
    started: StartedRun | QueuedMessage
    if isinstance(command, SendMessage) and command.multitask is not Multitask.REJECT:
        started = await services(request).queue().send(command, by=principal_of(request))
    else:
        started = await services(request).runs().start(command, by=principal_of(request))
    await _keep_modes(request, cid, started.id if isinstance(started, QueuedMessage) else started.run_id, modes)
    return body, cid, started


async def _webhook(request: Request, body: dict[str, Any]) -> str | None:
    """The run's `webhook`, when it names one the operator allows (400 WEBHOOK_NOT_ALLOWED)."""
    return None if body.get("webhook") is None else await services(request).webhooks().check(body["webhook"])


async def _thread_for(request: Request, cid: str, body: dict[str, Any]) -> ThreadView:
    """The thread as the request sees it. A checkpoint of another branch (a client that
    switched branches in its own view) makes that branch the active one first, as the
    page's switch does; the run then starts from there."""
    detail, v = await view(request, cid)
    checkpoint = checkpoint_id(body)
    if checkpoint is None or any(c.checkpoint_id == checkpoint for c in v.log):
        return v
    number = await branch_of(request, detail, checkpoint)
    if number is None:
        return v  # run_command refuses an unknown checkpoint
    conversations = services(request).conversations()
    own = [c.checkpoint_id for c in await conversations.checkpoint_log(cid, by=principal_of(request)) if c.branch == number]
    await conversations.switch_branch(cid, number, by=principal_of(request))
    if own and own[-1] == checkpoint:  # the head it was left at: the thread's head once switched
        body.pop("checkpoint", None)
        body.pop("checkpoint_id", None)
    return (await view(request, cid))[1]


def _read(request: Request, tid: str) -> ReadThread:
    async def read() -> tuple[Sequence[Message], Sequence[CheckpointSummary]]:
        conversations = services(request).conversations()
        messages = (await conversations.get(tid, by=principal_of(request))).messages
        return messages, await conversations.checkpoint_log(tid, by=principal_of(request))

    return read


async def _find(request: Request, cid: str, rid: str) -> Run | None:
    """Run `rid` of thread `cid`, None when the thread has no such run (404 for no thread)."""
    conversations = services(request).conversations()
    try:
        return await conversations.run(cid, rid, by=principal_of(request))
    except ConversationNotFound:
        await conversations.summary(cid, by=principal_of(request))
        return None


async def _waiting(request: Request, cid: str, rid: str) -> QueuedMessage | None:
    """The message waiting in the thread's queue whose run will have the id `rid`."""
    return next((q for q in await services(request).queue().waiting(cid, by=principal_of(request)) if q.id == rid), None)


async def stream_run(request: Request) -> Response:
    return await _stream_new(request, thread_id(request))


async def stream_stateless(request: Request) -> Response:
    return await _stream_new(request, None)


async def _stream_new(request: Request, tid: str | None) -> Response:
    body = await read_body(request, set(RUN_FIELDS))
    assistant = await hosted.assistant_of(request, body.get("assistant_id"))
    if assistant is not None:
        cid, asked, begun = await hosted.start(request, tid, body, assistant)
        runs = hosted.follow(request, begun)
        return _chunks(request, asked.stream_modes, begun.run_id, runs, _headers(cid, begun.run_id, tid is None))
    body, cid, started = await _start(request, tid, body)
    modes = _modes(body.get("stream_mode"))
    if isinstance(started, QueuedMessage):  # its run starts later: the thread as it is now
        projector = Projector(modes, cid, started.id, _read(request, cid))
    else:
        projector = Projector(modes, cid, started.run_id, _read(request, cid))
        if projector.wants_state:  # where the run's input ends in the thread (read only for those modes)
            run = await services(request).conversations().run(cid, started.run_id, by=principal_of(request))
            projector.base = run.base_count
    rid = projector.run_id
    state = request.app.state
    return stream_response(
        projector,
        _follow(request, started),
        state.ping_seconds,
        state.closing,
        _headers(cid, rid, tid is None),
        allowed=recheck_of(request),
    )


def _chunks(
    request: Request,
    modes: Sequence[str],
    run_id: str,
    runs: AsyncGenerator[RunStream, None],
    headers: dict[str, str],
    after: int = 0,
) -> Response:
    """A hosted graph's run (and the runs that resumed it) as its own chunks, in `modes`."""
    state = request.app.state
    projector = hosted.ChunkProjector(tuple(modes), run_id)
    return stream_response(
        projector, runs, state.ping_seconds, state.closing, headers, begin=after == 0, allowed=recheck_of(request)
    )


async def create_run(request: Request) -> Response:
    body = await read_body(request, set(RUN_FIELDS))
    assistant = await hosted.assistant_of(request, body.get("assistant_id"))
    if assistant is not None:
        cid, _, begun = await hosted.start(request, thread_id(request), body, assistant)
        run = await services(request).conversations().run(cid, begun.run_id, by=principal_of(request))
        return JSONResponse({**shapes.run_dict(run), "assistant_id": assistant.assistant_id}, headers=_headers(cid, run.id))
    body, cid, started = await _start(request, thread_id(request), body)
    if isinstance(started, QueuedMessage):
        return JSONResponse(shapes.queued_run_dict(started, str(body["multitask_strategy"])), headers=_headers(cid, started.id))
    run = await services(request).conversations().run(cid, started.run_id, by=principal_of(request))
    return JSONResponse(shapes.run_dict(run), headers=_headers(cid, run.id))


def _follow(request: Request, first: Run | QueuedMessage | StartedRun, after: int = 0) -> AsyncGenerator[RunStream, None]:
    """The runs the request follows from `first` on (RunService.follow_from). Only a POST may
    resume a run a crash stopped: a GET (a join, a re-join) follows what exists, so a link or an
    `<img>` on another page never starts a run."""
    runs = services(request).runs()
    return runs.follow_from(first, after, by=principal_of(request), resume=request.method == "POST")


async def _drain(runs: AsyncGenerator[RunStream, None]) -> None:
    """Read every run to its end (a join)."""
    async with contextlib.aclosing(runs):
        async for stream in runs:
            async with contextlib.aclosing(stream):
                async for _ in stream:
                    pass


async def _values(request: Request, cid: str) -> dict[str, Any]:
    body = await thread_body(request, cid)
    values: dict[str, Any] = body["values"]
    if body["interrupts"]:
        values["__interrupt__"] = body["interrupts"][""]
    return values


async def wait_run(request: Request) -> Response:
    return await _wait_new(request, thread_id(request))


async def wait_stateless(request: Request) -> Response:
    return await _wait_new(request, None)


async def _wait_new(request: Request, tid: str | None) -> Response:
    body = await read_body(request, set(RUN_FIELDS))
    assistant = await hosted.assistant_of(request, body.get("assistant_id"))
    if assistant is not None:
        cid, _, begun = await hosted.start(request, tid, body, assistant)
        await _drain(hosted.follow(request, begun))
        return JSONResponse(
            await hosted.values(request, assistant.graph_id, cid), headers=_headers(cid, begun.run_id, tid is None)
        )
    _, cid, started = await _start(request, tid, body)
    await _drain(_follow(request, started))
    rid = started.id if isinstance(started, QueuedMessage) else started.run_id
    return JSONResponse(await _values(request, cid), headers=_headers(cid, rid, tid is None))


async def list_runs(request: Request) -> Response:
    params = request.query_params
    limit = bounded(_int(params.get("limit")), "limit", 10, 1)
    offset = bounded(_int(params.get("offset")), "offset", 0, 0, MAX_RUNS)
    runs = (
        await services(request)
        .conversations()
        .runs_of(thread_id(request), min(limit + offset, MAX_RUNS), by=principal_of(request))
    )
    status = params.get("status")
    waiting = await services(request).queue().waiting(thread_id(request), by=principal_of(request))
    # newest first: the last queued message runs last
    times = await _scheduled(request, [r.id for r in runs])
    used = await _assistants_used(request, runs)
    out = [shapes.queued_run_dict(q) for q in reversed(waiting)] + [
        {**shapes.run_dict(r, times.get(r.id)), **({"assistant_id": used[r.id]} if r.id in used else {})} for r in runs
    ]
    if status:
        out = [r for r in out if r["status"] == status]
    return JSONResponse(out[offset : offset + limit])


MAX_RUNS = 1000


def _int(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput("limit and offset must be integers") from None


async def _run(request: Request) -> Run:
    return (
        await services(request)
        .conversations()
        .run(thread_id(request), str(request.path_params["run_id"]), by=principal_of(request))
    )


async def _run_or_queued(request: Request) -> Run | QueuedMessage:
    """The run the path names, or the queued message whose run it will be (404 neither)."""
    cid, rid = thread_id(request), str(request.path_params["run_id"])
    found: Run | QueuedMessage | None = await _find(request, cid, rid)
    if found is None:
        found = await _waiting(request, cid, rid) or await _find(request, cid, rid)  # it may have just started
    if found is None:
        raise ConversationNotFound("Run Not Found")
    return found


async def get_run(request: Request) -> Response:
    found = await _run_or_queued(request)
    if isinstance(found, QueuedMessage):
        return JSONResponse(shapes.queued_run_dict(found))
    body = shapes.run_dict(found, (await _scheduled(request, [found.id])).get(found.id))
    used = await _assistants_used(request, [found])  # a hosted graph's run is the assistant's it used
    return JSONResponse({**body, **({"assistant_id": used[found.id]} if found.id in used else {})})


async def _scheduled(request: Request, run_ids: Sequence[str]) -> Mapping[str, datetime]:
    """When a schedule's firing started these runs: their `metadata.scheduled_for`."""
    schedules = services(request).schedules
    return await schedules().scheduled_times(run_ids) if schedules is not None and run_ids else {}


async def delete_run(request: Request) -> Response:
    await _run(request)
    raise NotSupported("A run's record stays with its thread; delete the thread")


async def _assistants_used(request: Request, runs: Sequence[Run]) -> dict[str, str]:
    """The assistant each hosted graph's run used (kept with it: GraphRun.kept), by run id;
    Sophos's agent's runs are absent. Read only for a thread that ran a graph."""
    if not runs or not hosted.graph_ids(request) or await hosted.thread_graph(request, runs[0].conversation_id) is None:
        return {}
    conversations, by = services(request).conversations(), principal_of(request)
    kept = await asyncio.gather(*(conversations.run_kwargs(r.conversation_id, r.id, by=by) for r in runs))
    return {
        r.id: str(k.get("assistant_id") or hosted.assistant_id(k["graph_id"]))
        for r, k in zip(runs, kept, strict=True)
        if isinstance(k.get("graph_id"), str)
    }


async def _run_graph(request: Request, found: Run | QueuedMessage) -> str | None:
    """The hosted graph a run runs (kept with it), None for Sophos's agent's."""
    if isinstance(found, QueuedMessage):
        return None
    kept = await services(request).conversations().run_kwargs(found.conversation_id, found.id, by=principal_of(request))
    graph = kept.get("graph_id")
    return graph if isinstance(graph, str) and graph in hosted.graph_ids(request) else None


async def join_run(request: Request) -> Response:
    found = await _run_or_queued(request)
    graph = await _run_graph(request, found)
    if graph is not None and isinstance(found, Run):
        await _drain(hosted.follow(request, found))
        return JSONResponse(await hosted.values(request, graph, found.conversation_id))
    await _drain(_follow(request, found))
    return JSONResponse(await _values(request, found.conversation_id))


async def join_stream(request: Request) -> Response:
    """Re-join: after the Last-Event-ID this server sent (`<n>@<run tag>`), or from the
    start (`-1`, or none). A run that a crash stopped is followed by the run that resumed
    it (AUTO_RESUME, or a client's resume); a GET never starts one itself."""
    found = await _run_or_queued(request)
    # none named (the Python SDK sends `stream_mode=`, empty): the run's own, as langgraph-api
    named = [m for m in request.query_params.getlist("stream_mode") if m]
    graph = await _run_graph(request, found)  # a hosted run's chunks may be of any of LangGraph's modes
    if named:
        modes = tuple(dict.fromkeys(named)) if graph is not None else _modes(named)
    else:
        modes = await _run_modes(request, found.conversation_id, found.id)
    if isinstance(found, QueuedMessage):  # nothing sent yet: from the start, once it starts
        cid, qid = found.conversation_id, found.id
        state = request.app.state
        return stream_response(
            Projector(modes, cid, qid, _read(request, cid)),
            _follow(request, found),
            state.ping_seconds,
            state.closing,
            _headers(cid, qid),
            allowed=recheck_of(request),
        )
    given = _LAST_ID.fullmatch((request.headers.get("last-event-id") or "").strip())
    after, tag = (int(given[1]), given[2]) if given else (0, None)
    run, after = await services(request).runs().rejoin_point(found, after, tag)
    cid = run.conversation_id
    if graph is not None:
        return _chunks(request, modes, run.id, hosted.follow(request, run, after), _headers(cid, run.id), after)
    projector = Projector(modes, cid, run.id, _read(request, cid), run.base_count)
    state = request.app.state
    return stream_response(
        projector,
        _follow(request, run, after),
        state.ping_seconds,
        state.closing,
        _headers(cid, run.id),
        begin=after == 0,
        allowed=recheck_of(request),
    )


async def cancel_run(request: Request) -> Response:
    if request.query_params.get("action", "interrupt") != "interrupt":
        raise InvalidInput('action must be "interrupt": a rollback is not supported')
    found = await _run_or_queued(request)
    if isinstance(found, QueuedMessage):  # a pending run: it never starts
        with contextlib.suppress(QueuedNotFound):  # it started meanwhile: cancelled below
            await services(request).queue().drop(found.conversation_id, found.id, by=principal_of(request))
            return JSONResponse({**shapes.queued_run_dict(found), "status": "interrupted"})
    run = await _run(request)
    if run.status is RunStatus.RUNNING:
        await services(request).runs().cancel(Cancel(run.conversation_id), by=principal_of(request))
    return JSONResponse(shapes.run_dict(await _run(request)), status_code=200)
