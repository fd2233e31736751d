"""Route handlers: parse, call one use case, serialise."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from domain.attachments import Upload
from domain.commands import Cancel, SendMessage, start_command, with_webhook
from domain.errors import InvalidInput, ModelBadResponse, ModelUnreachable, SophosError
from domain.events import StreamEvent
from domain.model import Message, RunStatus, check_text, iso, parse_conversation_id
from domain.models import settings_change
from domain.organise import organise_change, shown_by
from domain.queue import Multitask, QueuedMessage
from entrypoints.attachments import json_files
from entrypoints.bundle import Services
from entrypoints.dto import (
    detail_dto,
    limits_dto,
    model_dto,
    organised_dto,
    pending_dto,
    queue_dto,
    queued_dto,
    search_page_dto,
    settings_dto,
    settings_fields,
    summary_dto,
)
from entrypoints.export import export_text
from entrypoints.http import files, sse, transfer
from entrypoints.http.errors import RouteFailure
from entrypoints.http.graph_threads import refuse_graph_thread, without_graph_threads
from entrypoints.http.principal import principal_of, recheck_of
from ports.model import Readiness

MAX_BODY = 64 * 1024  # bytes; a larger body gets 413
CONVERSATION_HEADER = "X-Conversation-Id"  # on a streamed POST /api/chat: what the JSON body says
RUN_HEADER = "X-Run-Id"
QUEUED_HEADER = "X-Queued-Id"  # on a POST /api/chat whose message was queued
READY_TIMEOUT = 1.5  # seconds readyz waits for the model server


async def read_json(request: Request, allowed: set[str], limit: int = MAX_BODY, large: str | None = None) -> dict[str, Any]:
    """The body as a JSON object with only `allowed` keys; 400 or 413 otherwise. `large`:
    a field that lets the body reach `limit` bytes (files); everything else stays within
    MAX_BODY. Nothing past what the body may hold is read: 413 at once when Content-Length
    says more than `limit`, and as soon as MAX_BODY bytes have arrived without `large` begun."""
    declared = _declared_length(request)
    if declared is not None and declared > limit:
        raise HTTPException(413, _too_large(limit))
    chunks = await _bounded_body(request, limit, large)
    data = b"".join(chunks)
    if len(data) > MAX_BODY and sum(map(data.count, STRUCTURE)) > 2 * MAX_BODY:
        # a large body's bulk is its files' base64 text, which has no structure: so many
        # values would cost far more to parse than their bytes
        raise HTTPException(413, _too_large(MAX_BODY))
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deep
        raise InvalidInput("Request body must be JSON") from None
    if not isinstance(body, dict):
        raise InvalidInput("Request body must be a JSON object")
    for key, value in body.items():
        check_text(key, "A field name")
        if isinstance(value, str):
            check_text(value, f"Field {key}")
    if len(data) > MAX_BODY and not (large and body.get(large)):
        raise HTTPException(413, _too_large(MAX_BODY))
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(f"Unknown field(s): {', '.join(unknown)}")
    return body


STRUCTURE = (b"{", b"[", b",", b":")  # the bytes that make a JSON value more than one


def _too_large(limit: int) -> str:
    return f"Request body is larger than {limit} bytes"


def _declared_length(request: Request) -> int | None:
    try:
        return int(request.headers["content-length"])
    except (KeyError, ValueError):
        return None  # chunked: counted as it arrives


async def _bounded_body(request: Request, limit: int, large: str | None) -> list[bytes]:
    """The body's chunks; 413 once past `limit`, or past MAX_BODY before the field `large`
    has begun (the page and the clients send a message's few fields before its files);
    408 when it trickles in slower than REQUEST_TIMEOUT."""
    size, chunks, begun = 0, list[bytes](), False
    key = re.compile(rb'"' + re.escape(large.encode()) + rb'"\s*:') if large else None
    timeout = request.app.state.request_timeout
    try:
        async with asyncio.timeout(timeout):  # a body trickled in (slowloris) ties up a connection
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise HTTPException(413, _too_large(limit))
                chunks.append(chunk)
                if size > MAX_BODY and not begun:
                    if key is None or not key.search(b"".join(chunks)):
                        raise HTTPException(413, _too_large(MAX_BODY))
                    begun = True
    except TimeoutError:
        raise HTTPException(408, f"The request body did not arrive within {timeout:g} s") from None
    except ClientDisconnect:  # nobody to answer; not a server error
        raise HTTPException(400, "The client disconnected before sending its body") from None
    return chunks


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


CHAT_FIELDS = {
    "message",
    "conversation",
    "resume",
    "decision",
    "decisions",
    "editOf",
    "regenerate",
    "model",
    "system",
    "systemMode",
    "multitask",
    "attachments",
    "temporary",
    "webhook",
}
FORM_FIELDS = {"message", "conversation", "model", "system", "systemMode"}  # multipart: a new message with its files


async def _chat_body(request: Request) -> tuple[dict[str, Any], tuple[Upload, ...]]:
    limits = request.app.state.services.attachment_limits
    if request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        try:
            async with asyncio.timeout(request.app.state.request_timeout):
                body, uploads = await files.form_body(request, limits)
        except TimeoutError:
            raise HTTPException(408, "The request body did not arrive in time") from None
        unknown = sorted(set(body) - FORM_FIELDS)
        if unknown:
            raise InvalidInput(f"Unknown field(s): {', '.join(unknown)}")
        return body, uploads
    body = await read_json(request, CHAT_FIELDS, limit=limits.body_bytes, large="attachments")
    return body, json_files(body.get("attachments"), limits)


async def post_chat(request: Request) -> Response:
    body, uploads = await _chat_body(request)
    command = start_command(
        body.get("message"),
        body.get("conversation"),
        body.get("resume") is True,
        body.get("decision"),
        edit_of=body.get("editOf"),
        regenerate=body.get("regenerate") is True,
        decisions=body.get("decisions"),
        settings=settings_change(settings_fields(body)),
        multitask=body.get("multitask"),
        files=uploads,
        temporary=body.get("temporary", False),
    )
    await refuse_graph_thread(request, command.conversation_id)  # Sophos's agent never runs on a graph's state
    if body.get("webhook") is not None:
        command = with_webhook(command, await _services(request).webhooks().check(body["webhook"]))
    if isinstance(command, SendMessage) and command.multitask is not Multitask.REJECT:
        sent = await _services(request).queue().send(command, by=principal_of(request))
        if isinstance(sent, QueuedMessage):  # committed; it starts when the active run completes
            payload = {"conversation": sent.conversation_id, "queued": queued_dto(sent)}
            return JSONResponse(payload, headers={CONVERSATION_HEADER: sent.conversation_id, QUEUED_HEADER: sent.id})
        started = sent
    else:
        started = await _services(request).runs().start(command, by=principal_of(request))
    if started.events is not None and "text/event-stream" in request.headers.get("accept", ""):
        # the run's own stream, as GET /api/chat sends it: the first token needs no second request
        ids = {CONVERSATION_HEADER: started.conversation_id, RUN_HEADER: started.run_id}
        state = request.app.state
        return sse.follow(started.events(), state.ping_seconds, state.closing, ids, allowed=recheck_of(request))
    return JSONResponse({"conversation": started.conversation_id, "run": started.run_id})


async def get_chat(request: Request) -> Response:
    raw = request.query_params.get("conversation")
    try:
        cid = parse_conversation_id(raw)
    except InvalidInput as e:
        return sse.single(StreamEvent("chat-error", {"code": e.code.value, "message": e.message}))
    after, tag = sse.last_event_id(request.headers.get("last-event-id"))
    through_queue = request.query_params.get("follow") == "queue"  # on into the queued runs that follow
    answer = await _services(request).runs().follow_batches(cid, after, tag, through_queue, by=principal_of(request))
    if isinstance(answer, StreamEvent):
        return sse.single(answer)
    state = request.app.state
    return sse.follow(answer, state.ping_seconds, state.closing, allowed=recheck_of(request))


async def cancel_chat(request: Request) -> Response:
    """200 once the run is stopped; 202 when its owner has not stopped it yet."""
    body = await read_json(request, {"conversation"})
    result = (
        await _services(request).runs().cancel(Cancel(parse_conversation_id(body.get("conversation"))), by=principal_of(request))
    )
    payload = {"conversation": result.conversation_id, "run": result.run_id, "status": result.status.value}
    return JSONResponse(payload, status_code=202 if result.status is RunStatus.RUNNING else 200)


async def list_conversations(request: Request) -> Response:
    service, by = _services(request).conversations(), principal_of(request)
    params = request.query_params
    unknown = set(params) - {"limit", "before", "q", "idPrefix", "archived", "pinned", "fields"}
    if unknown:
        raise InvalidInput(f"Unknown parameter(s): {', '.join(sorted(unknown))}")
    if params.get("fields", "all") != "all":
        raise InvalidInput("fields must be all")
    shown, dto = shown_by(params), organised_dto if "fields" in params else summary_dto  # extensions: pins, archive
    if "idPrefix" in params:  # an extension (docs/contract-extensions.md): the CLI's short ids
        if len(params) > 1:
            raise InvalidInput("idPrefix is not combined with other parameters")
        found = await without_graph_threads(request, await service.find(params["idPrefix"], by=by))
        return JSONResponse({"conversations": [summary_dto(c) for c in found]})
    if "limit" in params or "before" in params:
        page = await service.page(params.get("limit"), params.get("before"), params.get("q"), by=by, shown=shown)
        items, cursor = page.conversations, page.next_cursor
    else:
        try:
            items, cursor = await service.list(params.get("q"), by=by, shown=shown), None
        except SophosError:
            raise  # a storage failure is a 503, not a fetch error
        except Exception as e:
            raise RouteFailure("FETCH_ERROR", "Failed to fetch conversations") from e
    body: dict[str, Any] = {"conversations": [dto(c) for c in await without_graph_threads(request, items)]}
    if "limit" in params or "before" in params:
        body["nextCursor"] = cursor
    return JSONResponse(body)


async def get_conversation(request: Request) -> Response:
    service, by = _services(request).conversations(), principal_of(request)
    conv = await service.summary(request.path_params["conversation_id"], by=by)
    await refuse_graph_thread(request, conv.id)
    try:
        detail = await service.get(conv.id, by=by)
    except SophosError:
        raise  # a storage failure is a 503, not a load error
    except Exception as e:
        raise RouteFailure("LOAD_ERROR", "Failed to load conversation") from e
    body = detail_dto(detail)
    await _mark_scheduled(request, conv.id, detail.messages, body["messages"])
    live = await _services(request).runs().live_run(conv.id)
    if live is not None:  # lets a reloaded page show what precedes the run, then replay it
        body["activeRun"] = {"id": live.run_id, "baseMessageCount": live.base_count}
    body.update(pending_dto(detail))
    body.update(queue_dto(await _services(request).queue().waiting(conv.id, by=by)))
    return JSONResponse(body)


async def _mark_scheduled(request: Request, cid: str, messages: Sequence[Message], dtos: list[dict[str, Any]]) -> None:
    """Each message a schedule's firing sent carries the firing's time, `scheduledFor`."""
    schedules = _services(request).schedules
    if schedules is not None:
        for i, at in (await schedules().sent_by_schedules(cid, messages)).items():
            dtos[i]["scheduledFor"] = iso(at)


async def patch_conversation(request: Request) -> Response:
    """Rename (`title`), choose the model and instructions of the next turns (`model`,
    `system`, `systemMode`; null is the server's default), pin or archive it (`pinned`,
    `archived`) and/or switch the active branch (`activeBranch`: a branch number, as the
    detail's `branch.branches` lists them)."""
    body = await read_json(request, {"title", "activeBranch", "model", "system", "systemMode", "pinned", "archived"})
    if not body:
        raise InvalidInput("title, model, system, systemMode, pinned, archived or activeBranch is required")
    change, place = settings_change(settings_fields(body)), organise_change(body)  # checked before anything is written
    service, by = _services(request).conversations(), principal_of(request)
    cid = request.path_params["conversation_id"]
    conv = await service.summary(cid, by=by)
    if not change.empty:
        conv = await service.configure(cid, change, by=by)
    if not place.empty:
        conv = await service.organise(cid, place, by=by)
    if "title" in body:
        conv = await service.rename(cid, body["title"], by=by)
    if "activeBranch" in body:
        detail = await service.switch_branch(cid, body["activeBranch"], by=by)
        return JSONResponse(detail_dto(detail))
    shown = settings_dto(conv) if not change.empty else organised_dto(conv) if not place.empty else summary_dto(conv)
    return JSONResponse({"conversation": shown})


async def list_models(request: Request) -> Response:
    """The model server's models (kept briefly), the default marked. A server that cannot
    say is not this server's failure: the answer is then the default with no list and the
    error (a picker offers the default and says why there is nothing else)."""
    services = _services(request)
    catalog, files = services.models(), limits_dto(services.attachment_limits)
    try:
        models = await catalog.list()
    except (ModelUnreachable, ModelBadResponse) as e:
        error = {"code": e.code.value, "message": e.message}
        return JSONResponse(
            {"default": catalog.default, "models": [], "error": error, "attachments": files, "autoTitle": services.auto_title}
        )
    return JSONResponse(
        {
            "default": catalog.default,
            "models": [model_dto(m, catalog.default) for m in models],
            "attachments": files,
            "autoTitle": services.auto_title,
        }
    )


async def patch_queued(request: Request) -> Response:
    """Edit a queued message's text while it waits (`{"message": ...}`)."""
    body = await read_json(request, {"message"})
    cid = parse_conversation_id(request.path_params["conversation_id"])
    edited = (
        await _services(request)
        .queue()
        .edit(cid, request.path_params["queued_id"], body.get("message"), by=principal_of(request))
    )
    return JSONResponse({"conversation": cid, "queued": queued_dto(edited)})


async def delete_queued(request: Request) -> Response:
    """Drop a queued message before it starts."""
    cid = parse_conversation_id(request.path_params["conversation_id"])
    await _services(request).queue().drop(cid, request.path_params["queued_id"], by=principal_of(request))
    return Response(status_code=204)


async def fork_conversation(request: Request) -> Response:
    """A new conversation from this one's messages up to `messageIndex` (201)."""
    body = await read_json(request, {"messageIndex"})
    if "messageIndex" not in body:
        raise InvalidInput("messageIndex is required")
    conv = (
        await _services(request)
        .conversations()
        .fork(request.path_params["conversation_id"], body["messageIndex"], by=principal_of(request))
    )
    return JSONResponse({"conversation": summary_dto(conv)}, status_code=201)


async def delete_conversation(request: Request) -> Response:
    """204 once deleted; 202 for a temporary conversation with a run going: deleted when it ends."""
    done = await _services(request).conversations().delete(request.path_params["conversation_id"], by=principal_of(request))
    return Response(status_code=204 if done else 202)


async def export_conversation(request: Request) -> Response:
    cid, fmt = request.path_params["conversation_id"], request.query_params.get("format")
    if fmt == "json":  # every branch, read back by import
        return await transfer.export_json(request, cid)
    conv, text = await export_text(_services(request).conversations(), cid, fmt, by=principal_of(request))
    if fmt == "jsonl":
        media, extension = "application/x-ndjson; charset=utf-8", "checkpoints.jsonl"
    else:
        media, extension = "text/markdown; charset=utf-8", "md"
    return Response(text, headers=transfer.export_headers(conv, extension), media_type=media)


async def list_allow_rules(request: Request) -> Response:
    rules = await _services(request).allow_rules().list(by=principal_of(request))
    return JSONResponse({"alwaysAllowed": [{"tool": r.tool, "since": iso(r.since)} for r in rules]})


async def revoke_allow_rule(request: Request) -> Response:
    await _services(request).allow_rules().revoke(request.path_params["tool"], by=principal_of(request))
    return Response(status_code=204)


async def search(request: Request) -> Response:
    params = request.query_params
    unknown = set(params) - {"q", "limit", "before"}
    if unknown:
        raise InvalidInput(f"Unknown parameter(s): {', '.join(sorted(unknown))}")
    page = (
        await _services(request)
        .search()
        .search(params.get("q"), params.get("limit"), params.get("before"), by=principal_of(request))
    )
    return JSONResponse(search_page_dto(page))


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    """Model readiness as the reference, plus each tool server (advisory) and the
    database's health (the quick one: no integrity scan). Answers within READY_TIMEOUT
    whatever the model server does; tool servers are reported as they are, never waited for."""
    services = _services(request)

    async def model() -> Readiness:
        try:
            ready: Readiness = await asyncio.wait_for(services.model().check(), READY_TIMEOUT)
            return ready
        except TimeoutError:
            return Readiness(
                False,
                f"the model server did not answer within {READY_TIMEOUT:g} s",
                fix="check the model server with `sophos doctor`",
            )

    async def tools_started() -> None:  # servers still in their first start get a moment
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(services.tools().list_tools(), READY_TIMEOUT)

    ready, _ = await asyncio.gather(model(), tools_started())
    servers = [
        {"name": s.name, "ok": s.ok, "tools": s.tools, **({"error": s.error} if s.error else {})}
        for s in await services.tools().status()
    ]
    health = await services.backend().health()
    if not health.ok:
        message = health.integrity or f"Database not available: {health.detail}"
        return JSONResponse({"status": "error", "message": message, "tools": servers}, status_code=503)
    if not ready.ok:
        body = {"status": "error", "message": ready.reason, "fix": ready.fix, "tools": servers}
        return JSONResponse(body, status_code=503)
    return JSONResponse({"status": "ok", "tools": servers})


async def metrics(request: Request) -> Response:
    """This process's metrics in the Prometheus text format (OpenMetrics if asked for),
    collected off the event loop (reading /proc and every series takes a few ms)."""
    render = _services(request).metrics().render
    body, media = await run_in_threadpool(render, request.headers.get("accept"))
    return Response(body, media_type=media)
